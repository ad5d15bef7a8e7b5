/*
 * worker_parse: the candidate worker's manifest and the judge's requests
 * (poison, perturbations, refreshes, samples) read into the worker's
 * state, every value checked before a device address is computed from
 * it. docs/evaluation.md, "Worker protocol", has the requests.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "gpu/worker_int.h"

#define KDL_BOOL 6	/* kDLBool, DLPack >= 0.8; Debian's header is 0.6 */

static int
parse_dtype(const char *s, DLDataType *dt, int *elsize)
{
	static const struct { const char *name; uint8_t code, bits; } t[] = {
		{ "float32", kDLFloat, 32 }, { "float16", kDLFloat, 16 },
		{ "bfloat16", kDLBfloat, 16 }, { "float64", kDLFloat, 64 },
		{ "int64", kDLInt, 64 }, { "int32", kDLInt, 32 }, { "int16", kDLInt, 16 },
		{ "int8", kDLInt, 8 }, { "uint8", kDLUInt, 8 }, { "bool", KDL_BOOL, 8 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(s, t[i].name)) {
			dt->code = t[i].code;
			dt->bits = t[i].bits;
			dt->lanes = 1;
			*elsize = t[i].bits / 8;
			return 0;
		}
	return -EINVAL;
}

static int
parse_specs(json_t *arr, struct wspec *specs, int *n, int inputs)
{
	size_t i, k;
	json_t *e, *d;

	if (!json_is_array(arr) || json_array_size(arr) > WORKER_MAX_TENSORS)
		return -EINVAL;
	json_array_foreach(arr, i, e) {
		struct wspec *s = &specs[i];
		size_t elems = 1;
		json_t *shape = json_object_get(e, "shape");

		snprintf(s->name, sizeof(s->name), "%s", jsonx_str(e, "name", "?"));
		if (parse_dtype(jsonx_str(e, "dtype", ""), &s->dt, &s->elsize) < 0 ||
		    !json_is_array(shape) || json_array_size(shape) > WORKER_MAX_DIMS)
			return -EINVAL;
		s->ndim = (int)json_array_size(shape);
		json_array_foreach(shape, k, d) {
			if (!json_is_integer(d) || json_integer_value(d) < 0)
				return -EINVAL;
			s->shape[k] = json_integer_value(d);
			elems *= (size_t)s->shape[k];
		}
		s->nbytes = elems * (size_t)s->elsize;
		s->offset = inputs ? (size_t)jsonx_int(e, "offset", -1) : 0;
		if ((long long)jsonx_int(e, "nbytes", -1) != (long long)s->nbytes)
			return -EINVAL;
	}
	*n = (int)json_array_size(arr);
	return 0;
}

/* A plain name inside the worker's dir: the manifest cannot point elsewhere. */
static int
plain_name(const char *file, size_t cap)
{
	return *file && !strchr(file, '/') && file[0] != '.' && strlen(file) < cap;
}

/*
 * A set's "sources" ({"file", "inputs": [{"input", "offset", "nbytes"}]},
 * packed in the file in that order; absent: none): at least the input's
 * bytes each, whole elements, one per input. 0 or -EINVAL.
 */
static int
parse_sources(json_t *v, struct wset *s)
{
	json_t *ins, *e;
	const char *file;
	size_t i;

	if (!v)
		return 0;
	ins = json_object_get(v, "inputs");
	file = jsonx_str(v, "file", "");
	if (!plain_name(file, sizeof(s->src_file)) || !json_is_array(ins) ||
	    json_array_size(ins) > WORKER_MAX_TENSORS)
		return -EINVAL;
	json_array_foreach(ins, i, e) {
		long long j = jsonx_int(e, "input", -1), off = jsonx_int(e, "offset", -1),
		    nb = jsonx_int(e, "nbytes", -1);

		if (j < 0 || j >= s->nin || s->src_nbytes[j] || off < 0 ||
		    (size_t)off != s->src_file_bytes || nb <= 0 ||
		    (size_t)nb < s->in[j].nbytes || nb % s->in[j].elsize)
			return -EINVAL;
		s->src_off[j] = (size_t)off;
		s->src_nbytes[j] = (size_t)nb;
		s->src_file_bytes += (size_t)nb;
	}
	snprintf(s->src_file, sizeof(s->src_file), "%s", file);
	return 0;
}

int
worker_load_manifest(struct worker *w, char *err, size_t errlen)
{
	char path[4096], jerr[256];
	json_t *m = NULL, *sets, *e;
	size_t i;
	int error;

	snprintf(path, sizeof(path), "%s/manifest.json", w->o->dir);
	if ((error = jsonx_load_file(path, WORKER_MANIFEST_MAX, &m, jerr, sizeof(jerr))) < 0) {
		snprintf(err, errlen, "%.300s: %s", path, error == -EINVAL ? jerr : strerror(-error));
		return error;
	}
	sets = json_object_get(m, "sets");
	if (!json_is_array(sets) || json_array_size(sets) == 0 ||
	    json_array_size(sets) > WORKER_MAX_SETS) {
		snprintf(err, errlen, "%.300s: no input sets", path);
		error = -EINVAL;
		goto out;
	}
	if (!(w->sets = calloc(json_array_size(sets), sizeof(*w->sets)))) {
		error = -ENOMEM;
		goto out;
	}
	json_array_foreach(sets, i, e) {
		struct wset *s = &w->sets[i];
		const char *file = jsonx_str(e, "file", "");

		if (!plain_name(file, sizeof(s->file)) ||
		    parse_specs(json_object_get(e, "inputs"), s->in, &s->nin, 1) < 0 ||
		    parse_specs(json_object_get(e, "outputs"), s->out, &s->nout, 0) < 0) {
			snprintf(err, errlen, "%.300s: set %zu is malformed", path, i);
			error = -EINVAL;
			goto out;
		}
		snprintf(s->file, sizeof(s->file), "%s", file);
		for (int k = 0; k < s->nin; k++) {
			if (s->in[k].offset != s->file_bytes) {
				snprintf(err, errlen, "%.300s: set %zu: inputs not packed", path, i);
				error = -EINVAL;
				goto out;
			}
			s->file_bytes += s->in[k].nbytes;
		}
		if (parse_sources(json_object_get(e, "sources"), s) < 0) {
			snprintf(err, errlen, "%.300s: set %zu: malformed sources", path, i);
			error = -EINVAL;
			goto out;
		}
	}
	w->nsets = (int)json_array_size(sets);
out:
	json_decref(m);
	return error;
}

static int
hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* n bytes from 2n hex digits (thousands of values a run: no sscanf). */
static int
hex_span(const char *h, unsigned char *v, int n)
{
	for (int i = 0; i < n; i++) {
		int hi = hex_digit((unsigned char)h[2 * i]), lo = hex_digit((unsigned char)h[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		v[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/* n bytes from exactly 2n hex digits. 0 or -EINVAL. */
static int
hex_bytes(const char *h, unsigned char *v, int n)
{
	return strlen(h) == (size_t)n * 2 ? hex_span(h, v, n) : -EINVAL;
}

/*
 * Run `run` of `runs`' poison for set s's outputs into pat: pj is the
 * request's "poison", one list per run of one hex string per output (an
 * element's bytes, little-endian), drawn by the judge for every run from
 * one distribution so a kernel cannot tell a trial from a timed run by
 * it. Absent: the fixed pattern `dflt`. 0 or -EINVAL with err set.
 */
int
worker_parse_poison(json_t *pj, size_t runs, size_t run, const struct wset *s, int dflt,
    unsigned char pat[][8], char *err, size_t errlen)
{
	json_t *r;

	if (!pj) {
		for (int i = 0; i < s->nout; i++)
			wdev_pattern(s->out[i].elsize, dflt, pat[i]);
		return 0;
	}
	r = json_array_get(pj, run);
	if (!json_is_array(pj) || json_array_size(pj) != runs || !json_is_array(r) ||
	    json_array_size(r) != (size_t)s->nout) {
		snprintf(err, errlen, "poison holds one list per run of one value per output");
		return -EINVAL;
	}
	for (int i = 0; i < s->nout; i++) {
		const char *hx = json_string_value(json_array_get(r, (size_t)i));
		int es = s->out[i].elsize;

		if (!hx || es > 8 || hex_bytes(hx, pat[i], es) < 0 ||
		    (es == 8 && memcmp(pat[i], pat[i] + 4, 4))) {
			snprintf(err, errlen, "poison[%zu][%d]: not %d bytes in hex%s", run, i, es,
			    es == 8 ? " (a 32-bit word twice)" : "");
			return -EINVAL;
		}
		for (int b = es; b < 8; b++)
			pat[i][b] = pat[i][b - es];
	}
	return 0;
}

/*
 * Parse a time request's "perturb": one list per timed run, each entry
 * [input index, element index, "hex bytes of the new value"] (the
 * element's size, little-endian), or packed, many changes of one input:
 * [input index, "positions", "values"], the positions as little-endian
 * int64s and the values back to back, in hex (what the judge sends:
 * thousands of changes a run as two strings, not thousands of JSON
 * arrays to parse). At most WORKER_MAX_PERTURB changes a run. Resolved
 * to device addresses in p, run i's at p[first[i]] .. p[first[i + 1] - 1].
 * Absent: none.
 */
int
worker_parse_perturb(struct worker *w, json_t *pj, struct wslot **order, size_t n,
    struct wdev_elem **out, size_t *first, char *err, size_t errlen)
{
	struct wdev_elem *p = NULL;
	size_t np = 0, cap = 0, i, j;
	json_t *run, *e;

	*out = NULL;
	for (i = 0; i <= n; i++)
		first[i] = 0;
	if (!pj)
		return 0;
	if (!json_is_array(pj) || json_array_size(pj) != n) {
		snprintf(err, errlen, "time: perturb holds one list per timed run");
		return -EINVAL;
	}
	json_array_foreach(pj, i, run) {
		struct wslot *sl = order[i];
		struct wset *s = &w->sets[sl->set];

		first[i] = np;
		if (!json_is_array(run) || json_array_size(run) > WORKER_MAX_PERTURB) {
			snprintf(err, errlen, "time: perturb[%zu] is not a list of at most %d entries",
			    i, WORKER_MAX_PERTURB);
			goto bad;
		}
		json_array_foreach(run, j, e) {
			json_t *ji = json_array_get(e, 0), *je = json_array_get(e, 1);
			const char *hx = json_string_value(json_array_get(e, 2));
			const char *hp = json_string_value(je);
			long long in, el;
			size_t cnt, nel;
			struct wspec *sp;

			if (json_array_size(e) != 3 || !json_is_integer(ji) ||
			    (!json_is_integer(je) && !hp) || !hx ||
			    (in = json_integer_value(ji)) < 0 || in >= s->nin) {
				snprintf(err, errlen, "time: perturb[%zu][%zu] is not [input, element, hex] "
				    "or [input, \"positions\", \"values\"]", i, j);
				goto bad;
			}
			sp = &s->in[in];
			nel = sp->nbytes / (size_t)sp->elsize;
			/* Packed: little-endian int64 positions, then the values, in hex. */
			cnt = hp ? strlen(hp) / 16 : 1;
			if (hp && (strlen(hp) % 16 || strlen(hx) != cnt * 2 * (size_t)sp->elsize)) {
				snprintf(err, errlen, "time: perturb[%zu][%zu]: %zu positions need %zu hex "
				    "digits of values for %s", i, j, cnt, cnt * 2 * (size_t)sp->elsize,
				    sp->name);
				goto bad;
			}
			if (np + cnt - first[i] > WORKER_MAX_PERTURB) {
				snprintf(err, errlen, "time: perturb[%zu] holds over %d changes", i,
				    WORKER_MAX_PERTURB);
				goto bad;
			}
			for (size_t c = 0; c < cnt; c++) {
				unsigned char pb[8];

				if (hp) {
					if (hex_span(hp + 16 * c, pb, 8) < 0) {
						snprintf(err, errlen, "time: perturb[%zu][%zu]: position %zu "
						    "is not hex", i, j, c);
						goto bad;
					}
					el = 0;
					for (int b = 7; b >= 0; b--)
						el = (long long)((unsigned long long)el << 8 | pb[b]);
				} else {
					el = json_integer_value(je);
				}
				if (el < 0 || (size_t)el >= nel) {
					snprintf(err, errlen, "time: perturb[%zu][%zu]: no element %lld in %s",
					    i, j, el, sp->name);
					goto bad;
				}
				if (np == cap) {
					struct wdev_elem *q = realloc(p, (cap = cap ? 2 * cap : 1024) *
					    sizeof(*p));
					if (!q) {
						snprintf(err, errlen, "time: out of memory");
						goto bad;
					}
					p = q;
				}
				p[np].dst = (unsigned char *)sl->in[in] + (size_t)el * (size_t)sp->elsize;
				p[np].n = sp->elsize;
				if (sp->elsize > 8 || (hp ? hex_span(hx + (size_t)2 * sp->elsize * c,
				    p[np].v, sp->elsize) : hex_bytes(hx, p[np].v, sp->elsize)) < 0) {
					snprintf(err, errlen, "time: perturb[%zu][%zu]: the value is not %d "
					    "bytes in hex", i, j, sp->elsize);
					goto bad;
				}
				np++;
			}
		}
	}
	first[n] = np;
	*out = p;
	return 0;
bad:
	free(p);
	return -EINVAL;
}

/*
 * A refresh entry's mask, its last entry where that is a string: the hex
 * of a nonzero mask below the mantissa's top bit (2^23 for float32, 2^52
 * for float64; no other type takes one), into r->mask. 1 with a mask, 0
 * without, -EINVAL.
 */
static int
parse_mask(json_t *e, const struct wspec *t, struct refresh *r)
{
	json_t *v = json_array_get(e, json_array_size(e) - 1);
	const char *s;
	char *end;
	unsigned long long m;

	r->mask = 0;
	if (!json_is_string(v))
		return 0;
	s = json_string_value(v);
	errno = 0;
	m = strtoull(s, &end, 16);
	if (!*s || *end || errno || m == 0 || t->dt.code != kDLFloat ||
	    !(t->elsize == 4 ? m < (1ull << 23) : t->elsize == 8 && m < (1ull << 52)))
		return -EINVAL;
	r->mask = m;
	return 1;
}

/*
 * A refresh entry's windows, entries 3.. of e ([start, length] pairs of
 * a source of m elements, lengths summing to n) into r, but for a mask
 * after them (has_mask). 0 or -EINVAL.
 */
static int
parse_windows(json_t *e, int has_mask, size_t n, size_t m, struct refresh *r)
{
	size_t k = json_array_size(e) - 3 - (size_t)has_mask, sum = 0;

	if (k % 2 || k > 2 * WORKER_MAX_WINDOWS || (k && !m))
		return -EINVAL;
	for (size_t i = 0; i < k; i++) {
		json_t *v = json_array_get(e, 3 + i);

		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    (size_t)json_integer_value(v) > m)
			return -EINVAL;
		r->win[i] = (size_t)json_integer_value(v);
	}
	for (size_t i = 0; i < k; i += 2) {
		if (r->win[i + 1] > m - r->win[i])
			return -EINVAL;
		sum += r->win[i + 1];
	}
	if (k && sum != n)
		return -EINVAL;
	r->nwin = (int)(k / 2);
	return 0;
}

/*
 * Parse a time request's "refresh": one list per timed run, each entry
 * [input index, a, b] with 0 < a < n and 0 <= b < n for the input's n
 * elements (n < 2^31, so a * e stays below 2^62), followed by up to
 * WORKER_MAX_WINDOWS [start, length] windows of the input's source (the
 * manifest's "sources") whose lengths sum to n: the input is rebuilt from
 * the windows, concatenated, or without them from the input as loaded;
 * then, where the entry ends in a string, that mask is applied
 * (parse_mask, wdev_xor_normal).
 * Resolved into r, run i's at r[first[i]] .. r[first[i + 1] - 1], with
 * the scratch the windows need allocated. Absent: none.
 */
int
worker_parse_refresh(struct worker *w, json_t *rj, struct wslot **order, size_t n, struct refresh **out,
    size_t *first, char *err, size_t errlen)
{
	struct refresh *r = NULL;
	size_t nr = 0, i, j, scratch = 0;
	json_t *run, *e;

	*out = NULL;
	for (i = 0; i <= n; i++)
		first[i] = 0;
	if (!rj)
		return 0;
	if (!json_is_array(rj) || json_array_size(rj) != n) {
		snprintf(err, errlen, "time: refresh holds one list per timed run");
		return -EINVAL;
	}
	if (!(r = calloc(n * WORKER_MAX_TENSORS + 1, sizeof(*r)))) {
		snprintf(err, errlen, "time: out of memory");
		return -ENOMEM;
	}
	json_array_foreach(rj, i, run) {
		struct wslot *sl = order[i];
		struct wset *s = &w->sets[sl->set];

		first[i] = nr;
		if (!json_is_array(run) || json_array_size(run) > WORKER_MAX_TENSORS) {
			snprintf(err, errlen, "time: refresh[%zu] is not a list of at most %d entries",
			    i, WORKER_MAX_TENSORS);
			goto bad;
		}
		json_array_foreach(run, j, e) {
			json_t *ji = json_array_get(e, 0), *ja = json_array_get(e, 1),
			    *jb = json_array_get(e, 2);
			long long in, a, b;
			size_t ne;
			int mk;

			if (json_array_size(e) < 3 || !json_is_integer(ji) || !json_is_integer(ja) ||
			    !json_is_integer(jb) || (in = json_integer_value(ji)) < 0 || in >= s->nin) {
				snprintf(err, errlen, "time: refresh[%zu][%zu] is not [input, a, b, "
				    "windows...]", i, j);
				goto bad;
			}
			ne = s->in[in].nbytes / (size_t)s->in[in].elsize;
			a = json_integer_value(ja);
			b = json_integer_value(jb);
			if (ne >= (1ull << 31) || a <= 0 || (size_t)a >= ne || b < 0 || (size_t)b >= ne) {
				snprintf(err, errlen, "time: refresh[%zu][%zu]: a or b out of range for %s",
				    i, j, s->in[in].name);
				goto bad;
			}
			if ((mk = parse_mask(e, &s->in[in], &r[nr])) < 0) {
				snprintf(err, errlen, "time: refresh[%zu][%zu]: the mask is not the hex "
				    "of a nonzero value below the mantissa's top bit of float32 or "
				    "float64 %s", i, j, s->in[in].name);
				goto bad;
			}
			if (parse_windows(e, mk, ne, s->src_nbytes[in] / (size_t)s->in[in].elsize,
			    &r[nr]) < 0) {
				snprintf(err, errlen, "time: refresh[%zu][%zu]: windows out of range of "
				    "%s's source, or not %zu elements in all", i, j, s->in[in].name, ne);
				goto bad;
			}
			r[nr].dst = sl->in[in];
			r[nr].src = sl->orig[in];
			r[nr].n = ne;
			r[nr].elsize = s->in[in].elsize;
			r[nr].a = (uint64_t)a;
			r[nr].b = (uint64_t)b;
			if (r[nr].nwin && s->in[in].nbytes > scratch)
				scratch = s->in[in].nbytes;
			nr++;
		}
	}
	if (scratch && worker_ensure(w, &w->scratch, &w->scratch_cap, scratch) < 0) {
		snprintf(err, errlen, "time: the refresh's scratch: %s", wdev_error(w->d));
		free(r);
		return -ENOMEM;
	}
	first[n] = nr;
	*out = r;
	return 0;
bad:
	free(r);
	return -EINVAL;
}

/*
 * Parse a dump's "sample": [a, b, m]: m elements of each output, at
 * (a + j * b) mod n for j < m, n its element count. 0 with *m = 0 when
 * absent (the whole outputs), -EINVAL when malformed.
 */
int
worker_parse_sample(json_t *v, uint64_t *a, uint64_t *b, uint64_t *m)
{
	*a = *b = *m = 0;
	if (!v)
		return 0;
	if (!json_is_array(v) || json_array_size(v) != 3)
		return -EINVAL;
	for (size_t i = 0; i < 3; i++)
		if (!json_is_integer(json_array_get(v, i)) ||
		    json_integer_value(json_array_get(v, i)) < 0)
			return -EINVAL;
	*a = (uint64_t)json_integer_value(json_array_get(v, 0));
	*b = (uint64_t)json_integer_value(json_array_get(v, 1));
	*m = (uint64_t)json_integer_value(json_array_get(v, 2));
	return *m ? 0 : -EINVAL;
}
