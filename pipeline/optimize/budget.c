/*
 * budget: a repository's budget within the server's. Minutes are how
 * both files spell time; evolve_budget counts seconds.
 */
#include "pipeline/optimize/budget.h"

#include <stdio.h>
#include <string.h>

#include "pipeline/optimize/optimize.h"

/* The smaller of a repository's limit and the server's (0: no limit). */
static double
cap(double repo, double server)
{
	if (repo <= 0)
		return 0;
	return server > 0 && server < repo ? server : repo;
}

int
budget_for_repo(const struct config *cfg, const json_t *repo_budget,
    struct evolve_budget *out, char *err, size_t errlen)
{
	struct evolve_budget server;
	const json_t *v;
	int rc;

	memset(&server, 0, sizeof(server));
	if ((rc = optimize_config_budgets(cfg, &server, err, errlen)) < 0)
		return rc;
	memset(out, 0, sizeof(*out));
	if (!json_is_object(repo_budget))
		return 0;
	if ((v = json_object_get(repo_budget, "candidates")))
		out->candidates = (int)cap((double)json_integer_value(v),
		    server.candidates);
	if ((v = json_object_get(repo_budget, "wall_minutes")))
		out->wall_s = cap(json_number_value(v) * 60, server.wall_s);
	if ((v = json_object_get(repo_budget, "gpu_minutes")))
		out->gpu_s = cap(json_number_value(v) * 60, server.gpu_s);
	if ((v = json_object_get(repo_budget, "llm_tokens")))
		out->tokens = (int64_t)cap((double)json_integer_value(v),
		    (double)server.tokens);
	/* 0 dollars is a limit here (no paid LLM calls), not "none". */
	if ((v = json_object_get(repo_budget, "llm_usd"))) {
		out->dollars = json_number_value(v);
		if (server.dollars > 0 && server.dollars < out->dollars)
			out->dollars = server.dollars;
		if (out->dollars <= 0)
			out->dollars = -1;
	}
	return 0;
}

/* Whole numbers print as such, the rest with 6 significant digits. */
static void
add(const char **argv, size_t *n, char text[][BUDGET_ARG_LEN], size_t *k,
    const char *flag, double v)
{
	snprintf(text[*k], BUDGET_ARG_LEN, "%.6g", v);
	if (v == (double)(long long)v)
		snprintf(text[*k], BUDGET_ARG_LEN, "%lld", (long long)v);
	argv[(*n)++] = flag;
	argv[(*n)++] = text[(*k)++];
}

void
budget_optimize_args(const struct evolve_budget *b, const char **argv,
    size_t *n, char text[][BUDGET_ARG_LEN])
{
	size_t k = 0;

	if (b->candidates > 0)
		add(argv, n, text, &k, "--budget", b->candidates);
	if (b->wall_s > 0)
		add(argv, n, text, &k, "--wall-minutes", b->wall_s / 60);
	if (b->gpu_s > 0)
		add(argv, n, text, &k, "--gpu-minutes", b->gpu_s / 60);
	if (b->tokens > 0)
		add(argv, n, text, &k, "--llm-tokens", (double)b->tokens);
	if (b->dollars != 0)
		add(argv, n, text, &k, "--llm-usd", b->dollars < 0 ? 0 :
		    b->dollars);
}
