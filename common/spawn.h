/*
 * spawn: the one way kernelbot starts another program.
 *
 * argv and envp are built by the caller before the fork; the child gets
 * exactly envp (nothing is inherited), runs in its own process group, and
 * is killed as a group: SIGTERM at the deadline, SIGKILL after the grace
 * period, and SIGKILL to whatever is left of the group once the leader has
 * exited, so no descendant outlives the call. stdout and stderr are drained
 * into capped buffers while waiting; what does not fit is dropped and
 * counted. Failure to exec is reported over a close-on-exec pipe, not
 * guessed from an exit code.
 *
 * Safe to call from several threads at once. The child runs no code of
 * ours between fork and exec other than child_setup, which must restrict
 * itself to async-signal-safe calls (it is where the sandbox hooks in).
 */
#ifndef KB_COMMON_SPAWN_H
#define KB_COMMON_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

#include "common/buf.h"

struct spawn_opts {
	const char *const *argv;	/* argv[0]: path to execute (no PATH search unless search_path) */
	const char *const *envp;	/* the child's whole environment; NULL = empty */
	const char *cwd;		/* NULL = inherit */
	const void *input;		/* written to the child's stdin, then EOF; NULL = /dev/null */
	size_t input_len;
	int timeout_ms;			/* wall-clock deadline from start, monotonic; 0 = none */
	int grace_ms;			/* SIGTERM -> SIGKILL delay; 0 = 2000 */
	size_t out_max;			/* stdout capture cap; 0 = BUF_MAX_DEFAULT */
	size_t err_max;			/* stderr capture cap; 0 = BUF_MAX_SMALL */
	const int *pass_fds;		/* extra fds the child gets as 3, 4, ... in order */
	int n_pass_fds;
	int search_path;		/* resolve argv[0] through envp's PATH (execvpe) */
	int stdio_inherit;		/* the child shares our stdin/stdout/stderr: nothing
					   captured, input must be NULL (a launcher's pass-through) */
	/*
	 * Runs in the child after the process group and fds are set up, just
	 * before exec. Return 0, or a positive errno to abort the spawn: the
	 * parent then gets -that errno from spawn_run(), stage "setup".
	 */
	int (*child_setup)(void *arg);
	void *child_arg;
	/*
	 * Called in the parent right after the fork, with the child's pid
	 * (also its process group id), before waiting: for a caller that must
	 * signal the group from another thread (a stop, a cancelled task).
	 * The pid is only valid until spawn_run() returns.
	 */
	void (*on_start)(pid_t pid, void *arg);
	void *start_arg;
};

#define SPAWN_OPTS_INIT { 0 }

struct spawn_result {
	int status;		/* exit code, or 128+signal when killed by a signal */
	int term_signal;	/* the signal that ended it, 0 when it exited */
	int timed_out;		/* the deadline passed and the group was killed */
	struct buf out;		/* captured stdout */
	struct buf err;		/* captured stderr */
	size_t out_dropped;	/* stdout bytes beyond out_max, discarded */
	size_t err_dropped;
	double wall_s;		/* from fork to reap */
	double cpu_s;		/* user + system time of the leader */
	long maxrss_kb;		/* peak resident set of the leader */
};

/*
 * Run a program to completion. 0 when it ran, whatever its exit status
 * (read r->status); -errno when it could not be started: -ENOENT, -EACCES,
 * ... from exec, or from child_setup. r is filled on 0 only; free it with
 * spawn_result_free() either way (safe on a zeroed result).
 */
int spawn_run(const struct spawn_opts *o, struct spawn_result *r);

void spawn_result_free(struct spawn_result *r);

/*
 * Find name in the directories of path (a PATH value; NULL = the current
 * process's PATH). 0 and a malloc'ed full path, or -ENOENT.
 */
int spawn_which(const char *name, const char *path, char **out);

#endif
