/*
 * The `llm` and `budgets` sections of the server config (docs/
 * configuration.md). Unknown keys are refused like everywhere else in the
 * file: a misspelt price must not silently become free.
 */
#include "pipeline/llm/client.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"

static const char *const model_keys[] = { "provider", "base_url", "model",
	"api_key_env", "api_key_file", "temperature", "max_tokens", "weight",
	"price_in", "price_out", "timeout_s", NULL };
static const char *const llm_keys[] = { "models", "max_attempts", "backoff_ms",
	"parallel", "proposals", "fix_rounds", "summarize_over", "prompts_dir",
	"embeddings", NULL };
static const char *const embed_keys[] = { "base_url", "model", "api_key_env",
	"api_key_file", "dim", "price_in", "timeout_s", NULL };
/* Each budget and its other spelling (kernelbot optimize's first names;
 * docs/optimize.md), in the unit of the second's scale: both accepted,
 * one of the two at most. */
static const struct {
	const char *name, *alias;
	double scale;		/* alias value * scale = name's unit */
} budget_keys[] = {
	{ "candidates", NULL, 1 },
	{ "generations", NULL, 1 },
	{ "tokens", "llm_tokens", 1 },
	{ "dollars", "llm_usd", 1 },
	{ "gpu_seconds", "gpu_minutes", 60 },
	{ "wall_seconds", "wall_minutes", 60 },
};
#define N_BUDGETS (sizeof(budget_keys) / sizeof(budget_keys[0]))

static int
known_keys(const struct config *c, const json_t *o, const char *const *keys,
    const char *prefix, char *err, size_t errlen)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)o, k, v) {
		int i;
		char path[256];

		for (i = 0; keys[i] && strcmp(keys[i], k); i++)
			;
		if (!keys[i]) {
			snprintf(path, sizeof(path), "%s.%s", prefix, k);
			return config_error(c, err, errlen, path, v, "unknown key");
		}
	}
	return 0;
}

static int
get_str(const struct config *c, const json_t *o, const char *name,
    const char *key, char **dst, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, name);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v) || !json_string_length(v) ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return config_error(c, err, errlen, key, v, "must be a non-empty string");
	if (!(*dst = strdup(json_string_value(v))))
		return -ENOMEM;
	return 0;
}

static int
get_num(const struct config *c, const json_t *o, const char *name,
    const char *key, double lo, double hi, double *dst, char *err,
    size_t errlen)
{
	json_t *v = json_object_get(o, name);
	double d;

	if (!v || json_is_null(v))
		return 0;
	d = json_number_value(v);
	if (!json_is_number(v) || !isfinite(d) || d < lo || d > hi)
		return config_error(c, err, errlen, key, v,
		    "must be a number from %g to %g", lo, hi);
	*dst = d;
	return 0;
}

static int
get_int(const struct config *c, const json_t *o, const char *name,
    const char *key, long long lo, long long hi, long long *dst, char *err,
    size_t errlen)
{
	json_t *v = json_object_get(o, name);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < lo ||
	    json_integer_value(v) > hi)
		return config_error(c, err, errlen, key, v,
		    "must be an integer from %lld to %lld", lo, hi);
	*dst = json_integer_value(v);
	return 0;
}

/* base_url: the default when absent, http(s) only, no trailing slash. */
static int
finish_url(const struct config *c, const json_t *o, const char *pfx,
    struct llm_model *m, const char *dflt, char *err, size_t errlen)
{
	char key[128];

	snprintf(key, sizeof(key), "%s.base_url", pfx);
	if (!m->base_url && !(m->base_url = strdup(dflt)))
		return -ENOMEM;
	if (strncmp(m->base_url, "http://", 7) && strncmp(m->base_url, "https://", 8))
		return config_error(c, err, errlen, key, json_object_get(o, "base_url"),
		    "must start with http:// or https://");
	if (strlen(m->base_url) > 900)
		return config_error(c, err, errlen, key, json_object_get(o, "base_url"), "too long");
	for (size_t n = strlen(m->base_url); n > 0 && m->base_url[n - 1] == '/'; n--)
		m->base_url[n - 1] = '\0';
	return 0;
}

static void
model_free(struct llm_model *m)
{
	free(m->base_url);
	free(m->model);
	free(m->key_env);
	free(m->key_file);
}

static int
load_model(const struct config *c, const json_t *o, size_t i,
    struct llm_model *m, char *err, size_t errlen)
{
	char pfx[64], key[128];
	char *provider = NULL;
	long long ll;
	int error;

#define KEY(name) (snprintf(key, sizeof(key), "%s.%s", pfx, name), key)
	snprintf(pfx, sizeof(pfx), "llm.models[%zu]", i);
	m->temperature = 0.7;
	m->max_tokens = LLM_DEFAULT_MAX_TOKENS;
	m->weight = 1;
	m->timeout_s = LLM_DEFAULT_TIMEOUT_S;
	if (!json_is_object(o))
		return config_error(c, err, errlen, pfx, o, "must be a mapping");
	if ((error = known_keys(c, o, model_keys, pfx, err, errlen)) < 0 ||
	    (error = get_str(c, o, "provider", KEY("provider"), &provider, err, errlen)) < 0)
		return error;
	if (!provider) {
		return config_error(c, err, errlen, KEY("provider"), o,
		    "missing (openai or anthropic)");
	} else if (!strcmp(provider, "openai")) {
		m->provider = LLM_OPENAI;
	} else if (!strcmp(provider, "anthropic")) {
		m->provider = LLM_ANTHROPIC;
	} else {
		free(provider);
		return config_error(c, err, errlen, KEY("provider"),
		    json_object_get(o, "provider"), "must be openai or anthropic");
	}
	free(provider);
	if ((error = get_str(c, o, "base_url", KEY("base_url"), &m->base_url, err, errlen)) < 0 ||
	    (error = get_str(c, o, "model", KEY("model"), &m->model, err, errlen)) < 0 ||
	    (error = get_str(c, o, "api_key_env", KEY("api_key_env"), &m->key_env, err, errlen)) < 0 ||
	    (error = get_str(c, o, "api_key_file", KEY("api_key_file"), &m->key_file, err, errlen)) < 0 ||
	    (error = get_num(c, o, "temperature", KEY("temperature"), 0, 2, &m->temperature, err, errlen)) < 0 ||
	    (error = get_num(c, o, "weight", KEY("weight"), 1e-6, 1e6, &m->weight, err, errlen)) < 0 ||
	    (error = get_num(c, o, "price_in", KEY("price_in"), 0, 1e4, &m->price_in, err, errlen)) < 0 ||
	    (error = get_num(c, o, "price_out", KEY("price_out"), 0, 1e4, &m->price_out, err, errlen)) < 0)
		return error;
	ll = m->max_tokens;
	if ((error = get_int(c, o, "max_tokens", KEY("max_tokens"), 1, 1000000, &ll, err, errlen)) < 0)
		return error;
	m->max_tokens = (int)ll;
	ll = m->timeout_s;
	if ((error = get_int(c, o, "timeout_s", KEY("timeout_s"), 1, 3600, &ll, err, errlen)) < 0)
		return error;
	m->timeout_s = (int)ll;
	if (!m->model)
		return config_error(c, err, errlen, KEY("model"), o, "missing");
	if (m->key_env && m->key_file)
		return config_error(c, err, errlen, KEY("api_key_file"),
		    json_object_get(o, "api_key_file"),
		    "give api_key_env or api_key_file, not both");
#undef KEY
	return finish_url(c, o, pfx, m, m->provider == LLM_ANTHROPIC ?
	    "https://api.anthropic.com" : "https://api.openai.com/v1", err, errlen);
}

/* llm.embeddings: always the OpenAI wire format; dim is required. */
static int
load_embeddings(const struct config *c, const json_t *o, struct llm_config *lc,
    char *err, size_t errlen)
{
	struct llm_model *m = &lc->embed;
	long long ll = 0;
	int error;

	if (!o || json_is_null(o))
		return 0;
	if (!json_is_object(o))
		return config_error(c, err, errlen, "llm.embeddings", o, "must be a mapping");
	if ((error = known_keys(c, o, embed_keys, "llm.embeddings", err, errlen)) < 0 ||
	    (error = get_str(c, o, "base_url", "llm.embeddings.base_url", &m->base_url, err, errlen)) < 0 ||
	    (error = get_str(c, o, "model", "llm.embeddings.model", &m->model, err, errlen)) < 0 ||
	    (error = get_str(c, o, "api_key_env", "llm.embeddings.api_key_env", &m->key_env, err, errlen)) < 0 ||
	    (error = get_str(c, o, "api_key_file", "llm.embeddings.api_key_file", &m->key_file, err, errlen)) < 0 ||
	    (error = get_num(c, o, "price_in", "llm.embeddings.price_in", 0, 1e4, &m->price_in, err, errlen)) < 0 ||
	    (error = get_int(c, o, "dim", "llm.embeddings.dim", 1, LLM_MAX_EMBED_DIM, &ll, err, errlen)) < 0)
		return error;
	m->provider = LLM_OPENAI;
	lc->embed_dim = (int)ll;
	ll = 60;
	if ((error = get_int(c, o, "timeout_s", "llm.embeddings.timeout_s", 1, 3600, &ll, err, errlen)) < 0)
		return error;
	m->timeout_s = (int)ll;
	if (!m->model)
		return config_error(c, err, errlen, "llm.embeddings.model", o, "missing");
	if (!lc->embed_dim)
		return config_error(c, err, errlen, "llm.embeddings.dim", o,
		    "missing (the length of the endpoint's vectors)");
	if (m->key_env && m->key_file)
		return config_error(c, err, errlen, "llm.embeddings.api_key_file",
		    json_object_get(o, "api_key_file"), "give api_key_env or api_key_file, not both");
	return finish_url(c, o, "llm.embeddings", m, "https://api.openai.com/v1", err, errlen);
}

static int
load_budgets(const struct config *c, const json_t *b, struct llm_config *lc,
    char *err, size_t errlen)
{
	double v[N_BUDGETS] = { 0 };
	const char *k;
	json_t *x;

	if (!b || json_is_null(b))
		return 0;
	if (!json_is_object(b))
		return config_error(c, err, errlen, "budgets", b, "must be a mapping");
	json_object_foreach((json_t *)b, k, x) {
		char key[128];
		size_t i;
		int alias = 0;
		double d = json_number_value(x);

		for (i = 0; i < N_BUDGETS; i++) {
			if (!strcmp(k, budget_keys[i].name))
				break;
			if (budget_keys[i].alias && !strcmp(k, budget_keys[i].alias)) {
				alias = 1;
				break;
			}
		}
		snprintf(key, sizeof(key), "budgets.%s", k);
		if (i == N_BUDGETS)
			return config_error(c, err, errlen, key, x, "unknown key (candidates, "
			    "generations, tokens, dollars, gpu_seconds, wall_seconds)");
		if (!json_is_number(x) || !isfinite(d) || d < 0 || d > 1e12)
			return config_error(c, err, errlen, key, x,
			    "must be a number from 0 to 1e12 (0: no limit)");
		if (i < 3 && d != floor(d))
			return config_error(c, err, errlen, key, x, "must be an integer");
		if (budget_keys[i].alias && json_object_get(b, budget_keys[i].name) &&
		    json_object_get(b, budget_keys[i].alias))
			return config_error(c, err, errlen, key, x, "give budgets.%s or "
			    "budgets.%s, not both", budget_keys[i].name, budget_keys[i].alias);
		v[i] = alias ? d * budget_keys[i].scale : d;
	}
	lc->budget_candidates = v[0] > 1e9 ? 1000000000 : (int)v[0];
	lc->budget_generations = v[1] > 1e9 ? 1000000000 : (int)v[1];
	lc->budget_tokens = (int64_t)v[2];
	lc->budget_dollars = v[3];
	lc->budget_gpu_s = v[4];
	lc->budget_wall_s = v[5];
	return 0;
}

static int
load(const struct config *c, struct llm_config *lc, char *err, size_t errlen)
{
	json_t *root = config_tree(c), *l = json_object_get(root, "llm"), *ms, *m;
	long long ll;
	size_t i;
	int error;

	if ((error = load_budgets(c, json_object_get(root, "budgets"), lc, err, errlen)) < 0)
		return error;
	if (!l || json_is_null(l))
		return 0;
	if (!json_is_object(l))
		return config_error(c, err, errlen, "llm", l, "must be a mapping");
	if ((error = known_keys(c, l, llm_keys, "llm", err, errlen)) < 0 ||
	    (error = get_str(c, l, "prompts_dir", "llm.prompts_dir", &lc->prompts_dir, err, errlen)) < 0)
		return error;
#define INT(name, lo, hi, field) \
	ll = lc->field; \
	if ((error = get_int(c, l, name, "llm." name, lo, hi, &ll, err, errlen)) < 0) \
		return error; \
	lc->field = (int)ll;
	INT("max_attempts", 1, 20, max_attempts)
	INT("backoff_ms", 0, LLM_MAX_BACKOFF_MS, backoff_ms)
	INT("parallel", 1, 64, parallel)
	INT("proposals", 1, 64, proposals)
	INT("fix_rounds", 0, 20, fix_rounds)
	INT("summarize_over", 0, 1000000, summarize_over)
#undef INT
	if ((error = load_embeddings(c, json_object_get(l, "embeddings"), lc, err, errlen)) < 0)
		return error;
	ms = json_object_get(l, "models");
	if (!ms || json_is_null(ms))
		return 0;
	if (!json_is_array(ms))
		return config_error(c, err, errlen, "llm.models", ms, "must be a list");
	if (json_array_size(ms) > LLM_MAX_MODELS)
		return config_error(c, err, errlen, "llm.models", ms,
		    "at most %d models", LLM_MAX_MODELS);
	json_array_foreach(ms, i, m) {
		lc->n_models = i + 1;
		if ((error = load_model(c, m, i, &lc->models[i], err, errlen)) < 0)
			return error;
	}
	return 0;
}

int
llm_config_load(const struct config *c, struct llm_config *out, char *err,
    size_t errlen)
{
	int error;

	memset(out, 0, sizeof(*out));
	out->max_attempts = LLM_DEFAULT_ATTEMPTS;
	out->backoff_ms = LLM_DEFAULT_BACKOFF_MS;
	out->parallel = 8;
	out->proposals = 4;
	out->fix_rounds = 3;
	out->summarize_over = 2000;
	if (!c)
		return 0;
	if ((error = load(c, out, err, errlen)) < 0) {
		if (error == -ENOMEM)
			snprintf(err, errlen, "out of memory");
		llm_config_free(out);
	}
	return error;
}

void
llm_config_free(struct llm_config *lc)
{
	for (size_t i = 0; i < lc->n_models; i++)
		model_free(&lc->models[i]);
	model_free(&lc->embed);
	free(lc->prompts_dir);
	memset(lc, 0, sizeof(*lc));
}
