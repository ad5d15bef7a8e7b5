/*
 * Pointwise ops as C expressions, with PyTorch's NaN behaviour: relu,
 * clamp and the min/max family pass NaN through (comparisons are written
 * so that a NaN operand selects the NaN), activations use the same
 * formulas as ATen. Math functions are the kb_* helpers of the backend's
 * prelude (vectorizable polynomials on the CPU, CUDA's own on the GPU).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pipeline/compiler/expr.h"

int
cg_is_pointwise(enum cg_op op)
{
	return op >= CG_NEG && op <= CG_WHERE;
}

int
cg_is_reduction(enum cg_op op)
{
	return op >= CG_RSUM && op <= CG_RARGMIN;
}

static const char *const op_names[CG_N_OPS] = {
	[CG_INPUT] = "input", [CG_CONST] = "const", [CG_NEG] = "neg", [CG_ABS] = "abs",
	[CG_EXP] = "exp", [CG_LOG] = "log", [CG_LOG1P] = "log1p", [CG_EXPM1] = "expm1",
	[CG_SQRT] = "sqrt", [CG_RSQRT] = "rsqrt", [CG_RECIP] = "reciprocal", [CG_SIN] = "sin",
	[CG_COS] = "cos", [CG_ERF] = "erf", [CG_FLOOR] = "floor", [CG_CEIL] = "ceil",
	[CG_SIGN] = "sign", [CG_SIGMOID] = "sigmoid", [CG_TANH] = "tanh", [CG_NOT] = "not",
	[CG_RELU] = "relu", [CG_SILU] = "silu", [CG_MISH] = "mish", [CG_HARDSWISH] = "hardswish",
	[CG_HARDSIGMOID] = "hardsigmoid", [CG_SELU] = "selu", [CG_GELU] = "gelu",
	[CG_GELU_TANH] = "gelu_tanh", [CG_LEAKY] = "leaky_relu", [CG_ELU] = "elu",
	[CG_SOFTPLUS] = "softplus", [CG_CLAMP] = "clamp", [CG_CAST] = "cast", [CG_POWS] = "pow",
	[CG_ADD] = "add", [CG_SUB] = "sub", [CG_MUL] = "mul", [CG_DIV] = "div",
	[CG_DIV_TRUNC] = "div_trunc", [CG_DIV_FLOOR] = "div_floor", [CG_POW] = "pow",
	[CG_MAX2] = "maximum", [CG_MIN2] = "minimum", [CG_EQ] = "eq", [CG_NE] = "ne",
	[CG_LT] = "lt", [CG_LE] = "le", [CG_GT] = "gt", [CG_GE] = "ge", [CG_AND] = "and",
	[CG_OR] = "or", [CG_WHERE] = "where", [CG_TRIU] = "triu", [CG_TRIL] = "tril",
	[CG_PAD] = "pad", [CG_CAT] = "cat", [CG_LOOKUP] = "lookup", [CG_TAKE] = "take",
	[CG_IOTA] = "arange",
	[CG_VIEW] = "view", [CG_RESHAPE] = "reshape", [CG_RSUM] = "sum", [CG_RPROD] = "prod",
	[CG_RMAX] = "max", [CG_RMIN] = "min", [CG_RARGMAX] = "argmax", [CG_RARGMIN] = "argmin",
	[CG_CUMSUM] = "cumsum", [CG_CUMPROD] = "cumprod", [CG_GEMM] = "gemm", [CG_CONV] = "conv",
};

const char *
cg_op_name(enum cg_op op)
{
	return op < CG_N_OPS && op_names[op] ? op_names[op] : "?";
}

/* x to the constant power p: the small whole powers and +-0.5 spelled
 * out (products, square roots, reciprocals), any other through kb_pow. */
static void
pows_text(double p, enum ir_dtype ct, const char *f, const char *x, const char *c1, char *text,
    size_t len)
{
	char z[256];

	if (p == 2)
		snprintf(text, len, "%s * %s", x, x);
	else if (p == 1)
		snprintf(text, len, "%s", x);
	else if (p == 0)
		snprintf(text, len, "%s", c1);
	else if (p == 3)
		snprintf(text, len, "%s * %s * %s", x, x, x);
	else if (p == 4)
		snprintf(text, len, "(%s * %s) * (%s * %s)", x, x, x, x);
	else if (p == 0.5)
		snprintf(text, len, "kb_sqrt%s(%s)", f, x);
	else if (p == -0.5)
		snprintf(text, len, "%s / kb_sqrt%s(%s)", c1, f, x);
	else if (p == -1)
		snprintf(text, len, "%s / %s", c1, x);
	else if (p == -2)
		snprintf(text, len, "%s / (%s * %s)", c1, x, x);
	else {
		cgx_literal(p, ct, z, sizeof(z));
		snprintf(text, len, "kb_pow%s(%s, %s)", f, x, z);
	}
}

/* The ops of two operands (CG_ADD to CG_OR); an integer division by
 * zero gives 0 rather than a trap. */
static void
binary_text(enum cg_op op, int fl, const char *f, const char *x, const char *y, char *text,
    size_t len)
{
	switch (op) {
	case CG_ADD: snprintf(text, len, "%s + %s", x, y); break;
	case CG_SUB: snprintf(text, len, "%s - %s", x, y); break;
	case CG_MUL: snprintf(text, len, "%s * %s", x, y); break;
	case CG_DIV:
		if (fl)
			snprintf(text, len, "%s / %s", x, y);
		else
			snprintf(text, len, "(%s == 0 ? 0 : %s / %s)", y, x, y);
		break;
	case CG_DIV_TRUNC:
		if (fl)
			snprintf(text, len, "kb_trunc%s(%s / %s)", f, x, y);
		else
			snprintf(text, len, "(%s == 0 ? 0 : %s / %s)", y, x, y);
		break;
	case CG_DIV_FLOOR:
		if (fl)
			snprintf(text, len, "kb_floor%s(%s / %s)", f, x, y);
		else
			snprintf(text, len, "(%s == 0 ? 0 : %s / %s - ((%s %% %s != 0) && ((%s < 0) != (%s < 0))))",
			    y, x, y, x, y, x, y);
		break;
	case CG_POW: snprintf(text, len, "kb_pow%s(%s, %s)", f, x, y); break;
	case CG_MAX2: snprintf(text, len, "(%s > %s || %s != %s) ? %s : %s", x, y, x, x, x, y); break;
	case CG_MIN2: snprintf(text, len, "(%s < %s || %s != %s) ? %s : %s", x, y, x, x, x, y); break;
	case CG_EQ: snprintf(text, len, "%s == %s", x, y); break;
	case CG_NE: snprintf(text, len, "%s != %s", x, y); break;
	case CG_LT: snprintf(text, len, "%s < %s", x, y); break;
	case CG_LE: snprintf(text, len, "%s <= %s", x, y); break;
	case CG_GT: snprintf(text, len, "%s > %s", x, y); break;
	case CG_GE: snprintf(text, len, "%s >= %s", x, y); break;
	case CG_AND: snprintf(text, len, "%s && %s", x, y); break;
	case CG_OR: snprintf(text, len, "%s || %s", x, y); break;
	default: break;
	}
}

int
cgx_pw_text(struct cg_emit *e, const struct cg_node *n, const struct cg_val *a, int na,
    int vec, char *text, size_t len)
{
	enum ir_dtype ct = n->dtype;
	const char *f, *T;
	char x[256], y[256], z[256], c0[64], c1[64];
	int fl;

	if (n->op >= CG_EQ && n->op <= CG_GE)
		ct = cg_promote(a[0].dtype, a[1].dtype);
	if (n->op == CG_AND || n->op == CG_OR)
		ct = IR_BOOL;
	fl = ir_dtype_is_float(ct);
	f = ct == IR_F32 ? "f" : "";
	T = cg_ctype(ct);
	if (n->op == CG_WHERE) {
		cgx_opnd(&a[0], IR_BOOL, vec, x, sizeof(x));
		cgx_opnd(&a[1], ct, vec, y, sizeof(y));
		cgx_opnd(&a[2], ct, vec, z, sizeof(z));
		snprintf(text, len, "%s ? %s : %s", x, y, z);
		return 0;
	}
	if (n->op == CG_CAST) {
		cgx_opnd(&a[0], a[0].dtype, vec, x, sizeof(x));
		if (ct == IR_BOOL)
			snprintf(text, len, "(%s != 0)", x);
		else
			snprintf(text, len, "(%s)%s", T, x);
		return 0;
	}
	cgx_opnd(&a[0], ct, vec, x, sizeof(x));
	if (na > 1)
		cgx_opnd(&a[1], ct, vec, y, sizeof(y));
	cgx_literal(0, ct, c0, sizeof(c0));
	cgx_literal(1, ct, c1, sizeof(c1));
	if (!fl && n->op != CG_NEG && n->op != CG_ABS && n->op != CG_RELU && n->op != CG_SIGN &&
	    n->op != CG_NOT && n->op != CG_CLAMP && !(n->op >= CG_ADD && n->op <= CG_OR && n->op != CG_POW))
		return cg_fail(e, -ENOTSUP, "unsupported: %s on %s", cg_op_name(n->op), ir_dtype_name(ct));
	if (n->op >= CG_ADD && n->op <= CG_OR) {
		binary_text(n->op, fl, f, x, y, text, len);
		return 0;
	}
	switch (n->op) {
	case CG_NEG: snprintf(text, len, "-%s", x); break;
	case CG_ABS:
		if (fl)
			snprintf(text, len, "kb_fabs%s(%s)", f, x);
		else
			snprintf(text, len, "(%s < 0 ? -%s : %s)", x, x, x);
		break;
	case CG_EXP: snprintf(text, len, "kb_exp%s(%s)", f, x); break;
	case CG_LOG: snprintf(text, len, "kb_log%s(%s)", f, x); break;
	case CG_LOG1P: snprintf(text, len, "kb_log1p%s(%s)", f, x); break;
	case CG_EXPM1: snprintf(text, len, "kb_expm1%s(%s)", f, x); break;
	case CG_SQRT: snprintf(text, len, "kb_sqrt%s(%s)", f, x); break;
	case CG_RSQRT: snprintf(text, len, "%s / kb_sqrt%s(%s)", c1, f, x); break;
	case CG_RECIP: snprintf(text, len, "%s / %s", c1, x); break;
	case CG_SIN: snprintf(text, len, "kb_sin%s(%s)", f, x); break;
	case CG_COS: snprintf(text, len, "kb_cos%s(%s)", f, x); break;
	case CG_ERF: snprintf(text, len, "kb_erf%s(%s)", f, x); break;
	case CG_FLOOR: snprintf(text, len, "kb_floor%s(%s)", f, x); break;
	case CG_CEIL: snprintf(text, len, "kb_ceil%s(%s)", f, x); break;
	case CG_SIGN:
		snprintf(text, len, "(%s)((%s > 0) - (%s < 0))", T, x, x);
		if (fl)
			snprintf(text, len, "(%s != %s ? %s : (%s)((%s > 0) - (%s < 0)))", x, x, x, T, x, x);
		break;
	case CG_SIGMOID: snprintf(text, len, "%s / (%s + kb_exp%s(-%s))", c1, c1, f, x); break;
	case CG_TANH: snprintf(text, len, "kb_tanh%s(%s)", f, x); break;
	case CG_NOT: snprintf(text, len, "(%s == 0)", x); break;
	case CG_RELU: snprintf(text, len, "%s < %s ? %s : %s", x, c0, c0, x); break;
	case CG_SILU: snprintf(text, len, "%s / (%s + kb_exp%s(-%s))", x, c1, f, x); break;
	case CG_MISH:
		snprintf(text, len, "%s * kb_tanh%s(%s > (%s)20 ? %s : kb_log1p%s(kb_exp%s(%s)))",
		    x, f, x, T, x, f, f, x);
		break;
	case CG_HARDSWISH:
		snprintf(text, len, "%s * kb_fmin%s(kb_fmax%s(%s + (%s)3, %s), (%s)6) / (%s)6",
		    x, f, f, x, T, c0, T, T);
		break;
	case CG_HARDSIGMOID:
		snprintf(text, len, "kb_fmin%s(kb_fmax%s(%s + (%s)3, %s), (%s)6) / (%s)6",
		    f, f, x, T, c0, T, T);
		break;
	case CG_SELU:
		snprintf(text, len, "(%s)1.0507009873554805 * (%s > %s ? %s : (%s)1.6732632423543772 * kb_expm1%s(%s))",
		    T, x, c0, x, T, f, x);
		break;
	case CG_GELU:
		snprintf(text, len, "(%s)0.5 * %s * (%s + kb_erf%s(%s * (%s)0.70710678118654752))",
		    T, x, c1, f, x, T);
		break;
	case CG_GELU_TANH:
		snprintf(text, len, "(%s)0.5 * %s * (%s + kb_tanh%s((%s)0.79788456080286536 * (%s + (%s)0.044715 * %s * %s * %s)))",
		    T, x, c1, f, T, x, T, x, x, x);
		break;
	case CG_LEAKY:
		cgx_literal(n->f[0], ct, z, sizeof(z));
		snprintf(text, len, "%s < %s ? %s * %s : %s", x, c0, x, z, x);
		break;
	case CG_ELU:
		cgx_literal(n->f[0], ct, z, sizeof(z));
		snprintf(text, len, "%s > %s ? %s : %s * kb_expm1%s(%s)", x, c0, x, z, f, x);
		break;
	case CG_SOFTPLUS: {
		char b[64], th[64];
		cgx_literal(n->f[0], ct, b, sizeof(b));
		cgx_literal(n->f[1], ct, th, sizeof(th));
		snprintf(text, len, "%s * %s > %s ? %s : kb_log1p%s(kb_exp%s(%s * %s)) / %s",
		    x, b, th, x, f, f, x, b, b);
		break;
	}
	case CG_CLAMP: {
		char lo[64], hi[64];
		cgx_literal(n->f[0], ct, lo, sizeof(lo));
		cgx_literal(n->f[1], ct, hi, sizeof(hi));
		if (n->i[0] && n->i[1])
			snprintf(text, len, "%s < %s ? %s : (%s > %s ? %s : %s)", x, lo, lo, x, hi, hi, x);
		else if (n->i[0])
			snprintf(text, len, "%s < %s ? %s : %s", x, lo, lo, x);
		else if (n->i[1])
			snprintf(text, len, "%s > %s ? %s : %s", x, hi, hi, x);
		else
			snprintf(text, len, "%s", x);
		break;
	}
	case CG_POWS: pows_text(n->f[0], ct, f, x, c1, text, len); break;
	default:
		return cg_fail(e, -ENOTSUP, "unsupported: %s", cg_op_name(n->op));
	}
	return 0;
}
