/*
 * The worker's timing commands: a slot per timing set, "prepare" (poison
 * and flush before a timed run), "time" (the judge's perturbations, the
 * call, the snapshot: sealed into a memfd, or exported once as shared
 * device memory the judge copies from), "export" and "dump" (the last
 * timed run's outputs and inputs, sampled). docs/evaluation.md has the
 * protocol and what each step guarantees.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpu/wdev.h"
#include "gpu/worker_int.h"
#include "gpu/wpar.h"

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U	/* Linux 6.3; older C libraries lack the name */
#endif

/*
 * Slot sl's snapshot of set s's outputs written to f at its offset:
 * through w->tmp on CUDA (the memfd is host memory), fetched from the
 * device when fetch is set, else whatever the host buffer holds. 0 or
 * -errno.
 */
static int
snapshot_write(struct worker *w, struct wslot *sl, const struct wset *s, int f, int fetch)
{
	int error = 0;

	for (int i = 0; i < s->nout && error == 0; i++) {
		const unsigned char *src = sl->snap[i];
		size_t n = s->out[i].nbytes;

		if (wdev_dl(w->d).device_type != kDLCUDA) {
			error = worker_write_all(f, src, n);
			continue;
		}
		for (size_t off = 0; off < n && error == 0; off += w->host_cap) {
			size_t k = n - off < w->host_cap ? n - off : w->host_cap;

			if (!fetch || (error = wdev_get(w->d, w->tmp, src + off, k)) == 0)
				error = worker_write_all(f, w->tmp, k);
		}
	}
	return error;
}

/*
 * A memfd for a timed run's sealed snapshot of slot sl (set s), made
 * before the call and written once as seal_snapshot will write it, from
 * the same buffers (their stale contents): the copy after the call then
 * only overwrites pages it has written before, from pages the kernel
 * has read before. Allocating 8 MiB of shmem after the call took 1.5 ms
 * one run and 17 ms the next, inside the judge's clock from the mark to
 * the reply (judge_timed.py clock_floor), where every millisecond the
 * judge must allow is one a rewritten clock can hide. And in a virtual
 * machine the first write() from a buffer is slow however its pages were
 * mapped and touched (a Firecracker guest: 0.65 ms for 512 KiB, 0.03 ms
 * the second time): every run of a fresh process is a first run on its
 * slot, and an honest 0.1 ms kernel's first calls there were floored at
 * 1 ms. The fd, or -errno (-EOPNOTSUPP: no memfd here).
 */
static int
snapshot_memfd(struct worker *w, struct wslot *sl, const struct wset *s)
{
	size_t n = worker_out_total(s);
	int f;

	/* Refused (a kernel before 6.3, a filter): -EOPNOTSUPP, none sent. */
	if ((f = memfd_create("kb-snapshot", MFD_CLOEXEC | MFD_ALLOW_SEALING |
	    MFD_NOEXEC_SEAL)) < 0)
		return -EOPNOTSUPP;
	/* Without the pages written up front the copy writes them: slower, not wrong. */
	if (n > 0 && fallocate(f, 0, 0, (off_t)n) == 0 && snapshot_write(w, sl, s, f, 0) == 0)
		(void)lseek(f, 0, SEEK_SET);
	return f;
}

/*
 * The sealed copy of set s's outputs in slot sl's snapshot, for the
 * judge: memfd f (snapshot_memfd) written with write() (through w->tmp
 * on CUDA) and sealed against writes and resizing before the reply, so
 * nothing the candidate does after that changes what the judge reads.
 * Sealing fails while anyone holds a writable mapping of it: then so
 * does the run. 0 or -errno.
 */
static int
seal_snapshot(struct worker *w, struct wslot *sl, const struct wset *s, int f)
{
	int error;

	if (lseek(f, 0, SEEK_SET) < 0)
		return -errno;
	if ((error = snapshot_write(w, sl, s, f, 1)) == 0 && fcntl(f, F_ADD_SEALS, F_SEAL_WRITE |
	    F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		error = -errno;
	return error;
}

/*
 * The refresh sources of set k's inputs (the manifest's "sources") into
 * the slot's orig[], through its host buffer; the other inputs' orig[]
 * copied from the inputs as loaded. 0 or -errno with err set.
 */
static int
load_origins(struct worker *w, struct wslot *sl, int k, char *err, size_t errlen)
{
	const struct wset *s = &w->sets[k];
	int error;

	if (s->src_file_bytes &&
	    (error = worker_read_host(w, sl, s->src_file, s->src_file_bytes, err, errlen)) < 0)
		return error;
	for (int i = 0; i < s->nin; i++) {
		size_t nb = s->src_nbytes[i] ? s->src_nbytes[i] : s->in[i].nbytes;

		if ((error = worker_ensure(w, &sl->orig[i], &sl->orig_cap[i], nb)) < 0 ||
		    (error = s->src_nbytes[i] ?
		    wdev_put(w->d, sl->orig[i], sl->pristine + s->src_off[i], nb) :
		    wdev_copy(w->d, sl->orig[i], sl->in[i], nb)) < 0) {
			snprintf(err, errlen, "the timing inputs' sources: %s", wdev_error(w->d));
			return error;
		}
	}
	return 0;
}

/*
 * Input r->dst rebuilt for a timed run: its source's windows copied one
 * after another into the scratch and permuted from there, or without
 * windows its copy permuted, then masked where the judge sent a mask
 * (struct refresh).
 */
static int
refresh_input(struct worker *w, const struct refresh *r)
{
	const unsigned char *src = r->src;
	unsigned char *p = w->scratch;
	int error;

	for (int i = 0; i < r->nwin; i++) {
		size_t len = r->win[2 * i + 1] * (size_t)r->elsize;

		if (len && (error = wdev_copy(w->d, p, src + r->win[2 * i] * (size_t)r->elsize,
		    len)) < 0)
			return error;
		p += len;
	}
	if ((error = wdev_permute(w->d, r->dst, r->nwin ? w->scratch : r->src, r->n, r->elsize,
	    r->a, r->b)) < 0)
		return error;
	return r->mask ? wdev_xor_normal(w->d, r->dst, r->n, r->elsize, r->mask) : 0;
}

static struct wslot *
timing_slot(struct worker *w, int k, int load, char *err, size_t errlen, int *error)
{
	struct wslot *empty = NULL;

	for (int i = 0; i < WORKER_MAX_SLOTS; i++) {
		if (w->timing[i].set == k)
			return &w->timing[i];
		if (w->timing[i].set < 0 && !empty)
			empty = &w->timing[i];
	}
	if (!load || !empty) {
		if (load)
			snprintf(err, errlen, "more than %d timing sets", WORKER_MAX_SLOTS);
		else
			snprintf(err, errlen, "set %d was never timed", k);
		*error = -EINVAL;
		return NULL;
	}
	/*
	 * A slot of its own per set: rotation moves the kernel to other
	 * buffers. Its file passes through the main slot's host buffer: timing
	 * never compares inputs with a pristine copy, and cmd_run reloads its
	 * own, so three more set-sized host buffers (hundreds of MiB at GPU
	 * sizes, each faulted in afresh) would buy nothing.
	 */
	empty->pristine = w->main.pristine;
	empty->pristine_cap = w->main.pristine_cap;
	*error = worker_slot_load(w, empty, k, err, errlen);
	/* Before any run or change: what the judge's refreshes start from. */
	if (*error == 0 && (*error = load_origins(w, empty, k, err, errlen)) < 0)
		empty->set = -1;
	w->main.pristine = empty->pristine;
	w->main.pristine_cap = empty->pristine_cap;
	empty->pristine = NULL;
	empty->pristine_cap = 0;
	return *error < 0 ? NULL : empty;
}

/* A timed run's outputs poisoned with the slot's pattern, then the cache flushed. */
static int
poison_flush(struct worker *w, struct wslot *sl, const struct wset *s)
{
	int error = 0;

	for (int j = 0; j < s->nout && error == 0; j++)
		error = wdev_poison(w->d, sl->out[j], s->out[j].nbytes, s->out[j].elsize, sl->pat[j]);
	return error < 0 ? error : wdev_flush(w->d);
}

/*
 * "prepare": what comes before set k's next timed run, in a request of
 * its own: the outputs poisoned with the judge's value for that run, the
 * cache flushed, a device-wide synchronize. The "time" request after it,
 * with "prepared": true, then holds only the perturbations, the call and
 * the snapshot, and the judge's own clock around that request bounds the
 * call's time from outside this process, whose clocks a candidate can
 * rewrite (docs/evaluation.md, "The judge's clock").
 */
int
worker_cmd_prepare(struct worker *w, int k, json_t *poison)
{
	struct wslot *sl;
	struct wset *s;
	char err[512] = "";
	double t0 = wdev_now_ms();
	int error = 0;

	if (k < 0 || k >= w->nsets) {
		snprintf(err, sizeof(err), "prepare: no set %d", k);
		error = -EINVAL;
		goto out;
	}
	if (!(sl = timing_slot(w, k, 1, err, sizeof(err), &error)))
		goto out;
	s = &w->sets[k];
	if ((error = worker_parse_poison(poison, 1, 0, s, 0, sl->pat, err, sizeof(err))) < 0)
		goto out;
	if ((error = poison_flush(w, sl, s)) < 0 || (error = wdev_sync(w->d)) < 0) {
		snprintf(err, sizeof(err), "%s", wdev_error(w->d));
		worker_reply_error(w, "prepare", err);
		return DEVICE_FAILED;
	}
	sl->prepared = 1;
	worker_reply(w, json_pack("{s:b, s:f}", "ok", 1, "overhead_ms", wdev_now_ms() - t0));
	return 0;
out:
	worker_reply_error(w, "prepare", err);
	return 0;
}

/*
 * "export": set k's snapshot as shared device memory the judge maps
 * (wdev_alloc_shared), one block holding each output at the offset the
 * reply gives, the block's descriptor passed with the reply. From then
 * on a timed run of set k seals no memfd: the judge copies the snapshot
 * into memory of its own as soon as the reply arrives, inside its clock
 * (docs/evaluation.md, "The snapshot"). Once per set. Where the device
 * cannot (an old driver, a refusal) the reply says "exported": false and
 * why, and the judge keeps the sealed memfds.
 */
int
worker_cmd_export(struct worker *w, int k)
{
	struct wslot *sl;
	struct wset *s;
	json_t *offs = NULL;
	char err[512] = "";
	size_t off = 0, size = 0;
	void *base = NULL;
	int error = 0, fd = -1;

	if (!w->pass_fds) {
		snprintf(err, sizeof(err), "export: replies go through a pipe, not a socket");
		goto out;
	}
	if (k < 0 || k >= w->nsets) {
		snprintf(err, sizeof(err), "export: no set %d", k);
		goto out;
	}
	if (!(sl = timing_slot(w, k, 1, err, sizeof(err), &error)))
		goto out;
	if (sl->shared) {
		snprintf(err, sizeof(err), "export: set %d is exported already", k);
		goto out;
	}
	s = &w->sets[k];
	for (int j = 0; j < s->nout; j++)
		off += (s->out[j].nbytes + 255) / 256 * 256;
	if ((error = wdev_alloc_shared(w->d, off, &base, &size, &fd)) < 0) {
		/* Not the candidate's fault: the judge keeps the sealed memfds. */
		worker_reply(w, json_pack("{s:b, s:b, s:s}", "ok", 1, "exported", 0, "why",
		    wdev_error(w->d)));
		return 0;
	}
	offs = json_array();
	off = 0;
	for (int j = 0; j < s->nout; j++) {
		if (sl->snap[j])
			wdev_free(w->d, sl->snap[j]);
		sl->snap[j] = (unsigned char *)base + off;
		sl->snap_cap[j] = s->out[j].nbytes;
		json_array_append_new(offs, json_integer((json_int_t)off));
		off += (s->out[j].nbytes + 255) / 256 * 256;
	}
	sl->shared = base;
	sl->shared_size = size;
	sl->snapped = 0;
	worker_reply_fds(w, json_pack("{s:b, s:b, s:I, s:o}", "ok", 1, "exported", 1, "bytes",
	    (json_int_t)size, "offsets", offs), &fd, 1);
	close(fd);
	return 0;
out:
	worker_reply_error(w, "export", err);
	return 0;
}

/*
 * Timed runs. Before each, outside the timed region: the outputs
 * poisoned (with the judge's value for that run, or the fixed pattern),
 * the cache flushed (or, with prepared, both done by "prepare" for the
 * request's one run), then the set's inputs refreshed (permuted from
 * their loaded copy) and the judge's perturbations written into them (up
 * to WORKER_MAX_PERTURB elements a run, spread over every axis of each
 * input, so no timed call sees inputs it has seen before and no kernel
 * updates its last outputs cheaply; docs/evaluation.md), then a
 * device-wide synchronize. After each, also
 * outside it: the outputs copied into the slot's snapshot, which a dump
 * reads. overhead_ms is the sum of those steps. With mark (a prepared
 * run), a line {"ok":true,"calling":true} goes to the judge just before
 * the call: the judge's clock from its arrival to the reply's holds the
 * call, the snapshot and the reply, not the refresh and the changes
 * before them (judge_timed.py, clock_floor).
 */
int
worker_cmd_time(struct worker *w, json_t *sets, json_t *perturb, json_t *refresh, json_t *poison,
    int prepared, int mark)
{
	static const char calling[] = "{\"ok\":true,\"calling\":true}\n";
	struct wslot *order[256];
	size_t first[257], rfirst[257];
	struct refresh *rf = NULL;
	int fds[WORKER_MAX_FDS], nfd = 0, nexp = 0, memfd = -1;
	struct wdev_elem *pt = NULL;
	json_t *ev = json_array(), *host = json_array();
	size_t n = json_array_size(sets), i;
	double over = 0, t0, e, h;
	char err[512] = "";
	int error = 0, krc = 0;
	json_t *v;

	if (n == 0 || n > sizeof(order) / sizeof(order[0]) || (prepared && n != 1) ||
	    (mark && !prepared)) {
		snprintf(err, sizeof(err), "time: 1 to %zu sets per request (1 when prepared; "
		    "mark only when prepared)", sizeof(order) / sizeof(order[0]));
		error = -EINVAL;
		goto out;
	}
	json_array_foreach(sets, i, v) {
		long long k = json_integer_value(v);
		if (!json_is_integer(v) || k < 0 || k >= w->nsets) {
			snprintf(err, sizeof(err), "time: no set %lld", k);
			error = -EINVAL;
			goto out;
		}
		if (!(order[i] = timing_slot(w, (int)k, 1, err, sizeof(err), &error)))
			goto out;
		if (prepared && !order[i]->prepared) {
			snprintf(err, sizeof(err), "time: set %lld was not prepared", k);
			error = -EINVAL;
			goto out;
		}
		/* Validated before any run; snapshot room allocated before too. */
		if (!prepared && (error = worker_parse_poison(poison, n, i, &w->sets[k], 0, order[i]->pat,
		    err, sizeof(err))) < 0)
			goto out;
		for (int j = 0; j < w->sets[k].nout && !order[i]->shared; j++)
			if ((error = worker_ensure(w, &order[i]->snap[j], &order[i]->snap_cap[j],
			    w->sets[k].out[j].nbytes)) < 0) {
				snprintf(err, sizeof(err), "snapshot of %s: %s", w->sets[k].out[j].name,
				    wdev_error(w->d));
				goto out;
			}
	}
	if ((error = worker_parse_perturb(w, perturb, order, n, &pt, first, err, sizeof(err))) < 0 ||
	    (error = worker_parse_refresh(w, refresh, order, n, &rf, rfirst, err, sizeof(err))) < 0)
		goto out;
	if (w->pass_fds && n <= WORKER_MAX_FDS) {
		size_t most = 0;

		for (i = 0; i < n; i++)
			if (worker_out_total(&w->sets[order[i]->set]) > most)
				most = worker_out_total(&w->sets[order[i]->set]);
		if ((error = worker_host_room(w, most)) < 0)
			goto out;
	}
	for (i = 0; i < n && krc == 0; i++) {
		struct wslot *sl = order[i];
		struct wset *s = &w->sets[sl->set];

		t0 = wdev_now_ms();
		if (!prepared) {
			if ((error = worker_parse_poison(poison, n, i, s, 0, sl->pat, err, sizeof(err))) < 0)
				goto out;
			if ((error = poison_flush(w, sl, s)) < 0)
				goto device;
		}
		sl->prepared = 0;
		if (!sl->shared && w->pass_fds && n <= WORKER_MAX_FDS &&
		    (memfd = snapshot_memfd(w, sl, s)) == -EOPNOTSUPP) {
			/* The judge reads the dump instead ("sealed" < runs). */
			w->pass_fds = 0;
			memfd = -1;
		}
		/* The refresh first: the run's element changes apply to its result. */
		for (size_t j = rfirst[i]; j < rfirst[i + 1]; j++)
			if ((error = refresh_input(w, &rf[j])) < 0)
				goto device;
		if (first[i + 1] > first[i] &&
		    (error = wdev_put_elems(w->d, pt + first[i], first[i + 1] - first[i])) < 0)
			goto device;
		if ((error = wdev_sync(w->d)) < 0)
			goto device;
		over += wdev_now_ms() - t0;
		if (mark && (error = worker_write_all(w->reply_fd, calling, sizeof(calling) - 1)) < 0) {
			snprintf(err, sizeof(err), "time: the mark: %s", strerror(-error));
			goto out;
		}
		if ((error = wdev_call(w->d, w->fn, sl->din, s->nin, sl->dout, s->nout, &krc,
		    &e, &h)) < 0)
			goto device;
		/*
		 * The snapshot, at once: wdev_call returned after a device-wide
		 * synchronize, so what the judge may check is what the call left,
		 * not what a thread or stream it started writes later. A copy on
		 * the device (its bandwidth, not the bus's) for every run: the
		 * judge decides only after the reply which runs it checks.
		 */
		t0 = wdev_now_ms();
		for (int j = 0; j < s->nout; j++)
			if ((error = wdev_copy(w->d, sl->snap[j], sl->out[j], s->out[j].nbytes)) < 0)
				goto device;
		sl->snapped = 1;
		if (sl->shared) {
			nexp++;	/* the judge copies it as the reply arrives */
		} else if (memfd >= 0) {
			if ((error = seal_snapshot(w, sl, s, memfd)) < 0) {
				snprintf(err, sizeof(err), "time: sealing the snapshot of run %zu: %s "
				    "(a writable mapping of it?)", i, strerror(-error));
				goto out;
			}
			fds[nfd++] = memfd;
			memfd = -1;
		}
		over += wdev_now_ms() - t0;
		json_array_append_new(ev, json_real(e));
		json_array_append_new(host, json_real(h));
	}
	worker_reply_fds(w, json_pack("{s:b, s:i, s:O, s:O, s:f, s:i, s:i}", "ok", 1, "rc", krc, "ev_ms",
	    ev, "host_ms", host, "overhead_ms", over, "sealed", nfd, "exported", nexp), fds, nfd);
	goto out;
device:
	snprintf(err, sizeof(err), "%s", wdev_error(w->d));
	error = -EIO;
out:
	if (error < 0)
		worker_reply_error(w, "time", err);
	while (nfd > 0)
		close(fds[--nfd]);
	if (memfd >= 0)
		close(memfd);
	free(pt);
	free(rf);
	json_decref(ev);
	json_decref(host);
	return error == -EIO ? DEVICE_FAILED : 0;
}

/*
 * With m > 0, from tensors back to back in src (specs[0..n-1]) into dst:
 * each of more than m elements only its m elements at (a + j * b) mod ne,
 * in that order, the others whole; m = 0 copies nothing (src is what the
 * caller writes). The sizes written into sizes. With
 * unw, the poison pats[i] left in each (over every element) is appended.
 */
static void
gather(const struct wspec *specs, int n, const unsigned char *src, uint64_t a, uint64_t b,
    uint64_t m, unsigned char *dst, size_t *sizes, json_t *unw, unsigned char (*pats)[8])
{
	size_t off = 0, soff = 0;

	for (int i = 0; i < n; i++) {
		size_t es = (size_t)specs[i].elsize, ne = specs[i].nbytes / es;

		if (unw) {
			struct wpar_counts c = { 0 };

			wpar_count(src + off, NULL, NULL, specs[i].nbytes, specs[i].elsize, pats[i], &c);
			json_array_append_new(unw, json_integer((json_int_t)c.poison));
		}
		if (m && m < ne) {
			/* Back to back in dst: m < ne, so it fits. */
			uint64_t idx = a % ne, step = b % ne;

			for (uint64_t j = 0; j < m; j++) {
				memcpy(dst + soff + j * es, src + off + idx * es, es);
				idx += step;
				if (idx >= ne)
					idx -= ne;
			}
			sizes[i] = (size_t)m * es;
		} else {
			/* Without a sample the caller writes src itself: no copy. */
			if (m)
				memcpy(dst + soff, src + off, specs[i].nbytes);
			sizes[i] = specs[i].nbytes;
		}
		soff += sizes[i];
		off += specs[i].nbytes;
	}
}

/*
 * The outputs the last timed run on set k left (its snapshot, taken when
 * the call returned), for the judge's spot check: all of them, or with
 * "sample" only the sampled elements (the poison count is over all
 * elements either way, against that run's poison). The judge picks the
 * sample after the run, so the kernel cannot know which elements count.
 * With "inputs": n, the first n inputs' current contents too (sampled
 * alike), as "in_files": the judge compares them with its own copy of
 * the set as it perturbed it.
 */
int
worker_cmd_dump(struct worker *w, int k, json_t *sample, long long n_in, int outputs)
{
	struct wslot *sl;
	struct wset *s;
	json_t *files = json_array(), *unw = json_array(), *inf = json_array();
	struct phases ph = { 0 };
	size_t sizes[WORKER_MAX_TENSORS], in_bytes = 0;
	uint64_t a, b, m;
	char err[512] = "";
	int error = 0;
	double t;

	if (k < 0 || k >= w->nsets ||
	    !(sl = timing_slot(w, k, 0, err, sizeof(err), &error)) || !sl->snapped) {
		if (!err[0])
			snprintf(err, sizeof(err), "dump: set %d was never timed", k);
		error = -EINVAL;
		goto out;
	}
	if (worker_parse_sample(sample, &a, &b, &m) < 0) {
		snprintf(err, sizeof(err), "dump: sample is [offset, stride, count], count > 0");
		error = -EINVAL;
		goto out;
	}
	s = &w->sets[k];
	if (n_in < 0 || n_in > s->nin) {
		snprintf(err, sizeof(err), "dump: inputs is 0 to %d", s->nin);
		error = -EINVAL;
		goto out;
	}
	for (int i = 0; i < n_in; i++)
		in_bytes += s->in[i].nbytes;
	if ((error = worker_host_room(w, worker_out_total(s) > in_bytes ? worker_out_total(s) :
	    in_bytes)) < 0)
		goto out;
	/* "outputs": false: the judge holds the run's sealed snapshot. */
	t = wdev_now_ms();
	if (outputs && (error = worker_get_outputs(w, &w->sets[sl->set], sl->snap, w->host[0])) < 0) {
		snprintf(err, sizeof(err), "%s", wdev_error(w->d));
		error = -EIO;
		goto out;
	}
	ph.d2h = wdev_now_ms() - t;
	t = wdev_now_ms();
	if (outputs)
		gather(s->out, s->nout, w->host[0], a, b, m, w->host[1], sizes, unw, sl->pat);
	ph.check = wdev_now_ms() - t;
	t = wdev_now_ms();
	if (outputs && (error = worker_write_outputs(w, s, m ? w->host[1] : w->host[0], sizes,
	    m ? "smp" : "out", 0, files)) < 0) {
		snprintf(err, sizeof(err), "writing outputs: %s", strerror(-error));
		goto out;
	}
	ph.write = wdev_now_ms() - t;
	if (n_in > 0) {
		size_t off = 0;

		t = wdev_now_ms();
		for (int i = 0; i < n_in; i++) {
			if ((error = wdev_get(w->d, w->host[0] + off, sl->in[i], s->in[i].nbytes)) < 0) {
				snprintf(err, sizeof(err), "%s", wdev_error(w->d));
				error = -EIO;
				goto out;
			}
			off += s->in[i].nbytes;
		}
		ph.d2h += wdev_now_ms() - t;
		t = wdev_now_ms();
		gather(s->in, (int)n_in, w->host[0], a, b, m, w->host[1], sizes, NULL, NULL);
		ph.check += wdev_now_ms() - t;
		t = wdev_now_ms();
		if ((error = worker_write_tensors(w, s->in, (int)n_in, m ? w->host[1] : w->host[0], sizes,
		    m ? "smp" : "out", 0, 'i', inf)) < 0) {
			snprintf(err, sizeof(err), "writing inputs: %s", strerror(-error));
			goto out;
		}
		ph.write += wdev_now_ms() - t;
	}
	worker_reply(w, json_pack("{s:b, s:O, s:O, s:O, s:o}", "ok", 1, "files", files, "unwritten", unw,
	    "in_files", inf, "phase_ms", worker_phases_json(&ph)));
out:
	if (error < 0)
		worker_reply_error(w, "dump", err[0] ? err : strerror(-error));
	json_decref(files);
	json_decref(unw);
	json_decref(inf);
	return error == -EIO ? DEVICE_FAILED : 0;
}
