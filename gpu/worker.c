#include "gpu/worker.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/jsonx.h"
#include "gpu/sandbox.h"
#include "gpu/wdev.h"
#include "gpu/worker_int.h"
#include "gpu/wpar.h"

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U	/* Linux 6.3; older C libraries lack the name */
#endif

static int
read_file(const char *path, unsigned char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;
	char extra;
	int error;

	if (fd < 0)
		return -errno;
	/* Threads: a set's file is hundreds of MiB at GPU sizes. */
	if ((error = wpar_pread(fd, buf, n, 0)) == 0) {
		while ((r = pread(fd, &extra, 1, (off_t)n)) < 0 && errno == EINTR)
			;
		error = r == 0 ? 0 : -EPROTO;
	}
	close(fd);
	return error;
}

static int
ensure(struct worker *w, void **p, size_t *cap, size_t n)
{
	int error;

	if (*p && *cap >= n)
		return 0;
	if (*p)
		wdev_free(w->d, *p);
	*p = NULL;
	*cap = 0;
	if ((error = wdev_alloc(w->d, n, p)) < 0)
		return error;
	*cap = n;
	return 0;
}

static void
set_tensor(DLTensor *t, void *data, struct wspec *s, DLDevice dev)
{
	memset(t, 0, sizeof(*t));
	t->data = data;
	t->device = dev;
	t->ndim = s->ndim;
	t->dtype = s->dt;
	t->shape = s->shape;
	t->strides = NULL;	/* compact, row-major */
	t->byte_offset = 0;
}

/*
 * Put set k's inputs into the slot's buffers. Buffers are reused when
 * large enough, so every trial of a shape runs on the same pointers: a
 * kernel that caches results per input pointer returns stale outputs.
 */
static int
slot_load(struct worker *w, struct wslot *sl, int k, char *err, size_t errlen)
{
	struct wset *s = &w->sets[k];
	char path[4096];
	int error;

	if (sl->pristine_cap < s->file_bytes) {
		wdev_host_free(w->d, sl->pristine);
		sl->pristine = NULL;
		sl->pristine_cap = 0;
		if ((error = wdev_host_alloc(w->d, s->file_bytes, (void **)&sl->pristine)) < 0)
			return error;
		sl->pristine_cap = s->file_bytes;
	}
	snprintf(path, sizeof(path), "%s/%s", w->o->dir, s->file);
	if ((error = read_file(path, sl->pristine, s->file_bytes)) < 0) {
		snprintf(err, errlen, "%.300s: %s", path,
		    error == -EPROTO ? "size differs from the manifest" : strerror(-error));
		return error;
	}
	for (int i = 0; i < s->nin; i++) {
		if ((error = ensure(w, &sl->in[i], &sl->in_cap[i], s->in[i].nbytes)) < 0 ||
		    (error = wdev_put(w->d, sl->in[i], sl->pristine + s->in[i].offset,
			s->in[i].nbytes)) < 0) {
			snprintf(err, errlen, "input %s: %s", s->in[i].name, wdev_error(w->d));
			return error;
		}
		set_tensor(&sl->din[i], sl->in[i], &s->in[i], wdev_dl(w->d));
	}
	for (int i = 0; i < s->nout; i++) {
		if ((error = ensure(w, &sl->out[i], &sl->out_cap[i], s->out[i].nbytes)) < 0) {
			snprintf(err, errlen, "output %s: %s", s->out[i].name, wdev_error(w->d));
			return error;
		}
		set_tensor(&sl->dout[i], sl->out[i], &s->out[i], wdev_dl(w->d));
	}
	sl->set = k;
	return 0;
}

static size_t
out_total(const struct wset *s)
{
	size_t n = 0;

	for (int i = 0; i < s->nout; i++)
		n += s->out[i].nbytes;
	return n;
}

static void
host_release(struct worker *w)
{
	for (int i = 0; i < 2; i++) {
		wdev_host_free(w->d, w->host[i]);
		w->host[i] = NULL;
	}
	wdev_host_free(w->d, w->tmp);
	w->tmp = NULL;
	w->host_cap = 0;
}

static int
host_room(struct worker *w, size_t n)
{
	if (w->host_cap >= n && w->host[0])
		return 0;
	host_release(w);
	/* Page-locked where the driver allows: every trial copies through these. */
	if (wdev_host_alloc(w->d, n, (void **)&w->host[0]) < 0 ||
	    wdev_host_alloc(w->d, n, (void **)&w->host[1]) < 0 ||
	    wdev_host_alloc(w->d, n, (void **)&w->tmp) < 0)
		return -ENOMEM;
	w->host_cap = n;
	return 0;
}

/* Copy the slot's outputs, back to back, into dst. */
static int
get_outputs(struct worker *w, struct wslot *sl, unsigned char *dst)
{
	struct wset *s = &w->sets[sl->set];
	size_t off = 0;
	int error;

	for (int i = 0; i < s->nout; i++) {
		if ((error = wdev_get(w->d, dst + off, sl->out[i], s->out[i].nbytes)) < 0)
			return error;
		off += s->out[i].nbytes;
	}
	return 0;
}

/* Copy the slot's snapshot of its last timed run, back to back, into dst. */
static int
get_snapshot(struct worker *w, struct wslot *sl, unsigned char *dst)
{
	struct wset *s = &w->sets[sl->set];
	size_t off = 0;
	int error;

	for (int i = 0; i < s->nout; i++) {
		if ((error = wdev_get(w->d, dst + off, sl->snap[i], s->out[i].nbytes)) < 0)
			return error;
		off += s->out[i].nbytes;
	}
	return 0;
}

/*
 * Write one file per tensor (specs[0..n-1], back to back in buf) into the
 * scratch under fixed names (prefix, run, kind 'o' output or 'i' input,
 * index); their paths appended to files.
 * The files are rewritten in place, never truncated to zero first, so the
 * page cache's pages are reused from one trial to the next instead of
 * being allocated and freed hundreds of MiB at a time.
 */
static int
write_tensors(struct worker *w, const struct wspec *specs, int n, const unsigned char *buf,
    const size_t *sizes, const char *prefix, int run, char kind, json_t *files)
{
	char path[4096];
	size_t off = 0;
	int error, fd;

	for (int i = 0; i < n; i++) {
		size_t nb = sizes ? sizes[i] : specs[i].nbytes;

		snprintf(path, sizeof(path), "%s/%s_r%d_%c%d.bin", w->o->scratch, prefix, run, kind, i);
		if ((fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) < 0)
			return -errno;
		error = wpar_pwrite(fd, buf + off, nb);
		if (error == 0 && ftruncate(fd, (off_t)nb) < 0)
			error = -errno;
		if (close(fd) < 0 && error == 0)
			error = -errno;
		if (error < 0)
			return error;
		json_array_append_new(files, json_string(path));
		off += nb;
	}
	return 0;
}

static int
write_outputs(struct worker *w, const struct wset *s, const unsigned char *buf,
    const size_t *sizes, const char *prefix, int run, json_t *files)
{
	return write_tensors(w, s->out, s->nout, buf, sizes, prefix, run, 'o', files);
}

/* write() all n bytes at fd's offset. 0 or -errno. */
static int
write_all(int fd, const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n > 0) {
		ssize_t k = write(fd, b, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Where a request's time went in the worker, in ms (the judge reports it). */
struct phases {
	double load, device, d2h, check, write;
};

static json_t *
phases_json(const struct phases *p)
{
	return json_pack("{s:f, s:f, s:f, s:f, s:f}", "load", p->load, "device", p->device,
	    "d2h", p->d2h, "check", p->check, "write", p->write);
}

/*
 * Send a reply line; with nfd > 0, fds go with its first bytes as
 * SCM_RIGHTS (the judge's end is a socket then). The fds stay open here.
 */
static void
reply_fds(struct worker *w, json_t *r, const int *fds, int nfd)
{
	struct buf b = BUF_INIT(BUF_MAX_DEFAULT);

	if (jsonx_dump(r, JSON_COMPACT, &b) == 0 && buf_addch(&b, '\n') == 0) {
		size_t done = 0;

		while (nfd > 0 && done == 0) {
			union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(int) * WORKER_MAX_FDS)]; } u;
			struct iovec iov = { b.data, b.len };
			struct msghdr m = { 0 };
			struct cmsghdr *c;
			ssize_t n;

			memset(&u, 0, sizeof(u));
			m.msg_iov = &iov;
			m.msg_iovlen = 1;
			m.msg_control = u.buf;
			m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfd);
			c = CMSG_FIRSTHDR(&m);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfd);
			memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfd);
			n = sendmsg(w->reply_fd, &m, MSG_NOSIGNAL);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			done = (size_t)n;
		}
		while (done < b.len) {
			ssize_t n = write(w->reply_fd, b.data + done, b.len - done);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			done += (size_t)n;
		}
	}
	buf_free(&b);
	json_decref(r);
}

static void
reply(struct worker *w, json_t *r)
{
	reply_fds(w, r, NULL, 0);
}

/*
 * The sealed copy of set s's outputs in slot sl's snapshot, for the
 * judge: a memfd written with write() (through w->tmp on CUDA) and sealed
 * against writes and resizing before the reply, so nothing the candidate
 * does after that changes what the judge reads. Sealing fails while
 * anyone holds a writable mapping of it: then so does the run. The fd in
 * *fd, or -errno (-EOPNOTSUPP: no memfd here).
 */
static int
seal_snapshot(struct worker *w, struct wslot *sl, const struct wset *s, int *fd)
{
	int f, error = 0;

	*fd = -1;
	/* Refused (a kernel before 6.3, a filter): -EOPNOTSUPP, none sent. */
	if ((f = memfd_create("kb-snapshot", MFD_CLOEXEC | MFD_ALLOW_SEALING |
	    MFD_NOEXEC_SEAL)) < 0)
		return -EOPNOTSUPP;
	for (int i = 0; i < s->nout && error == 0; i++) {
		const unsigned char *src = sl->snap[i];
		size_t n = s->out[i].nbytes;

		if (wdev_dl(w->d).device_type == kDLCUDA) {
			/* Through the host buffer: the memfd is host memory. */
			for (size_t off = 0; off < n && error == 0; off += w->host_cap) {
				size_t k = n - off < w->host_cap ? n - off : w->host_cap;

				if ((error = wdev_get(w->d, w->tmp, src + off, k)) == 0)
					error = write_all(f, w->tmp, k);
			}
		} else {
			error = write_all(f, src, n);
		}
	}
	if (error == 0 && fcntl(f, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW |
	    F_SEAL_SEAL) < 0)
		error = -errno;
	if (error < 0) {
		close(f);
		return error;
	}
	*fd = f;
	return 0;
}

static void
reply_error(struct worker *w, const char *stage, const char *msg)
{
	reply(w, json_pack("{s:b, s:s, s:s}", "ok", 0, "stage", stage, "error", msg));
}

/* Fatal device errors end the worker: the context may be lost. */
#define DEVICE_FAILED 1


static int
cmd_run(struct worker *w, int k, json_t *poison)
{
	struct wslot *sl = &w->main;
	struct wset *s = &w->sets[k];
	size_t total = out_total(s);
	json_t *rc = json_array(), *files = json_array(), *unw = json_array();
	json_t *late = json_array(), *mod = json_array(), *ms = json_array();
	struct phases ph = { 0 };
	char err[512] = "";
	unsigned char pats[2][WORKER_MAX_TENSORS][8];
	size_t differ = 0;
	double t;
	int error = 0;

	t = wdev_now_ms();
	if ((error = worker_parse_poison(poison, 2, 0, s, 0, pats[0], err, sizeof(err))) < 0 ||
	    (error = worker_parse_poison(poison, 2, 1, s, 1, pats[1], err, sizeof(err))) < 0 ||
	    (error = slot_load(w, sl, k, err, sizeof(err))) < 0 ||
	    (error = host_room(w, total > s->file_bytes ? total : s->file_bytes)) < 0)
		goto out;
	ph.load = wdev_now_ms() - t;
	for (int run = 0; run < 2; run++) {
		json_t *u = json_array(), *f = json_array();
		size_t off = 0, changed = 0;
		double ev, host;
		int krc = 0;

		json_array_append_new(unw, u);
		json_array_append_new(files, f);
		t = wdev_now_ms();
		for (int i = 0; i < s->nout && error == 0; i++)
			error = wdev_poison(w->d, sl->out[i], s->out[i].nbytes, s->out[i].elsize,
			    pats[run][i]);
		if (error < 0 ||
		    (error = wdev_call(w->d, w->fn, sl->din, s->nin, sl->dout, s->nout, &krc,
			&ev, &host)) < 0)
			goto device;
		ph.device += wdev_now_ms() - t;
		t = wdev_now_ms();
		if ((error = get_outputs(w, sl, w->host[run])) < 0)
			goto device;
		json_array_append_new(rc, json_integer(krc));
		json_array_append_new(ms, json_real(ev));
		/* A second look after a pause: work left running after return shows. */
		usleep(WORKER_DEFER_MS * 1000);
		if ((error = wdev_sync(w->d)) < 0 || (error = get_outputs(w, sl, w->tmp)) < 0)
			goto device;
		ph.d2h += wdev_now_ms() - t;
		t = wdev_now_ms();
		/* One pass per output: poison left, changed since, differing from run 1. */
		for (int i = 0; i < s->nout; i++) {
			struct wpar_counts c = { 0 };

			wpar_count(w->host[run] + off, w->tmp + off, run ? w->host[0] + off : NULL,
			    s->out[i].nbytes, s->out[i].elsize, pats[run][i], &c);
			json_array_append_new(u, json_integer((json_int_t)c.poison));
			changed += c.late;
			differ += c.differ * (size_t)s->out[i].elsize;
			off += s->out[i].nbytes;
		}
		json_array_append_new(late, json_integer((json_int_t)changed));
		ph.check += wdev_now_ms() - t;
		/* Inputs once per set, after both runs: a change made by the first
		 * run persists (the transfer is the costliest step at GPU sizes). */
		for (int i = 0; run == 1 && i < s->nin; i++) {
			struct wpar_counts c = { 0 };

			t = wdev_now_ms();
			if ((error = wdev_get(w->d, w->tmp, sl->in[i], s->in[i].nbytes)) < 0)
				goto device;
			ph.d2h += wdev_now_ms() - t;
			t = wdev_now_ms();
			wpar_count(w->tmp, sl->pristine + s->in[i].offset, NULL, s->in[i].nbytes, 1,
			    NULL, &c);
			if (c.late && json_array_size(mod) < WORKER_MAX_TENSORS)
				json_array_append_new(mod, json_string(s->in[i].name));
			ph.check += wdev_now_ms() - t;
		}
		/*
		 * The second run's outputs go to the judge only when they differ
		 * from the first's: at GPU sizes the files are the costliest part
		 * of a trial. (Once the candidate is loaded this process is as
		 * trustworthy as it: the judge's own comparison of values against
		 * expected outputs is what decides, and a run that differs is sent.)
		 */
		t = wdev_now_ms();
		if ((run == 0 || differ) &&
		    (error = write_outputs(w, s, w->host[run], NULL, "out", run, f)) < 0) {
			snprintf(err, sizeof(err), "writing outputs to %s: %s", w->o->scratch,
			    strerror(-error));
			goto out;
		}
		ph.write += wdev_now_ms() - t;
	}
	reply(w, json_pack("{s:b, s:O, s:O, s:O, s:O, s:O, s:O, s:I, s:o}", "ok", 1, "rc", rc,
	    "files", files, "unwritten", unw, "changed_after_return", late,
	    "inputs_modified", mod, "ms", ms, "runs_differ_bytes", (json_int_t)differ,
	    "phase_ms", phases_json(&ph)));
	goto out;
device:
	snprintf(err, sizeof(err), "%s", wdev_error(w->d));
	error = -EIO;
out:
	if (error < 0)
		reply_error(w, "run", err[0] ? err : strerror(-error));
	json_decref(rc);
	json_decref(files);
	json_decref(unw);
	json_decref(late);
	json_decref(mod);
	json_decref(ms);
	return error == -EIO ? DEVICE_FAILED : 0;
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
	*error = slot_load(w, empty, k, err, errlen);
	w->main.pristine = empty->pristine;
	w->main.pristine_cap = empty->pristine_cap;
	empty->pristine = NULL;
	empty->pristine_cap = 0;
	if (*error < 0)
		return NULL;
	/* Before any run or change: what the judge's refreshes start from. */
	for (int i = 0; i < w->sets[k].nin; i++)
		if ((*error = ensure(w, &empty->orig[i], &empty->orig_cap[i],
		    w->sets[k].in[i].nbytes)) < 0 || (*error = wdev_copy(w->d, empty->orig[i],
		    empty->in[i], w->sets[k].in[i].nbytes)) < 0) {
			snprintf(err, errlen, "the timing inputs' copy: %s", wdev_error(w->d));
			empty->set = -1;
			return NULL;
		}
	return empty;
}




/* A run's refresh of one input: its elements permuted from the loaded copy. */


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
static int
cmd_prepare(struct worker *w, int k, json_t *poison)
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
		reply_error(w, "prepare", err);
		return DEVICE_FAILED;
	}
	sl->prepared = 1;
	reply(w, json_pack("{s:b, s:f}", "ok", 1, "overhead_ms", wdev_now_ms() - t0));
	return 0;
out:
	reply_error(w, "prepare", err);
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
 * reads. overhead_ms is the sum of those steps.
 */
static int
cmd_time(struct worker *w, json_t *sets, json_t *perturb, json_t *refresh, json_t *poison,
    int prepared)
{
	struct wslot *order[256];
	size_t first[257], rfirst[257];
	struct refresh *rf = NULL;
	int fds[WORKER_MAX_FDS], nfd = 0;
	struct wdev_elem *pt = NULL;
	json_t *ev = json_array(), *host = json_array();
	size_t n = json_array_size(sets), i;
	double over = 0, t0, e, h;
	char err[512] = "";
	int error = 0, krc = 0;
	json_t *v;

	if (n == 0 || n > sizeof(order) / sizeof(order[0]) || (prepared && n != 1)) {
		snprintf(err, sizeof(err), "time: 1 to %zu sets per request (1 when prepared)",
		    sizeof(order) / sizeof(order[0]));
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
		for (int j = 0; j < w->sets[k].nout; j++)
			if ((error = ensure(w, &order[i]->snap[j], &order[i]->snap_cap[j],
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
			if (out_total(&w->sets[order[i]->set]) > most)
				most = out_total(&w->sets[order[i]->set]);
		if ((error = host_room(w, most)) < 0)
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
		/* The refresh first: the run's element changes apply to its result. */
		for (size_t j = rfirst[i]; j < rfirst[i + 1]; j++)
			if ((error = wdev_permute(w->d, rf[j].dst, rf[j].src, rf[j].n, rf[j].elsize,
			    rf[j].a, rf[j].b)) < 0)
				goto device;
		if (first[i + 1] > first[i] &&
		    (error = wdev_put_elems(w->d, pt + first[i], first[i + 1] - first[i])) < 0)
			goto device;
		if ((error = wdev_sync(w->d)) < 0)
			goto device;
		over += wdev_now_ms() - t0;
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
		if (w->pass_fds && n <= WORKER_MAX_FDS) {
			if ((error = seal_snapshot(w, sl, s, &fds[nfd])) == -EOPNOTSUPP) {
				/* The judge reads the dump instead ("sealed" < runs). */
				w->pass_fds = 0;
				error = 0;
			} else if (error < 0) {
				snprintf(err, sizeof(err), "time: sealing the snapshot of run %zu: %s "
				    "(a writable mapping of it?)", i, strerror(-error));
				goto out;
			} else {
				nfd++;
			}
		}
		over += wdev_now_ms() - t0;
		json_array_append_new(ev, json_real(e));
		json_array_append_new(host, json_real(h));
	}
	reply_fds(w, json_pack("{s:b, s:i, s:O, s:O, s:f, s:i}", "ok", 1, "rc", krc, "ev_ms", ev,
	    "host_ms", host, "overhead_ms", over, "sealed", nfd), fds, nfd);
	goto out;
device:
	snprintf(err, sizeof(err), "%s", wdev_error(w->d));
	error = -EIO;
out:
	if (error < 0)
		reply_error(w, "time", err);
	while (nfd > 0)
		close(fds[--nfd]);
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
static int
cmd_dump(struct worker *w, int k, json_t *sample, long long n_in, int outputs)
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
	if ((error = host_room(w, out_total(s) > in_bytes ? out_total(s) : in_bytes)) < 0)
		goto out;
	/* "outputs": false: the judge holds the run's sealed snapshot. */
	t = wdev_now_ms();
	if (outputs && (error = get_snapshot(w, sl, w->host[0])) < 0) {
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
	if (outputs && (error = write_outputs(w, s, m ? w->host[1] : w->host[0], sizes,
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
		if ((error = write_tensors(w, s->in, (int)n_in, m ? w->host[1] : w->host[0], sizes,
		    m ? "smp" : "out", 0, 'i', inf)) < 0) {
			snprintf(err, sizeof(err), "writing inputs: %s", strerror(-error));
			goto out;
		}
		ph.write += wdev_now_ms() - t;
	}
	reply(w, json_pack("{s:b, s:O, s:O, s:O, s:o}", "ok", 1, "files", files, "unwritten", unw,
	    "in_files", inf, "phase_ms", phases_json(&ph)));
out:
	if (error < 0)
		reply_error(w, "dump", err[0] ? err : strerror(-error));
	json_decref(files);
	json_decref(unw);
	json_decref(inf);
	return error == -EIO ? DEVICE_FAILED : 0;
}

/*
 * INTERIM (unsandboxed runs only; the sandbox uses a memory cgroup): cap
 * the address space at what the worker already maps plus `extra`. Set
 * after device setup, so the driver's (or a sanitizer's) large
 * reservations are not counted against the candidate.
 */
static int
limit_memory(size_t extra)
{
	unsigned long long pages = 0;
	struct rlimit rl;
	FILE *f = fopen("/proc/self/statm", "re");

	if (!f)
		return -errno;
	if (fscanf(f, "%llu", &pages) != 1)
		pages = 0;
	fclose(f);
	if (!pages)
		return -EIO;
	rl.rlim_cur = rl.rlim_max = pages * (unsigned long long)sysconf(_SC_PAGESIZE) + extra;
	return setrlimit(RLIMIT_AS, &rl) < 0 ? -errno : 0;
}

static int
serve(struct worker *w)
{
	char *line = malloc(WORKER_LINE_MAX + 2);
	int status = 0;

	if (!line)
		return DEVICE_FAILED;
	while (fgets(line, WORKER_LINE_MAX + 2, stdin)) {
		json_t *c = NULL;
		const char *cmd;
		int k;

		if (!strchr(line, '\n')) {
			reply_error(w, "request", "command line too long");
			break;
		}
		if (jsonx_parse(line, strlen(line), &c, NULL, 0) < 0 || !json_is_object(c)) {
			json_decref(c);
			reply_error(w, "request", "not a JSON object");
			continue;
		}
		cmd = jsonx_str(c, "cmd", "");
		k = (int)jsonx_int(c, "set", -1);
		/* A "tag" is accepted and ignored: output files have fixed names. */
		if (!strcmp(cmd, "quit")) {
			json_decref(c);
			break;
		} else if (!strcmp(cmd, "noop")) {
			reply(w, json_pack("{s:b}", "ok", 1));
		} else if (!strcmp(cmd, "run") && k >= 0 && k < w->nsets) {
			status = cmd_run(w, k, json_object_get(c, "poison"));
		} else if (!strcmp(cmd, "time")) {
			status = cmd_time(w, json_object_get(c, "sets"), json_object_get(c, "perturb"),
			    json_object_get(c, "refresh"), json_object_get(c, "poison"),
			    json_is_true(json_object_get(c, "prepared")));
		} else if (!strcmp(cmd, "prepare")) {
			status = cmd_prepare(w, k, json_object_get(c, "poison"));
		} else if (!strcmp(cmd, "dump")) {
			status = cmd_dump(w, k, json_object_get(c, "sample"), jsonx_int(c, "inputs", 0),
			    !json_is_false(json_object_get(c, "outputs")));
		} else {
			reply_error(w, "request", "unknown command or bad set");
		}
		json_decref(c);
		if (status)
			break;
	}
	free(line);
	return status;
}

static void
slot_free(struct worker *w, struct wslot *sl)
{
	for (int i = 0; i < WORKER_MAX_TENSORS; i++) {
		if (sl->in[i])
			wdev_free(w->d, sl->in[i]);
		if (sl->out[i])
			wdev_free(w->d, sl->out[i]);
		if (sl->snap[i])
			wdev_free(w->d, sl->snap[i]);
		if (sl->orig[i])
			wdev_free(w->d, sl->orig[i]);
	}
	wdev_host_free(w->d, sl->pristine);
	memset(sl, 0, sizeof(*sl));
}

int
worker_main(const struct worker_opts *o)
{
	struct worker w = { 0 };
	char err[1024] = "";
	const char *how = "none";
	double t0 = wdev_now_ms(), t_init, t_load;
	void *so = NULL;
	int status = 2, error;

	w.o = o;
	w.main.set = -1;
	for (int i = 0; i < WORKER_MAX_SLOTS; i++)
		w.timing[i].set = -1;
	/* Replies get a private fd; the candidate's prints land on stderr. */
	if ((w.reply_fd = fcntl(1, F_DUPFD_CLOEXEC, 3)) < 0 || dup2(2, 1) < 0) {
		fprintf(stderr, "worker: cannot set up stdout: %s\n", strerror(errno));
		return 2;
	}
	/* A socket from the judge: timed runs' snapshots go back sealed. */
	{
		struct stat st;

		w.pass_fds = fstat(w.reply_fd, &st) == 0 && S_ISSOCK(st.st_mode);
	}
	if ((error = worker_load_manifest(&w, err, sizeof(err))) < 0) {
		reply_error(&w, "setup", err);
		goto out;
	}
	if ((error = wdev_open(&w.d, o->cuda, o->device, err, sizeof(err))) < 0) {
		reply_error(&w, "setup", err);
		status = 1;
		goto out;
	}
	t_init = wdev_now_ms();
	if (o->mem_limit && (error = limit_memory(o->mem_limit)) < 0) {
		snprintf(err, sizeof(err), "cannot limit memory: %s", strerror(-error));
		reply_error(&w, "setup", err);
		status = 1;
		goto out;
	}
	if (o->lockdown) {
		/* CPU candidates also get W^X; CUDA's driver maps code of its own. */
		if ((error = o->cuda ? sandbox_lockdown() : sandbox_lockdown_wx()) < 0) {
			snprintf(err, sizeof(err), "lockdown failed: %s", strerror(-error));
			reply_error(&w, "setup", err);
			status = 1;
			goto out;
		}
		how = "sandbox";
	}
	/* Only now does candidate code run (its constructors included). */
	if (!(so = dlopen(o->so_path, RTLD_NOW | RTLD_LOCAL))) {
		snprintf(err, sizeof(err), "cannot load the candidate: %s", dlerror());
		reply_error(&w, "load", err);
		status = 3;
		goto out;
	}
	if (!(w.fn = (wdev_forward_fn)dlsym(so, "kernelbot_forward"))) {
		reply_error(&w, "load", "the candidate does not export kernelbot_forward "
		    "(the kernel ABI, docs/design.md)");
		status = 3;
		goto out;
	}
	t_load = wdev_now_ms();
	reply(&w, json_pack("{s:b, s:i, s:s, s:s, s:I, s:s, s:b, s:b, s:f, s:f}", "ok", 1, "hello", 1,
	    "lockdown", how, "device", wdev_name(w.d), "flush_bytes",
	    (json_int_t)wdev_flush_bytes(w.d), "perturb_writes", wdev_put_elems_how(w.d),
	    "refresh", wdev_can_permute(w.d), "state", 1,
	    "init_ms", t_init - t0, "load_ms", t_load - t_init));
	status = serve(&w);
out:
	if (w.d) {
		slot_free(&w, &w.main);
		for (int i = 0; i < WORKER_MAX_SLOTS; i++)
			slot_free(&w, &w.timing[i]);
		host_release(&w);
		wdev_close(w.d);
	}
	free(w.sets);
	/* The candidate stays mapped: its threads or atexit handlers may still run. */
	(void)so;
	close(w.reply_fd);
	return status;
}
