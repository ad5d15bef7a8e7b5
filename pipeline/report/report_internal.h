/*
 * report_internal.h: what report.c (reading the optimize directories, the
 * files) and report_md.c (the markdown) share. Not a public interface.
 */
#ifndef KB_PIPELINE_REPORT_INTERNAL_H
#define KB_PIPELINE_REPORT_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

#include "common/buf.h"
#include "pipeline/report/report.h"

#define REPORT_MAX_JSON (64u << 20)	/* history.json of a long search */
#define REPORT_MAX_MD (4u << 20)	/* a body, a report */
#define REPORT_MAX_DIRS 32

/* One `kernelbot optimize --out` directory, read. */
struct report_dir {
	const char *path;
	json_t *summary;		/* summary.json (always) */
	json_t *history;		/* history.json, or NULL */
	const struct eval_cand *result;	/* best/result.json, or NULL: res */
	struct eval_cand res;		/* (gpu/eval_result.h) */
	json_t *ir;			/* ir.json (graph IR), or NULL */
	char *source;			/* the best kernel's text, or NULL */
	size_t source_len;
	const char *backend;		/* "cpu" | "cuda" */
	char arch[16];			/* "sm_90", "" when unknown or CPU */
	char device[128];		/* "NVIDIA H200", "cpu" */
	char file[32];			/* its name under kernels/<slug>/; "" = not shipped */
	char sha256[65];		/* of source */
	int improved;
};

/* The whole report's input. */
struct report_ctx {
	const struct report_module *m;
	const char *cls;		/* m->module_class or "Model" */
	struct report_dir *d;
	size_t n;
	size_t n_shipped;		/* dirs with file[0] */
	int identifier_slug;		/* `from kernels.SLUG import load` works */
};

/* The markdown: PR body, REPORT.md (full = 1), results comment. */
int report_md_body(const struct report_ctx *c, int full, struct buf *b);
int report_md_comment(const struct report_ctx *c, struct buf *b);
/*
 * The result's flags that forbid headlining its speedup (suspicious_speedup,
 * below_bandwidth_floor, untimed_work; for a summary whose status is
 * needs_review also side_stream, else "needs_review"), comma-separated into out;
 * 1 when there is one.
 */
int report_flagged(const struct report_dir *d, char *out, size_t len);
/*
 * "2.31x vs eager [2.20, 2.43], 1.40x vs torch.compile on NVIDIA H200", or
 * for a flagged result "verified kernel on DEVICE, flagged for review: FLAGS".
 */
int report_md_headline(const struct report_dir *d, struct buf *b);
/* report_reproduce_cmd() for d's confirmation: kernels/SLUG/FILE against the module. */
int report_repro_cmd(const struct report_ctx *c, const struct report_dir *d, struct buf *b);
/* s as one shell word (single-quoted unless plain). -EINVAL for control characters. */
int report_sh_word(struct buf *b, const char *s);
/* The best dir by speedup over eager among improved ones (or all); NULL if none. */
const struct report_dir *report_best(const struct report_ctx *c, int improved_only);

/* The drop-in module and its test (pipeline/report/loader.py, test_kernel.py). */
extern const char report_loader_py[];
extern const char report_test_py[];

#endif
