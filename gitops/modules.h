/*
 * modules: which files of a repository are PyTorch modules for kernelbot,
 * and which of them a push changed.
 *
 * Module detection never runs repository code: it reads the file's text
 * and looks, at column 0 and outside triple-quoted strings, for
 * `class NAME(` (or `class NAME:`), `def INIT(` and `def INPUTS(` with the
 * names the module's spec gives (KernelBench's Model / get_init_inputs /
 * get_inputs by default). That is conservative on purpose: a module built
 * by metaprogramming is not found, and nothing is imported to find it.
 *
 * Which files are candidates comes from the repository's .kernelbot.yml at
 * the commit in question (see repocfg.h): its `modules` entries when it has
 * them, otherwise every .py file (the KernelBench convention).
 */
#ifndef KB_GITOPS_MODULES_H
#define KB_GITOPS_MODULES_H

#include <jansson.h>
#include <stddef.h>

#include "gitops/gitops.h"
#include "gitops/repocfg.h"

#define MODULES_MAX_FILE (1u << 20)	/* larger files are never modules */
#define MODULES_MAX_SLUG 80		/* slug length, hash suffix included */

/*
 * 1 when text defines, at top level, class cls and the functions init and
 * inputs (either may be NULL: a literal, nothing to find); 0 when not.
 */
int modules_detect(const char *text, size_t len, const char *cls,
    const char *init, const char *inputs);

/*
 * 1 when text defines the top-level function name, or when name is
 * MODULE:FUNCTION (a function of another module: not this file's to show).
 */
int modules_defines(const char *text, size_t len, const char *name);

/*
 * The module's slug, the stable name of its branch and of its kernels/
 * folder: the path without ".py", lowercased, every run of characters
 * outside [a-z0-9] turned into one '-', trimmed; then "-CLASS" (lowercased
 * the same way) when the class is not Model. "models/attn/block.py" ->
 * "models-attn-block". Past MODULES_MAX_SLUG characters it is cut and ends
 * in "-" and 8 hex digits of the SHA-256 of "PATH\nCLASS", so it stays
 * unique. out must have MODULES_MAX_SLUG + 1 bytes. 0 or -EINVAL (a path
 * with no letters or digits).
 */
int modules_slug(const char *path, const char *cls,
    char out[MODULES_MAX_SLUG + 1]);

enum modules_reason {
	MODULES_ADDED,		/* a new module: new file, or a file that became one */
	MODULES_MODIFIED,	/* the module's file changed */
	MODULES_CONFIG,		/* named, or its spec changed, by .kernelbot.yml only */
	MODULES_REMOVED,	/* deleted, renamed away, stopped being a module, unnamed */
};

const char *modules_reason_name(enum modules_reason r);

struct modules_change {
	char *path;
	char *class_name;
	char *old_path;			/* for a rename: where it came from; else NULL */
	char slug[MODULES_MAX_SLUG + 1];
	enum modules_reason reason;
	json_t *spec;			/* {class, init, inputs, variants, dtype, atol, rtol}; at before for REMOVED */
};

struct modules_changes {
	struct modules_change *v;	/* sorted by path, then class */
	size_t n;
	struct repocfg *config;		/* .kernelbot.yml at after (defaults when absent) */
	int config_present;		/* after has a .kernelbot.yml */
};

/*
 * The modules to (re)optimize and to retire between two commits. before
 * may be the zero id (a new branch: every module of after is ADDED). A
 * before that is not in the repository (a force push whose old tip was
 * never fetched) is -ENOENT; the caller decides whether to fetch it or to
 * pass the zero id.
 *
 * Errors: -EINVAL with "FILE:LINE: KEY: reason" when .kernelbot.yml at
 * after is malformed or names a file that is not a module; -ENOENT for an
 * unknown commit; the errors of gitops.h. A malformed .kernelbot.yml at
 * before is read as absent: an old mistake must not block a fix.
 * Free with modules_changes_free().
 */
int modules_changes(struct gitops_repo *r, const char *before,
    const char *after, struct modules_changes *out, char *err,
    size_t errlen);

/* [{path, class, reason, slug, old_path?, init, inputs, variants, dtype, atol, rtol}] */
json_t *modules_changes_json(const struct modules_changes *c);

void modules_changes_free(struct modules_changes *c);

#endif
