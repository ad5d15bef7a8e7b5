/*
 * The graph compiler as a proposer. A candidate is compiler_emit() of one
 * schedule; the search moves over schedules. Many schedule fields do not
 * change the code on a given problem (CUDA block sizes on the CPU backend,
 * cuts where nothing can be cut, a GEMM tile without a GEMM), so a
 * schedule is only proposed when its code is new too, compared without
 * the generated header comment (which names the schedule): the loop never
 * pays an evaluation for a schedule that changes nothing.
 *
 * Generation 0 is the default schedule, then its one-field neighbours
 * (every value of every field, every single fusion cut): the other block
 * sizes first, nearest first (the knob that moves a team kernel most: on
 * the H200 13_cross_entropy's row kernel took 0.078 ms at 128 threads and
 * 0.32 at 1024), the rest in random order, until the quota is met; in
 * later generations what is left of them takes every other slot, so each
 * knob that matters on this problem is measured alone once while breeding
 * already combines those that helped. Until every neighbour is drawn the
 * run does not converge (pc_pending). Breeding mutates (schedule_mutate,
 * plus toggles of the cuts that proved to exist) and crosses over the
 * population's schedules.
 *
 * With an archive (prop_compiler_set_archive), the schedules of the most
 * similar solved problems' compiler kernels come right after the default
 * in generation 0 (op "archive"): a module optimized before, or one like
 * it, starts from what won there. Fusion cuts are kept: they number the
 * boundaries of the graph they were found on, the same graph for the same
 * module; on another graph they pick other boundaries or none, and the
 * evaluator judges the kernel like any other.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crypto.h"
#include "common/jsonx.h"
#include "pipeline/compiler/compiler.h"
#include "pipeline/evolve/evolve.h"

#define PC_ATTEMPTS	64	/* schedules drawn per slot before giving up */
#define PC_CROSSOVER	35	/* percent of slots bred from two parents */
#define PC_ARCHIVE_K	4	/* similar solved problems asked of the archive */

struct pc_state {
	enum schedule_backend backend;
	struct ir_graph *g;
	struct schedule *queue;			/* the default's neighbours not yet drawn */
	size_t n_queue;
	int seeded;
	uint64_t live_cuts;			/* cut bits that change the code */
	unsigned draws;				/* alternates neighbours and breeding */
	struct schedule *tried;
	size_t n_tried, cap_tried;
	char (*shas)[CRYPTO_SHA256_HEX];	/* sources proposed */
	size_t n_shas, cap_shas;
	size_t arch_lo, arch_hi;		/* queue[lo, hi): the archive's schedules */
	evolve_retrieve_fn retrieve;		/* the archive, or NULL */
	void *retrieve_arg;
	void (*retrieve_free)(void *arg);
};

static int
pc_pick(uint64_t *rng, int n)
{
	return n <= 1 ? 0 : (int)(schedule_rand(rng) % (uint64_t)n);
}

static int
was_tried(const struct pc_state *st, const struct schedule *s)
{
	for (size_t i = 0; i < st->n_tried; i++)
		if (!schedule_cmp(&st->tried[i], s))
			return 1;
	return 0;
}

static int
add_tried(struct pc_state *st, const struct schedule *s)
{
	if (st->n_tried == st->cap_tried) {
		size_t cap = st->cap_tried ? 2 * st->cap_tried : 64;
		struct schedule *t = realloc(st->tried, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		st->tried = t;
		st->cap_tried = cap;
	}
	st->tried[st->n_tried++] = *s;
	return 0;
}

/* Whether this code was proposed before (code sha), or evaluated from elsewhere (source sha). */
static int
source_seen(const struct pc_state *st, const struct evolve_ctx *ctx, const char *code,
    const char *full)
{
	for (size_t i = 0; i < st->n_shas; i++)
		if (!strcmp(st->shas[i], code))
			return 1;
	for (size_t i = 0; i < ctx->n_history; i++)
		if (!strcmp(ctx->history[i].source_sha, full))
			return 1;
	return 0;
}

static int
add_sha(struct pc_state *st, const char *sha)
{
	if (st->n_shas == st->cap_shas) {
		size_t cap = st->cap_shas ? 2 * st->cap_shas : 64;
		char (*t)[CRYPTO_SHA256_HEX] = realloc(st->shas, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		st->shas = t;
		st->cap_shas = cap;
	}
	memcpy(st->shas[st->n_shas++], sha, CRYPTO_SHA256_HEX);
	return 0;
}

/* The SHA-256 of the code: the source after its leading comment. */
static void
code_sha(const char *src, char out[CRYPTO_SHA256_HEX])
{
	const char *p = src, *end;

	if (!strncmp(p, "/*", 2) && (end = strstr(p + 2, "*/")))
		p = end + 2;
	crypto_sha256_hex(p, strlen(p), out);
}

/*
 * The schedules of the archive's nearest compiler kernels for this
 * backend, best match first, into q[*n..) (at most room of them): not the
 * default, no repeats.
 */
static void
archive_schedules(const struct pc_state *st, const struct evolve_ctx *ctx,
    const struct schedule *d, struct schedule *q, size_t *n, size_t room)
{
	const char *be = st->backend == SCHED_CUDA ? "cuda" : "cpu";
	json_t *near = st->retrieve(st->retrieve_arg, ctx, PC_ARCHIVE_K), *v;
	size_t i, start = *n;
	char err[256];

	json_array_foreach(near, i, v) {
		const char *src = json_string_value(json_object_get(v, "kernel"));
		const char *vb = json_string_value(json_object_get(v, "backend"));
		struct schedule s = *d;
		int dup;

		if (*n - start >= room || !src || (vb && strcmp(vb, be)) ||
		    schedule_from_source(&s, src, err, sizeof(err)) < 0)
			continue;
		s.backend = st->backend;
		dup = !schedule_cmp(&s, d);
		for (size_t k = start; k < *n && !dup; k++)
			dup = !schedule_cmp(&s, &q[k]);
		if (!dup)
			q[(*n)++] = s;
	}
	json_decref(near);
}

/* The default and its one-field neighbours, the default first, then what
 * the archive suggests, the rest shuffled. */
static int
build_queue(struct pc_state *st, const struct evolve_ctx *ctx)
{
	/* nearest the default's 256 first: drawn in this order */
	static const int blocks[] = { 128, 512, 64, 1024 }, vecs[] = { 1, 2 },
	    unrolls[] = { 2, 4, 8 }, tiles[] = { 16, 32, 128, 256 };
	uint64_t *rng = ctx->rng;
	struct schedule d, *q;
	size_t n = 0, nb, cap = 64 + SCHEDULE_MAX_CUTS + PC_ARCHIVE_K;

	if (!(q = calloc(cap, sizeof(*q))))
		return -ENOMEM;
	schedule_default(&d, st->g, st->backend);
	q[n++] = d;
#define NEIGHBOURS(field, values) \
	for (size_t i_ = 0; i_ < sizeof(values) / sizeof(values[0]); i_++) \
		if (values[i_] != d.field) { q[n] = d; q[n++].field = values[i_]; }
	NEIGHBOURS(block, blocks);
	nb = n;
	NEIGHBOURS(vec, vecs);
	NEIGHBOURS(unroll, unrolls);
	NEIGHBOURS(cpu_tile, tiles);
#undef NEIGHBOURS
	for (int r = SCHED_RED_WARP; r <= SCHED_RED_THREAD; r++) {
		q[n] = d;
		q[n++].reduce = (enum schedule_reduce)r;
	}
	/* the three ways a team kernel holds its row: registers (default
	 * where it fits), shared memory (row_regs wins where both apply,
	 * so it goes off), global memory */
	q[n] = d;
	q[n].row_regs = 0;
	q[n++].row_cache = !d.row_cache;
	q[n] = d;
	q[n++].row_regs = !d.row_regs;
	q[n] = d;
	q[n++].row_regs = d.row_regs == 2 ? 1 : 2;
	/* an eval batch norm folded into its layer's weights, or applied after it */
	q[n] = d;
	q[n++].bn_fold = !d.bn_fold;
	/* a row over a cluster of 2 or 4 blocks, blocks an SM, reciprocals,
	 * cache hints, the one-pass scan */
	for (int r = 1; r <= 4; r *= 2)
		if (r != d.row_split) {
			q[n] = d;
			q[n++].row_split = r;
		}
	for (int m = 0; m <= 4; m += 2)
		if (m != d.min_blocks) {
			q[n] = d;
			q[n++].min_blocks = m;
		}
	q[n] = d;
	q[n++].rcp = !d.rcp;
	q[n] = d;
	q[n++].stream = !d.stream;
	q[n] = d;
	q[n++].scan = !d.scan;
	q[n] = d;
	q[n++].pdl = !d.pdl;
	q[n] = d;
	q[n++].online = !d.online;
	for (int a = 1; a < 4; a++) {
		q[n] = d;
		q[n++].gemm_algo = a;
	}
	for (int a = 0; a < 4; a++) {
		q[n] = d;
		q[n++].conv_algo = a;
	}
	for (int c = 0; c < SCHEDULE_MAX_CUTS && n < cap - PC_ARCHIVE_K; c++) {
		q[n] = d;
		q[n++].cuts ^= UINT64_C(1) << c;
	}
	/* Fisher-Yates over everything after the default and the blocks */
	for (size_t i = n - 1; i > nb; i--) {
		size_t j = nb + (size_t)pc_pick(rng, (int)(i - nb + 1));
		struct schedule t = q[i];
		q[i] = q[j];
		q[j] = t;
	}
	/* drawn from the end: reverse so the default comes first */
	for (size_t i = 0; i < n / 2; i++) {
		struct schedule t = q[i];
		q[i] = q[n - 1 - i];
		q[n - 1 - i] = t;
	}
	/* the archive's between the neighbours and the default, the best
	 * match drawn first */
	if (st->retrieve) {
		size_t lo = --n, hi;

		archive_schedules(st, ctx, &d, q, &n, cap - n - 1 < PC_ARCHIVE_K ? cap - n - 1 : PC_ARCHIVE_K);
		hi = n;
		for (size_t i = 0; i < (hi - lo) / 2; i++) {
			struct schedule t = q[lo + i];
			q[lo + i] = q[hi - 1 - i];
			q[hi - 1 - i] = t;
		}
		q[n++] = d;
		st->arch_lo = lo;
		st->arch_hi = hi;
	}
	st->queue = q;
	st->n_queue = n;
	st->seeded = 1;
	return 0;
}

/* The schedule an entry was built from, when the compiler built it. */
static int
entry_schedule(const struct pc_state *st, const struct evolve_entry *e, struct schedule *s)
{
	const json_t *j = json_object_get(e->origin, "schedule");
	char err[256];

	if (!json_is_object(j))
		return -ENOENT;
	schedule_default(s, st->g, st->backend);
	if (schedule_from_json(s, j, err, sizeof(err)) < 0)
		return -EINVAL;
	s->backend = st->backend;
	return 0;
}

/* A population member with a schedule, biased towards the fastest. */
static const struct evolve_entry *
pick_parent(const struct pc_state *st, const struct evolve_ctx *ctx, struct schedule *s)
{
	size_t n = ctx->n_population;

	for (int tries = 0; tries < 8 && n; tries++) {
		int a = pc_pick(ctx->rng, (int)n), b = pc_pick(ctx->rng, (int)n);
		const struct evolve_entry *e = ctx->population[a < b ? a : b];
		if (entry_schedule(st, e, s) == 0)
			return e;
	}
	for (size_t i = 0; i < n; i++)
		if (entry_schedule(st, ctx->population[i], s) == 0)
			return ctx->population[i];
	return NULL;
}

/* A random change: schedule_mutate's, or a toggle of a cut that exists. */
static void
mutate(const struct pc_state *st, struct schedule *s, uint64_t *rng)
{
	int live = __builtin_popcountll(st->live_cuts);

	if (live && pc_pick(rng, 3) == 0) {
		int k = pc_pick(rng, live);
		for (int c = 0; c < SCHEDULE_MAX_CUTS; c++)
			if ((st->live_cuts >> c & 1) && k-- == 0) {
				s->cuts ^= UINT64_C(1) << c;
				return;
			}
	}
	schedule_mutate(s, rng);
}

/* Draw a schedule not tried before: 0, or -ENOENT when none was found. */
static int
draw(struct pc_state *st, const struct evolve_ctx *ctx, struct schedule *s,
    const char **op, int parents[2])
{
	int gen = ctx->spent ? ctx->spent->generations : 0;

	/* after generation 0, neighbours take every other slot: breeding
	 * combines the knobs that helped while the rest are still measured */
	while (st->n_queue > 0 && (gen == 0 || !ctx->n_population || st->draws++ % 2 == 0)) {
		*s = st->queue[--st->n_queue];
		parents[0] = parents[1] = -1;
		*op = st->n_queue >= st->arch_lo && st->n_queue < st->arch_hi ? "archive" :
		    gen == 0 ? "seed" : "neighbour";
		if (!was_tried(st, s))
			return 0;
	}
	for (int k = 0; k < PC_ATTEMPTS; k++) {
		struct schedule a, b;
		const struct evolve_entry *pa, *pb;

		parents[0] = parents[1] = -1;
		if (!ctx->n_population) {
			/* nothing correct yet: a few steps away from the default */
			schedule_default(s, st->g, st->backend);
			for (int m = 1 + pc_pick(ctx->rng, 3); m > 0; m--)
				mutate(st, s, ctx->rng);
			*op = "mutate";
		} else if ((pa = pick_parent(st, ctx, &a)) && pc_pick(ctx->rng, 100) < PC_CROSSOVER &&
		    (pb = pick_parent(st, ctx, &b)) && pb != pa) {
			schedule_crossover(s, &a, &b, ctx->rng);
			if (pc_pick(ctx->rng, 2))
				mutate(st, s, ctx->rng);
			parents[0] = pa->id;
			parents[1] = pb->id;
			*op = "crossover";
		} else if (pa) {
			*s = a;
			for (int m = 1 + pc_pick(ctx->rng, 2); m > 0; m--)
				mutate(st, s, ctx->rng);
			parents[0] = pa->id;
			*op = "mutate";
		} else {
			schedule_default(s, st->g, st->backend);
			mutate(st, s, ctx->rng);
			*op = "mutate";
		}
		s->backend = st->backend;
		if (!was_tried(st, s))
			return 0;
	}
	return -ENOENT;
}

/* 1 when graph x was traced at the inputs of variant v (a list of
 * {"name", "shape", "dtype"}). */
static int
traced_at(const struct ir_graph *x, const json_t *v, const char **differs)
{
	const json_t *t;
	size_t j;

	json_array_foreach(v, j, t) {
		const char *name = jsonx_str(t, "name", "");
		int id = ir_find(x, name), rank;
		int64_t shape[IR_MAX_RANK];
		const json_t *sh = json_object_get(t, "shape"), *d;
		size_t k;

		*differs = name;
		if (id < 0 || id >= x->n_inputs || !json_is_array(sh) ||
		    (rank = (int)json_array_size(sh)) != x->v[id].rank ||
		    ir_dtype_parse(jsonx_str(t, "dtype", "")) != x->v[id].dtype)
			return 0;
		json_array_foreach(sh, k, d)
			shape[k] = json_integer_value(d);
		if (memcmp(shape, x->v[id].shape, (size_t)rank * sizeof(shape[0])))
			return 0;
	}
	return 1;
}

/*
 * The compiler builds a version of the kernel per graph it has, traced
 * at the traced shapes and at each of variant_graphs (others return 2),
 * so a declared variant without a graph traced at its inputs (an IR from
 * before variant_graphs, or a variant that did not trace) can get no
 * correct compiler kernel: say so instead of evaluating candidates that
 * must fail. 0, or -ENOTSUP naming the first such variant.
 */
static int
check_variants(const json_t *ir, const struct ir_graph *g, char *err, size_t errlen)
{
	const json_t *v;
	size_t i;

	json_array_foreach(json_object_get(ir, "variants"), i, v) {
		const char *differs = "?", *other, *why = jsonx_str(ir, "variant_graphs_error", NULL);
		int ok = traced_at(g, v, &differs);

		for (int k = 0; k < g->n_variants && !ok; k++)
			ok = traced_at(g->variants[k], v, &other);
		if (!ok) {
			snprintf(err, errlen, "unsupported: shape variants (input %s of variant %zu has "
			    "another shape and the IR has no graph traced at it%s%s)", differs, i,
			    why ? ": " : "; trace the problem again", why ? why : "");
			return -ENOTSUP;
		}
	}
	return 0;
}

static int
pc_propose(struct proposer *p, const struct evolve_ctx *ctx, struct evolve_candidate *out,
    int max, char *err, size_t errlen)
{
	struct pc_state *st = p->state;
	struct schedule d;
	int n = 0, error, slots;

	if (!st->g) {
		if (!ctx->ir) {
			snprintf(err, errlen, "unsupported: %s",
			    ctx->ir_error ? ctx->ir_error : "the module has no graph IR");
			return -ENOTSUP;
		}
		if ((error = ir_load((json_t *)ctx->ir, &st->g, err, errlen)) < 0)
			return error;
		if ((error = check_variants(ctx->ir, st->g, err, errlen)) < 0) {
			ir_free(st->g);
			st->g = NULL;
			return error;
		}
	}
	if (!st->seeded && (error = build_queue(st, ctx)) < 0)
		return error;
	schedule_default(&d, st->g, st->backend);
	/* most neighbours change nothing on a given problem: room to skip them all */
	slots = max + PC_ATTEMPTS + (int)st->n_queue;
	for (int slot = 0; n < max && slot < slots; slot++) {
		struct schedule s;
		const char *op = "mutate";
		char sha[CRYPTO_SHA256_HEX], full[CRYPTO_SHA256_HEX], *src = NULL;
		int parents[2];
		uint64_t diff;
		json_t *sj;

		if (draw(st, ctx, &s, &op, parents) < 0)
			break;
		if ((error = add_tried(st, &s)) < 0)
			return error;
		error = compiler_emit(st->g, &s, st->backend, &src, err, errlen);
		if (error == -ENOTSUP || error == -EINVAL || error == -ENOMEM)
			return error;	/* the same for every schedule */
		if (error < 0)
			continue;	/* past a limit with this schedule only */
		code_sha(src, sha);
		crypto_sha256_hex(src, strlen(src), full);
		if (source_seen(st, ctx, sha, full)) {
			free(src);
			continue;
		}
		/* a single cut away from the default that changed the code: a real boundary */
		diff = s.cuts ^ d.cuts;
		if (diff && !(diff & (diff - 1))) {
			struct schedule t = s;
			t.cuts = d.cuts;
			if (!schedule_cmp(&t, &d))
				st->live_cuts |= diff;
		}
		if ((error = add_sha(st, sha)) < 0 || !(sj = schedule_to_json(&s))) {
			free(src);
			return error < 0 ? error : -ENOMEM;
		}
		out[n].source = src;
		out[n].origin = json_pack("{s:o}", "schedule", sj);
		out[n].op = op;
		out[n].parents[0] = parents[0];
		out[n].parents[1] = parents[1];
		if (!out[n].origin) {
			evolve_candidate_clear(&out[n]);
			return -ENOMEM;
		}
		n++;
	}
	return n;
}

/* The default's neighbours not drawn yet (all of them before generation 0). */
static size_t
pc_pending(struct proposer *p)
{
	const struct pc_state *st = p->state;

	return st->seeded ? st->n_queue : 1;
}

static void
pc_free(struct proposer *p)
{
	struct pc_state *st;

	if (!p)
		return;
	st = p->state;
	if (st) {
		if (st->retrieve_free)
			st->retrieve_free(st->retrieve_arg);
		ir_free(st->g);
		free(st->queue);
		free(st->tried);
		free(st->shas);
		free(st);
	}
	free(p);
}

int
prop_compiler_new(const char *backend, struct proposer **out)
{
	struct proposer *p = calloc(1, sizeof(*p));
	struct pc_state *st = calloc(1, sizeof(*st));

	if (!p || !st) {
		free(p);
		free(st);
		return -ENOMEM;
	}
	st->backend = backend && !strcmp(backend, "cuda") ? SCHED_CUDA : SCHED_CPU;
	p->name = "compiler";
	p->state = st;
	p->propose = pc_propose;
	p->free = pc_free;
	p->pending = pc_pending;
	*out = p;
	return 0;
}

void
prop_compiler_set_archive(struct proposer *p, evolve_retrieve_fn fn, void *arg,
    void (*arg_free)(void *arg))
{
	struct pc_state *st = p->state;

	if (st->retrieve_free)
		st->retrieve_free(st->retrieve_arg);
	st->retrieve = fn;
	st->retrieve_arg = arg;
	st->retrieve_free = arg_free;
}
