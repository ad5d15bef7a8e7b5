/*
 * sandbox_int: what the sandbox's own modules share; not a contract for
 * anyone else. The parent builds a struct sbx_plan before the fork (all
 * paths resolved, all strings formatted, the seccomp program compiled), so
 * the child only executes it with system calls: it may be the fork of a
 * multithreaded process and must stay async-signal-safe.
 */
#ifndef KB_GPU_SANDBOX_INT_H
#define KB_GPU_SANDBOX_INT_H

#include <linux/filter.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "common/buf.h"
#include "gpu/sandbox.h"

#define SBX_PATH_MAX	1024
#define SBX_MOUNTS_MAX	192
#define SBX_LIMITS_MAX	8
#define SBX_CGROUPS_MAX	2
#define SBX_OLDROOT	"/oldroot"
#define SBX_NEWROOT	"/newroot"

enum sbx_mount_kind {
	SBX_BIND_RO,	/* recursive bind of src, then remounted read-only */
	SBX_BIND_RW,	/* bind of src, nosuid, nodev */
	SBX_BIND_DEV,	/* bind of a device node, as it is */
	SBX_TMPFS,	/* src holds the mount options */
	SBX_PROC,
	SBX_SYMLINK,	/* dst -> src */
	SBX_REMOUNT_RO,	/* a submount a recursive bind brought along */
	SBX_SEAL_RO,	/* remount a tmpfs made earlier read-only */
	SBX_SYSFS,	/* a fresh read-only sysfs, where the host allows one */
};

struct sbx_mount {
	int kind;
	int is_dir;			/* the target is a directory, else a file */
	unsigned long flags;		/* SBX_BIND_RW, SBX_TMPFS, SBX_PROC: MS_* flags added
					 * (MS_NOEXEC, MS_RDONLY) */
	char src[SBX_PATH_MAX];		/* under SBX_OLDROOT, or link target, or options */
	char dst[SBX_PATH_MAX];		/* under SBX_NEWROOT */
};

/* The first set-up failure in any sandbox process, sent to the parent. */
struct sbx_diag {
	int err;
	char what[496];
};

struct sbx_plan {
	int clone_flags;		/* the CLONE_NEW* the host supports */
	int map_ids;			/* write uid_map/gid_map (user namespace) */
	int switch_ids;			/* setgroups/setresgid/setresuid to uid/gid after set-up */
	int deny_setgroups;		/* unprivileged: required before gid_map */
	uid_t uid;
	gid_t gid;
	char uid_map[64], gid_map[64];
	int new_root;			/* build and pivot into the new root */
	int n_mounts;
	struct sbx_mount mounts[SBX_MOUNTS_MAX];
	char cwd[SBX_PATH_MAX];		/* inside the sandbox */
	int n_cgroups;
	char cgroup_procs[SBX_CGROUPS_MAX][SBX_PATH_MAX];
	int n_limits;
	int limit_res[SBX_LIMITS_MAX];
	struct rlimit limit_val[SBX_LIMITS_MAX];
	struct sock_fprog filter;	/* baseline seccomp program; len 0 = none */
	int diag_fd;			/* write end for struct sbx_diag */
	pid_t parent;			/* the spawning process: C1 dies with it */
};

/* The child side: the spawn child_setup hook; arg is a struct sbx_plan. */
int sbx_child_setup(void *arg);
/* Write s to an existing file; 0 or a positive errno. Async-signal-safe. */
int sbx_write_file(const char *path, const char *s);

/* Append a check {name, passed, detail} to the run's checks (sandbox.c). */
void sbx_check(json_t *arr, const char *name, int passed, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * The new root's mounts (sandbox_mounts.c), each 0 or -errno: one mount
 * of kind (SBX_*) at dst, of src (or tmpfs options); a host path
 * read-only at the same place, with the mounts beneath it (its name
 * added to shown, if not NULL); /dev with the basic nodes and GPU gpu's
 * (-1: none; extra: MS_* flags for /dev/shm); and the paths the options
 * ask to show (checked, each a check in ck), the scratch read-write, and
 * the few a kernelbot program inside needs.
 */
int sbx_add_mount(struct sbx_plan *p, int kind, int is_dir, const char *src, const char *dst);
int sbx_add_ro(struct sbx_plan *p, const char *path, struct buf *shown);
int sbx_plan_dev(struct sbx_plan *p, int gpu, unsigned long extra, json_t *ck);
int sbx_plan_paths(struct sbx_plan *p, const struct sandbox_opts *so, const char *scratch,
    int sandbox_uid_differs, json_t *ck, struct buf *shown);

/* seccomp (sandbox_seccomp.c, the one includer of libseccomp). */
enum sbx_filter { SBX_FILTER_BASELINE, SBX_FILTER_LOCKDOWN, SBX_FILTER_LOCKDOWN_WX };
/* Compile a filter into a malloc'ed BPF program. 0 or -errno. */
int sbx_seccomp_build(enum sbx_filter which, struct sock_fprog *out);
/* Load a filter into this process, every thread. 0 or -errno. */
int sbx_seccomp_load(enum sbx_filter which);
/* Whether a filter can be loaded here (run it in a throwaway child). */
int sbx_seccomp_try(void);
/* One line saying what the filter denies, for checks. */
const char *sbx_seccomp_describe(enum sbx_filter which);

/* The scratch's disk quota (sandbox_disk.c). */
#define SBX_DISK_KEEP_MAX ((size_t)64 << 20)	/* files larger are not carried back after a run */
struct sbx_disk {
	int mounted;
	size_t bytes;
	dev_t dev;			/* the tmpfs's device number (0 until known) */
	int under_fd;			/* the scratch directory beneath the tmpfs */
	pid_t janitor;			/* unmounts when janitor_fd's pipe ends */
	int janitor_fd;
	char path[SBX_PATH_MAX * 4];
};
/*
 * Mount a tmpfs of bytes (and bytes/16 KiB inodes) over scratch, in our
 * own mount namespace, carrying the top-level files in. 0, or -errno with
 * why set (EPERM: not root).
 */
int sbx_disk_mount(struct sbx_disk *d, const char *scratch, size_t bytes, int noexec,
    char *why, size_t cap);
/* Whether the tmpfs is full (bytes or inodes); *used gets the bytes used. */
int sbx_disk_full(const struct sbx_disk *d, size_t *used);
/* Carry top-level files up to SBX_DISK_KEEP_MAX back, unmount, stop the janitor. */
void sbx_disk_release(struct sbx_disk *d);

/* cgroups (sandbox_cgroup.c). */
struct sbx_cgroup {
	int version;			/* 2, 1, or 0 = none */
	char mem_dir[SBX_PATH_MAX];	/* the run's memory cgroup (v2: the only one) */
	char pids_dir[SBX_PATH_MAX];	/* v1 only: the run's pids cgroup, "" = none */
	char why[256];			/* when version is 0: what was missing */
};
/*
 * Create a per-run cgroup with memory (and pids, where available) limits.
 * 0 with cg->version 0 and cg->why set when the host offers none; -errno
 * only for a failure after a cgroup was found usable.
 */
int sbx_cgroup_create(struct sbx_cgroup *cg, size_t mem_bytes, long pids_max);
/* After the run: append what happened (OOM kills, peak) to detail. */
void sbx_cgroup_report(const struct sbx_cgroup *cg, struct buf *detail);
/* Kill whatever is left in it and remove it. */
void sbx_cgroup_destroy(struct sbx_cgroup *cg);
/*
 * Where runs' memory cgroups would go, for sandbox_probe: the decision the
 * first sbx_cgroup_create() makes, without its writes. 1 and path, or 0
 * and why (SBX_CGROUP_SHARED_HINT in it when other processes share our v2
 * cgroup, so limits fall back to rlimits).
 */
int sbx_cgroup_probe(char *path, size_t len, char *why, size_t whylen);
/* The v2 part of that decision for the cgroup directory base (tests). */
int sbx_cgroup_v2_check(const char *base, pid_t self, char *why, size_t len);
#define SBX_CGROUP_SHARED_HINT " (other processes share our cgroup; run under systemd with Delegate=yes)"

#endif
