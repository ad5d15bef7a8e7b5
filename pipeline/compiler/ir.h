/*
 * ir: the graph IR (docs/graph-ir.md) as the compiler reads it.
 *
 * ir_load() checks the JSON once (names unique, refs resolve to earlier
 * values, shapes and dtypes well formed, ranks and counts under the named
 * limits) so that later passes can index without re-checking. Values are
 * numbered in ABI order: the inputs first, then the nodes in graph order.
 * Strings and args/kwargs are borrowed from the JSON document, which the
 * graph holds a reference to.
 */
#ifndef KB_PIPELINE_COMPILER_IR_H
#define KB_PIPELINE_COMPILER_IR_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define IR_MAX_RANK	8
#define IR_MAX_VALUES	4096	/* inputs + nodes of one problem */
#define IR_MAX_OUTPUTS	64
#define IR_MAX_DIM	(INT64_C(1) << 40)
#define IR_MAX_VARIANTS	32	/* variant_graphs of one problem */

enum ir_dtype {
	IR_DT_NONE,
	IR_F32,
	IR_F64,
	IR_F16,
	IR_BF16,
	IR_I64,
	IR_I32,
	IR_I16,
	IR_I8,
	IR_U8,
	IR_BOOL,
};

struct ir_value {
	const char *name;
	int is_input;		/* an ABI input; else a node */
	const char *role;	/* inputs: input, parameter, buffer, constant */
	const char *op;		/* nodes: the canonical op */
	json_t *args;		/* nodes: borrowed array */
	json_t *kwargs;		/* nodes: borrowed object, or NULL */
	json_t *elements;	/* tuple nodes: [{shape, dtype}], else NULL */
	int rank;
	int64_t shape[IR_MAX_RANK];
	enum ir_dtype dtype;	/* IR_DT_NONE for tuple nodes */
};

struct ir_graph {
	json_t *json;		/* the document (a reference held) */
	const char *problem;	/* "problem" member or "" */
	int n_inputs;
	int n_values;
	struct ir_value *v;
	int n_outputs;
	int outputs[IR_MAX_OUTPUTS];	/* value indexes */
	int n_variants;
	struct ir_graph **variants;	/* "variant_graphs": the graph traced at each
					 * declared shape variant, in order; same ABI
					 * inputs and outputs, other shapes */
};

/*
 * Check and index an IR document (the "ir" object of a trace reply), and
 * its variant_graphs, whose inputs (names, roles, order) and number of
 * outputs must be the traced graph's. The graph takes its own reference
 * to json. 0 and *out (free with ir_free), -EINVAL with a sentence in err,
 * -E2BIG past a limit, -ENOMEM.
 */
int ir_load(json_t *json, struct ir_graph **out, char *err, size_t errlen);

void ir_free(struct ir_graph *g);

/* 1 when a and b take inputs of the same shapes and dtypes. */
int ir_same_inputs(const struct ir_graph *a, const struct ir_graph *b);

/* The value index of name, or -1. */
int ir_find(const struct ir_graph *g, const char *name);

/* "float32" etc.; IR_DT_NONE for an unknown name. */
enum ir_dtype ir_dtype_parse(const char *name);
const char *ir_dtype_name(enum ir_dtype dt);
int ir_dtype_is_float(enum ir_dtype dt);

/* Shape helpers over (rank, shape). */
int64_t ir_numel(int rank, const int64_t *shape);

#endif
