/*
 * archive: op signatures, similarity and retrieval. Adding, export and
 * import are in archive_entry.c; reading optimize directories in
 * archive_ingest.c.
 */
#include "pipeline/archive/archive.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "common/buf.h"

#define CANDIDATES 200		/* rows each FTS query brings */
#define MAX_SOURCE_TERMS 96	/* distinct words taken from a problem */
#define BM25_HALF 5.0		/* BM25 (negated) that counts as half a match */
#define MAX_OPS 1024		/* op names of one signature considered */
#define MAX_EMBED_DIM 4096

static struct archive_embedder embedder;	/* dim 0: none */

void
archive_set_embedder(const struct archive_embedder *e)
{
	if (e && e->embed && e->dim >= 1 && e->dim <= MAX_EMBED_DIM)
		embedder = *e;
	else
		memset(&embedder, 0, sizeof(embedder));
}

int
archive_has_arch(struct store *s, const char *arch)
{
	return store_archive_has_arch(s, arch);
}

/* ---- Op signatures ---- */

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int
rank_list(struct buf *b, const json_t *tensors, const char *role)
{
	size_t i, n = 0;
	json_t *t;
	int error = 0;

	json_array_foreach(tensors, i, t) {
		if (role && strcmp(json_string_value(json_object_get(t, "role")) ?: "", role))
			continue;
		if (n++ && (error = buf_addch(b, ',')) < 0)
			return error;
		if ((error = buf_printf(b, "%zu", json_array_size(json_object_get(t, "shape")))) < 0)
			return error;
	}
	return n ? 0 : buf_addch(b, '-');
}

static double
numel(const json_t *shape)
{
	double n = 1;
	size_t i;
	json_t *d;

	json_array_foreach(shape, i, d)
		n *= json_is_integer(d) ? (double)json_integer_value(d) : 1;
	return n;
}

int
archive_op_signature(const json_t *ir, char **ops, char **shape_class)
{
	struct buf o = BUF_INIT(BUF_MAX_SMALL), sc = BUF_INIT(256);
	const char **names = NULL;
	const json_t *nodes = json_object_get(ir, "nodes"),
	    *outputs = json_object_get(ir, "outputs");
	size_t i, n = 0;
	json_t *node;
	double big = 0;
	int error = 0;

	if (json_is_array(nodes) && json_array_size(nodes) &&
	    !(names = calloc(json_array_size(nodes), sizeof(*names)))) {
		error = -ENOMEM;
		goto out;
	}
	json_array_foreach(nodes, i, node) {
		const char *op = json_string_value(json_object_get(node, "op"));

		/* getitem only selects from a tuple: no work of its own. */
		if (op && *op && strcmp(op, "getitem") && n < MAX_OPS)
			names[n++] = op;
	}
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (i = 0; i < n && error == 0; i++)
		if ((error = buf_printf(&o, "%s%s", i ? " " : "", names[i])) == -ENOBUFS)
			error = 0;	/* a signature that long is long enough */
	if (error < 0)
		goto out;
	if (json_is_array(outputs) && json_array_size(outputs)) {
		json_array_foreach(outputs, i, node)
			if (numel(json_object_get(node, "shape")) > big)
				big = numel(json_object_get(node, "shape"));
		if ((error = buf_printf(&sc, "%s in=", json_string_value(json_object_get(
		    json_array_get(outputs, 0), "dtype")) ?: "?")) < 0 ||
		    (error = rank_list(&sc, json_object_get(ir, "inputs"), "input")) < 0 ||
		    (error = buf_addstr(&sc, " out=")) < 0 ||
		    (error = rank_list(&sc, outputs, NULL)) < 0 ||
		    (error = buf_printf(&sc, " n=2^%d", big >= 1 ? (int)lround(log2(big)) : 0)) < 0)
			goto out;
	}
	*ops = buf_detach(&o, NULL);
	*shape_class = buf_detach(&sc, NULL);
out:
	free(names);
	buf_free(&o);
	buf_free(&sc);
	return error;
}

/* ---- Similarity ---- */

/*
 * How much an op says about a problem: library ops (matmuls,
 * convolutions) most, then reductions and normalizations, then pointwise
 * math; data movement least.
 */
static double
op_weight(const char *op)
{
	static const char *const heavy[] = { "matmul", "linear", "bmm", "addmm",
		"baddbmm", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
		"conv_transpose2d", "conv_transpose3d", "einsum",
		"scaled_dot_product_attention", NULL };
	static const char *const reduce[] = { "softmax", "log_softmax",
		"layer_norm", "group_norm", "batch_norm", "instance_norm", "rms_norm",
		"sum", "mean", "max", "min", "amax", "amin", "prod", "logsumexp",
		"var", "std", "cumsum", "cumprod", "cross_entropy", "nll_loss",
		"mse_loss", "argmax", "argmin", "max_pool1d", "max_pool2d",
		"max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
		"adaptive_avg_pool1d", "adaptive_avg_pool2d", "norm", NULL };
	static const char *const move[] = { "reshape", "view", "permute",
		"transpose", "expand", "flatten", "squeeze", "unsqueeze", "slice",
		"cat", "stack", "split", "repeat", "pad", "to", NULL };

	for (const char *const *p = heavy; *p; p++)
		if (!strcmp(op, *p))
			return 3.0;
	for (const char *const *p = reduce; *p; p++)
		if (!strcmp(op, *p))
			return 2.0;
	for (const char *const *p = move; *p; p++)
		if (!strcmp(op, *p))
			return 0.5;
	return 1.0;
}

/* A sorted op signature split in place into words. */
struct opset {
	char *text;
	char *op[MAX_OPS];
	size_t n;
};

static int
opset_parse(struct opset *s, const char *sig)
{
	char *save = NULL, *w;

	s->n = 0;
	if (!(s->text = strdup(sig ? sig : "")))
		return -ENOMEM;
	for (w = strtok_r(s->text, " ", &save); w && s->n < MAX_OPS;
	    w = strtok_r(NULL, " ", &save))
		s->op[s->n++] = w;
	qsort(s->op, s->n, sizeof(s->op[0]), cmp_str);
	return 0;
}

/*
 * Similarity of the new problem's ops q to an archived problem's a: the
 * mean of the weighted Jaccard index (sum w*min(count) / sum w*max(count))
 * and the weighted containment (sum w*min(count) / sum w*count in q), so
 * an archived problem that contains the new one's pattern inside more
 * work (a softmax inside attention) still ranks above one that only
 * shares a pointwise op.
 */
static double
opset_similarity(const struct opset *q, const struct opset *a)
{
	double inter = 0, uni = 0, qw = 0;
	size_t i = 0, j = 0;

	while (i < q->n || j < a->n) {
		const char *op;
		size_t ca = 0, cb = 0;
		int c = i == q->n ? 1 : j == a->n ? -1 : strcmp(q->op[i], a->op[j]);

		op = c <= 0 ? q->op[i] : a->op[j];
		while (i < q->n && !strcmp(q->op[i], op))
			ca++, i++;
		while (j < a->n && !strcmp(a->op[j], op))
			cb++, j++;
		inter += op_weight(op) * (double)(ca < cb ? ca : cb);
		uni += op_weight(op) * (double)(ca > cb ? ca : cb);
		qw += op_weight(op) * (double)ca;
	}
	return uni > 0 && qw > 0 ? 0.5 * inter / uni + 0.5 * inter / qw : 0;
}

/*
 * Agreement of two shape classes ("float32 in=2,2 out=2 n=2^13"): a third
 * each for the dtype, the ranks, and sizes within a factor of 4.
 */
static double
shape_agreement(const char *a, const char *b)
{
	char da[32], db[32], ia[64], ib[64], oa[64], ob[64];
	int na, nb;
	double s = 0;

	if (!a || !b ||
	    sscanf(a, "%31s in=%63s out=%63s n=2^%d", da, ia, oa, &na) != 4 ||
	    sscanf(b, "%31s in=%63s out=%63s n=2^%d", db, ib, ob, &nb) != 4)
		return 0;
	if (!strcmp(da, db))
		s += 1.0 / 3;
	if (!strcmp(ia, ib) && !strcmp(oa, ob))
		s += 1.0 / 3;
	if (abs(na - nb) <= 2)
		s += 1.0 / 3;
	return s;
}

static int
is_backend_arch_same(const char *a, const char *b)
{
	return !strncmp(a, "sm_", 3) == !strncmp(b, "sm_", 3);
}

/* ---- Query terms ---- */

/* Words every problem file has: no signal. */
static int
stopword(const char *w, size_t n)
{
	static const char *const stop[] = { "import", "torch", "from", "class",
		"def", "self", "return", "super", "__init__", "forward", "Model",
		"Module", "get_inputs", "get_init_inputs", "randn", "rand", "None",
		"True", "False", "for", "in", "if", "else", "and", "or", "not",
		"with", "as", "is", "lambda", "pass", "functional", "float",
		"int", "len", "range", "shape", "size", "dim", "the", "of", "a",
		"an", "to", "nn", NULL };

	if (n < 2)
		return 1;
	for (const char *const *p = stop; *p; p++)
		if (strlen(*p) == n && !strncmp(w, *p, n))
			return 1;
	return 0;
}

struct terms {
	char *v[STORE_ARCHIVE_MAX_TERMS];
	size_t n;
};

static int
terms_add(struct terms *t, const char *w, size_t len)
{
	for (size_t i = 0; i < t->n; i++)
		if (strlen(t->v[i]) == len && !strncmp(t->v[i], w, len))
			return 0;
	if (t->n == STORE_ARCHIVE_MAX_TERMS)
		return 0;
	if (!(t->v[t->n] = strndup(w, len)))
		return -ENOMEM;
	t->n++;
	return 0;
}

static void
terms_free(struct terms *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i]);
	t->n = 0;
}

static int
is_word(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '_';
}

/* Python identifiers of a source, without stopwords, comments or numbers. */
static int
terms_from_source(struct terms *t, const char *src)
{
	size_t start = t->n;
	int error;

	for (const char *p = src; *p && t->n - start < MAX_SOURCE_TERMS;) {
		if (*p == '#') {
			p += strcspn(p, "\n");
			continue;
		}
		if (!is_word(*p)) {
			p++;
			continue;
		}
		size_t n = 0;

		while (is_word(p[n]))
			n++;
		if (!(*p >= '0' && *p <= '9') && !stopword(p, n) &&
		    (error = terms_add(t, p, n)) < 0)
			return error;
		p += n;
	}
	return 0;
}

/* Jaccard index of two word sets (terms holds no repeats). */
static double
terms_jaccard(const struct terms *a, const struct terms *b)
{
	size_t inter = 0;

	for (size_t i = 0; i < a->n; i++)
		for (size_t j = 0; j < b->n; j++)
			if (!strcmp(a->v[i], b->v[j])) {
				inter++;
				break;
			}
	return a->n + b->n > inter ? (double)inter / (double)(a->n + b->n - inter) : 0;
}

/*
 * Text similarity of an archived problem: half its BM25 rank, saturating
 * (r / (r + BM25_HALF)), half the Jaccard index of the two problems'
 * words. BM25's IDF is unstable while the archive is small (a word in half
 * the rows weighs nothing); the word sets are not.
 */
static int
text_similarity(const struct terms *words, const struct store_archive_entry *e,
    double *out)
{
	struct terms w = { 0 };
	double r = e->rank < 0 ? -e->rank : 0;
	int error;

	if ((error = terms_from_source(&w, e->problem_source ? e->problem_source : "")) < 0)
		return error;
	*out = 0.5 * r / (r + BM25_HALF) + 0.5 * terms_jaccard(words, &w);
	terms_free(&w);
	return 0;
}

/* ---- Retrieval ---- */

struct cand {
	struct store_archive_entry *e;	/* borrowed from a search result */
	double text;			/* text_similarity() */
	double score;
};

static int
cmp_cand(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;

	if (a->score != b->score)
		return a->score > b->score ? -1 : 1;
	if (a->e->ms != b->e->ms)
		return a->e->ms < b->e->ms ? -1 : 1;
	return a->e->id < b->e->id ? -1 : a->e->id > b->e->id;
}

static double
cosine(const float *a, const float *b, size_t n)
{
	double ab = 0, aa = 0, bb = 0;

	for (size_t i = 0; i < n; i++) {
		ab += (double)a[i] * b[i];
		aa += (double)a[i] * a[i];
		bb += (double)b[i] * b[i];
	}
	if (aa <= 0 || bb <= 0)
		return 0;
	ab /= sqrt(aa) * sqrt(bb);
	return ab < 0 ? 0 : ab > 1 ? 1 : ab;
}

/* Add ARCHIVE_W_EMBED * cosine to each candidate; any failure: no embeddings. */
static void
add_embeddings(const char *problem_source, struct cand *c, size_t n)
{
	struct archive_embedder em = embedder;
	float *q = NULL, *v = NULL;
	double *sim = NULL;

	if (!em.dim || !problem_source)
		return;
	if (!(q = calloc(em.dim, sizeof(*q))) || !(v = calloc(em.dim, sizeof(*v))) ||
	    !(sim = calloc(n ? n : 1, sizeof(*sim))))
		goto out;
	if (em.embed(em.arg, problem_source, q, em.dim) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		size_t j;

		/* Once per problem: an endpoint call is not free. */
		for (j = 0; j < i && strcmp(c[j].e->problem_sha, c[i].e->problem_sha); j++)
			;
		if (j < i) {
			sim[i] = sim[j];
			continue;
		}
		if (!c[i].e->problem_source ||
		    em.embed(em.arg, c[i].e->problem_source, v, em.dim) < 0)
			goto out;
		sim[i] = cosine(q, v, em.dim);
	}
	for (size_t i = 0; i < n; i++)
		c[i].score += ARCHIVE_W_EMBED * sim[i];
out:
	free(q);
	free(v);
	free(sim);
}

static json_t *
num_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* Of two kernels of one problem, is a the one to show? */
static int
better_kernel(const struct store_archive_entry *a,
    const struct store_archive_entry *b, const char *arch)
{
	int sa = arch && !strcmp(a->arch, arch), sb = arch && !strcmp(b->arch, arch);

	if (sa != sb)
		return sa;
	return a->ms < b->ms;
}

static json_t *
neighbour_json(const struct store_archive_entry *e, double score)
{
	return json_pack("{s:I, s:s, s:s, s:s, s:s, s:s, s:s?, s:s?, s:s, s:f, s:o, s:o, s:f}",
	    "id", (json_int_t)e->id, "problem", e->problem, "ops", e->ops ? e->ops : "",
	    "arch", e->arch, "backend", e->backend, "kernel", e->kernel,
	    "problem_source", e->problem_source, "device", e->device,
	    "shape_class", e->shape_class ? e->shape_class : "", "ms", e->ms,
	    "speedup_eager", num_or_null(e->speedup_eager),
	    "speedup_compile", num_or_null(e->speedup_compile),
	    "score", round(score * 1e4) / 1e4);
}

int
archive_neighbours(struct store *s, const char *problem_source,
    const json_t *ir, const char *arch, int k, json_t **out, char *err,
    size_t errlen)
{
	struct store_archive_entry *r1 = NULL, *r2 = NULL;
	size_t n1 = 0, n2 = 0, nc = 0, nkeep = 0;
	struct terms words = { 0 }, opt = { 0 };
	struct opset q = { 0 }, o = { 0 };
	char *ops = NULL, *shape = NULL;
	struct cand *c = NULL;
	json_t *arr = NULL;
	int error;

	if (k < 1 || k > ARCHIVE_MAX_K || (!problem_source && !ir)) {
		snprintf(err, errlen, "archive_neighbours: k must be 1..%d and a problem "
		    "source or an IR given", ARCHIVE_MAX_K);
		return -EINVAL;
	}
	if ((error = archive_op_signature(ir, &ops, &shape)) < 0 ||
	    (error = opset_parse(&q, ops)) < 0)
		goto oom;
	/*
	 * Two searches bring the candidates: the problem's words anywhere
	 * (torch.softmax in a source also matches the op name softmax), and
	 * the IR's op names among the op names.
	 */
	for (size_t i = 0; i < q.n; i++)
		if ((error = terms_add(&opt, q.op[i], strlen(q.op[i]))) < 0)
			goto oom;
	if (problem_source && (error = terms_from_source(&words, problem_source)) < 0)
		goto oom;
	if ((error = store_archive_search(s, (const char *const *)words.v, words.n, 1, 0,
	    CANDIDATES, &r1, &n1)) < 0 ||
	    (error = store_archive_search(s, (const char *const *)opt.v, opt.n, 1, 1,
	    CANDIDATES, &r2, &n2)) < 0) {
		snprintf(err, errlen, "archive search: %s", store_errmsg(s));
		goto out;
	}
	if (!(c = calloc(n1 + n2 + 1, sizeof(*c))) || !(arr = json_array()))
		goto oom;
	for (size_t i = 0; i < n1; i++)
		c[nc++].e = &r1[i];
	for (size_t i = 0; i < n2; i++) {
		size_t j;

		for (j = 0; j < n1 && r1[j].id != r2[i].id; j++)
			;
		if (j == n1)
			c[nc++].e = &r2[i];
	}
	for (size_t i = 0; i < nc; i++) {
		if ((error = opset_parse(&o, c[i].e->ops)) < 0 ||
		    (error = text_similarity(&words, c[i].e, &c[i].text)) < 0)
			goto oom;
		c[i].score = ARCHIVE_W_OPS * opset_similarity(&q, &o) +
		    ARCHIVE_W_TEXT * c[i].text +
		    ARCHIVE_W_SHAPE * shape_agreement(shape, c[i].e->shape_class);
		if (arch && !strcmp(arch, c[i].e->arch))
			c[i].score += ARCHIVE_W_ARCH;
		else if (arch && is_backend_arch_same(arch, c[i].e->arch))
			c[i].score += ARCHIVE_W_BACKEND;
		free(o.text);
		o.text = NULL;
	}
	add_embeddings(problem_source, c, nc);
	qsort(c, nc, sizeof(*c), cmp_cand);
	/*
	 * One per problem, in order of its best score; the kernel shown is the
	 * problem's fastest on the asked arch (else its fastest anywhere).
	 */
	for (size_t i = 0; i < nc && nkeep < (size_t)k; i++) {
		size_t j, pick = i;

		for (j = 0; j < i && strcmp(c[j].e->problem_sha, c[i].e->problem_sha); j++)
			;
		if (j < i)
			continue;
		for (j = i + 1; j < nc; j++)
			if (!strcmp(c[j].e->problem_sha, c[i].e->problem_sha) &&
			    better_kernel(c[j].e, c[pick].e, arch))
				pick = j;
		if (json_array_append_new(arr, neighbour_json(c[pick].e, c[i].score)) < 0)
			goto oom;
		nkeep++;
	}
	*out = arr;
	arr = NULL;
	error = 0;
	goto out;
oom:
	error = -ENOMEM;
	snprintf(err, errlen, "archive_neighbours: out of memory");
out:
	json_decref(arr);
	free(c);
	free(q.text);
	free(o.text);
	free(ops);
	free(shape);
	terms_free(&words);
	terms_free(&opt);
	store_archive_entries_free(r1, n1);
	store_archive_entries_free(r2, n2);
	return error;
}
