/*
 * store_llm: the audit trail of LLM calls. One row per attempt (a retried
 * 429 is two rows), so costs add up exactly and a reviewer can see which
 * model was asked what (by prompt hash: prompts themselves are not kept
 * here) and what it cost.
 */
#include "store/store_internal.h"

#include <errno.h>
#include <string.h>

static const char SQL_LLM_ADD[] =
    "INSERT INTO llm_calls (time, job, model, provider, stage, prompt_sha,"
    " tokens_in, tokens_out, cost, status, http_status, latency_s, attempt)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";
static const char SQL_LLM_TOTALS[] =
    "SELECT count(*), coalesce(sum(tokens_in), 0), coalesce(sum(tokens_out), 0),"
    " coalesce(sum(cost), 0) FROM llm_calls WHERE ?1 = 0 OR job = ?1";

int
store_llm_call_add(struct store *s, const struct store_llm_call *c)
{
	sqlite3_stmt *st;
	int rc, error;

	if (!c->model || !c->provider || !c->stage || !c->prompt_sha || !c->status ||
	    c->tokens_in < 0 || c->tokens_out < 0 || c->cost < 0 || c->attempt < 1)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_LLM_ADD, &st)) < 0)
		goto out;
	sqlite3_bind_int64(st, 1, store_now(s));
	if (c->job > 0)
		sqlite3_bind_int64(st, 2, c->job);
	sqlite3_bind_text(st, 3, c->model, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, c->provider, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, c->stage, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, c->prompt_sha, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 7, c->tokens_in);
	sqlite3_bind_int64(st, 8, c->tokens_out);
	sqlite3_bind_double(st, 9, c->cost);
	sqlite3_bind_text(st, 10, c->status, -1, SQLITE_STATIC);
	if (c->http_status > 0)
		sqlite3_bind_int64(st, 11, c->http_status);
	sqlite3_bind_double(st, 12, c->latency_s);
	sqlite3_bind_int(st, 13, c->attempt);
	if ((rc = sqlite3_step(st)) != SQLITE_DONE)
		error = store_sqlerr(s, rc);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
out:
	pthread_mutex_unlock(&s->lock);
	return error;
}

int
store_llm_totals(struct store *s, int64_t job, struct store_llm_totals *out)
{
	sqlite3_stmt *st;
	int rc, error;

	pthread_mutex_lock(&s->lock);
	if ((error = store_stmt(s, SQL_LLM_TOTALS, &st)) < 0)
		goto out;
	sqlite3_bind_int64(st, 1, job);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		out->calls = sqlite3_column_int64(st, 0);
		out->tokens_in = sqlite3_column_int64(st, 1);
		out->tokens_out = sqlite3_column_int64(st, 2);
		out->cost = sqlite3_column_double(st, 3);
	} else {
		error = store_sqlerr(s, rc);
	}
	sqlite3_reset(st);
out:
	pthread_mutex_unlock(&s->lock);
	return error;
}
