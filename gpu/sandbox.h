/*
 * sandbox: the confinement of compiler and candidate processes, as a layer
 * on the one spawner (common/spawn.h). docs/sandbox.md describes what each
 * profile confines, how, and what happens where the host lacks a feature.
 *
 * A sandboxed program gets new user, mount, pid, network, IPC and UTS
 * namespaces; a root of its own on tmpfs holding read-only binds of the
 * system (/usr, the /lib and /bin links, a few /etc files, /opt), of the
 * running kernelbot's directory and of ro_paths; the scratch directory
 * read-write (the only place it can write to the host); a fresh /proc, a
 * minimal /dev (plus the assigned GPU's nodes), private /tmp and /dev/shm;
 * no capabilities, no_new_privs, rlimits, a memory and pids limit (cgroup v2
 * or v1, else RLIMIT_AS, or RLIMIT_DATA for a GPU process since CUDA's
 * address reservations defeat RLIMIT_AS), a seccomp filter, and the
 * spawner's deadline with a kill of the whole tree, which also dies with
 * the calling process.
 *
 * gpu >= 0 counts GPUs in PCI bus order (nvidia-smi's index); inside, that
 * GPU is CUDA device 0.
 *
 * The scratch has a disk quota (disk_bytes): run as root, a size-limited
 * tmpfs is mounted over it for the run, in the caller's mount namespace
 * (the caller sees the files while the program runs); its top-level files
 * are carried in before and back (up to 64 MiB each) after the run. Where
 * no such mount can be made, the "disk_quota" check is missing.
 *
 * Run as root, the sandbox's processes run as uid/gid SANDBOX_ROOT_UID
 * (nobody) on the host, and the scratch directory is handed to that uid;
 * run as another user, they keep that user's uid (mapped into the user
 * namespace) and gain nothing over it. Either way ro_paths must be readable
 * by that uid (the directories above them need not be).
 */
#ifndef KB_GPU_SANDBOX_H
#define KB_GPU_SANDBOX_H

#include <stddef.h>

#include <jansson.h>

#include "common/spawn.h"

struct sandbox_features {
	int user_ns;		/* unshare(CLONE_NEWUSER) works */
	int net_ns;
	int mount_ns;
	int pid_ns;
	int ipc_ns;
	int proc_mount;		/* a fresh /proc can be mounted in new user+pid namespaces */
	int seccomp;		/* a libseccomp filter can be loaded */
	int cgroup_memory;	/* a memory cgroup can be created (v2 or v1) */
	char cgroup_path[256];	/* where: the cgroup root used for limits */
	char cgroup_why[512];	/* when not: why (the sandbox's own reason) */
	int cgroup_shared;	/* not, because our cgroup v2 is shared (EBUSY) */
};

/*
 * Try each feature in a short-lived child (so the caller is never changed)
 * and fill f. Never fails: what cannot be tried is reported absent.
 */
void sandbox_probe(struct sandbox_features *f);

enum sandbox_profile { SANDBOX_COMPILER, SANDBOX_CANDIDATE };

struct sandbox_opts {
	enum sandbox_profile profile;
	const char *scratch;		/* the only writable directory; exists; HOME and TMPDIR point into it */
	const char *const *ro_paths;	/* NULL-terminated extra paths made visible read-only at the same path */
	size_t mem_bytes;		/* memory limit; 0 = SANDBOX_DEFAULT_MEM (1 GiB) */
	int cpu_s;			/* RLIMIT_CPU; 0 = default */
	size_t fsize_bytes;		/* RLIMIT_FSIZE; 0 = default */
	int nofile, nproc;		/* 0 = defaults */
	int gpu;			/* -1: no GPU device nodes at all; N: only /dev/nvidiaN (+ nvidiactl, nvidia-uvm*) */
	int allow_degraded;		/* run even when a host feature is missing (each is reported); default: refuse */
	size_t disk_bytes;		/* scratch quota (a tmpfs over it, as root); 0 = the profile's default */
};
#define SANDBOX_OPTS_INIT { SANDBOX_COMPILER, NULL, NULL, 0, 0, 0, 0, 0, -1, 0, 0 }

/* Defaults and named limits. */
#define SANDBOX_DEFAULT_MEM	((size_t)1 << 30)
#define SANDBOX_DEFAULT_CPU_S	600	/* RLIMIT_CPU, per process */
#define SANDBOX_DEFAULT_DISK_COMPILER	((size_t)4 << 30)	/* scratch quota of a build */
#define SANDBOX_DEFAULT_DISK_CANDIDATE	((size_t)2 << 30)	/* scratch quota of a candidate */
#define SANDBOX_DEFAULT_NOFILE	1024
#define SANDBOX_DEFAULT_NPROC	512	/* processes and threads, raised to 4 x CPUs + 64 on big hosts */
#define SANDBOX_DEFAULT_TIMEOUT_MS (600 * 1000)	/* when spawn_opts.timeout_ms is 0 */
#define SANDBOX_RO_PATHS_MAX	64
#define SANDBOX_ROOT_UID	65534	/* the host uid/gid of sandboxed processes when kernelbot runs as root */
#define SANDBOX_ENV_MAX		64	/* variables in a sandbox environment */

/*
 * Run o (argv, envp, deadline, captures exactly as spawn_run) inside the
 * sandbox; *checks (may be NULL) gets a JSON array of
 * {"name","passed","detail"} saying what confinement was applied or
 * missing (the caller's reference, also set on -ENOTSUP and set-up errors
 * so the reason can be shown). -ENOTSUP when a required feature is missing
 * and allow_degraded is 0; -EINVAL for bad options (relative or missing
 * scratch, ro path "/" or under /proc, /sys, /dev); -EACCES when an ro path
 * is not readable by the sandbox's uid; otherwise as spawn_run.
 *
 * o->envp NULL means sandbox_env_build(scratch, NULL). o->cwd is a path
 * inside the sandbox (default: the scratch directory). o->timeout_ms 0
 * means SANDBOX_DEFAULT_TIMEOUT_MS: a sandboxed run always has a deadline.
 * Safe to call from several threads at once.
 */
int sandbox_run(const struct sandbox_opts *so, const struct spawn_opts *o,
    struct spawn_result *r, json_t **checks);

/*
 * The environment of a sandboxed program, built from nothing: PATH (the
 * system directories and /usr/local/cuda/bin), LANG=C.UTF-8, HOME=scratch,
 * TMPDIR=scratch/tmp, then each "K=V" of extra (NULL-terminated; one with
 * a name already present replaces it). 0 and *out (free with
 * sandbox_env_free), -EINVAL for an entry without '=' or past
 * SANDBOX_ENV_MAX, -ENOMEM.
 */
int sandbox_env_build(const char *scratch, const char *const *extra, char ***out);
void sandbox_env_free(char **env);

/*
 * Called by a candidate worker after its own set-up and before loading
 * untrusted code: seccomp allowing threads but no fork/vfork/clone of
 * processes, no execve/execveat, no socket(), no ptrace, no mount.
 * Applies to every thread of the process (TSYNC). 0 or -errno.
 */
int sandbox_lockdown(void);

/*
 * sandbox_lockdown() plus W^X, for a CPU candidate worker: mmap, mprotect
 * and pkey_mprotect fail with EPERM for PROT_WRITE|PROT_EXEC, mprotect for
 * any PROT_EXEC, mmap for an anonymous PROT_EXEC mapping, shmat for
 * SHM_EXEC, personality with READ_IMPLIES_EXEC, memfd_create without
 * MFD_NOEXEC_SEAL. Executable mappings of
 * files (dlopen) still work; the candidate profile mounts the scratch and
 * /dev/shm noexec so no file the candidate writes can be one. Not for CUDA
 * workers (the driver maps executable memory). 0 or -errno.
 */
int sandbox_lockdown_wx(void);

#endif
