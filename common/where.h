/*
 * where: what the environment tells kernelbot about where its parts and
 * tools are, and the few switches of the layers below the CLI
 * (KERNELBOT_PYTHON, KERNELBOT_HARNESS, ...; docs/configuration.md,
 * "Environment"). The CLI reads the environment once, at start
 * (cli_where_load()), and sets them here; gpu/ and pipeline/ read them
 * here and never the environment, so a program or a test that links the
 * library without the CLI says what it wants with where_set(). A field
 * left NULL (0) is the default: each reader's own search.
 *
 * Set before any thread reads: where() hands out the one copy, unlocked.
 */
#ifndef KB_COMMON_WHERE_H
#define KB_COMMON_WHERE_H

struct where {
	const char *python;	/* the Python with PyTorch: a path, or a name on PATH */
	const char *harness;	/* harness.py */
	const char *ncu;	/* Nsight Compute */
	const char *include;	/* a directory holding dlpack/dlpack.h */
	const char *cache;	/* the build cache, absolute (the CLI resolves its defaults) */
	const char *prompts;	/* the LLM prompt templates' directory */
	const char *judge_dir;	/* the judge servers' private directory */
	long judge_idle_s;	/* a judge server's idle exit; 0: its default */
	long judge_wait_s;	/* the wait for a busy judge server; -1: its default */
	const char *sandbox_pretend_missing;	/* features to act as missing (tests) */
	int sandbox_allow_degraded;	/* builds and traces may run less confined */
};

#define WHERE_INIT { .judge_wait_s = -1 }

/* The settings: WHERE_INIT until where_set(). Never NULL. */
const struct where *where(void);

/* Replace the settings with a copy of w (its strings copied). 0 or -ENOMEM. */
int where_set(const struct where *w);

#endif
