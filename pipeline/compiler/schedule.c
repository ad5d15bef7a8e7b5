#include "pipeline/compiler/schedule.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/compiler/ir.h"

static const char *const reduce_names[] = { "auto", "warp", "block", "thread" };

void
schedule_default(struct schedule *s, const struct ir_graph *ir, enum schedule_backend backend)
{
	(void)ir;	/* the defaults are shape-independent; the compiler adapts them */
	memset(s, 0, sizeof(*s));
	s->backend = backend;
	s->block = 256;
	s->vec = 4;
	s->unroll = 1;
	s->reduce = SCHED_RED_AUTO;
	/* row_cache and attn are paths no GPU has timed yet: off until one
	 * has, so a first candidate takes a path that has; the search turns
	 * them on and the evaluator judges the result */
	s->row_cache = 0;
	/* one global read of a row, like torch.compile's persistent
	 * reductions, with up to 32 floats of it a thread (row_regs 2), and
	 * cumsum in one pass (scan): judged correct and faster than the
	 * alternatives on the H200 wherever they change the kernel (02 and 10
	 * 0.205/0.087 ms -> 0.141/0.076, 14 0.201 -> 0.141; bench/rowperf.sh,
	 * docs/BENCHMARKS.md) */
	s->row_regs = 2;
	s->scan = 1;
	/* row_split, min_blocks, rcp and stream: timed on the H200 and no
	 * better on every problem they change, so choices for the search */
	s->row_split = 1;
	s->min_blocks = 0;
	s->rcp = 0;
	s->stream = 0;
	s->tf32 = 0;
	s->gemm_algo = 0;
	s->conv_algo = -1;
	s->cpu_tile = 64;
	s->attn = 0;
	/* the fold trades per-element work in the epilogue (three
	 * per-channel parameters and an rsqrt an element) for a pass over
	 * the weights: a win on the CPU; on CUDA the epilogue is memory
	 * bound and the fold is two more launches, so it is off there until
	 * a GPU run has timed it */
	s->bn_fold = backend == SCHED_CPU;
	s->pdl = 0;
	/* one team reduction for a row's max and sum: not yet timed */
	s->online = 0;
	s->cuts = 0;
}

uint64_t
schedule_rand(uint64_t *rng)
{
	uint64_t x = *rng ? *rng : 0x9e3779b97f4a7c15ull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

static int
pick(uint64_t *rng, int n)
{
	return (int)(schedule_rand(rng) % (uint64_t)n);
}

void
schedule_mutate(struct schedule *s, uint64_t *rng)
{
	static const int blocks[] = { 64, 128, 256, 512, 1024 };
	static const int vecs[] = { 1, 2, 4 };
	static const int tiles[] = { 16, 32, 64, 128, 256 };
	static const int splits[] = { 1, 2, 4 };

	switch (pick(rng, 18)) {
	case 0: s->block = blocks[pick(rng, 5)]; break;
	case 1: s->vec = vecs[pick(rng, 3)]; break;
	case 2: s->unroll = 1 + pick(rng, 8); break;
	case 3: s->reduce = (enum schedule_reduce)pick(rng, 4); break;
	case 4: s->row_cache = !s->row_cache; break;
	case 5: s->gemm_algo = pick(rng, 8); s->conv_algo = pick(rng, 9) - 1; break;
	case 6: s->cpu_tile = tiles[pick(rng, 5)]; break;
	case 7: s->attn = !s->attn; break;
	case 8: s->row_regs = (s->row_regs + 1 + pick(rng, 2)) % 3; break;
	case 9: s->row_split = splits[pick(rng, 3)]; break;
	case 10: s->stream = !s->stream; break;
	case 11: s->scan = !s->scan; break;
	case 12: s->min_blocks = (int)(pick(rng, 3)) * 2; break;
	case 13: s->rcp = !s->rcp; break;
	case 14: s->bn_fold = !s->bn_fold; break;
	case 15: s->pdl = !s->pdl; break;
	case 16: s->online = !s->online; break;
	default: s->cuts ^= UINT64_C(1) << pick(rng, 8); break;
	}
}

void
schedule_crossover(struct schedule *c, const struct schedule *a, const struct schedule *b,
    uint64_t *rng)
{
#define X(f) c->f = pick(rng, 2) ? a->f : b->f
	c->backend = a->backend;
	X(block);
	X(vec);
	X(unroll);
	X(reduce);
	X(row_cache);
	X(row_regs);
	X(row_split);
	X(min_blocks);
	X(rcp);
	X(stream);
	X(scan);
	X(tf32);
	X(gemm_algo);
	X(conv_algo);
	X(cpu_tile);
	X(attn);
	X(bn_fold);
	X(pdl);
	X(online);
#undef X
	/* cuts bit by bit: boundaries are independent choices */
	uint64_t mask = schedule_rand(rng);
	c->cuts = (a->cuts & mask) | (b->cuts & ~mask);
}

json_t *
schedule_to_json(const struct schedule *s)
{
	char cuts[32];

	snprintf(cuts, sizeof(cuts), "%" PRIx64, s->cuts);
	return json_pack("{s:s, s:i, s:i, s:i, s:s, s:b, s:i, s:i, s:i, s:b, s:b, s:b, s:b, s:i, s:i, s:i, s:b, s:b, s:b, s:b, s:s}",
	    "backend", s->backend == SCHED_CUDA ? "cuda" : "cpu", "block", s->block, "vec", s->vec,
	    "unroll", s->unroll, "reduce", reduce_names[s->reduce], "row_cache", s->row_cache,
	    "row_regs", s->row_regs, "row_split", s->row_split, "min_blocks", s->min_blocks, "rcp", s->rcp,
	    "stream", s->stream, "scan", s->scan, "tf32", s->tf32, "gemm_algo", s->gemm_algo,
	    "conv_algo", s->conv_algo, "cpu_tile", s->cpu_tile, "attn", s->attn, "bn_fold", s->bn_fold,
	    "pdl", s->pdl, "online", s->online, "cuts", cuts);
}

static int
get_int(const json_t *j, const char *k, int lo, int hi, int *out, char *err, size_t errlen)
{
	json_t *v = json_object_get(j, k);

	if (!v)
		return 0;
	if (json_is_boolean(v) && lo == 0 && hi >= 1) {
		*out = json_is_true(v);
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
		snprintf(err, errlen, "schedule: %s must be an integer in [%d, %d]", k, lo, hi);
		return -EINVAL;
	}
	*out = (int)json_integer_value(v);
	return 0;
}

int
schedule_from_json(struct schedule *s, const json_t *j, char *err, size_t errlen)
{
	static const char *const known[] = { "backend", "block", "vec", "unroll", "reduce",
		"row_cache", "row_regs", "row_split", "min_blocks", "rcp", "stream", "scan", "tf32",
		"gemm_algo", "conv_algo", "cpu_tile", "attn", "bn_fold", "pdl", "online", "cuts", NULL };
	struct schedule t = *s;
	const char *k, *str;
	json_t *v;
	int red = -1;

	if (!json_is_object(j)) {
		snprintf(err, errlen, "schedule: expected a JSON object");
		return -EINVAL;
	}
	json_object_foreach((json_t *)j, k, v) {
		int ok = 0;
		for (int i = 0; known[i]; i++)
			ok |= !strcmp(k, known[i]);
		if (!ok) {
			snprintf(err, errlen, "schedule: unknown field '%s'", k);
			return -EINVAL;
		}
	}
	if ((str = json_string_value(json_object_get(j, "backend")))) {
		if (strcmp(str, "cpu") && strcmp(str, "cuda")) {
			snprintf(err, errlen, "schedule: backend is cpu or cuda");
			return -EINVAL;
		}
		t.backend = !strcmp(str, "cuda") ? SCHED_CUDA : SCHED_CPU;
	}
	if (get_int(j, "block", 32, 1024, &t.block, err, errlen) < 0 ||
	    get_int(j, "vec", 1, 4, &t.vec, err, errlen) < 0 ||
	    get_int(j, "unroll", 1, 8, &t.unroll, err, errlen) < 0 ||
	    get_int(j, "row_cache", 0, 1, &t.row_cache, err, errlen) < 0 ||
	    get_int(j, "row_regs", 0, 2, &t.row_regs, err, errlen) < 0 ||
	    get_int(j, "row_split", 1, 4, &t.row_split, err, errlen) < 0 ||
	    get_int(j, "min_blocks", 0, 4, &t.min_blocks, err, errlen) < 0 ||
	    get_int(j, "rcp", 0, 1, &t.rcp, err, errlen) < 0 ||
	    get_int(j, "stream", 0, 1, &t.stream, err, errlen) < 0 ||
	    get_int(j, "scan", 0, 1, &t.scan, err, errlen) < 0 ||
	    get_int(j, "tf32", 0, 1, &t.tf32, err, errlen) < 0 ||
	    get_int(j, "gemm_algo", 0, 7, &t.gemm_algo, err, errlen) < 0 ||
	    get_int(j, "conv_algo", -1, 7, &t.conv_algo, err, errlen) < 0 ||
	    get_int(j, "cpu_tile", 8, 256, &t.cpu_tile, err, errlen) < 0 ||
	    get_int(j, "attn", 0, 1, &t.attn, err, errlen) < 0 ||
	    get_int(j, "bn_fold", 0, 1, &t.bn_fold, err, errlen) < 0 ||
	    get_int(j, "pdl", 0, 1, &t.pdl, err, errlen) < 0 ||
	    get_int(j, "online", 0, 1, &t.online, err, errlen) < 0)
		return -EINVAL;
	if ((t.block & (t.block - 1)) || t.vec == 3 || t.row_split == 3 || t.min_blocks == 3) {
		snprintf(err, errlen, "schedule: block, vec, row_split and min_blocks must be powers of two (min_blocks: or 0)");
		return -EINVAL;
	}
	if ((v = json_object_get(j, "reduce"))) {
		for (int i = 0; i < 4; i++)
			if (json_is_string(v) && !strcmp(json_string_value(v), reduce_names[i]))
				red = i;
		if (red < 0) {
			snprintf(err, errlen, "schedule: reduce is auto, warp, block or thread");
			return -EINVAL;
		}
		t.reduce = (enum schedule_reduce)red;
	}
	if ((v = json_object_get(j, "cuts"))) {
		char *end;
		if (!json_is_string(v) || !*json_string_value(v) ||
		    (t.cuts = strtoull(json_string_value(v), &end, 16), *end)) {
			snprintf(err, errlen, "schedule: cuts is a hexadecimal string");
			return -EINVAL;
		}
	}
	*s = t;
	return 0;
}

int
schedule_describe(const struct schedule *s, struct buf *b)
{
	if (s->backend == SCHED_CPU)
		return buf_printf(b, "cpu_tile=%d bn_fold=%d cuts=%" PRIx64, s->cpu_tile, s->bn_fold, s->cuts);
	return buf_printf(b, "block=%d vec=%d unroll=%d reduce=%s row_cache=%d row_regs=%d row_split=%d "
	    "min_blocks=%d rcp=%d stream=%d scan=%d tf32=%d gemm_algo=%d conv_algo=%d attn=%d bn_fold=%d "
	    "pdl=%d online=%d cuts=%" PRIx64, s->block, s->vec, s->unroll, reduce_names[s->reduce], s->row_cache,
	    s->row_regs, s->row_split, s->min_blocks, s->rcp, s->stream, s->scan, s->tf32,
	    s->gemm_algo, s->conv_algo, s->attn, s->bn_fold, s->pdl, s->online, s->cuts);
}

int
schedule_from_source(struct schedule *s, const char *src, char *err, size_t errlen)
{
	const char *p = strstr(src, " * schedule: "), *end;
	json_t *j;
	int error = 0;

	if (!p)
		return -ENOENT;
	p += strlen(" * schedule: ");
	end = p + strcspn(p, "\n");
	if (!(j = json_object()))
		return -ENOMEM;
	while (p < end && !error) {
		size_t n = strcspn(p, " \n"), k = strcspn(p, "=");
		char key[32], val[32];

		if (n == 0) {
			p++;
			continue;
		}
		if (k >= n || k >= sizeof(key) || n - k - 1 >= sizeof(val)) {
			snprintf(err, errlen, "schedule: '%.*s' is not key=value", (int)(n < 40 ? n : 40), p);
			error = -EINVAL;
			break;
		}
		memcpy(key, p, k);
		key[k] = '\0';
		memcpy(val, p + k + 1, n - k - 1);
		val[n - k - 1] = '\0';
		if (!strcmp(key, "reduce") || !strcmp(key, "cuts")) {
			json_object_set_new(j, key, json_string(val));
		} else {
			char *e;
			long v = strtol(val, &e, 10);
			if (*e || e == val) {
				snprintf(err, errlen, "schedule: %s=%s is not a number", key, val);
				error = -EINVAL;
				break;
			}
			json_object_set_new(j, key, json_integer(v));
		}
		p += n;
	}
	if (!error)
		error = schedule_from_json(s, j, err, errlen);
	json_decref(j);
	return error;
}

int
schedule_cmp(const struct schedule *a, const struct schedule *b)
{
	return a->backend != b->backend || a->block != b->block || a->vec != b->vec ||
	    a->unroll != b->unroll || a->reduce != b->reduce || a->row_cache != b->row_cache ||
	    a->row_regs != b->row_regs || a->row_split != b->row_split || a->min_blocks != b->min_blocks ||
	    a->rcp != b->rcp || a->stream != b->stream ||
	    a->scan != b->scan ||
	    a->tf32 != b->tf32 || a->gemm_algo != b->gemm_algo || a->conv_algo != b->conv_algo ||
	    a->cpu_tile != b->cpu_tile || a->attn != b->attn || a->bn_fold != b->bn_fold ||
	    a->pdl != b->pdl || a->online != b->online || a->cuts != b->cuts;
}
