/*
 * The schema, as numbered migrations. Migration N takes the database from
 * version N-1 to N; each runs in its own transaction together with the
 * schema_version row that records it, so a crash leaves the database at
 * N-1 or N, never in between. Never edit a migration that has shipped:
 * append a new one (later issues add tasks, candidates and the archive).
 */
#include "bot/store_internal.h"

#include <stddef.h>

static const char *const migrations[] = {
	/* 1: the intake and the job queue */
	"CREATE TABLE deliveries ("
	"  id INTEGER PRIMARY KEY,"
	"  provider TEXT NOT NULL,"
	"  delivery_id TEXT NOT NULL,"
	"  event TEXT NOT NULL,"
	"  repo TEXT,"
	"  received INTEGER NOT NULL,"
	"  outcome TEXT NOT NULL,"
	"  UNIQUE (provider, delivery_id)"
	");"
	"CREATE TABLE jobs ("
	"  id INTEGER PRIMARY KEY,"
	"  delivery INTEGER REFERENCES deliveries(id),"
	"  provider TEXT NOT NULL,"
	"  repo TEXT NOT NULL,"
	"  clone_url TEXT NOT NULL,"
	"  before TEXT,"
	"  sha TEXT NOT NULL,"
	"  trigger TEXT NOT NULL,"
	"  state TEXT NOT NULL DEFAULT 'queued'"
	"    CHECK (state IN ('queued', 'running', 'done', 'failed')),"
	"  created INTEGER NOT NULL,"
	"  updated INTEGER NOT NULL,"
	"  lease_owner TEXT,"
	"  lease_expires INTEGER,"
	"  attempts INTEGER NOT NULL DEFAULT 0,"
	"  payload TEXT"
	");"
	"CREATE INDEX jobs_state ON jobs (state, id);"
	"CREATE TABLE commands ("
	"  id INTEGER PRIMARY KEY,"
	"  delivery INTEGER REFERENCES deliveries(id),"
	"  provider TEXT NOT NULL,"
	"  repo TEXT NOT NULL,"
	"  pr INTEGER NOT NULL,"
	"  command TEXT NOT NULL,"
	"  args TEXT NOT NULL DEFAULT '',"
	"  actor TEXT NOT NULL,"
	"  author_association TEXT,"
	"  comment_id INTEGER,"
	"  state TEXT NOT NULL DEFAULT 'pending',"
	"  created INTEGER NOT NULL"
	");"
	"CREATE TABLE cleanups ("
	"  id INTEGER PRIMARY KEY,"
	"  delivery INTEGER REFERENCES deliveries(id),"
	"  provider TEXT NOT NULL,"
	"  repo TEXT NOT NULL,"
	"  pr INTEGER NOT NULL,"
	"  head_ref TEXT,"
	"  merged INTEGER NOT NULL DEFAULT 0,"
	"  state TEXT NOT NULL DEFAULT 'pending',"
	"  created INTEGER NOT NULL"
	");"
	"CREATE TABLE health (id INTEGER PRIMARY KEY CHECK (id = 1), checked INTEGER);",
	/* 3 (llm): every LLM call attempt, for cost accounting and audits.
	 * Numbered 3 after the archive's 2 on main; it stands alone, so the
	 * merge order of the two only changes its position. */
	"CREATE TABLE llm_calls ("
	"  id INTEGER PRIMARY KEY,"
	"  time INTEGER NOT NULL,"
	"  job INTEGER REFERENCES jobs(id),"
	"  model TEXT NOT NULL,"
	"  provider TEXT NOT NULL,"
	"  stage TEXT NOT NULL,"
	"  prompt_sha TEXT NOT NULL,"
	"  tokens_in INTEGER NOT NULL,"
	"  tokens_out INTEGER NOT NULL,"
	"  cost REAL NOT NULL,"
	"  status TEXT NOT NULL,"
	"  http_status INTEGER,"
	"  latency_s REAL NOT NULL,"
	"  attempt INTEGER NOT NULL"
	");"
	"CREATE INDEX llm_calls_job ON llm_calls (job, id);",
};

int
store_schema_latest(void)
{
	return (int)(sizeof(migrations) / sizeof(migrations[0]));
}

const char *
store_schema_migration(int version)
{
	if (version < 1 || version > store_schema_latest())
		return NULL;
	return migrations[version - 1];
}
