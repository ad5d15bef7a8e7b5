/*
 * template: the small engine behind the prompt files of pipeline/prompts/
 * (docs/llm.md, "Prompts"). A template is text with tags:
 *
 *   {{name}}            the value of name (a string or a number; a dotted
 *                       path reaches into objects: {{device.name}})
 *   {{name|fence}}      the value as a fenced block, the fence longer than
 *   {{name|fence:LANG}} any run of backticks inside it, so quoted data can
 *                       never close its own fence
 *   {{name|code}}       the same, tagged with the value of {{lang}}
 *   {{#name}}...{{/name}}  kept when name is non-empty (a non-empty string or
 *                       array, a nonzero number, true, an object); repeated
 *                       for each element of an array, with the element's
 *                       fields visible inside ({{.}} is a scalar element)
 *   {{^name}}...{{/name}}  kept when name is empty or absent
 *   {{! comment }}      dropped
 *
 * A section or comment tag alone on its line takes the line with it, so
 * templates stay readable. A {{name}} with no value is an error (a typo in
 * a template must not send a prompt with a hole); inside sections, absent
 * names are simply empty.
 */
#ifndef KB_PIPELINE_LLM_TEMPLATE_H
#define KB_PIPELINE_LLM_TEMPLATE_H

#include <jansson.h>
#include <stddef.h>

#include "common/buf.h"

#define TMPL_MAX_BYTES (256u << 10)	/* a template file */
#define TMPL_MAX_DEPTH 16		/* nested sections */

/*
 * Append the rendering of tmpl with vars (an object) to out. 0; -EINVAL
 * with "line N: why" in err for a bad template or a missing value;
 * -ENOBUFS past out's cap; -ENOMEM.
 */
int tmpl_render(const char *tmpl, const json_t *vars, struct buf *out,
    char *err, size_t errlen);

/*
 * The directory of the prompt templates: dir when given, else
 * $KERNELBOT_PROMPTS, else prompts/ next to the binary, the source tree's
 * pipeline/prompts/ seen from build/NAME/, else KB_DATADIR/prompts. A
 * malloc'd path, or NULL with why in err.
 */
char *tmpl_prompts_dir(const char *dir, char *err, size_t errlen);

/* Read dir/name (at most TMPL_MAX_BYTES) into out. 0 or -errno with err. */
int tmpl_load(const char *dir, const char *name, struct buf *out, char *err,
    size_t errlen);

/* A fence of backticks (at least 3) longer than any run of backticks in
 * text, NUL-terminated into out. 0, or -EINVAL for a run of 15 or more. */
int tmpl_fence(const char *text, char out[16]);

#endif
