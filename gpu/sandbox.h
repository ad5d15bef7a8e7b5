/*
 * sandbox: the confinement of compiler and candidate processes, as a layer
 * on the one spawner (common/spawn.h). This header starts with what the
 * host offers; the confinement itself builds on it.
 */
#ifndef KB_GPU_SANDBOX_H
#define KB_GPU_SANDBOX_H

#include <stddef.h>

struct sandbox_features {
	int user_ns;		/* unshare(CLONE_NEWUSER) works */
	int net_ns;
	int mount_ns;
	int pid_ns;
	int ipc_ns;
	int seccomp;		/* a libseccomp filter can be loaded */
	int cgroup_memory;	/* a memory cgroup can be created (v2 or v1) */
	char cgroup_path[256];	/* where: the cgroup root used for limits */
};

/*
 * Try each feature in a short-lived child (so the caller is never changed)
 * and fill f. Never fails: what cannot be tried is reported absent.
 */
void sandbox_probe(struct sandbox_features *f);

#endif
