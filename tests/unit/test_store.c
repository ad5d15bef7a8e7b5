#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"
#include "t.h"

static int64_t fake_now = 1000000;

static int64_t
clock_fake(void *arg)
{
	(void)arg;
	return fake_now;
}

static struct store_delivery
push(const char *id, const char *sha)
{
	struct store_delivery d = { 0 };

	d.provider = "github";
	d.delivery_id = id;
	d.event = "push";
	d.repo = "acme/model";
	d.outcome = "accepted";
	d.work = STORE_WORK_JOB;
	d.clone_url = "https://github.com/acme/model.git";
	d.before = "0000000000000000000000000000000000000001";
	d.sha = sha;
	d.ref = "refs/heads/main";
	d.trigger = "push";
	d.payload = "{\"ref\":\"refs/heads/main\"}";
	return d;
}

struct claimer {
	struct store *s;
	char owner[16];
	int got;
};

static void *
claim_all(void *arg)
{
	struct claimer *c = arg;
	struct store_job j;

	while (store_job_claim(c->s, c->owner, 60, &j) == 0) {
		c->got++;
		store_job_free(&j);
	}
	return NULL;
}

struct count_ctx {
	int64_t running, done;
};

static void
cb(const char *st, int64_t k, void *arg)
{
	struct count_ctx *cc = arg;

	if (!strcmp(st, "running"))
		cc->running = k;
	else if (!strcmp(st, "done"))
		cc->done = k;
}

static struct store_delivery
comment(const char *id, int64_t comment_id)
{
	struct store_delivery d = { 0 };

	d.provider = "github";
	d.delivery_id = id;
	d.event = "issue_comment";
	d.repo = "acme/model";
	d.outcome = "accepted";
	d.work = STORE_WORK_COMMAND;
	d.pr = 7;
	d.command = "retry";
	d.actor = "alice";
	d.comment_id = comment_id;
	return d;
}

static struct store_delivery
cleanup(const char *id, int64_t pr, const char *head_sha)
{
	struct store_delivery d = { 0 };

	d.provider = "github";
	d.delivery_id = id;
	d.event = "pull_request";
	d.repo = "acme/model";
	d.outcome = "accepted";
	d.work = STORE_WORK_CLEANUP;
	d.pr = pr;
	d.head_ref = "kernelbot/opt-1";
	d.sha = head_sha;
	d.merged = 1;
	return d;
}

/* Replays of one push from two connections at once. */
struct replayer {
	struct store *s;
	const char *prefix;
	int jobs, duplicates;
};

static void *
replay_all(void *arg)
{
	struct replayer *r = arg;
	struct store_delivery d;
	char id[32];

	for (int i = 0; i < 50; i++) {
		snprintf(id, sizeof(id), "%s-%d", r->prefix, i);
		d = push(id, "abababababababababababababababababababab");
		if (store_intake(r->s, &d, 1) == 0 && d.error == 0) {
			r->jobs += d.work_id > 0;
			r->duplicates += d.duplicate;
		}
	}
	return NULL;
}

static int64_t
sql_int(const char *db, const char *sql)
{
	char cmd[1024];
	long long v = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "sqlite3 -cmd '.timeout 5000' %s \"%s\"", db, sql);
	if (!(f = popen(cmd, "r")))
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	pclose(f);
	return v;
}

static struct store_delivery
ignored(const char *id, const char *repo, const char *digest)
{
	struct store_delivery d = { 0 };

	d.provider = "github";
	d.delivery_id = id;
	d.event = "star";
	d.repo = repo;
	d.outcome = "ignored";
	d.work = STORE_WORK_NONE;
	d.body_key = digest;
	return d;
}

/*
 * A delivery that asks for nothing, replayed with new ids (the sixth
 * intake attack's F2): one row for its body, the replays counted on it,
 * in a batch, across batches and after a reopen; with or without a
 * repository; another body, another repository or another forge is its
 * own delivery; without a digest every id is its own row, as before.
 */
static void
ignored_replays(const char *dir)
{
	struct store *s = NULL;
	struct store_delivery d[4];
	char sub[300], db[400];
	const char *a = "aaaa000000000000000000000000000000000000000000000000000000000001";
	const char *b = "bbbb000000000000000000000000000000000000000000000000000000000002";
	int64_t cnt;

	snprintf(sub, sizeof(sub), "%s/ignored", dir);
	snprintf(db, sizeof(db), "%s/kernelbot.db", sub);
	if (store_open(sub, 0, &s) < 0)
		return;
	d[0] = ignored("i-1", "acme/model", a);
	d[1] = ignored("i-2", "acme/model", a);
	d[2] = ignored("i-3", NULL, a);
	d[3] = ignored("i-4", NULL, a);
	CHECK_INT("ignored batch commits", store_intake(s, d, 4), 0);
	CHECK("an ignored body: its row", !d[0].duplicate && !d[0].error);
	CHECK("the same body, another id: duplicate", d[1].duplicate && !d[1].error);
	CHECK("the same body without a repository: its row", !d[2].duplicate && !d[2].error);
	CHECK("and replayed: duplicate", d[3].duplicate && !d[3].error);
	d[0] = ignored("i-5", "ACME/Model", a);
	d[1] = ignored("i-6", "acme/model", b);
	d[2] = ignored("i-7", "acme/other", a);
	d[3] = ignored("i-8", "acme/model", a);
	d[3].provider = "gitea";
	CHECK_INT("second ignored batch", store_intake(s, d, 4), 0);
	CHECK("the same body, the repository spelt otherwise: duplicate", d[0].duplicate);
	CHECK("another body: its row", !d[1].duplicate && !d[1].error);
	CHECK("another repository: its row", !d[2].duplicate && !d[2].error);
	CHECK("another forge: its row", !d[3].duplicate && !d[3].error);
	d[0] = ignored("i-9", "acme/model", NULL);
	d[1] = ignored("i-10", "acme/model", NULL);
	CHECK_INT("ignored without a digest", store_intake(s, d, 2), 0);
	CHECK("without a digest: rows of their own", !d[0].duplicate && !d[1].duplicate);
	store_close(s);
	CHECK_INT("ignored: reopen", store_open(sub, STORE_OPEN_EXISTING, &s), 0);
	if (!s)
		return;
	for (int i = 0; i < 4; i++) {
		char id[16];

		snprintf(id, sizeof(id), "j-%d", i);
		d[0] = ignored(id, "acme/model", a);
		store_intake(s, d, 1);
		CHECK("after a reopen: duplicate", d[0].duplicate && !d[0].error);
	}
	store_count(s, "deliveries", &cnt);
	CHECK_INT("a row per body, repository and forge, and per id without a digest",
	    cnt, 7);
	CHECK_INT("the replays counted on the first", sql_int(db,
	    "SELECT duplicates FROM deliveries WHERE delivery_id = 'i-1'"), 6);
	store_close(s);
}

/*
 * An id taken by a delivery kernelbot ignored (a signed push replayed
 * under its id with an event that is not "push": the eighth intake
 * attack) does not make the delivery that asks for work under it a
 * duplicate: the work takes the row. The work is still claimed by its
 * key, in a batch and across batches.
 */
static void
ignored_then_work(const char *dir)
{
	struct store *s = NULL;
	struct store_delivery d[2];
	char sub[300], db[400];
	const char *a = "cccc000000000000000000000000000000000000000000000000000000000003";
	int64_t cnt;

	snprintf(sub, sizeof(sub), "%s/taken", dir);
	snprintf(db, sizeof(db), "%s/kernelbot.db", sub);
	if (store_open(sub, 0, &s) < 0)
		return;
	d[0] = ignored("t-1", "acme/model", a);
	d[0].event = "ping";
	CHECK_INT("the ignored spelling first", store_intake(s, d, 1), 0);
	d[0] = push("t-1", "7777777777777777777777777777777777777777");
	CHECK_INT("then the push under its id", store_intake(s, d, 1), 0);
	CHECK("the push makes its job", d[0].work_id > 0 && !d[0].duplicate && !d[0].error);
	d[0] = push("t-1", "7777777777777777777777777777777777777777");
	CHECK_INT("redelivered", store_intake(s, d, 1), 0);
	CHECK("the redelivery: duplicate", d[0].duplicate && !d[0].work_id);
	d[0] = ignored("t-2", "acme/model", NULL);
	d[1] = push("t-2", "7777777777777777777777777777777777777777");
	CHECK_INT("a batch: ignored, then the same push under its id", store_intake(s, d, 2), 0);
	CHECK("work already claimed: duplicate", d[1].duplicate && !d[1].work_id);
	d[0] = ignored("t-3", "acme/model", NULL);
	d[1] = push("t-3", "8888888888888888888888888888888888888888");
	CHECK_INT("a batch: ignored, then another push under its id", store_intake(s, d, 2), 0);
	CHECK("new work: its job", d[1].work_id > 0 && !d[1].duplicate);
	/*
	 * Other work under an id that holds work: a captured delivery sent
	 * under another genuine one's id (the ninth intake attack) made the
	 * genuine one a duplicate. Now each is its own work; the second row
	 * is ID~KEYHASH, and its redelivery a duplicate by its key.
	 */
	d[0] = push("t-3", "9999999999999999999999999999999999999999");
	CHECK_INT("another push under an id that holds work", store_intake(s, d, 1), 0);
	CHECK("other work under a taken id: its job", d[0].work_id > 0 && !d[0].duplicate);
	d[0] = push("t-3", "9999999999999999999999999999999999999999");
	d[1] = push("t-3", "8888888888888888888888888888888888888888");
	CHECK_INT("both redelivered", store_intake(s, d, 2), 0);
	CHECK("each redelivery: duplicate", d[0].duplicate && d[1].duplicate && !d[0].work_id &&
	    !d[1].work_id);
	store_count(s, "jobs", &cnt);
	CHECK_INT("three jobs", cnt, 3);
	store_count(s, "deliveries", &cnt);
	CHECK_INT("a row per id, and one for the other work", cnt, 4);
	CHECK_INT("the other work's row is the id with its key's hash", sql_int(db,
	    "SELECT count(*) FROM deliveries WHERE delivery_id LIKE 't-3~____________'"), 1);
	/*
	 * The same push in a mirror's repository, under the same taken id:
	 * the hash names the repository too (the third intake attack on
	 * this: a key alone named one row for both, and the mirror's push
	 * was lost).
	 */
	d[0] = push("t-3", "6666666666666666666666666666666666666666");
	d[1] = push("t-3", "6666666666666666666666666666666666666666");
	d[1].repo = "acme/model-mirror";
	CHECK_INT("a push and its mirror's under a taken id", store_intake(s, d, 2), 0);
	CHECK("each its job", d[0].work_id > 0 && d[1].work_id > 0 && !d[0].duplicate &&
	    !d[1].duplicate);
	CHECK_INT("the taken row is the push's",
	    sql_int(db, "SELECT count(*) FROM deliveries WHERE delivery_id = 't-1' AND event = 'push'"
	    " AND outcome = 'accepted'"), 1);
	CHECK_INT("a row whose work was a duplicate stays ignored",
	    sql_int(db, "SELECT count(*) FROM deliveries WHERE delivery_id = 't-2' AND outcome = 'ignored'"),
	    1);
	store_close(s);
}

/*
 * A delivery is a duplicate by what it asks for, whatever its id: the
 * same push (repo, ref, commit) or the same comment, in a batch, across
 * batches and connections, after a reopen and after the migration that
 * brought the keys in.
 */
static void
replays(const char *dir)
{
	struct store *s = NULL, *s2 = NULL;
	struct store_delivery d[4];
	char sub[300], db[400], cmd[1200];
	int64_t cnt;

	snprintf(sub, sizeof(sub), "%s/replays", dir);
	snprintf(db, sizeof(db), "%s/kernelbot.db", sub);
	if (store_open(sub, 0, &s) < 0)
		return;
	d[0] = push("r-1", "1111111111111111111111111111111111111111");
	d[1] = push("r-2", "1111111111111111111111111111111111111111");
	d[2] = comment("r-3", 4242);
	d[3] = comment("r-4", 4242);
	CHECK_INT("replay batch commits", store_intake(s, d, 4), 0);
	CHECK("the push makes a job", d[0].work_id > 0 && !d[0].duplicate);
	CHECK("the same push, another id, same batch: duplicate",
	    d[1].duplicate && !d[1].work_id && !d[1].error);
	CHECK("the comment makes a command", d[2].work_id > 0 && !d[2].duplicate);
	CHECK("the same comment, another id: duplicate", d[3].duplicate && !d[3].work_id);
	d[0] = push("r-5", "1111111111111111111111111111111111111111");
	d[1] = push("r-6", "1111111111111111111111111111111111111111");
	d[1].ref = "refs/heads/dev";
	d[1].payload = "{\"ref\":\"refs/heads/dev\"}";
	d[2] = push("r-7", "2222222222222222222222222222222222222222");
	d[3] = comment("r-8", 4243);
	CHECK_INT("second replay batch", store_intake(s, d, 4), 0);
	CHECK("the same push in a later transaction: duplicate", d[0].duplicate);
	CHECK("another ref, same commit: a job", d[1].work_id > 0 && !d[1].duplicate);
	CHECK("another commit: a job", d[2].work_id > 0 && !d[2].duplicate);
	CHECK("another comment: a command", d[3].work_id > 0 && !d[3].duplicate);
	/* The third outside attack's F4: a captured PR close, replayed. */
	d[0] = cleanup("c-1", 9, "4444444444444444444444444444444444444444");
	d[1] = cleanup("c-2", 9, "4444444444444444444444444444444444444444");
	d[2] = cleanup("c-3", 10, "4444444444444444444444444444444444444444");
	d[3] = cleanup("c-4", 9, "5555555555555555555555555555555555555555");
	CHECK_INT("cleanup batch", store_intake(s, d, 4), 0);
	CHECK("a PR close makes a cleanup", d[0].work_id > 0 && !d[0].duplicate);
	CHECK("the same close, another id: duplicate", d[1].duplicate && !d[1].work_id);
	CHECK("another PR: a cleanup", d[2].work_id > 0 && !d[2].duplicate);
	CHECK("the PR closed again at another head: a cleanup", d[3].work_id > 0 && !d[3].duplicate);
	d[0] = push("r-9", "1111111111111111111111111111111111111111");
	d[0].repo = "acme/other";
	d[1] = push("r-10", "1111111111111111111111111111111111111111");
	d[1].provider = "gitea";
	d[2] = push("r-11", "3333333333333333333333333333333333333333");
	d[2].ref = NULL;
	CHECK_INT("third replay batch", store_intake(s, d, 3), 0);
	CHECK("the same commit in another repository: a job", d[0].work_id > 0);
	CHECK("the same push from another forge: a job", d[1].work_id > 0);
	CHECK_INT("a push without its ref is refused", d[2].error, -EINVAL);
	store_count(s, "jobs", &cnt);
	CHECK_INT("five jobs", cnt, 5);
	store_count(s, "commands", &cnt);
	CHECK_INT("two commands", cnt, 2);
	store_count(s, "deliveries", &cnt);
	CHECK_INT("a row per delivery that is not a replay", cnt, 10);
	CHECK_INT("the replays are counted on the push they repeat",
	    sql_int(db, "SELECT duplicates FROM deliveries WHERE delivery_id = 'r-1'"), 2);
	CHECK_INT("and on the comment they repeat",
	    sql_int(db, "SELECT duplicates FROM deliveries WHERE delivery_id = 'r-3'"), 1);
	CHECK_INT("with the time of the last",
	    sql_int(db, "SELECT last_duplicate FROM deliveries WHERE delivery_id = 'r-1'"),
	    sql_int(db, "SELECT received FROM deliveries WHERE delivery_id = 'r-7'"));
	CHECK_INT("no replay has a row of its own", sql_int(db,
	    "SELECT count(*) FROM deliveries WHERE delivery_id IN ('r-2', 'r-4', 'r-5')"), 0);
	/* the same id again: counted on its own row, nothing added */
	d[0] = push("r-1", "1111111111111111111111111111111111111111");
	d[1] = push("r-1", "1111111111111111111111111111111111111111");
	CHECK_INT("the same id twice", store_intake(s, d, 2), 0);
	CHECK("the same id: duplicates", d[0].duplicate && d[1].duplicate);
	store_count(s, "deliveries", &cnt);
	CHECK_INT("the same id adds no row", cnt, 10);
	CHECK_INT("the same id is counted on its row",
	    sql_int(db, "SELECT duplicates FROM deliveries WHERE delivery_id = 'r-1'"), 4);

	/* two connections replaying the same push at once: one job */
	if (store_open(sub, STORE_OPEN_EXISTING, &s2) == 0) {
		struct replayer r[2] = { { s, "ta", 0, 0 }, { s2, "tb", 0, 0 } };
		pthread_t th[2];

		for (int i = 0; i < 2; i++)
			pthread_create(&th[i], NULL, replay_all, &r[i]);
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		CHECK_INT("concurrent replays: one job", r[0].jobs + r[1].jobs, 1);
		CHECK_INT("concurrent replays: the rest duplicates",
		    r[0].duplicates + r[1].duplicates, 99);
		store_count(s, "deliveries", &cnt);
		CHECK_INT("concurrent replays: one row", cnt, 11);
		CHECK_INT("concurrent replays: 99 counted on it", sql_int(db,
		    "SELECT sum(duplicates) FROM deliveries WHERE delivery_id LIKE 't%'"), 99);
		store_close(s2);
	}
	store_close(s);

	/* a reopen keeps the keys */
	CHECK_INT("replays: reopen", store_open(sub, STORE_OPEN_EXISTING, &s), 0);
	if (!s)
		return;
	d[0] = push("r-12", "1111111111111111111111111111111111111111");
	d[1] = comment("r-13", 4242);
	store_intake(s, d, 2);
	CHECK("after a reopen: the push is a duplicate", d[0].duplicate);
	CHECK("after a reopen: the comment is a duplicate", d[1].duplicate);
	store_close(s);

	/* a store from before the keys: the migration fills them from its work */
	snprintf(cmd, sizeof(cmd), "sqlite3 %s 'DROP TABLE intake_keys; "
	    "ALTER TABLE jobs DROP COLUMN retries; "
	    "ALTER TABLE deliveries DROP COLUMN duplicates; "
	    "ALTER TABLE deliveries DROP COLUMN last_duplicate; "
	    "DELETE FROM schema_version WHERE version >= 6; "
	    "UPDATE jobs SET payload = NULL WHERE sha LIKE \"2222%%\"; "
	    "INSERT INTO jobs (provider, repo, clone_url, sha, trigger, created, "
	    "updated) VALUES (\"github\", \"acme/model\", \"x\", "
	    "\"4444444444444444444444444444444444444444\", \"schedule\", 0, 0)'", db);
	if (system(cmd) != 0) {
		CHECK("rewound to schema 5", 0);
		return;
	}
	CHECK_INT("migrated again", store_open(sub, STORE_OPEN_EXISTING, &s), 0);
	if (!s)
		return;
	CHECK_INT("to the latest", store_schema_version(s), store_schema_latest());
	CHECK_INT("keys of the pushes with a ref and the commands",
	    sql_int(db, "SELECT count(*) FROM intake_keys"), 7);
	d[0] = push("r-14", "1111111111111111111111111111111111111111");
	d[1] = comment("r-15", 4243);
	d[2] = push("r-16", "4444444444444444444444444444444444444444");
	store_intake(s, d, 3);
	CHECK("after the migration: an old push is a duplicate", d[0].duplicate);
	CHECK("after the migration: an old comment is a duplicate", d[1].duplicate);
	CHECK("a job the bot made is no push", d[2].work_id > 0 && !d[2].duplicate);
	store_close(s);
}

/*
 * The fourth outside attack's F3: a push is the same push whatever the
 * case of its repository's name or of its commit id's hex; a ref's case
 * is not folded (git's refs are case-sensitive). The rows keep the
 * spelling the forge sent; a store from before the normal form has its
 * keys folded by the migration.
 */
static void
spellings(const char *dir)
{
	static const char sha[] = "abcdef0123456789abcdef0123456789abcdef01";
	static const char upper[] = "ABCDEF0123456789ABCDEF0123456789ABCDEF01";
	struct store *s = NULL;
	struct store_delivery d[4];
	char sub[300], db[400], cmd[1200];

	snprintf(sub, sizeof(sub), "%s/spellings", dir);
	snprintf(db, sizeof(db), "%s/kernelbot.db", sub);
	if (store_open(sub, 0, &s) < 0)
		return;
	d[0] = push("s-1", sha);
	d[1] = push("s-2", sha);
	d[1].repo = "ACME/Model";
	d[2] = push("s-3", upper);
	d[3] = push("s-4", sha);
	d[3].ref = "refs/heads/Main";
	CHECK_INT("spellings: batch commits", store_intake(s, d, 4), 0);
	CHECK("spellings: the push makes a job", d[0].work_id > 0 && !d[0].duplicate);
	CHECK("the repository in another case: duplicate", d[1].duplicate && !d[1].work_id);
	CHECK("the commit id in upper hex: duplicate", d[2].duplicate && !d[2].work_id);
	CHECK("another ref's case: another ref, a job", d[3].work_id > 0);
	d[0] = cleanup("s-5", 3, sha);
	d[1] = cleanup("s-6", 3, upper);
	d[1].repo = "Acme/MODEL";
	d[2] = push("s-7", upper);
	d[2].repo = "Acme/Other";
	CHECK_INT("spellings: second batch", store_intake(s, d, 3), 0);
	CHECK("a close at the same head in upper hex: duplicate", d[1].duplicate);
	CHECK("a job keeps the name as sent", sql_int(db,
	    "SELECT count(*) FROM jobs WHERE repo = 'Acme/Other' AND sha = '" "ABCDEF0123456789ABCDEF0123456789ABCDEF01" "'") == 1);
	store_close(s);

	/* keys written before the normal form: the migration folds them */
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"DELETE FROM schema_version WHERE "
	    "version >= 9; INSERT INTO intake_keys SELECT provider, 'Acme/Third', "
	    "'push refs/heads/Main %s', delivery FROM intake_keys LIMIT 1; "
	    "INSERT INTO intake_keys SELECT provider, 'ACME/MODEL', key, delivery "
	    "FROM intake_keys WHERE repo = 'acme/model' LIMIT 1\"", db, upper);
	if (system(cmd) != 0) {
		CHECK("spellings: rewound to schema 8", 0);
		return;
	}
	CHECK_INT("spellings: migrated", store_open(sub, STORE_OPEN_EXISTING, &s), 0);
	if (!s)
		return;
	CHECK_INT("no key left in another case", sql_int(db,
	    "SELECT count(*) FROM intake_keys WHERE repo <> lower(repo)"), 0);
	d[0] = push("s-8", sha);
	d[0].repo = "ACME/third";
	d[0].ref = "refs/heads/Main";
	d[1] = push("s-9", sha);
	d[1].repo = "acme/third";
	CHECK_INT("spellings: after the migration", store_intake(s, d, 2), 0);
	CHECK("an old key, folded: duplicate", d[0].duplicate);
	CHECK("its ref kept its case: refs/heads/main is a job", d[1].work_id > 0);
	store_close(s);
}

int
main(void)
{
	char dir[] = "/tmp/kb-test-store-XXXXXX", sub[300], cmd[400];
	struct store *s = NULL, *s2 = NULL;
	struct store_delivery d[4];
	struct store_job j, *jobs;
	size_t n;
	int64_t cnt;
	int rq, fl;

	if (!mkdtemp(dir))
		return 1;
	snprintf(sub, sizeof(sub), "%s/var/lib/data", dir);

	CHECK_INT("open existing fails when absent", store_open(sub, STORE_OPEN_EXISTING, &s), -ENOENT);
	CHECK_INT("open creates, parents too", store_open(sub, 0, &s), 0);
	if (!s)
		return t_done("test_store");
	CHECK_INT("schema migrated to latest", store_schema_version(s), store_schema_latest());
	CHECK_INT("writable", store_check_writable(s), 0);
	store_set_clock(s, clock_fake, NULL);

	/* intake: a batch with a job, a duplicate within the batch, a command, an ignored event */
	d[0] = push("d-1", "1111111111111111111111111111111111111111");
	d[1] = push("d-1", "1111111111111111111111111111111111111111");
	memset(&d[2], 0, sizeof(d[2]));
	d[2].provider = "github"; d[2].delivery_id = "d-2"; d[2].event = "issue_comment";
	d[2].repo = "acme/model"; d[2].outcome = "accepted"; d[2].work = STORE_WORK_COMMAND;
	d[2].pr = 7; d[2].command = "optimize"; d[2].args = "models/attn.py";
	d[2].actor = "alice"; d[2].author_association = "MEMBER"; d[2].comment_id = 99;
	memset(&d[3], 0, sizeof(d[3]));
	d[3].provider = "github"; d[3].delivery_id = "d-3"; d[3].event = "star";
	d[3].outcome = "ignored"; d[3].work = STORE_WORK_NONE;
	CHECK_INT("intake batch commits", store_intake(s, d, 4), 0);
	CHECK_INT("first delivery ok", d[0].error, 0);
	CHECK("first delivery made a job", d[0].work_id > 0 && !d[0].duplicate);
	CHECK("same id in batch is a duplicate", d[1].duplicate && d[1].work_id == 0);
	CHECK("command recorded", d[2].work_id > 0 && !d[2].error);
	CHECK("ignored recorded without work", !d[3].error && !d[3].work_id && !d[3].duplicate);
	store_count(s, "deliveries", &cnt);
	CHECK_INT("three deliveries", cnt, 3);
	store_count(s, "jobs", &cnt);
	CHECK_INT("one job", cnt, 1);
	store_count(s, "commands", &cnt);
	CHECK_INT("one command", cnt, 1);
	CHECK_INT("unknown table refused", store_count(s, "sqlite_master", &cnt), -EINVAL);

	/* redelivery in a later transaction; other provider same id is not a duplicate */
	d[0] = push("d-1", "1111111111111111111111111111111111111111");
	d[1] = push("d-1", "4444444444444444444444444444444444444444");
	d[1].provider = "gitea";
	CHECK_INT("second batch", store_intake(s, d, 2), 0);
	CHECK("redelivery is a duplicate", d[0].duplicate && !d[0].work_id);
	CHECK("same id from another provider is new", !d[1].duplicate && d[1].work_id > 0);

	/* a bad row fails alone */
	d[0] = push("d-4", NULL);
	d[1] = push("d-5", "5555555555555555555555555555555555555555");
	CHECK_INT("batch with a bad row commits", store_intake(s, d, 2), 0);
	CHECK_INT("bad row gets -EINVAL", d[0].error, -EINVAL);
	CHECK("good row in same batch kept", d[1].error == 0 && d[1].work_id > 0);
	store_count(s, "deliveries", &cnt);
	CHECK_INT("bad row's delivery rolled back", cnt, 5);
	d[0] = push("d-6", "6");
	CHECK_INT("batch over the limit refused", store_intake(s, d, STORE_MAX_BATCH + 1), -EINVAL);

	/* listing, newest first */
	CHECK_INT("list jobs", store_jobs_list(s, 0, &jobs, &n), 0);
	CHECK_INT("three jobs", n, 3);
	if (n == 3) {
		CHECK_STR("newest first", jobs[0].sha, "5555555555555555555555555555555555555555");
		CHECK_STR("oldest last", jobs[2].sha, "1111111111111111111111111111111111111111");
		CHECK_STR("state queued", jobs[2].state, "queued");
		CHECK_STR("repo kept", jobs[2].repo, "acme/model");
		CHECK_STR("before kept", jobs[2].before, "0000000000000000000000000000000000000001");
		CHECK_INT("created stamped", jobs[2].created, fake_now);
		CHECK_STR("payload kept", jobs[2].payload, "{\"ref\":\"refs/heads/main\"}");
	}
	store_jobs_free(jobs, n);
	CHECK_INT("list with limit", store_jobs_list(s, 1, &jobs, &n), 0);
	CHECK_INT("limit honoured", n, 1);
	store_jobs_free(jobs, n);

	/* claim, heartbeat, finish */
	CHECK_INT("claim", store_job_claim(s, "runner-a", 30, &j), 0);
	CHECK_STR("claim takes the oldest", j.sha, "1111111111111111111111111111111111111111");
	CHECK_STR("claimed job running", j.state, "running");
	CHECK_STR("lease owner", j.lease_owner, "runner-a");
	CHECK_INT("lease expiry", j.lease_expires, fake_now + 30);
	CHECK_INT("attempts counted", j.attempts, 1);
	int64_t first = j.id;
	store_job_free(&j);
	CHECK_INT("bad claim args", store_job_claim(s, "", 30, &j), -EINVAL);
	fake_now += 20;
	CHECK_INT("heartbeat", store_job_heartbeat(s, first, "runner-a", 30), 0);
	CHECK_INT("heartbeat by another owner is stale", store_job_heartbeat(s, first, "runner-b", 30), -ESTALE);
	store_job_get(s, first, &j);
	CHECK_INT("heartbeat extended the lease", j.lease_expires, fake_now + 30);
	store_job_free(&j);
	fake_now += 25;
	CHECK_INT("not yet expired", store_jobs_requeue_expired(s, 0, &rq, &fl), 0);
	CHECK_INT("nothing requeued before expiry", rq, 0);
	fake_now += 10;
	CHECK_INT("requeue expired", store_jobs_requeue_expired(s, 0, &rq, &fl), 0);
	CHECK_INT("one requeued", rq, 1);
	CHECK_INT("heartbeat after expiry is stale", store_job_heartbeat(s, first, "runner-a", 30), -ESTALE);
	CHECK_INT("finish after expiry is stale", store_job_finish(s, first, "runner-a", "done"), -ESTALE);
	CHECK_INT("reclaim", store_job_claim(s, "runner-b", 30, &j), 0);
	CHECK_INT("requeued job comes back first", j.id, first);
	CHECK_INT("second attempt", j.attempts, 2);
	CHECK_INT("no retries yet", j.retries, 0);
	store_job_free(&j);
	{
		int r = -1;

		CHECK_INT("a failed try counted", store_job_retry(s, first, "runner-b", "try 1: down", &r), 0);
		CHECK_INT("one", r, 1);
		CHECK_INT("another", store_job_retry(s, first, "runner-b", "try 2: down", &r), 0);
		CHECK_INT("two", r, 2);
		CHECK_INT("not by another owner", store_job_retry(s, first, "runner-a", "x", &r), -ESTALE);
		store_job_get(s, first, &j);
		CHECK("the count and the last reason are kept", j.retries == 2 &&
		    j.error && !strcmp(j.error, "try 2: down"));
		store_job_free(&j);
		CHECK_INT("the count starts over", store_job_retry(s, first, "runner-b", NULL, &r), 0);
		store_job_get(s, first, &j);
		CHECK("at 0, the reason cleared", r == 0 && j.retries == 0 && !j.error);
		store_job_free(&j);
	}
	CHECK_INT("finish with bad state", store_job_finish(s, first, "runner-b", "queued"), -EINVAL);
	CHECK_INT("finish", store_job_finish(s, first, "runner-b", STORE_JOB_DONE), 0);
	CHECK_INT("finish twice is stale", store_job_finish(s, first, "runner-b", STORE_JOB_DONE), -ESTALE);
	store_job_get(s, first, &j);
	CHECK_STR("done", j.state, "done");
	CHECK("lease cleared", j.lease_owner == NULL && j.lease_expires == 0);
	store_job_free(&j);
	CHECK_INT("get missing", store_job_get(s, 12345, &j), -ENOENT);

	/* max attempts: an expired job past the limit fails */
	CHECK_INT("claim for max attempts", store_job_claim(s, "runner-c", 5, &j), 0);
	int64_t second = j.id;
	store_job_free(&j);
	fake_now += 10;
	CHECK_INT("requeue with max 1", store_jobs_requeue_expired(s, 1, &rq, &fl), 0);
	CHECK_INT("failed past max attempts", fl, 1);
	store_job_get(s, second, &j);
	CHECK_STR("state failed", j.state, "failed");
	store_job_free(&j);

	/* concurrent claims: every job exactly once */
	for (int i = 0; i < 40; i++) {
		char id[32], sha[41];
		snprintf(id, sizeof(id), "c-%d", i);
		snprintf(sha, sizeof(sha), "%040d", i);
		d[0] = push(id, sha);
		store_intake(s, d, 1);
	}
	CHECK_INT("second connection", store_open(sub, STORE_OPEN_EXISTING, &s2), 0);
	struct claimer cl[4] = { { s, "t0", 0 }, { s, "t1", 0 }, { s2, "t2", 0 }, { s2, "t3", 0 } };
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, claim_all, &cl[i]);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	CHECK_INT("41 queued jobs claimed exactly once", cl[0].got + cl[1].got + cl[2].got + cl[3].got, 41);

	struct count_ctx cc = { 0, 0 };
	CHECK_INT("count by state", store_jobs_count_by_state(s, cb, &cc), 0);
	CHECK_INT("running count", cc.running, 41);
	CHECK_INT("done count", cc.done, 1);
	store_close(s2);

	/* the background checkpointer: runs, refuses a second start, stops */
	CHECK_INT("checkpointer bad interval", store_checkpointer_start(s, 0), -EINVAL);
	CHECK_INT("checkpointer starts", store_checkpointer_start(s, 10), 0);
	CHECK_INT("checkpointer twice", store_checkpointer_start(s, 10), -EALREADY);
	for (int i = 0; i < 100; i++) {
		char id[32], sha[41];
		snprintf(id, sizeof(id), "w-%d", i);
		snprintf(sha, sizeof(sha), "%040d", 1000 + i);
		d[0] = push(id, sha);
		store_intake(s, d, 1);
	}
	for (int i = 0; i < 200 && store_checkpoints(s) < 2; i++)
		usleep(5000);
	CHECK("checkpoints ran", store_checkpoints(s) >= 2);
	snprintf(cmd, sizeof(cmd), "%s/kernelbot.db-wal", sub);
	struct stat wst;
	CHECK("WAL exists while open", stat(cmd, &wst) == 0);
	store_checkpointer_stop(s);
	store_checkpointer_stop(s);	/* idempotent */
	CHECK_INT("no checkpoints counted once stopped", store_checkpoints(s), 0);
	store_count(s, "jobs", &cnt);
	CHECK_INT("jobs intact across checkpoints", cnt, 143);
	CHECK_INT("checkpointer restarts", store_checkpointer_start(s, 1000), 0);
	store_close(s);	/* stops it */

	/* reopen keeps everything; a newer schema is refused */
	CHECK_INT("reopen", store_open(sub, STORE_OPEN_EXISTING, &s), 0);
	store_count(s, "jobs", &cnt);
	CHECK_INT("jobs survive reopen", cnt, 143);
	store_close(s);
	snprintf(cmd, sizeof(cmd), "sqlite3 %s/kernelbot.db 'INSERT INTO schema_version VALUES (999, 0)'", sub);
	if (system(cmd) == 0)
		CHECK_INT("newer schema refused", store_open(sub, 0, &s), -EPROTO);
	/* an unwritable directory */
	snprintf(cmd, sizeof(cmd), "%s/ro", dir);
	mkdir(cmd, 0500);
	if (geteuid() != 0) {
		char p[512];
		snprintf(p, sizeof(p), "%s/x", cmd);
		CHECK("unwritable dir fails", store_open(p, 0, &s) < 0);
	}
	replays(dir);
	ignored_replays(dir);
	ignored_then_work(dir);
	spellings(dir);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return t_done("test_store");
}

