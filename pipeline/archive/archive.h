/*
 * archive: stage 4 (docs/design.md). Every verified kernel, with its
 * problem, graph-IR op signature, GPU architecture, times and provenance,
 * kept in the store (store/store_archive.c) so that later jobs can learn
 * from it: archive_neighbours() returns the most similar solved problems
 * for the stage 2 and stage 3 prompts, and archive_has_arch() tells the
 * coordinator when a runner brings a GPU architecture the archive has
 * never seen (a reason to optimize again). docs/archive.md is the user's
 * side of it.
 *
 * Only verified kernels go in: archive_add() refuses a result that is not
 * correct:true with status "correct", and one whose timings the evaluator
 * itself distrusts (EVAL_FLAG_DISTRUSTED in gpu/flags.c). Nothing a proposer says is
 * believed; the numbers come from the evaluator's result.
 *
 * Similarity (archive_neighbours): the candidates are what SQLite FTS5
 * finds for the new problem's words (BM25 over the problem source, the
 * kernel code and the op names, so `torch.softmax` also finds the op
 * softmax), plus every kernel sharing an op name with its IR; each gets
 *
 *   score = ARCHIVE_W_OPS * op similarity: the mean of the weighted
 *           Jaccard index and the weighted containment of the op
 *           multisets (library ops weigh 3, reductions and norms 2,
 *           pointwise 1, data movement 0.5)
 *         + ARCHIVE_W_TEXT * text similarity: half BM25, saturating
 *           (r / (r + 5)), half the Jaccard index of the two sources'
 *           identifiers (BM25's IDF is unstable in a small archive)
 *         + ARCHIVE_W_SHAPE * shape-class agreement (dtype, ranks, size)
 *         + ARCHIVE_W_ARCH when the arch is the same
 *           (ARCHIVE_W_BACKEND when only the backend is)
 *         + ARCHIVE_W_EMBED * cosine similarity of embeddings, only when an
 *           embedder is installed (archive_set_embedder; none is by default)
 *
 * Problems are ranked by their best-scoring kernel; the kernel shown for a
 * problem is its fastest on the asked arch (else its fastest anywhere).
 *
 * Errors: 0 or -errno with a sentence in err: -EINVAL for bad input (an
 * unverified result, a malformed directory), -EEXIST for a kernel already
 * archived, -ENOENT for a missing file, store errors as store/store.h says.
 */
#ifndef KB_PIPELINE_ARCHIVE_ARCHIVE_H
#define KB_PIPELINE_ARCHIVE_ARCHIVE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct store;
struct store_archive_entry;

#define ARCHIVE_DEFAULT_PER_PROBLEM 5	/* K: correct candidates per run */
#define ARCHIVE_MAX_K 64		/* neighbours one call returns */
#define ARCHIVE_MAX_SOURCE (1u << 20)	/* bytes of a problem or kernel source */
#define ARCHIVE_MAX_LINE (8u << 20)	/* bytes of one JSONL line of an export */

/* Weights of the similarity score (see above). */
#define ARCHIVE_W_OPS		0.55
#define ARCHIVE_W_TEXT		0.25
#define ARCHIVE_W_SHAPE		0.05
#define ARCHIVE_W_ARCH		0.15
#define ARCHIVE_W_BACKEND	0.05
#define ARCHIVE_W_EMBED		0.25

/*
 * One verified kernel to archive. Strings and JSON are borrowed for the
 * call; NULL where unknown.
 */
struct archive_kernel {
	const char *problem;		/* a short name: "02_softmax_rows", a module slug */
	const char *problem_source;	/* the problem file's text (required) */
	const json_t *ir;		/* its graph IR (docs/graph-ir.md), or NULL */
	const char *kernel;		/* the kernel source (required) */
	const json_t *result;		/* the evaluator's object for it (required;
					 * docs/evaluation.md): correct, status,
					 * backend, device, timings_ms, speedup, flags */
	const char *arch;		/* "sm_90", "cpu"; NULL: "cpu" on the cpu
					 * backend, required on cuda */
	const char *device;		/* NULL: the result's "device" */
	const char *proposer;		/* "compiler", "llm", ... */
	const char *model;		/* the LLM's model, NULL otherwise */
	const json_t *parents;		/* JSON array (kernel shas), or NULL */
	int64_t job;			/* the job that made it, 0 if none */
	const char *repo;		/* "owner/name" or NULL */
	const char *module;		/* module path in the repo, or NULL */
};

/*
 * Archive one verified kernel: 0 and *id (may be NULL), -EEXIST when the
 * same kernel for the same problem and arch is already there (*id is
 * then the existing row's), -EINVAL with the reason in err.
 */
int archive_add(struct store *s, const struct archive_kernel *k, int64_t *id,
    char *err, size_t errlen);

/* Where a `kernelbot optimize --out` directory's kernels came from. */
struct archive_provenance {
	int64_t job;			/* 0 if none */
	const char *repo;		/* NULL if none */
	const char *module;		/* NULL: the summary's "module" if any */
	const char *arch;		/* NULL: from history.json's device */
	const json_t *ir;		/* NULL: DIR/ir.json when present */
	int per_problem;		/* K; 0: ARCHIVE_DEFAULT_PER_PROBLEM */
};

#define ARCHIVE_PROVENANCE_INIT { 0, NULL, NULL, NULL, NULL, 0 }

struct archive_ingest_stats {
	int problems;		/* optimize directories read */
	int added;		/* kernels archived */
	int duplicates;		/* already in the archive */
	int skipped;		/* problems with no verified best kernel */
	int refused;		/* other candidates archive_add() would refuse
				 * (flagged, or their file does not match) */
};

/*
 * Ingest a `kernelbot optimize --out DIR` directory (the layout in
 * docs/archive.md): the best kernel (best/kernel.* with best/result.json)
 * always, and the other correct candidates of history.json, fastest
 * first, up to prov->per_problem in all, with the data history.json has
 * for them. A repository's directory (DIR/<slug>/summary.json, no
 * DIR/summary.json) is ingested slug by slug. A run without a verified
 * best (status no_correct, unsupported, error) is counted as skipped,
 * not an error; a best kernel that is not verified is an error. Other
 * candidates that would be refused are counted, not errors. Each problem
 * is one transaction: a failure leaves the problems before it archived
 * and names the directory that failed. IR: prov->ir, else DIR/ir.json
 * (the IR, or the trace's {"ir": ...} reply) when present, else none
 * (no op signature: retrieval then finds it by text only). stats may be
 * NULL.
 */
int archive_ingest_optimize_dir(struct store *s, const char *dir,
    const struct archive_provenance *prov, struct archive_ingest_stats *stats,
    char *err, size_t errlen);

/*
 * The top k (1..ARCHIVE_MAX_K) most similar solved problems for a new one,
 * best first, one per problem: *out is a new JSON array (the caller's) of
 * {"id", "problem", "ops", "arch", "backend", "kernel", "ms",
 *  "speedup_eager", "speedup_compile", "score"} (speedups null where
 * unknown). problem_source and ir may each be NULL, not both; arch may be
 * NULL (no arch bonus). An empty archive gives an empty array.
 */
int archive_neighbours(struct store *s, const char *problem_source,
    const json_t *ir, const char *arch, int k, json_t **out, char *err,
    size_t errlen);

/* Does the archive hold any kernel for arch ("sm_90", "cpu")? 1, 0, -errno. */
int archive_has_arch(struct store *s, const char *arch);

/*
 * Export: every archived kernel as one JSON object per line, in id order,
 * with every field (archive_entry_json). *n (may be NULL) gets the count.
 */
int archive_export(struct store *s, FILE *f, size_t *n, char *err,
    size_t errlen);

struct archive_import_stats {
	size_t lines;		/* kernels read (blank lines not counted) */
	size_t added;
	size_t duplicates;	/* already archived: skipped */
};

/*
 * Import an export (f must be seekable: a regular file). Every line is
 * validated first, as archive_add() validates (including that each sha
 * matches its text); one bad line is -EINVAL with "NAME:LINE: reason" in
 * err and nothing imported. Then the kernels go in, in transactions of
 * ARCHIVE_IMPORT_BATCH; duplicates are skipped and counted, so running
 * an interrupted import again completes it. stats may be NULL.
 */
#define ARCHIVE_IMPORT_BATCH 256
int archive_import(struct store *s, FILE *f, const char *name,
    struct archive_import_stats *stats, char *err, size_t errlen);

/*
 * An entry as JSON (the export's line): id, created, problem,
 * problem_source, problem_sha, ops, shape_class, ir (object or null),
 * backend, arch, device, kernel, kernel_sha, ms, eager_ms, compile_ms,
 * speedup_eager, speedup_eager_lo, speedup_eager_hi, speedup_compile,
 * speedup_compile_lo, speedup_compile_hi, proposer, model, parents
 * (array or null), job (null for 0), repo, module. Absent texts and
 * unknown numbers are null. NULL on allocation failure.
 */
json_t *archive_entry_json(const struct store_archive_entry *e);

/*
 * The embedding hook. Without one (the default) retrieval is FTS5 plus op
 * signatures only. Whoever configures an embedding endpoint installs an
 * embedder: embed() writes a vector of `dim` floats for a text (a problem
 * source) and returns 0, or -errno, in which case that call goes on
 * without embeddings. Texts are embedded at query time, nothing is
 * stored. Not thread-safe against concurrent archive_neighbours(): set it
 * once at start-up. NULL removes it.
 */
struct archive_embedder {
	int (*embed)(void *arg, const char *text, float *vec, size_t dim);
	void *arg;
	size_t dim;		/* 1..4096 */
};

void archive_set_embedder(const struct archive_embedder *e);

/*
 * The op signature of a graph IR: its canonical op names sorted, repeats
 * kept, space-separated ("add gelu mul"), and a shape-class summary
 * ("float32 in=2,2 out=2 n=2^13": dtype of the first output, ranks of the
 * role-input tensors and of the outputs, log2 of the largest output's
 * element count). Both malloc'd, the caller frees; "" for a NULL IR.
 */
int archive_op_signature(const json_t *ir, char **ops, char **shape_class);

#endif
