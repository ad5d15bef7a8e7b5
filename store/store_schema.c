/*
 * The schema, as numbered migrations. Migration N takes the database from
 * version N-1 to N; each runs in its own transaction together with the
 * schema_version row that records it, so a crash leaves the database at
 * N-1 or N, never in between. Never edit a migration that has shipped:
 * append a new one (later issues add tasks, candidates and the archive).
 */
#include "store/store_internal.h"

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
	/*
	 * 4 (coord, issue #8): the coordinator's per-job step, one task per
	 * module per job, the runners, leases on commands and cleanups, the
	 * delivered modules (for re-optimization) and the schedule's clock.
	 * After archive's 2 and llm's 3; it only
	 * adds, so it applies cleanly after either.
	 */
	"ALTER TABLE jobs ADD COLUMN step TEXT NOT NULL DEFAULT 'new';"
	"ALTER TABLE jobs ADD COLUMN error TEXT;"
	"CREATE TABLE tasks ("
	"  id INTEGER PRIMARY KEY,"
	"  job INTEGER NOT NULL REFERENCES jobs(id),"
	"  repo TEXT NOT NULL,"
	"  sha TEXT NOT NULL,"
	"  module TEXT NOT NULL,"
	"  class TEXT NOT NULL,"
	"  slug TEXT NOT NULL,"
	"  backend TEXT NOT NULL DEFAULT 'any',"
	"  arch TEXT NOT NULL DEFAULT '',"
	"  kind TEXT NOT NULL DEFAULT 'optimize',"
	"  state TEXT NOT NULL DEFAULT 'queued'"
	"    CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),"
	"  lease_owner TEXT,"
	"  lease_expires INTEGER,"
	"  attempts INTEGER NOT NULL DEFAULT 0,"
	"  runner TEXT,"
	"  ran_backend TEXT,"
	"  ran_arch TEXT,"
	"  out_dir TEXT,"
	"  summary TEXT,"
	"  error TEXT,"
	"  published INTEGER NOT NULL DEFAULT 0,"
	"  created INTEGER NOT NULL,"
	"  updated INTEGER NOT NULL,"
	"  UNIQUE (job, module, class, backend, arch)"
	");"
	"CREATE INDEX tasks_state ON tasks (state, id);"
	"CREATE INDEX tasks_slug ON tasks (repo, slug, state);"
	"CREATE TABLE runners ("
	"  name TEXT PRIMARY KEY,"
	"  host TEXT NOT NULL,"
	"  pid INTEGER NOT NULL,"
	"  gpu INTEGER NOT NULL DEFAULT -1,"
	"  backend TEXT NOT NULL,"
	"  arch TEXT NOT NULL,"
	"  device TEXT NOT NULL DEFAULT '',"
	"  registered INTEGER NOT NULL,"
	"  heartbeat INTEGER NOT NULL,"
	"  task INTEGER"
	");"
	"ALTER TABLE commands ADD COLUMN lease_owner TEXT;"
	"ALTER TABLE commands ADD COLUMN lease_expires INTEGER;"
	"ALTER TABLE commands ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE commands ADD COLUMN result TEXT;"
	"ALTER TABLE cleanups ADD COLUMN lease_owner TEXT;"
	"ALTER TABLE cleanups ADD COLUMN lease_expires INTEGER;"
	"ALTER TABLE cleanups ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE cleanups ADD COLUMN result TEXT;"
	"CREATE TABLE delivered ("
	"  repo TEXT NOT NULL,"
	"  slug TEXT NOT NULL,"
	"  arch TEXT NOT NULL,"
	"  provider TEXT NOT NULL,"
	"  clone_url TEXT NOT NULL,"
	"  base_branch TEXT NOT NULL,"
	"  module TEXT NOT NULL,"
	"  class TEXT NOT NULL,"
	"  last_sha TEXT NOT NULL,"
	"  pr INTEGER,"
	"  out_dir TEXT NOT NULL,"
	"  updated INTEGER NOT NULL,"
	"  PRIMARY KEY (repo, slug, arch)"
	");"
	"CREATE TABLE coord_clock (name TEXT PRIMARY KEY, value INTEGER NOT NULL);",
	/*
	 * 5: cleanups of other kinds than a closed PR ("pr"): "work", the
	 * sweep of runners' work directories (coord/coord_files.c), leased like
	 * the others so one coordinator sweeps at a time and a crash in the
	 * middle hands it to the next.
	 */
	"ALTER TABLE cleanups ADD COLUMN kind TEXT NOT NULL DEFAULT 'pr';",
	/*
	 * 6 (issue 23): what a delivery asks for, whatever its delivery id:
	 * "push REF SHA" for a push job, "comment ID" for a comment command
	 * (the forge's comment or note id). A replayed body with a new id
	 * finds its key taken and creates nothing. Filled from the jobs and
	 * commands already taken, so a replay after the upgrade is caught too.
	 */
	"CREATE TABLE intake_keys ("
	"  provider TEXT NOT NULL,"
	"  repo TEXT NOT NULL,"
	"  key TEXT NOT NULL,"
	"  delivery INTEGER NOT NULL REFERENCES deliveries(id),"
	"  PRIMARY KEY (provider, repo, key)"
	") WITHOUT ROWID;"
	"INSERT OR IGNORE INTO intake_keys (provider, repo, key, delivery)"
	"  SELECT provider, repo, 'push ' || ref || ' ' || sha, delivery FROM ("
	"    SELECT id, provider, repo, sha, delivery, CASE WHEN json_valid(payload)"
	"      THEN CASE json_type(payload, '$.ref') WHEN 'text'"
	"      THEN json_extract(payload, '$.ref') END END AS ref"
	"    FROM jobs WHERE delivery IS NOT NULL AND trigger = 'push')"
	"  WHERE ref IS NOT NULL ORDER BY id;"
	"INSERT OR IGNORE INTO intake_keys (provider, repo, key, delivery)"
	"  SELECT provider, repo, 'comment ' || comment_id, delivery FROM commands"
	"  WHERE delivery IS NOT NULL AND coalesce(comment_id, 0) <> 0 ORDER BY id;",
	/*
	 * 7 (issue 23): the failed tries in a row of a job's fetch, so the
	 * coordinator's retry limit holds across restarts.
	 */
	"ALTER TABLE jobs ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;",
	/*
	 * 8: a replayed delivery (the same delivery id, or the same key under
	 * a new id) is counted on the delivery it repeats instead of adding a
	 * row each time, so replays cannot grow the store: how many, and when
	 * the last came. Rows with outcome 'duplicate' from before stay.
	 */
	"ALTER TABLE deliveries ADD COLUMN duplicates INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE deliveries ADD COLUMN last_duplicate INTEGER;",
	/*
	 * 9: the intake keys in their normal form (the fourth outside attack's
	 * F3): the repository in lower case, as the forges look names up, and
	 * a push's commit id in lower hex, so a delivery that spells either
	 * otherwise is the duplicate it is. Of two keys that fold together the
	 * older stays.
	 */
	"UPDATE OR IGNORE intake_keys SET repo = lower(repo),"
	"  key = CASE WHEN key NOT LIKE 'push %' THEN key"
	"    WHEN substr(key, -41, 1) = ' '"
	"    THEN substr(key, 1, length(key) - 40) || lower(substr(key, -40))"
	"    WHEN substr(key, -65, 1) = ' '"
	"    THEN substr(key, 1, length(key) - 64) || lower(substr(key, -64))"
	"    ELSE key END"
	"  WHERE repo <> lower(repo) OR (key LIKE 'push %' AND key <> lower(key));"
	"DELETE FROM intake_keys WHERE repo <> lower(repo);",
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
