/*
 * repocfg: a repository's .kernelbot.yml, validated and normalized.
 *
 *   version: 1                      # required
 *   modules:                        # optional; absent = KernelBench convention
 *     - path: models/attn.py        # exactly one of path / glob
 *       class: Attention            # default Model
 *       init: get_init_inputs       # function name, MODULE:FUNCTION, or a literal list
 *       inputs: get_inputs          # function name, MODULE:FUNCTION, or a literal list
 *       variants: get_input_variants  # the same; default: used when defined
 *       dtype: float16              # float32 | float16 | bfloat16 (fp32/fp16/bf16)
 *       atol: 1e-2
 *       rtol: 1e-2
 *     - glob: "**"                # every module file, at any depth
 *   branch_prefix: kernelbot/       # default kernelbot/
 *   budget: { candidates: 64, gpu_minutes: 30, llm_usd: 5 }
 *                                   # also wall_minutes, llm_tokens
 *   labels: [performance]
 *   reviewers: [alice]
 *   python_path: [".", src]         # folders first on a module's sys.path
 *                                   # (default; those that exist)
 *
 * Unknown keys are errors (a typo must not silently mean "default"). Every
 * error names the file, the line and the key: ".kernelbot.yml:7: modules[1]
 * .dtype: 'half' is not one of float32, float16, bfloat16".
 *
 * The normalized form is a jansson object with every default filled in, so
 * two configurations can be compared with json_equal() and a module's spec
 * is one object.
 */
#ifndef KB_GITOPS_REPOCFG_H
#define KB_GITOPS_REPOCFG_H

#include <jansson.h>
#include <stddef.h>

#define REPOCFG_FILE ".kernelbot.yml"
#define REPOCFG_MAX_MODULES 256
#define REPOCFG_MAX_LIST 64		/* labels, reviewers */
#define REPOCFG_MAX_PYTHON_PATH 8	/* python_path's folders (HARNESS_PATH_MAX) */
#define REPOCFG_MAX_NAME 256		/* class/function names, labels, prefix */
#define REPOCFG_DEFAULT_PREFIX "kernelbot/"
#define REPOCFG_DEFAULT_CLASS "Model"
#define REPOCFG_DEFAULT_INIT "get_init_inputs"
#define REPOCFG_DEFAULT_INPUTS "get_inputs"
#define REPOCFG_DEFAULT_VARIANTS "get_input_variants"

struct repocfg;

/*
 * Parse len bytes of YAML; name is used in errors. 0, or -EINVAL with
 * "NAME:LINE: KEY: reason" in err, -ENOMEM.
 */
int repocfg_parse(const char *name, const char *data, size_t len,
    struct repocfg **out, char *err, size_t errlen);

/*
 * The normalized configuration (borrowed):
 *   {version, branch_prefix, labels[], reviewers[], budget{...} (only the
 *    keys given), modules: null | [{path|glob, class, init, inputs,
 *    variants, variants_required, dtype|null, atol|null, rtol|null, line}]}
 * modules is null when the file has no modules key.
 */
const json_t *repocfg_json(const struct repocfg *c);

/* The defaults-only configuration (no file): modules null. */
int repocfg_default(struct repocfg **out);

const char *repocfg_branch_prefix(const struct repocfg *c);

/*
 * The module spec to use for a file matched by the KernelBench convention:
 * {class: Model, init, inputs, variants: get_input_variants, ...}. New ref.
 */
json_t *repocfg_convention_spec(void);

/*
 * 1 when glob matches path. '*' and '?' stay within one path segment, '**'
 * matches any number of segments (including none), '[...]' a class of
 * characters as in fnmatch(3); everything else is literal.
 */
int repocfg_glob_match(const char *glob, const char *path);

void repocfg_free(struct repocfg *c);

#endif
