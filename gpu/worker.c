#include "gpu/worker.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int
worker_ensure(struct worker *w, void **p, size_t *cap, size_t n)
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
int
worker_read_host(struct worker *w, struct wslot *sl, const char *file, size_t n, char *err,
    size_t errlen)
{
	char path[4096];
	int error;

	if (sl->pristine_cap < n) {
		wdev_host_free(w->d, sl->pristine);
		sl->pristine = NULL;
		sl->pristine_cap = 0;
		if ((error = wdev_host_alloc(w->d, n, (void **)&sl->pristine)) < 0) {
			snprintf(err, errlen, "%zu bytes of host memory for %.200s", n, file);
			return error;
		}
		sl->pristine_cap = n;
	}
	snprintf(path, sizeof(path), "%s/%s", w->o->dir, file);
	if ((error = read_file(path, sl->pristine, n)) < 0) {
		snprintf(err, errlen, "%.300s: %s", path,
		    error == -EPROTO ? "size differs from the manifest" : strerror(-error));
		return error;
	}
	return 0;
}

int
worker_slot_load(struct worker *w, struct wslot *sl, int k, char *err, size_t errlen)
{
	struct wset *s = &w->sets[k];
	int error;

	if ((error = worker_read_host(w, sl, s->file, s->file_bytes, err, errlen)) < 0)
		return error;
	for (int i = 0; i < s->nin; i++) {
		if ((error = worker_ensure(w, &sl->in[i], &sl->in_cap[i], s->in[i].nbytes)) < 0 ||
		    (error = wdev_put(w->d, sl->in[i], sl->pristine + s->in[i].offset,
			s->in[i].nbytes)) < 0) {
			snprintf(err, errlen, "input %s: %s", s->in[i].name, wdev_error(w->d));
			return error;
		}
		set_tensor(&sl->din[i], sl->in[i], &s->in[i], wdev_dl(w->d));
	}
	for (int i = 0; i < s->nout; i++) {
		if ((error = worker_ensure(w, &sl->out[i], &sl->out_cap[i], s->out[i].nbytes)) < 0) {
			snprintf(err, errlen, "output %s: %s", s->out[i].name, wdev_error(w->d));
			return error;
		}
		set_tensor(&sl->dout[i], sl->out[i], &s->out[i], wdev_dl(w->d));
	}
	sl->set = k;
	return 0;
}

size_t
worker_out_total(const struct wset *s)
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

int
worker_host_room(struct worker *w, size_t n)
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

/*
 * Copy set s's outputs from the device buffers src[0..nout-1] (a slot's
 * outputs, or its snapshot), back to back, into dst.
 */
int
worker_get_outputs(struct worker *w, const struct wset *s, void *const *src, unsigned char *dst)
{
	size_t off = 0;
	int error;

	for (int i = 0; i < s->nout; i++) {
		if ((error = wdev_get(w->d, dst + off, src[i], s->out[i].nbytes)) < 0)
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
int
worker_write_tensors(struct worker *w, const struct wspec *specs, int n, const unsigned char *buf,
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

int
worker_write_outputs(struct worker *w, const struct wset *s, const unsigned char *buf,
    const size_t *sizes, const char *prefix, int run, json_t *files)
{
	return worker_write_tensors(w, s->out, s->nout, buf, sizes, prefix, run, 'o', files);
}

/* write() all n bytes at fd's offset. 0 or -errno. */
int
worker_write_all(int fd, const void *p, size_t n)
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

json_t *
worker_phases_json(const struct phases *p)
{
	return json_pack("{s:f, s:f, s:f, s:f, s:f}", "load", p->load, "device", p->device,
	    "d2h", p->d2h, "check", p->check, "write", p->write);
}

/*
 * Send a reply line; with nfd > 0, fds go with its first bytes as
 * SCM_RIGHTS (the judge's end is a socket then). The fds stay open here.
 */
void
worker_reply_fds(struct worker *w, json_t *r, const int *fds, int nfd)
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

void
worker_reply(struct worker *w, json_t *r)
{
	worker_reply_fds(w, r, NULL, 0);
}

void
worker_reply_error(struct worker *w, const char *stage, const char *msg)
{
	worker_reply(w, json_pack("{s:b, s:s, s:s}", "ok", 0, "stage", stage, "error", msg));
}

static int
cmd_run(struct worker *w, int k, json_t *poison)
{
	struct wslot *sl = &w->main;
	struct wset *s = &w->sets[k];
	size_t total = worker_out_total(s);
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
	    (error = worker_slot_load(w, sl, k, err, sizeof(err))) < 0 ||
	    (error = worker_host_room(w, total > s->file_bytes ? total : s->file_bytes)) < 0)
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
		if ((error = worker_get_outputs(w, &w->sets[sl->set], sl->out, w->host[run])) < 0)
			goto device;
		json_array_append_new(rc, json_integer(krc));
		json_array_append_new(ms, json_real(ev));
		/* A second look after a pause: work left running after return shows. */
		usleep(WORKER_DEFER_MS * 1000);
		if ((error = wdev_sync(w->d)) < 0 ||
		    (error = worker_get_outputs(w, &w->sets[sl->set], sl->out, w->tmp)) < 0)
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
		    (error = worker_write_outputs(w, s, w->host[run], NULL, "out", run, f)) < 0) {
			snprintf(err, sizeof(err), "writing outputs to %s: %s", w->o->scratch,
			    strerror(-error));
			goto out;
		}
		ph.write += wdev_now_ms() - t;
	}
	worker_reply(w, json_pack("{s:b, s:O, s:O, s:O, s:O, s:O, s:O, s:I, s:o}", "ok", 1, "rc", rc,
	    "files", files, "unwritten", unw, "changed_after_return", late,
	    "inputs_modified", mod, "ms", ms, "runs_differ_bytes", (json_int_t)differ,
	    "phase_ms", worker_phases_json(&ph)));
	goto out;
device:
	snprintf(err, sizeof(err), "%s", wdev_error(w->d));
	error = -EIO;
out:
	if (error < 0)
		worker_reply_error(w, "run", err[0] ? err : strerror(-error));
	json_decref(rc);
	json_decref(files);
	json_decref(unw);
	json_decref(late);
	json_decref(mod);
	json_decref(ms);
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
			worker_reply_error(w, "request", "command line too long");
			break;
		}
		if (jsonx_parse(line, strlen(line), &c, NULL, 0) < 0 || !json_is_object(c)) {
			json_decref(c);
			worker_reply_error(w, "request", "not a JSON object");
			continue;
		}
		cmd = jsonx_str(c, "cmd", "");
		k = (int)jsonx_int(c, "set", -1);
		/* A "tag" is accepted and ignored: output files have fixed names. */
		if (!strcmp(cmd, "quit")) {
			json_decref(c);
			break;
		} else if (!strcmp(cmd, "noop")) {
			worker_reply(w, json_pack("{s:b}", "ok", 1));
		} else if (!strcmp(cmd, "run") && k >= 0 && k < w->nsets) {
			status = cmd_run(w, k, json_object_get(c, "poison"));
		} else if (!strcmp(cmd, "time")) {
			status = worker_cmd_time(w, json_object_get(c, "sets"), json_object_get(c, "perturb"),
			    json_object_get(c, "refresh"), json_object_get(c, "poison"),
			    json_is_true(json_object_get(c, "prepared")),
			    json_is_true(json_object_get(c, "mark")));
		} else if (!strcmp(cmd, "export")) {
			status = worker_cmd_export(w, k);
		} else if (!strcmp(cmd, "prepare")) {
			status = worker_cmd_prepare(w, k, json_object_get(c, "poison"));
		} else if (!strcmp(cmd, "dump")) {
			status = worker_cmd_dump(w, k, json_object_get(c, "sample"), jsonx_int(c, "inputs", 0),
			    !json_is_false(json_object_get(c, "outputs")));
		} else {
			worker_reply_error(w, "request", "unknown command or bad set");
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
		if (sl->snap[i] && !sl->shared)
			wdev_free(w->d, sl->snap[i]);
		if (sl->orig[i])
			wdev_free(w->d, sl->orig[i]);
	}
	wdev_free_shared(w->d, sl->shared, sl->shared_size);
	wdev_host_free(w->d, sl->pristine);
	memset(sl, 0, sizeof(*sl));
}

/* The null worker's forward (worker_opts.null): no work, no writes. */
static int
null_forward(const DLTensor *in, int nin, DLTensor *out, int nout, void *stream)
{
	(void)in, (void)nin, (void)out, (void)nout, (void)stream;
	return 0;
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
		worker_reply_error(&w, "setup", err);
		goto out;
	}
	if ((error = wdev_open(&w.d, o->cuda, o->device, err, sizeof(err))) < 0) {
		worker_reply_error(&w, "setup", err);
		status = 1;
		goto out;
	}
	t_init = wdev_now_ms();
	if (o->mem_limit && (error = limit_memory(o->mem_limit)) < 0) {
		snprintf(err, sizeof(err), "cannot limit memory: %s", strerror(-error));
		worker_reply_error(&w, "setup", err);
		status = 1;
		goto out;
	}
	if (o->lockdown) {
		/* CPU candidates also get W^X; CUDA's driver maps code of its own. */
		if ((error = o->cuda ? sandbox_lockdown() : sandbox_lockdown_wx()) < 0) {
			snprintf(err, sizeof(err), "lockdown failed: %s", strerror(-error));
			worker_reply_error(&w, "setup", err);
			status = 1;
			goto out;
		}
		how = "sandbox";
	}
	/* Only now does candidate code run (its constructors included). */
	if (o->null) {
		w.fn = null_forward;
	} else if (!(so = dlopen(o->so_path, RTLD_NOW | RTLD_LOCAL))) {
		snprintf(err, sizeof(err), "cannot load the candidate: %s", dlerror());
		worker_reply_error(&w, "load", err);
		status = 3;
		goto out;
	}
	if (!o->null && !(w.fn = (wdev_forward_fn)dlsym(so, "kernelbot_forward"))) {
		worker_reply_error(&w, "load", "the candidate does not export kernelbot_forward "
		    "(the kernel ABI, docs/design.md)");
		status = 3;
		goto out;
	}
	t_load = wdev_now_ms();
	/*
	 * "share": snapshots may be exported ("export"), CUDA through a
	 * socket; "state": inputs past forward's arguments (the model's state)
	 * take the judge's changes like the arguments; "refresh_mask": a
	 * refresh entry may end in a mask (worker_parse_refresh).
	 */
	worker_reply(&w, json_pack("{s:b, s:i, s:s, s:s, s:I, s:s, s:b, s:b, s:b, s:b, s:f, s:f}",
	    "ok", 1, "hello", 1, "lockdown", how, "device", wdev_name(w.d), "flush_bytes",
	    (json_int_t)wdev_flush_bytes(w.d), "perturb_writes", wdev_put_elems_how(w.d),
	    "refresh", wdev_can_permute(w.d), "refresh_mask", wdev_can_permute(w.d) &&
	    wdev_can_xor_normal(w.d), "state", 1,
	    "share", w.pass_fds && wdev_dl(w.d).device_type == kDLCUDA,
	    "init_ms", t_init - t0, "load_ms", t_load - t_init));
	status = serve(&w);
out:
	if (w.d) {
		slot_free(&w, &w.main);
		for (int i = 0; i < WORKER_MAX_SLOTS; i++)
			slot_free(&w, &w.timing[i]);
		if (w.scratch)
			wdev_free(w.d, w.scratch);
		host_release(&w);
		wdev_close(w.d);
	}
	free(w.sets);
	/* The candidate stays mapped: its threads or atexit handlers may still run. */
	(void)so;
	close(w.reply_fd);
	return status;
}
