/* pipeline/llm without a server: templates, extraction, request bodies and
 * answer parsing, retry waits, the config sections, error summaries. The
 * client against a server is tests/e2e/t5000-llm-client.sh. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf/config.h"
#include "common/jsonx.h"
#include "pipeline/llm/client.h"
#include "pipeline/llm/extract.h"
#include "pipeline/llm/llm.h"
#include "pipeline/llm/template.h"
#include "t.h"

static char rendered[8192];

/* Render tmpl with vars (JSON text); 0 and `rendered`, or the error. */
static int
render(const char *tmpl, const char *vars, char *err)
{
	json_t *v = json_loads(vars, 0, NULL);
	struct buf out = BUF_INIT(sizeof(rendered) - 1);
	int rc;

	err[0] = '\0';
	rc = tmpl_render(tmpl, v, &out, err, 256);
	snprintf(rendered, sizeof(rendered), "%s", buf_cstr(&out));
	buf_free(&out);
	json_decref(v);
	return rc;
}

static void
test_template(void)
{
	char err[256];

	CHECK_INT("substitution", render("a {{x}} b {{n}} {{f}} {{o.k}}",
	    "{\"x\": \"X\", \"n\": 3, \"f\": 0.5, \"o\": {\"k\": \"deep\"}}", err), 0);
	CHECK_STR("values and dotted paths", rendered, "a X b 3 0.5 deep");
	CHECK_INT("missing value", render("line1\n{{nope}}", "{}", err), -EINVAL);
	CHECK_STR("missing value names the tag and line", err, "line 2: no value for {{nope}}");
	CHECK_INT("sections", render("{{#a}}A{{/a}}{{#e}}E{{/e}}{{^e}}not-e{{/e}}{{#z}}Z{{/z}}",
	    "{\"a\": \"yes\", \"e\": \"\", \"z\": 0}", err), 0);
	CHECK_STR("non-empty kept, empty dropped, inverted kept", rendered, "Anot-e");
	CHECK_INT("absent names in sections", render("[{{#gone}}{{x}}{{/gone}}]", "{}", err), 0);
	CHECK_STR("an absent section drops out", rendered, "[]");
	CHECK_INT("lists", render("{{#ks}}<{{rank}}:{{ms}}:{{top}}>{{/ks}}",
	    "{\"top\": \"T\", \"ks\": [{\"rank\": 1, \"ms\": 2.5}, {\"rank\": 2, \"ms\": 1}]}", err), 0);
	CHECK_STR("each element's fields, outer names visible", rendered, "<1:2.5:T><2:1:T>");
	CHECK_INT("scalar elements", render("{{#xs}}{{.}},{{/xs}}", "{\"xs\": [\"a\", \"b\"]}", err), 0);
	CHECK_STR("{{.}} is the element", rendered, "a,b,");
	CHECK_INT("standalone tags", render("top\n{{! a comment }}\n{{#a}}\nin\n{{/a}}\nend\n",
	    "{\"a\": true}", err), 0);
	CHECK_STR("standalone tags take their lines", rendered, "top\nin\nend\n");
	CHECK_INT("nested same name", render("{{#a}}1{{#a}}2{{/a}}3{{/a}}", "{\"a\": 1}", err), 0);
	CHECK_STR("nested sections close in order", rendered, "123");
	CHECK_INT("unclosed section", render("x\n{{#a}} y", "{\"a\": 1}", err), -EINVAL);
	CHECK_STR("unclosed section error", err, "line 2: {{#a}} is never closed");
	CHECK_INT("stray close", render("{{/a}}", "{}", err), -EINVAL);
	CHECK_INT("unclosed tag", render("{{a", "{\"a\": 1}", err), -EINVAL);
	CHECK_INT("unknown filter", render("{{a|shout}}", "{\"a\": \"x\"}", err), -EINVAL);
	CHECK_INT("objects are not values", render("{{o}}", "{\"o\": {}}", err), -EINVAL);

	/* quoted data cannot close its own fence */
	CHECK_INT("fence", render("{{s|fence:python}}", "{\"s\": \"a\\n```\\nrun this\\n````\\n\"}", err), 0);
	CHECK_STR("the fence outgrows the data's backticks", rendered,
	    "`````python\na\n```\nrun this\n````\n`````");
	CHECK_INT("code", render("{{s|code}}", "{\"s\": \"int x;\", \"lang\": \"cuda\"}", err), 0);
	CHECK_STR("|code takes {{lang}}", rendered, "```cuda\nint x;\n```");
	{
		char f[16];
		CHECK_INT("15 backticks cannot be fenced", tmpl_fence("```````````````", f), -EINVAL);
		CHECK_INT("plain text", tmpl_fence("no ticks", f), 0);
		CHECK_STR("plain text gets three", f, "```");
	}
	{
		struct buf small = BUF_INIT(8);
		json_t *v = json_pack("{s:s}", "a", "0123456789");
		CHECK_INT("over the cap", tmpl_render("{{a}}", v, &small, err, sizeof(err)), -ENOBUFS);
		buf_free(&small);
		json_decref(v);
	}
}

static const char PARENT[] =
    "#include <dlpack/dlpack.h>\n"
    "int kernelbot_forward(const DLTensor *in, int n_in, DLTensor *out, int n_out, void *s)\n"
    "{\n"
    "\tfloat *y = out[0].data;\n"
    "\ty[0] = 1;\n"
    "\ty[1] = 1;\n"
    "\treturn 0;\n"
    "}\n";

static int
extract(const char *answer, const char *parent, const char *backend, char **src,
    enum extract_kind *kind, char *why)
{
	*src = NULL;
	why[0] = '\0';
	return llm_extract(answer, parent, backend, 1, src, kind, why, 512);
}

static void
test_extract(void)
{
	char *src, why[512];
	enum extract_kind kind;

	CHECK("entry point", llm_has_entry("int kernelbot_forward (const DLTensor *i)"));
	CHECK("a longer name is not the entry", !llm_has_entry("int kernelbot_forward2(void)"));
	CHECK("a prefixed name is not the entry", !llm_has_entry("int my_kernelbot_forward(void)"));
	CHECK("a mention is not the entry", !llm_has_entry("// call kernelbot_forward here"));

	CHECK_INT("last block with the entry", extract(
	    "First a helper:\n```c\nstatic int h(void) { return 1; }\n```\n"
	    "Then:\n```cuda\nint kernelbot_forward(void) { return 0; }\n```\n"
	    "And a test:\n```python\nprint(1)\n```\n"
	    "```c\nint unrelated(void);\n```\n", NULL, "cuda", &src, &kind, why), 0);
	CHECK_STR("the block defining kernelbot_forward wins", src,
	    "int kernelbot_forward(void) { return 0; }\n");
	CHECK_INT("kind block", kind, EXTRACT_BLOCK);
	free(src);
	CHECK_INT("the last of two", extract(
	    "```c\nint kernelbot_forward(void) { return 1; }\n```\n"
	    "```c\nint kernelbot_forward(void) { return 2; }\n```\n", NULL, "cpu", &src, &kind, why), 0);
	CHECK_STR("the last complete block", src, "int kernelbot_forward(void) { return 2; }\n");
	free(src);
	CHECK_INT("an unclosed block is ignored", extract(
	    "```c\nint kernelbot_forward(void) { return 1; }\n```\n"
	    "```c\nint kernelbot_forward(void) { return 2;", NULL, "cpu", &src, &kind, why), 0);
	CHECK_STR("the complete one", src, "int kernelbot_forward(void) { return 1; }\n");
	free(src);
	CHECK_INT("longer fences hold shorter ones", extract(
	    "````cpp\nint kernelbot_forward(void) {\n/*\n```\n*/ return 3; }\n````\n", NULL,
	    "cuda", &src, &kind, why), 0);
	CHECK_STR("the inner ``` is content", src, "int kernelbot_forward(void) {\n/*\n```\n*/ return 3; }\n");
	free(src);
	CHECK_INT("garbage", extract("I cannot do that.", NULL, "cpu", &src, &kind, why), -EINVAL);
	CHECK_STR("garbage: why", why, "no ```c code block in the answer");
	CHECK_INT("only python", extract("```python\nx=1\n```\n", NULL, "cuda", &src, &kind, why), -EINVAL);
	CHECK_INT("empty answer", extract("", NULL, "cpu", &src, &kind, why), -EINVAL);
	CHECK_INT("no entry point", extract("```c\nint f(void);\n```\n", NULL, "cpu", &src, &kind, why), -EINVAL);
	CHECK("no entry point: why", strstr(why, "does not define kernelbot_forward") != NULL);
	CHECK_INT("a side stream is refused", extract(
	    "```cuda\n#include <cuda_runtime.h>\nint kernelbot_forward(void *s) {\n"
	    "cudaDeviceSynchronize(); return 0; }\n```\n", NULL, "cuda", &src, &kind, why), -EINVAL);
	CHECK("the static check is named", strstr(why, "static:") != NULL);
	CHECK_INT("environment access is refused", extract(
	    "```c\n#include <stdlib.h>\nint kernelbot_forward(void) { return getenv(\"K\") != 0; }\n```\n",
	    NULL, "cpu", &src, &kind, why), -EINVAL);

	/* edits */
	CHECK_INT("an edit", extract("Change:\n<<<<<<< SEARCH\n\ty[1] = 1;\n=======\n\ty[1] = 2;\n"
	    ">>>>>>> REPLACE\n", PARENT, "cpu", &src, &kind, why), 0);
	CHECK_INT("kind edit", kind, EXTRACT_EDIT);
	CHECK("the edit applied", src && strstr(src, "\ty[1] = 2;\n") && strstr(src, "\ty[0] = 1;\n"));
	free(src);
	CHECK_INT("two edits in order", extract("<<<<<<< SEARCH\n\ty[0] = 1;\n=======\n\ty[0] = 5;\n"
	    ">>>>>>> REPLACE\n<<<<<<< SEARCH\n\ty[0] = 5;\n\ty[1] = 1;\n=======\n\ty[0] = 6;\n"
	    ">>>>>>> REPLACE\n", PARENT, "cpu", &src, &kind, why), 0);
	CHECK("the second sees the first", src && strstr(src, "\ty[0] = 6;\n\treturn 0;"));
	free(src);
	CHECK_INT("an ambiguous edit", extract("<<<<<<< SEARCH\n = 1;\n=======\n = 2;\n>>>>>>> REPLACE\n",
	    PARENT, "cpu", &src, &kind, why), -EINVAL);
	CHECK("ambiguous: why", strstr(why, "occurs 2 times") != NULL);
	CHECK_INT("a non-matching edit", extract("<<<<<<< SEARCH\n\ty[2] = 1;\n=======\n\ty[2] = 2;\n"
	    ">>>>>>> REPLACE\n", PARENT, "cpu", &src, &kind, why), -EINVAL);
	CHECK("non-matching: why", strstr(why, "is not in the kernel") != NULL);
	CHECK_INT("an unclosed edit", extract("<<<<<<< SEARCH\n\ty[1] = 1;\n=======\n\ty[1] = 2;\n",
	    PARENT, "cpu", &src, &kind, why), -EINVAL);
	CHECK_INT("an edit without a parent", extract("<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n",
	    NULL, "cpu", &src, &kind, why), -EINVAL);
	CHECK_INT("an edit that removes the entry", extract("<<<<<<< SEARCH\nint kernelbot_forward(\n"
	    "=======\nint other(\n>>>>>>> REPLACE\n", PARENT, "cpu", &src, &kind, why), -EINVAL);
	CHECK_INT("an empty search", extract("<<<<<<< SEARCH\n=======\nx\n>>>>>>> REPLACE\n",
	    PARENT, "cpu", &src, &kind, why), -EINVAL);
}

static void
test_wire(void)
{
	struct llm_model m = { LLM_OPENAI, "http://x", "gpt-x", NULL, NULL, 0.3, 100, 1, 2, 10, 5 };
	struct llm_request rq = { &m, "SYS", "USER", "translate", -1 };
	json_t *b;
	char *body, *text = NULL, err[256];
	int64_t tin = -1, tout = -1;

	body = llm_request_body(&rq);
	b = json_loads(body, 0, NULL);
	CHECK_STR("openai: model", jsonx_str(b, "model", ""), "gpt-x");
	CHECK_INT("openai: max_tokens", jsonx_int(b, "max_tokens", 0), 100);
	CHECK("openai: the model's temperature", jsonx_num(b, "temperature", 0) == 0.3);
	CHECK_STR("openai: system message first",
	    jsonx_str(json_array_get(json_object_get(b, "messages"), 0), "role", ""), "system");
	CHECK_STR("openai: then the user's",
	    jsonx_str(json_array_get(json_object_get(b, "messages"), 1), "content", ""), "USER");
	CHECK("openai: no top-level system", !json_object_get(b, "system"));
	json_decref(b);
	free(body);
	m.provider = LLM_ANTHROPIC;
	rq.temperature = 1.0;
	body = llm_request_body(&rq);
	b = json_loads(body, 0, NULL);
	CHECK_STR("anthropic: top-level system", jsonx_str(b, "system", ""), "SYS");
	CHECK_INT("anthropic: one user message", json_array_size(json_object_get(b, "messages")), 1);
	CHECK("anthropic: the request's temperature", jsonx_num(b, "temperature", 0) == 1.0);
	json_decref(b);
	free(body);

#define ANS(p, s) llm_parse_answer(p, s, strlen(s), &text, &tin, &tout, err, sizeof(err))
	CHECK_INT("openai answer", ANS(LLM_OPENAI, "{\"choices\": [{\"message\": {\"content\": \"hi\"}}],"
	    " \"usage\": {\"prompt_tokens\": 7, \"completion_tokens\": 9}}"), 0);
	CHECK_STR("openai text", text, "hi");
	CHECK("openai usage", tin == 7 && tout == 9);
	free(text);
	text = NULL;
	CHECK_INT("anthropic answer", ANS(LLM_ANTHROPIC, "{\"content\": [{\"type\": \"text\", \"text\": \"a\"},"
	    " {\"type\": \"tool_use\"}, {\"type\": \"text\", \"text\": \"b\"}],"
	    " \"usage\": {\"input_tokens\": 3, \"output_tokens\": 4}}"), 0);
	CHECK_STR("anthropic text parts joined", text, "ab");
	CHECK("anthropic usage", tin == 3 && tout == 4);
	free(text);
	text = NULL;
	CHECK_INT("no choices", ANS(LLM_OPENAI, "{\"choices\": []}"), -EPROTO);
	CHECK_INT("not JSON", ANS(LLM_OPENAI, "<html>"), -EPROTO);
	CHECK_INT("no text parts", ANS(LLM_ANTHROPIC, "{\"content\": []}"), -EPROTO);
	CHECK_INT("negative usage", ANS(LLM_ANTHROPIC, "{\"content\": [{\"type\": \"text\", \"text\": \"a\"}],"
	    " \"usage\": {\"input_tokens\": -3}}"), -EPROTO);
	CHECK("nothing returned on failure", text == NULL);
#undef ANS

	CHECK_INT("backoff 1", llm_retry_wait_ms(100, 1, NULL), 100);
	CHECK_INT("backoff doubles", llm_retry_wait_ms(100, 3, NULL), 400);
	CHECK_INT("backoff capped", llm_retry_wait_ms(1000, 30, NULL), LLM_MAX_BACKOFF_MS);
	CHECK_INT("Retry-After seconds win when longer", llm_retry_wait_ms(100, 1, "3"), 3000);
	CHECK_INT("backoff wins when longer", llm_retry_wait_ms(5000, 1, "1"), 5000);
	CHECK_INT("Retry-After too long", llm_retry_wait_ms(100, 1, "100000"), -1);
	CHECK_INT("unreadable Retry-After", llm_retry_wait_ms(100, 1, "soon"), 100);
	{
		char date[64];
		time_t t = time(NULL) + 20;
		struct tm tm;
		long w;

		gmtime_r(&t, &tm);
		strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		w = llm_retry_wait_ms(100, 1, date);
		CHECK("Retry-After as an HTTP date", w >= 18000 && w <= 20000);
	}
}

static int
conf(const char *yml, struct llm_config *lc, char *err)
{
	struct config *c = NULL;
	int rc;

	err[0] = '\0';
	if ((rc = config_parse("kb.yml", yml, strlen(yml), CONFIG_NO_SECRETS, &c, err, 512)) < 0)
		return rc;
	rc = llm_config_load(c, lc, err, 512);
	config_free(c);
	return rc;
}

static void
bad_conf(const char *name, const char *yml, const char *want)
{
	struct llm_config lc;
	char err[512];
	int rc = conf(yml, &lc, err);

	if (!CHECK(name, rc == -EINVAL && strstr(err, want)))
		printf("     rc=%d err=\"%s\" want \"%s\"\n", rc, err, want);
	if (rc == 0)
		llm_config_free(&lc);
}

static void
test_config(void)
{
	struct llm_config lc;
	char err[512];

	CHECK_INT("a full section", conf("llm:\n  fix_rounds: 5\n  models:\n"
	    "    - provider: anthropic\n      model: claude\n      api_key_env: K\n"
	    "    - provider: openai\n      base_url: http://127.0.0.1:8000/v1/\n      model: local\n"
	    "      weight: 3\n      temperature: 0.2\n      price_in: 0.5\n      price_out: 1.5\n"
	    "      timeout_s: 60\n      max_tokens: 4096\n"
	    "budgets:\n  tokens: 100000\n  dollars: 2.5\n  candidates: 64\n  gpu_seconds: 600\n",
	    &lc, err), 0);
	CHECK_INT("two models", lc.n_models, 2);
	CHECK_STR("anthropic's default base_url", lc.models[0].base_url, "https://api.anthropic.com");
	CHECK_STR("a trailing slash dropped", lc.models[1].base_url, "http://127.0.0.1:8000/v1");
	CHECK("defaults", lc.models[0].weight == 1 && lc.models[0].temperature == 0.7 &&
	    lc.models[0].timeout_s == LLM_DEFAULT_TIMEOUT_S && lc.max_attempts == LLM_DEFAULT_ATTEMPTS);
	CHECK("values", lc.models[1].weight == 3 && lc.models[1].price_out == 1.5 &&
	    lc.models[1].max_tokens == 4096 && lc.fix_rounds == 5);
	CHECK("budgets", lc.budget_tokens == 100000 && lc.budget_dollars == 2.5 &&
	    lc.budget_candidates == 64 && lc.budget_gpu_s == 600);
	llm_config_free(&lc);
	CHECK_INT("no section", conf("listen: 127.0.0.1:1\n", &lc, err), 0);
	CHECK_INT("no models", lc.n_models, 0);
	llm_config_free(&lc);

	bad_conf("unknown llm key", "llm:\n  modles: []\n", "kb.yml:2: llm.modles: unknown key");
	bad_conf("bad provider", "llm:\n  models:\n    - provider: gemini\n      model: x\n",
	    "kb.yml:3: llm.models[0].provider: must be openai or anthropic");
	bad_conf("no provider", "llm:\n  models:\n    - model: x\n", "llm.models[0].provider: missing");
	bad_conf("no model", "llm:\n  models:\n    - provider: openai\n", "llm.models[0].model: missing");
	bad_conf("two key sources", "llm:\n  models:\n    - provider: openai\n      model: x\n"
	    "      api_key_env: A\n      api_key_file: /k\n", "kb.yml:6: llm.models[0].api_key_file: "
	    "give api_key_env or api_key_file, not both");
	bad_conf("a bad scheme", "llm:\n  models:\n    - provider: openai\n      model: x\n"
	    "      base_url: ftp://h\n", "kb.yml:5: llm.models[0].base_url: must start with http");
	bad_conf("a negative price", "llm:\n  models:\n    - provider: openai\n      model: x\n"
	    "      price_in: -1\n", "kb.yml:5: llm.models[0].price_in: must be a number from 0");
	bad_conf("a zero weight", "llm:\n  models:\n    - provider: openai\n      model: x\n"
	    "      weight: 0\n", "llm.models[0].weight: must be a number");
	bad_conf("a string timeout", "llm:\n  models:\n    - provider: openai\n      model: x\n"
	    "      timeout_s: soon\n", "kb.yml:5: llm.models[0].timeout_s: must be an integer");
	bad_conf("models not a list", "llm:\n  models: {}\n", "kb.yml:2: llm.models: must be a list");
	bad_conf("unknown budget", "budgets:\n  euros: 3\n", "kb.yml:2: budgets.euros: unknown key");
	bad_conf("fractional tokens", "budgets:\n  tokens: 1.5\n", "kb.yml:2: budgets.tokens: must be an integer");
	bad_conf("budgets not a mapping", "budgets: 5\n", "kb.yml:1: budgets: must be a mapping");
	bad_conf("parallel 0", "llm:\n  parallel: 0\n", "kb.yml:2: llm.parallel: must be an integer from 1");
	bad_conf("both spellings", "budgets:\n  tokens: 5\n  llm_tokens: 6\n",
	    "budgets.tokens or budgets.llm_tokens, not both");
	bad_conf("a string budget", "budgets:\n  candidates: lots\n",
	    "kb.yml:2: budgets.candidates: must be a number");

	CHECK_INT("the other spellings", conf("budgets:\n  llm_tokens: 7\n  llm_usd: 1.5\n"
	    "  gpu_minutes: 2\n  wall_minutes: 0.5\n", &lc, err), 0);
	CHECK("minutes are seconds x 60", lc.budget_tokens == 7 && lc.budget_dollars == 1.5 &&
	    lc.budget_gpu_s == 120 && lc.budget_wall_s == 30);
	llm_config_free(&lc);
	{
		const char *root = getenv("KB_ROOT");
		char path[512];
		struct config *c = NULL;

		snprintf(path, sizeof(path), "%s/kernelbot.example.yml", root ? root : ".");
		CHECK_INT("kernelbot.example.yml loads", config_load(path, CONFIG_NO_SECRETS, &c,
		    err, sizeof(err)), 0);
		CHECK_INT("its llm section loads", llm_config_load(c, &lc, err, sizeof(err)), 0);
		CHECK("its two models and budgets", lc.n_models == 2 &&
		    lc.models[0].provider == LLM_ANTHROPIC && lc.budget_dollars == 5);
		llm_config_free(&lc);
		config_free(c);
	}
}

static void
test_summary(void)
{
	json_t *r = json_pack("{s:s,s:[{s:s,s:b,s:s},{s:s,s:b,s:s}],s:[s,s]}", "status", "mismatch",
	    "checks", "name", "outputs_match", "passed", 0, "detail", "out0 max error 3.5 at [2, 7]",
	    "name", "compile", "passed", 1, "detail", "ok",
	    "errors", "trial 1, input variant 2: out0: 12 of 4096 elements differ", "second");
	struct eval_cand c;
	char *s, big[6000];

	eval_cand_parse(r, &c, big, sizeof(big));
	s = llm_error_summary(&c, 3000);

	CHECK("the status", s && strstr(s, "status: mismatch\n"));
	CHECK("failed checks only", s && strstr(s, "outputs_match: out0 max error 3.5 at [2, 7]") &&
	    !strstr(s, "check compile"));
	CHECK("the errors", s && strstr(s, "input variant 2: out0: 12 of 4096") && strstr(s, "second\n"));
	free(s);
	eval_cand_clear(&c);
	json_decref(r);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big + sizeof(big) - 20, "error: the end", 14);
	r = json_pack("{s:s,s:[s]}", "status", "compile_error", "errors", big);
	eval_cand_parse(r, &c, NULL, 0);
	s = llm_error_summary(&c, 1000);
	CHECK("capped", s && strlen(s) <= 1000);
	CHECK("a compile log keeps its tail", s && strstr(s, "error: the end"));
	free(s);
	eval_cand_clear(&c);
	json_decref(r);
}

int
main(void)
{
	test_template();
	test_extract();
	test_wire();
	test_config();
	test_summary();
	return t_done("test_llm");
}
