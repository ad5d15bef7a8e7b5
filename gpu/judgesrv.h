/*
 * judgesrv: the client side of the judge server (gpu/harness/kbh/
 * judge_server.py; docs/evaluation.md, "The judge server").
 *
 * A judge server is the trusted judge kept running between evaluations,
 * so that `kernelbot eval` does not pay for Python, the PyTorch import and
 * the CUDA context each time. There is one per (uid, backend, device,
 * harness identity: interpreter, harness files, judge environment, this
 * binary), in a private directory: $KERNELBOT_JUDGE_DIR, else <the compile
 * cache>/judge, created 0700 and refused unless it is a directory of ours
 * that nobody else can enter. Per server, NAME = <backend><device>-<key>:
 * NAME.sock (the Unix socket), NAME.json (pid, backend, device, last use:
 * written by the server), NAME.log (its stdout and stderr), NAME.lock (one
 * caller spawns), NAME.busy (flock'ed by the caller whose request it runs),
 * NAME.run (flock'ed by the server while it runs a request).
 *
 * Every failure here is a reason to run a one-shot judge instead (the
 * caller's fallback), never a verdict: errors come back with a sentence.
 */
#ifndef KB_GPU_JUDGESRV_H
#define KB_GPU_JUDGESRV_H

#include <jansson.h>
#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#define JUDGESRV_IDLE_S 600		/* default: exit after this long unused */
#define JUDGESRV_WAIT_S 30		/* default: wait this long for a busy server */
#define JUDGESRV_STOP_MS 10000		/* judgesrv_stop_all() waits this long at most */
#define JUDGESRV_SPAWN_MS 30000		/* the launcher: bind, detach, exit */

struct judgesrv {
	char dir[PATH_MAX];
	char name[64];			/* <backend><device>-<16 hex of the identity> */
	char sock[PATH_MAX], meta[PATH_MAX], log[PATH_MAX];
	char lock[PATH_MAX], busy[PATH_MAX], running[PATH_MAX];
	const char *backend;
	int device;
	pid_t pid;			/* the server that answered (SO_PEERCRED), after call */
};

/*
 * The private directory (created when absent) into dir. 0; -EPERM when it
 * exists with the wrong owner, type or mode; -errno otherwise.
 */
int judgesrv_dir(char *dir, size_t len, char *err, size_t errlen);

/* Name the server for backend and device: paths into s. 0 or -errno. */
int judgesrv_open(struct judgesrv *s, const char *backend, int device,
    char *err, size_t errlen);

/*
 * Make sure the server listens: connect to it, else (under NAME.lock, so
 * that of two racing callers one spawns) remove a stale socket file and
 * spawn it detached with the judge's environment (gpu/harness.c), idle
 * time $KERNELBOT_JUDGE_IDLE_S. It imports PyTorch in the background.
 * 0 and *spawned (1 when this call started it), or -errno.
 */
int judgesrv_ensure(struct judgesrv *s, int *spawned, char *err, size_t errlen);

/*
 * Post one "evaluate" request and wait for its reply, at most timeout_ms
 * after the connection. A busy server (another caller's request) is waited
 * for up to $KERNELBOT_JUDGE_WAIT_S (default JUDGESRV_WAIT_S), then -EBUSY;
 * so is a server still running a request whose caller has gone.
 * 0 and *reply (the caller's reference); -ETIMEDOUT (the server has then
 * been killed, so that it wedges nobody after us); -EPIPE when it closed
 * without a reply (it crashed; its log says why); -errno otherwise.
 */
int judgesrv_call(struct judgesrv *s, const json_t *req, int timeout_ms,
    json_t **reply, char *err, size_t errlen);

/*
 * The servers in the private directory: a JSON array of {"name", "pid",
 * "backend", "device", "requests", "idle_s", "idle_limit_s", "alive",
 * "socket", "log"}, their NAME.json files read and each pid checked.
 * 0 and *out, or -errno.
 */
int judgesrv_list(json_t **out, char *err, size_t errlen);

/*
 * SIGTERM to every live server of the list (judgesrv_list()'s), then wait
 * (at most JUDGESRV_STOP_MS) until they are gone. The count signalled.
 */
int judgesrv_stop_all(const json_t *list);

#endif
