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
	/*
	 * 2: the kernel archive (pipeline/archive). One row per verified
	 * kernel per problem per GPU architecture; archive_fts indexes the
	 * problem source, the kernel and the op names for retrieval, kept in
	 * step by the triggers (external content: the text is stored once).
	 * The default unicode61 tokenizer splits at '_', so an op name such
	 * as layer_norm is the phrase "layer norm" in every column alike.
	 */
	"CREATE TABLE archive ("
	"  id INTEGER PRIMARY KEY,"
	"  created INTEGER NOT NULL,"
	"  problem TEXT NOT NULL,"
	"  problem_source TEXT NOT NULL,"
	"  problem_sha TEXT NOT NULL CHECK (length(problem_sha) = 64),"
	"  ops TEXT NOT NULL DEFAULT '',"
	"  shape_class TEXT NOT NULL DEFAULT '',"
	"  ir TEXT,"
	"  backend TEXT NOT NULL CHECK (backend IN ('cpu', 'cuda')),"
	"  arch TEXT NOT NULL CHECK (arch <> ''),"
	"  device TEXT,"
	"  kernel TEXT NOT NULL,"
	"  kernel_sha TEXT NOT NULL CHECK (length(kernel_sha) = 64),"
	"  ms REAL NOT NULL CHECK (ms > 0),"
	"  eager_ms REAL,"
	"  compile_ms REAL,"
	"  speedup_eager REAL,"
	"  speedup_eager_lo REAL,"
	"  speedup_eager_hi REAL,"
	"  speedup_compile REAL,"
	"  speedup_compile_lo REAL,"
	"  speedup_compile_hi REAL,"
	"  proposer TEXT,"
	"  model TEXT,"
	"  parents TEXT,"
	"  job INTEGER,"
	"  repo TEXT,"
	"  module TEXT,"
	"  UNIQUE (kernel_sha, arch, problem_sha)"
	");"
	"CREATE INDEX archive_arch ON archive (arch);"
	"CREATE INDEX archive_problem ON archive (problem_sha, ms);"
	"CREATE VIRTUAL TABLE archive_fts USING fts5("
	"  problem_source, kernel, ops, content='archive', content_rowid='id');"
	"CREATE TRIGGER archive_fts_ai AFTER INSERT ON archive BEGIN"
	"  INSERT INTO archive_fts (rowid, problem_source, kernel, ops)"
	"  VALUES (new.id, new.problem_source, new.kernel, new.ops);"
	"END;"
	"CREATE TRIGGER archive_fts_ad AFTER DELETE ON archive BEGIN"
	"  INSERT INTO archive_fts (archive_fts, rowid, problem_source, kernel, ops)"
	"  VALUES ('delete', old.id, old.problem_source, old.kernel, old.ops);"
	"END;"
	"CREATE TRIGGER archive_fts_au AFTER UPDATE ON archive BEGIN"
	"  INSERT INTO archive_fts (archive_fts, rowid, problem_source, kernel, ops)"
	"  VALUES ('delete', old.id, old.problem_source, old.kernel, old.ops);"
	"  INSERT INTO archive_fts (rowid, problem_source, kernel, ops)"
	"  VALUES (new.id, new.problem_source, new.kernel, new.ops);"
	"END;",
	/* 3: every LLM call attempt (pipeline/llm), for cost accounting
	 * and audits. */
	"CREATE TABLE IF NOT EXISTS llm_calls ("
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
	"CREATE INDEX IF NOT EXISTS llm_calls_job ON llm_calls (job, id);",
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
