/*
 * llm client: chat requests to the models of the server config's
 * `llm.models` (docs/llm.md). Two wire formats: OpenAI-compatible chat
 * completions (OpenAI, DeepSeek, vLLM, llama.cpp server, Ollama: POST
 * BASE_URL/chat/completions) and the Anthropic messages API (POST
 * BASE_URL/v1/messages). Requests go out in parallel through common/http.h
 * (http_do_many); a 429, a 5xx, a timeout or a dropped connection is
 * retried with exponential backoff, never before the server's Retry-After.
 *
 * Keys: read from api_key_env or api_key_file when a request is built,
 * put in the auth header only (Authorization: Bearer, or x-api-key), our
 * copies wiped after each round, never copied into a reply, an error message, a log
 * line or a call record. Nothing here starts a process, so no key can
 * reach a sandbox's environment.
 *
 * Every attempt is reported to the caller's `record` hook (the store's
 * llm_calls table, store/store.h) with its tokens and cost (price_in and
 * price_out are dollars per million tokens).
 */
#ifndef KB_PIPELINE_LLM_CLIENT_H
#define KB_PIPELINE_LLM_CLIENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/crypto.h"

struct config;

#define LLM_MAX_MODELS		32
#define LLM_MAX_KEY		4096		/* bytes of a key file */
#define LLM_MAX_RESPONSE	(8u << 20)	/* bytes of one response body */
#define LLM_MAX_RETRY_AFTER_S	600		/* longer waits fail the call */
#define LLM_DEFAULT_TIMEOUT_S	300
#define LLM_DEFAULT_MAX_TOKENS	8192
#define LLM_DEFAULT_ATTEMPTS	4
#define LLM_DEFAULT_BACKOFF_MS	1000
#define LLM_MAX_BACKOFF_MS	60000

enum llm_provider { LLM_OPENAI, LLM_ANTHROPIC };

/* One entry of llm.models. */
struct llm_model {
	enum llm_provider provider;
	char *base_url;		/* without the trailing slash */
	char *model;		/* the provider's model name */
	char *key_env;		/* NULL, or the variable holding the key */
	char *key_file;		/* NULL, or the file holding the key */
	double temperature;	/* default 0.7 */
	int max_tokens;		/* default LLM_DEFAULT_MAX_TOKENS */
	double weight;		/* > 0; chance of being picked, default 1 */
	double price_in, price_out;	/* dollars per million tokens, default 0 */
	int timeout_s;		/* per attempt, default LLM_DEFAULT_TIMEOUT_S */
};

#define LLM_MAX_EMBED_DIM	4096
#define LLM_MAX_EMBED_TEXT	(32u << 10)	/* bytes of a text sent to be embedded */

/* The `llm` section and the budgets that concern it. */
struct llm_config {
	struct llm_model models[LLM_MAX_MODELS];
	size_t n_models;
	/*
	 * llm.embeddings: an OpenAI-compatible embeddings endpoint (POST
	 * BASE_URL/embeddings) for archive retrieval; embed.model is NULL
	 * when none is configured. Uses base_url, model, the key, price_in
	 * and timeout_s of the model entry's fields.
	 */
	struct llm_model embed;
	int embed_dim;		/* llm.embeddings.dim: the vector's length */
	int max_attempts;	/* llm.max_attempts: tries per request, default 4 */
	int backoff_ms;		/* llm.backoff_ms: first retry's wait, doubling */
	int parallel;		/* llm.parallel: requests at once, default 8 */
	int proposals;		/* llm.proposals: candidates per generation, default 4 */
	int fix_rounds;		/* llm.fix_rounds: fixes per failed proposal, default 3 */
	int summarize_over;	/* llm.summarize_over: error summaries longer than
				 * this many characters go through a model first;
				 * 0 never; default 2000 */
	char *prompts_dir;	/* llm.prompts_dir, NULL: the installed templates */
	/* budgets.* (0: no limit) */
	int budget_candidates, budget_generations;
	double budget_gpu_s, budget_wall_s, budget_dollars;
	int64_t budget_tokens;
};

/*
 * Read and validate `llm` and `budgets` from a loaded server config; every
 * problem is "FILE:LINE: KEY: message" (config_error). An absent section
 * gives no models and no limits. 0, -EINVAL, -ENOMEM. Free with
 * llm_config_free(); a NULL config gives the defaults.
 */
int llm_config_load(const struct config *c, struct llm_config *out, char *err,
    size_t errlen);
void llm_config_free(struct llm_config *lc);

/*
 * Read m's key the way a request does (api_key_env must be set and not
 * empty; api_key_file a regular file of one line) and forget it: a
 * start-up check. 0 also for a model without a key; -errno with a
 * sentence in err that never holds the key.
 */
int llm_model_key_check(const struct llm_model *m, char *err, size_t errlen);

const char *llm_provider_name(enum llm_provider p);

/* One chat request: a system and a user message. */
struct llm_request {
	const struct llm_model *model;
	const char *system;	/* may be NULL */
	const char *user;
	const char *stage;	/* "translate", "fix", ... for the record */
	double temperature;	/* < 0: the model's */
};

/* Its outcome. status: "ok", "http_error", "timeout", "network",
 * "malformed" (no text in a 2xx body), "no_key", "budget". */
struct llm_reply {
	char *text;			/* the answer (malloc'd), NULL unless "ok" */
	const char *status;		/* static string */
	long http_status;		/* of the last attempt, 0 without one */
	int attempts;
	int64_t tokens_in, tokens_out;	/* all attempts together */
	double cost;			/* dollars, all attempts */
	double latency_s;		/* first send to last answer, waits included */
	char prompt_sha[CRYPTO_SHA256_HEX];	/* of system + user */
	char error[256];		/* "" or why it failed (no secrets) */
};

/* What the record hook gets for every attempt (borrowed for the call). */
struct llm_call {
	const char *model, *provider, *stage, *prompt_sha;
	const char *status;		/* of this attempt */
	long http_status;
	int attempt;			/* 1-based */
	int64_t tokens_in, tokens_out;
	double cost, latency_s;
};

struct llm_client {
	const struct llm_config *cfg;
	/* may be NULL; its failures are the hook's to report */
	void (*record)(void *arg, const struct llm_call *call);
	void *record_arg;
	/* the wait between rounds; tests can count it. NULL: nanosleep */
	void (*sleep_ms)(void *arg, long ms);
	void *sleep_arg;
};

/*
 * Send n requests, at most cfg->parallel at once, retrying each as above.
 * replies[i] is always filled (status says how it went); free each with
 * llm_reply_free(). 0, or -ENOMEM / -EINVAL when nothing could be sent.
 */
int llm_chat_many(const struct llm_client *cl, const struct llm_request *reqs,
    struct llm_reply *replies, size_t n);

void llm_reply_free(struct llm_reply *r);

/*
 * One embedding of text (cut at LLM_MAX_EMBED_TEXT bytes) from
 * cfg->embed: dim floats into vec, retried like a chat request, recorded
 * through the record hook (stage "embed", tokens in, cost from price_in).
 * 0, or -errno with why in err (no endpoint configured: -ENOENT; a vector
 * of another length: -EPROTO).
 */
int llm_embed(const struct llm_client *cl, const char *text, float *vec,
    size_t dim, char *err, size_t errlen);

/*
 * An archive embedder (pipeline/archive/archive.h's embed hook) over
 * llm_embed(): arg is the struct llm_client, which must outlive its use.
 * Vectors of the last few texts are kept in memory (by SHA-256), since
 * retrieval embeds the same neighbours for every prompt of a job.
 */
int llm_embed_hook(void *arg, const char *text, float *vec, size_t dim);

/* The vector of an embeddings response body: 0, or -EPROTO with why. */
int llm_parse_embedding(const char *body, size_t len, float *vec, size_t dim,
    int64_t *tokens_in, char *err, size_t errlen);

/*
 * The request body (JSON text, caller frees) and the reply's parse, for
 * tests and the fuzzer. llm_parse_answer: 0 and a malloc'd *text plus the
 * usage, or -EPROTO with why in err.
 */
char *llm_request_body(const struct llm_request *req);
int llm_parse_answer(enum llm_provider p, const char *body, size_t len,
    char **text, int64_t *tokens_in, int64_t *tokens_out, char *err,
    size_t errlen);

/* The wait before retry `attempt` (1-based) given the server's Retry-After
 * value (NULL when absent): max(backoff, Retry-After) in ms; -1 when the
 * server asks for more than LLM_MAX_RETRY_AFTER_S. */
long llm_retry_wait_ms(int backoff_ms, int attempt, const char *retry_after);

#endif
