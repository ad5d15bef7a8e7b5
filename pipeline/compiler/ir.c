#include "pipeline/compiler/ir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const dtype_names[] = {
	[IR_DT_NONE] = "none", [IR_F32] = "float32", [IR_F64] = "float64",
	[IR_F16] = "float16", [IR_BF16] = "bfloat16", [IR_I64] = "int64",
	[IR_I32] = "int32", [IR_I16] = "int16", [IR_I8] = "int8",
	[IR_U8] = "uint8", [IR_BOOL] = "bool",
};

enum ir_dtype
ir_dtype_parse(const char *name)
{
	if (!name)
		return IR_DT_NONE;
	for (size_t i = 1; i < sizeof(dtype_names) / sizeof(dtype_names[0]); i++)
		if (!strcmp(name, dtype_names[i]))
			return (enum ir_dtype)i;
	return IR_DT_NONE;
}

const char *
ir_dtype_name(enum ir_dtype dt)
{
	return dt <= IR_BOOL ? dtype_names[dt] : "none";
}

int
ir_dtype_is_float(enum ir_dtype dt)
{
	return dt == IR_F32 || dt == IR_F64 || dt == IR_F16 || dt == IR_BF16;
}

int64_t
ir_numel(int rank, const int64_t *shape)
{
	int64_t n = 1;

	for (int i = 0; i < rank; i++)
		n *= shape[i];
	return n;
}

int
ir_find(const struct ir_graph *g, const char *name)
{
	/* Graphs are small (IR_MAX_VALUES); a linear scan keeps this simple. */
	for (int i = 0; i < g->n_values; i++)
		if (!strcmp(g->v[i].name, name))
			return i;
	return -1;
}

static int
parse_shape(const json_t *shape, int *rank, int64_t *dims)
{
	size_t i;
	json_t *d;

	if (!json_is_array(shape) || json_array_size(shape) > IR_MAX_RANK)
		return -1;
	json_array_foreach(shape, i, d) {
		if (!json_is_integer(d) || json_integer_value(d) < 0 ||
		    json_integer_value(d) > IR_MAX_DIM)
			return -1;
		dims[i] = json_integer_value(d);
	}
	*rank = (int)json_array_size(shape);
	return 0;
}

/* Every {"ref": NAME} inside v must name an earlier value. */
static int
check_refs(const struct ir_graph *g, int upto, const json_t *v)
{
	size_t i;
	json_t *e;
	const char *k;

	if (json_is_array(v)) {
		json_array_foreach(v, i, e)
			if (check_refs(g, upto, e) < 0)
				return -1;
	} else if (json_is_object(v)) {
		json_t *r = json_object_get(v, "ref");
		if (r) {
			int id;
			if (!json_is_string(r))
				return -1;
			id = ir_find(g, json_string_value(r));
			return id >= 0 && id < upto ? 0 : -1;
		}
		json_object_foreach((json_t *)v, k, e)
			if (check_refs(g, upto, e) < 0)
				return -1;
	}
	return 0;
}

static int
load_graph(json_t *json, struct ir_graph **out, char *err, size_t errlen)
{
	struct ir_graph *g = NULL;
	json_t *inputs, *nodes, *outputs, *e;
	size_t i, n;
	int error = -EINVAL;

	err[0] = '\0';
	inputs = json_object_get(json, "inputs");
	nodes = json_object_get(json, "nodes");
	outputs = json_object_get(json, "outputs");
	if (!json_is_array(inputs) || !json_is_array(nodes) || !json_is_array(outputs)) {
		snprintf(err, errlen, "the IR needs inputs, nodes and outputs arrays");
		goto out;
	}
	if (json_integer_value(json_object_get(json, "ir_version")) != 1) {
		snprintf(err, errlen, "IR version %lld is not 1",
		    (long long)json_integer_value(json_object_get(json, "ir_version")));
		goto out;
	}
	n = json_array_size(inputs) + json_array_size(nodes);
	if (n > IR_MAX_VALUES || json_array_size(outputs) > IR_MAX_OUTPUTS) {
		snprintf(err, errlen, "the IR has %zu values and %zu outputs (limits %d, %d)",
		    n, json_array_size(outputs), IR_MAX_VALUES, IR_MAX_OUTPUTS);
		error = -E2BIG;
		goto out;
	}
	if (json_array_size(outputs) == 0) {
		snprintf(err, errlen, "the IR has no outputs");
		goto out;
	}
	error = -ENOMEM;
	if (!(g = calloc(1, sizeof(*g))) || !(g->v = calloc(n ? n : 1, sizeof(*g->v))))
		goto out;
	g->json = json_incref(json);
	g->problem = json_string_value(json_object_get(json, "problem"));
	if (!g->problem)
		g->problem = "";
	error = -EINVAL;

	json_array_foreach(inputs, i, e) {
		struct ir_value *v = &g->v[g->n_values];
		v->name = json_string_value(json_object_get(e, "name"));
		v->role = json_string_value(json_object_get(e, "role"));
		v->is_input = 1;
		v->dtype = ir_dtype_parse(json_string_value(json_object_get(e, "dtype")));
		if (!v->name || !v->role || v->dtype == IR_DT_NONE ||
		    parse_shape(json_object_get(e, "shape"), &v->rank, v->shape) < 0) {
			snprintf(err, errlen, "input %zu: needs name, role, dtype and a shape of at most %d dims",
			    i, IR_MAX_RANK);
			goto out;
		}
		if (ir_find(g, v->name) >= 0) {
			snprintf(err, errlen, "input %s: name used twice", v->name);
			goto out;
		}
		g->n_values++;
	}
	g->n_inputs = g->n_values;
	json_array_foreach(nodes, i, e) {
		struct ir_value *v = &g->v[g->n_values];
		v->name = json_string_value(json_object_get(e, "name"));
		v->op = json_string_value(json_object_get(e, "op"));
		v->args = json_object_get(e, "args");
		v->kwargs = json_object_get(e, "kwargs");
		if (!v->name || !v->op || !json_is_array(v->args) ||
		    (v->kwargs && !json_is_object(v->kwargs))) {
			snprintf(err, errlen, "node %zu: needs name, op and an args array", i);
			goto out;
		}
		if (ir_find(g, v->name) >= 0) {
			snprintf(err, errlen, "node %s: name used twice", v->name);
			goto out;
		}
		v->elements = json_object_get(e, "elements");
		if (json_is_array(v->elements)) {
			v->dtype = IR_DT_NONE;
		} else {
			v->elements = NULL;
			v->dtype = ir_dtype_parse(json_string_value(json_object_get(e, "dtype")));
			if (v->dtype == IR_DT_NONE ||
			    parse_shape(json_object_get(e, "shape"), &v->rank, v->shape) < 0) {
				snprintf(err, errlen, "node %s: bad shape or dtype", v->name);
				goto out;
			}
		}
		if (check_refs(g, g->n_values, v->args) < 0 ||
		    check_refs(g, g->n_values, v->kwargs) < 0) {
			snprintf(err, errlen, "node %s: an argument refers to an unknown or later value",
			    v->name);
			goto out;
		}
		g->n_values++;
	}
	json_array_foreach(outputs, i, e) {
		int id = ir_find(g, json_string_value(json_object_get(e, "name")) ?
		    json_string_value(json_object_get(e, "name")) : "");
		if (id < 0 || g->v[id].elements) {
			snprintf(err, errlen, "output %zu does not name a tensor value", i);
			goto out;
		}
		g->outputs[g->n_outputs++] = id;
	}
	*out = g;
	g = NULL;
	error = 0;
out:
	ir_free(g);
	return error;
}

int
ir_same_inputs(const struct ir_graph *a, const struct ir_graph *b)
{
	if (a->n_inputs != b->n_inputs)
		return 0;
	for (int i = 0; i < a->n_inputs; i++) {
		const struct ir_value *x = &a->v[i], *y = &b->v[i];
		if (x->dtype != y->dtype || x->rank != y->rank ||
		    memcmp(x->shape, y->shape, (size_t)x->rank * sizeof(x->shape[0])))
			return 0;
	}
	return 1;
}

/* A variant graph is called through the traced graph's ABI. */
static int
check_variant(const struct ir_graph *g, const struct ir_graph *v, size_t i, char *err,
    size_t errlen)
{
	if (v->n_inputs != g->n_inputs || v->n_outputs != g->n_outputs) {
		snprintf(err, errlen, "variant_graphs[%zu]: %d inputs and %d outputs, the traced "
		    "graph has %d and %d", i, v->n_inputs, v->n_outputs, g->n_inputs, g->n_outputs);
		return -EINVAL;
	}
	for (int k = 0; k < g->n_inputs; k++)
		if (strcmp(v->v[k].name, g->v[k].name) || strcmp(v->v[k].role, g->v[k].role)) {
			snprintf(err, errlen, "variant_graphs[%zu]: input %d is %s (%s), the traced "
			    "graph's is %s (%s)", i, k, v->v[k].name, v->v[k].role, g->v[k].name,
			    g->v[k].role);
			return -EINVAL;
		}
	return 0;
}

int
ir_load(json_t *json, struct ir_graph **out, char *err, size_t errlen)
{
	struct ir_graph *g = NULL;
	json_t *vg = json_object_get(json, "variant_graphs"), *e;
	size_t i;
	int error;

	if ((error = load_graph(json, &g, err, errlen)) < 0)
		return error;
	if (vg && !json_is_array(vg)) {
		snprintf(err, errlen, "variant_graphs is not an array");
		error = -EINVAL;
		goto out;
	}
	if (json_array_size(vg) > IR_MAX_VARIANTS) {
		snprintf(err, errlen, "the IR has %zu variant graphs (limit %d)",
		    json_array_size(vg), IR_MAX_VARIANTS);
		error = -E2BIG;
		goto out;
	}
	if (json_array_size(vg) && !(g->variants = calloc(json_array_size(vg), sizeof(*g->variants)))) {
		error = -ENOMEM;
		goto out;
	}
	json_array_foreach(vg, i, e) {
		char sub[256];
		if ((error = load_graph(e, &g->variants[i], sub, sizeof(sub))) < 0) {
			snprintf(err, errlen, "variant_graphs[%zu]: %s", i, sub);
			goto out;
		}
		g->n_variants++;
		if ((error = check_variant(g, g->variants[i], i, err, errlen)) < 0)
			goto out;
	}
	*out = g;
	g = NULL;
out:
	ir_free(g);
	return error;
}

void
ir_free(struct ir_graph *g)
{
	if (!g)
		return;
	for (int i = 0; i < g->n_variants; i++)
		ir_free(g->variants[i]);
	free(g->variants);
	json_decref(g->json);
	free(g->v);
	free(g);
}
