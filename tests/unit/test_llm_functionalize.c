/* pipeline/llm/functionalize without a server: the ```python block of an
 * answer, and the stage 1 prompt with and without the previous rejection.
 * The loop against the fake LLM and the harness is tests/e2e/t5103. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/buf.h"
#include "pipeline/llm/functionalize.h"
#include "pipeline/llm/template.h"
#include "t.h"

static void
check_block(const char *name, const char *answer, const char *want)
{
	char *got = llm_python_block(answer);

	if (!want)
		CHECK(name, got == NULL);
	else
		CHECK_STR(name, got ? got : "(none)", want);
	free(got);
}

static void
test_python_block(void)
{
	check_block("a python block", "Here:\n```python\nimport torch\n```\nDone.\n", "import torch\n");
	check_block("py and untagged count too", "```py\na = 1\n```\n```\nb = 2\n```\n", "b = 2\n");
	check_block("the last complete one", "```python\nfirst\n```\n```python\nsecond\n```\n",
	    "second\n");
	check_block("an unclosed block is ignored", "```python\nfirst\n```\n```python\nsecond\n",
	    "first\n");
	check_block("another language's block is skipped, its close is no opening",
	    "```cuda\n__global__ void k();\n```\ntext\n```python\nx = 1\n```\n", "x = 1\n");
	check_block("only another language: none", "```c\nint x;\n```\n", NULL);
	check_block("a longer fence holds a shorter one",
	    "````python\ns = '''\n```\n'''\n````\n", "s = '''\n```\n'''\n");
	check_block("no block: none", "I cannot do that.", NULL);
	check_block("empty answer: none", "", NULL);
}

static void
test_prompt(void)
{
	/* the source tree's templates: tests run from the repository root */
	char err[512], *dir = tmpl_prompts_dir("pipeline/prompts", err, sizeof(err));
	struct buf t = BUF_INIT(TMPL_MAX_BYTES), out = BUF_INIT(1 << 16);
	json_t *v;

	CHECK("the prompts folder is found", dir != NULL);
	if (!dir)
		return;
	CHECK_INT("functionalize.md loads", tmpl_load(dir, "functionalize.md", &t, err, sizeof(err)), 0);
	v = json_pack("{s:s, s:s, s:s, s:s, s:i}", "problem", "class Model: ```x```",
	    "trace_error", "TraceError", "error", "", "rewrite", "", "attempt", 1);
	CHECK_INT("first attempt renders", tmpl_render(buf_cstr(&t), v, &out, err, sizeof(err)), 0);
	CHECK("it quotes the module in a longer fence", strstr(buf_cstr(&out), "````python\nclass Model"));
	CHECK("it carries the trace error", strstr(buf_cstr(&out), "(TraceError)"));
	CHECK("no rejection section", !strstr(buf_cstr(&out), "was rejected"));
	json_decref(v);
	buf_free(&out);
	out = (struct buf)BUF_INIT(1 << 16);
	v = json_pack("{s:s, s:s, s:s, s:s, s:i}", "problem", "class Model: pass",
	    "trace_error", "", "error", "output 0 differs", "rewrite", "x = 2\n", "attempt", 2);
	CHECK_INT("a retry renders", tmpl_render(buf_cstr(&t), v, &out, err, sizeof(err)), 0);
	CHECK("it carries the rejected rewrite", strstr(buf_cstr(&out), "```python\nx = 2\n```"));
	CHECK("and the check's error", strstr(buf_cstr(&out), "```\noutput 0 differs\n```"));
	json_decref(v);
	buf_free(&out);
	buf_free(&t);
	free(dir);
}

int
main(void)
{
	cli_where_load();	/* the settings tests/run.sh gives in the environment */
	test_python_block();
	test_prompt();
	return t_done("test_llm_functionalize");
}
