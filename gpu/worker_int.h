/*
 * worker_int: the candidate worker's state (gpu/worker.c), the parsing of
 * its manifest and of the judge's requests (gpu/worker_parse.c) and its
 * timing commands (gpu/worker_time.c): what the three files share, not an
 * interface for anything else.
 */
#ifndef KB_GPU_WORKER_INT_H
#define KB_GPU_WORKER_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu/wdev.h"
#include "gpu/worker.h"

struct wspec {
	char name[64];
	DLDataType dt;
	int elsize;
	int ndim;
	int64_t shape[WORKER_MAX_DIMS];
	size_t offset, nbytes;
};

struct wset {
	char file[128];
	int nin, nout;
	struct wspec in[WORKER_MAX_TENSORS];
	struct wspec out[WORKER_MAX_TENSORS];
	size_t file_bytes;
	/*
	 * The manifest's "sources": what a refresh rebuilds each input from
	 * (kbh/judge_skew.py), packed in src_file; src_nbytes[i] 0 where
	 * input i has none (a refresh permutes the input as loaded).
	 */
	char src_file[128];
	size_t src_off[WORKER_MAX_TENSORS], src_nbytes[WORKER_MAX_TENSORS];
	size_t src_file_bytes;
};

struct wslot {
	int set;		/* -1: empty */
	void *in[WORKER_MAX_TENSORS], *out[WORKER_MAX_TENSORS];
	size_t in_cap[WORKER_MAX_TENSORS], out_cap[WORKER_MAX_TENSORS];
	DLTensor din[WORKER_MAX_TENSORS], dout[WORKER_MAX_TENSORS];
	unsigned char *pristine;	/* the set's file: the inputs as given */
	size_t pristine_cap;
	/*
	 * Timing slots: the outputs of the last timed run, copied right after
	 * the call returned and the device synchronized, and the poison that
	 * run got. A dump reads these, so work a candidate leaves running
	 * after the call cannot finish the outputs before the judge's check.
	 */
	void *snap[WORKER_MAX_TENSORS];
	size_t snap_cap[WORKER_MAX_TENSORS];
	unsigned char pat[WORKER_MAX_TENSORS][8];
	/*
	 * Exported (the judge's "export"): the snapshot is one block of shared
	 * device memory, snap[i] inside it, which the judge has mapped and
	 * copies from as each timed run's reply arrives; no sealed memfd.
	 */
	void *shared;
	size_t shared_size;
	int snapped;
	int prepared;		/* poisoned and flushed by "prepare", not yet timed */
	/* Timing slots: what a "refresh" rebuilds from (a source, or the input as loaded). */
	void *orig[WORKER_MAX_TENSORS];
	size_t orig_cap[WORKER_MAX_TENSORS];
};

struct worker {
	const struct worker_opts *o;
	struct wdev *d;
	wdev_forward_fn fn;
	struct wset *sets;
	int nsets;
	struct wslot main;		/* correctness runs: same buffers every trial */
	struct wslot timing[WORKER_MAX_SLOTS];
	int reply_fd;
	int pass_fds;		/* reply_fd is a socket: snapshots go as sealed memfds */
	unsigned char *host[2], *tmp;	/* output snapshots */
	size_t host_cap;
	void *scratch;		/* a refresh's windows, concatenated */
	size_t scratch_cap;
};

#define WORKER_MAX_WINDOWS 4

struct refresh {
	void *dst, *src;
	size_t n;		/* elements */
	int elsize;
	uint64_t a, b;		/* element e gets the copy's element (a * e + b) mod n */
	uint64_t mask;		/* then wdev_xor_normal with it; 0: none */
	/*
	 * The copy: src itself, or (nwin > 0) the concatenation of its
	 * windows [win[2i], win[2i] + win[2i + 1]), in elements, n in all.
	 */
	int nwin;
	size_t win[2 * WORKER_MAX_WINDOWS];
};

/*
 * The manifest (manifest.json in the worker's --dir): every set's file,
 * inputs and outputs into w->sets. 0 or -errno with err set.
 */
int worker_load_manifest(struct worker *w, char *err, size_t errlen);

/*
 * Run `run` of `runs`' poison for set s's outputs into pat (see
 * gpu/worker_parse.c); absent, the fixed pattern dflt. 0 or -EINVAL.
 */
int worker_parse_poison(json_t *pj, size_t runs, size_t run, const struct wset *s, int dflt,
    unsigned char pat[][8], char *err, size_t errlen);

/* A time request's "perturb" and "refresh", resolved for the runs' slots. */
int worker_parse_perturb(struct worker *w, json_t *pj, struct wslot **order, size_t n,
    struct wdev_elem **out, size_t *first, char *err, size_t errlen);
int worker_parse_refresh(struct worker *w, json_t *rj, struct wslot **order, size_t n,
    struct refresh **out, size_t *first, char *err, size_t errlen);

/* A dump's "sample": [a, b, m]; 0 with *m = 0 when absent, else -EINVAL. */
int worker_parse_sample(json_t *v, uint64_t *a, uint64_t *b, uint64_t *m);

/* Where a request's time went in the worker, in ms (the judge reports it). */
struct phases {
	double load, device, d2h, check, write;
};

/* Fatal device errors end the worker: the context may be lost. */
#define DEVICE_FAILED 1

/*
 * gpu/worker.c's pieces the timing commands share: buffers (grown, never
 * shrunk: worker_ensure), a slot's set loaded from its file, the host
 * room for output copies, tensors written into the scratch, and replies
 * (worker_reply_fds passes descriptors as SCM_RIGHTS). 0 or -errno where
 * they return int.
 */
int worker_ensure(struct worker *w, void **p, size_t *cap, size_t n);
int worker_read_host(struct worker *w, struct wslot *sl, const char *file, size_t n, char *err,
    size_t errlen);
int worker_slot_load(struct worker *w, struct wslot *sl, int k, char *err, size_t errlen);
size_t worker_out_total(const struct wset *s);
int worker_host_room(struct worker *w, size_t n);
int worker_get_outputs(struct worker *w, const struct wset *s, void *const *src,
    unsigned char *dst);
int worker_write_tensors(struct worker *w, const struct wspec *specs, int n,
    const unsigned char *buf, const size_t *sizes, const char *prefix, int run, char kind,
    json_t *files);
int worker_write_outputs(struct worker *w, const struct wset *s, const unsigned char *buf,
    const size_t *sizes, const char *prefix, int run, json_t *files);
int worker_write_all(int fd, const void *p, size_t n);
json_t *worker_phases_json(const struct phases *p);
void worker_reply_fds(struct worker *w, json_t *r, const int *fds, int nfd);
void worker_reply(struct worker *w, json_t *r);
void worker_reply_error(struct worker *w, const char *stage, const char *msg);

/*
 * The timing commands (gpu/worker_time.c): "prepare", "export", "time"
 * and "dump" (docs/evaluation.md, the worker protocol). Each replies
 * itself; 0, or DEVICE_FAILED when the device failed and the worker must
 * end.
 */
int worker_cmd_prepare(struct worker *w, int k, json_t *poison);
int worker_cmd_export(struct worker *w, int k);
int worker_cmd_time(struct worker *w, json_t *sets, json_t *perturb, json_t *refresh,
    json_t *poison, int prepared, int mark);
int worker_cmd_dump(struct worker *w, int k, json_t *sample, long long n_in, int outputs);

#endif
