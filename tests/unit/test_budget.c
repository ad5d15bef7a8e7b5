/* pipeline/optimize/budget: a repository's .kernelbot.yml budget within the server's budgets:. */
#include <string.h>

#include "pipeline/optimize/budget.h"
#include "conf/config.h"
#include "gitops/repocfg.h"
#include "t.h"

static struct config *
server(const char *yaml)
{
	struct config *c = NULL;
	char err[512];

	if (config_parse("kb.yml", yaml, strlen(yaml), CONFIG_NO_SECRETS, &c, err,
	    sizeof(err)) < 0)
		printf("     config: %s\n", err);
	return c;
}

/* The budget: of a .kernelbot.yml text, through repocfg (new reference). */
static json_t *
repo(const char *yaml)
{
	struct repocfg *rc = NULL;
	char err[512];
	json_t *b;

	if (repocfg_parse(".kernelbot.yml", yaml, strlen(yaml), &rc, err,
	    sizeof(err)) < 0) {
		printf("     repocfg: %s\n", err);
		return NULL;
	}
	b = json_incref(json_object_get(repocfg_json(rc), "budget"));
	repocfg_free(rc);
	return b;
}

/* The flags as one string "--budget 3 --gpu-minutes 10". */
static void
flags(const struct evolve_budget *b, char *out, size_t len)
{
	const char *argv[BUDGET_MAX_ARGS];
	char text[BUDGET_MAX_ARGS][BUDGET_ARG_LEN];
	size_t n = 0;

	budget_optimize_args(b, argv, &n, text);
	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? " " : "",
		    argv[i]);
}

int
main(void)
{
	struct config *c = server("budgets: {candidates: 8, gpu_minutes: 10, "
	    "llm_usd: 2}\n");
	struct evolve_budget b;
	json_t *rb;
	char err[512], f[256];

	CHECK("the server config parses", c != NULL);

	rb = repo("version: 1\nbudget: {candidates: 3, gpu_minutes: 30, "
	    "wall_minutes: 5, llm_tokens: 1000, llm_usd: 1}\n");
	CHECK("every repository budget key parses", rb != NULL);
	CHECK_INT("budget_for_repo", budget_for_repo(c, rb, &b, err, sizeof(err)), 0);
	CHECK_INT("a smaller repository candidates limit is kept", b.candidates, 3);
	CHECK("a larger repository gpu limit is capped by the server's",
	    b.gpu_s == 600);
	CHECK("a limit the server does not set is the repository's", b.wall_s == 300);
	CHECK_INT("llm_tokens", b.tokens, 1000);
	CHECK("llm_usd below the server's", b.dollars == 1);
	flags(&b, f, sizeof(f));
	CHECK_STR("the optimize flags", f, "--budget 3 --wall-minutes 5 "
	    "--gpu-minutes 10 --llm-tokens 1000 --llm-usd 1");
	json_decref(rb);

	rb = repo("version: 1\nbudget: {candidates: 100}\n");
	CHECK_INT("budget_for_repo, over the cap", budget_for_repo(c, rb, &b, err,
	    sizeof(err)), 0);
	CHECK_INT("candidates capped at the server's 8", b.candidates, 8);
	CHECK("unset repository limits stay unset (optimize applies the server's)",
	    b.gpu_s == 0 && b.wall_s == 0 && b.tokens == 0 && b.dollars == 0);
	flags(&b, f, sizeof(f));
	CHECK_STR("only the candidates flag", f, "--budget 8");
	json_decref(rb);

	rb = repo("version: 1\nbudget: {llm_usd: 0}\n");
	CHECK_INT("budget_for_repo, no money", budget_for_repo(c, rb, &b, err,
	    sizeof(err)), 0);
	flags(&b, f, sizeof(f));
	CHECK_STR("llm_usd 0 is a limit, not \"no limit\"", f, "--llm-usd 0");
	json_decref(rb);

	CHECK_INT("no budget: key", budget_for_repo(c, NULL, &b, err, sizeof(err)), 0);
	flags(&b, f, sizeof(f));
	CHECK_STR("no flags without a repository budget", f, "");
	CHECK("a bad repository budget is an error naming the key",
	    repo("version: 1\nbudget: {wall_minutes: -1}\n") == NULL);
	CHECK("an unknown budget key is an error",
	    repo("version: 1\nbudget: {tokens: 5}\n") == NULL);
	config_free(c);

	c = server("budgets: {candidates: -3}\n");
	if (c) {
		CHECK("a bad server budgets: section is an error",
		    budget_for_repo(c, NULL, &b, err, sizeof(err)) < 0);
		config_free(c);
	}
	return t_done("budget");
}
