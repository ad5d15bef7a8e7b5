/*
 * coord_cmd: the work that is not a push. PR-comment commands (obeyed
 * only for users the forge says may write, never on PRs from forks,
 * acknowledged with a reaction and answered with one comment per command,
 * found again by its marker so a restart does not answer twice), closed
 * PRs, the re-optimization schedule and new GPU architectures.
 */
#include "coord/coord_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "gitops/modules.h"
#include "gitops/repocfg.h"
#include "pipeline/archive/archive.h"
#include "webhooks/event.h"

#define REPLY_MARKER "<!-- kernelbot:reply:%lld -->"
#define CLOCK_SCHEDULE "schedule_minute"
#define CLOCK_ARCH_PREFIX "arch_checked:"
#define CLOCK_SWEEP "work_swept_hour"

static const char help_text[] =
    "kernelbot takes these commands in a pull request comment, from users "
    "with write access to this repository:\n\n"
    "| command | what it does |\n"
    "| --- | --- |\n"
    "| `/kernelbot optimize PATH [CLASS]` | optimize the module in PATH "
    "(class CLASS, default `Model`) as it is at this pull request's head "
    "commit; the result goes to the module's own kernelbot PR |\n"
    "| `/kernelbot retry` | on a kernelbot PR: optimize its module again, "
    "at the PR's head commit |\n"
    "| `/kernelbot benchmark` | on a kernelbot PR: time its kernel again "
    "against the module at the PR's head (no search) and post the table |\n"
    "| `/kernelbot stop` | on a kernelbot PR: stop the work queued or running "
    "for its module |\n"
    "| `/kernelbot help` | this text |\n\n"
    "Commands on pull requests from forks are not obeyed.";

static int
is_oid(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");

	return n == GITOPS_OID_HEX - 1 && !s[n];
}

/*
 * The commit a command on PR pi works on: the PR's head (the forge's
 * commit id, else the tip of its head branch, which is in this
 * repository since fork PRs are refused). NULL when the forge said
 * neither.
 */
static const char *
pr_head(const struct forge_pr_info *pi, char *buf, size_t len)
{
	if (pi->head_sha[0])
		return pi->head_sha;
	if (!pi->head_ref[0] || (size_t)snprintf(buf, len, "refs/heads/%s",
	    pi->head_ref) >= len)
		return NULL;
	return buf;
}

int
coord_queue(struct coord *c, const char *provider, const char *repo,
    const char *clone_url, const char *branch, const char *rev,
    const char *trigger,
    json_t *modules, const json_t *extra, int64_t *job,
    char sha_out[GITOPS_OID_HEX], char *err, size_t errlen)
{
	struct forge *f = NULL;
	struct gitops_repo *r = NULL;
	struct store_job_new nj;
	char ref[300], sha[GITOPS_OID_HEX];
	json_t *p = extra ? json_deep_copy(extra) : json_object();
	char *text = NULL;
	int rc;

	if ((rc = coord_forge(c, provider, repo, &f, err, errlen)) < 0 ||
	    (rc = coord_mirror(c, f, repo, clone_url, &r, err, errlen)) < 0)
		goto out;
	if (rev && is_oid(rev) && !gitops_has_commit(r, rev)) {
		/* A PR head no branch of the mirror reaches (GitHub's refs/pull/N/head). */
		struct gitops_cred cred = { NULL, NULL };

		if ((rc = forge_git_cred(f, &cred, err, errlen)) < 0 ||
		    (rc = gitops_fetch_commit(r, clone_url, &cred, rev, err,
		    errlen)) < 0)
			goto out;
	}
	snprintf(ref, sizeof(ref), "refs/heads/%s", branch);
	if ((rc = gitops_resolve(r, rev ? rev : ref, sha, err, errlen)) < 0)
		goto out;
	json_object_set(p, "modules", modules);
	json_object_set_new(p, "default_branch", json_string(branch));
	if (!(text = json_dumps(p, JSON_COMPACT))) {
		rc = -ENOMEM;
		goto out;
	}
	memset(&nj, 0, sizeof(nj));
	nj.provider = provider;
	nj.repo = repo;
	nj.clone_url = clone_url;
	nj.sha = sha;
	nj.trigger = trigger;
	nj.payload = text;
	if ((rc = store_job_add(c->store, &nj, job)) < 0) {
		snprintf(err, errlen, "cannot queue a job: %s", strerror(-rc));
		goto out;
	}
	if (sha_out)
		memcpy(sha_out, sha, GITOPS_OID_HEX);
out:
	free(text);
	json_decref(p);
	gitops_close(r);
	forge_close(f);
	return rc;
}

/* The delivered module a kernelbot PR is about: its rows (any arch). */
static int
pr_module(struct coord *c, const char *repo, int64_t pr,
    const struct forge_pr_info *pi, struct store_delivered **out, size_t *n)
{
	struct store_delivered *all = NULL;
	size_t na = 0, i;
	int rc;

	if ((rc = store_delivered_by_pr(c->store, repo, pr, out, n)) < 0 || *n)
		return rc;
	free(*out);
	*out = NULL;
	/* Not recorded with this PR (a PR the bot re-opened): by its branch. */
	if ((rc = store_delivered_list(c->store, repo, NULL, &all, &na)) < 0)
		return rc;
	for (i = 0; i < na; i++) {
		const char *slash = strrchr(pi->head_ref, '/');

		if (slash && !strcmp(slash + 1, all[i].slug))
			break;
	}
	if (i == na) {
		store_delivered_list_free(all, na);
		return 0;
	}
	if (!(*out = calloc(1, sizeof(**out)))) {
		store_delivered_list_free(all, na);
		return -ENOMEM;
	}
	**out = all[i];
	memset(&all[i], 0, sizeof(all[i]));
	*n = 1;
	store_delivered_list_free(all, na);
	return 0;
}

/* The clone URL of repo, from the delivered rows or the jobs it had. */
static char *
clone_url_of(struct coord *c, const char *repo)
{
	struct store_delivered *d = NULL;
	struct store_job *jobs = NULL;
	size_t n = 0;
	char *url = NULL;

	if (store_delivered_list(c->store, repo, NULL, &d, &n) == 0 && n)
		url = strdup(d[0].clone_url);
	store_delivered_list_free(d, n);
	if (url)
		return url;
	if (store_jobs_list(c->store, 0, &jobs, &n) == 0)
		for (size_t i = 0; i < n && !url; i++)
			if (!strcmp(jobs[i].repo, repo))
				url = strdup(jobs[i].clone_url);
	store_jobs_free(jobs, n);
	return url;
}

/*
 * Carry out an obeyed command; reply gets the answer. Returns the state
 * to record: "done", "refused" (a command that cannot apply) or "failed".
 */
static const char *
obey(struct coord *c, const struct store_command *cmd,
    const struct forge_pr_info *pi, struct buf *reply)
{
	struct store_delivered *d = NULL;
	char err[1024] = "", sha[GITOPS_OID_HEX] = "", headbuf[300];
	const char *state = "done", *head = pr_head(pi, headbuf, sizeof(headbuf));
	char *url = NULL, *args = strdup(cmd->args ? cmd->args : "");
	size_t n = 0;
	int64_t job = 0;
	int rc;

	if (!args)
		return "failed";
	if (!strcmp(cmd->command, "help")) {
		buf_addstr(reply, help_text);
		goto out;
	}
	if (strlen(args) > WH_MAX_ARGS) {
		buf_printf(reply, "The arguments of `/kernelbot %s` are longer than %d bytes; "
		    "kernelbot did not carry it out.", cmd->command, WH_MAX_ARGS);
		state = "refused";
		goto out;
	}
	if (!head && (!strcmp(cmd->command, "optimize") ||
	    !strcmp(cmd->command, "retry") || !strcmp(cmd->command, "benchmark"))) {
		snprintf(err, sizeof(err), "the forge did not say which commit pull "
		    "request %lld is at", (long long)cmd->pr);
		goto fail;
	}
	if (!strcmp(cmd->command, "optimize")) {
		char *save = NULL, *path = strtok_r(args, " \t", &save);
		char *cls = strtok_r(NULL, " \t", &save);
		char slug[MODULES_MAX_SLUG + 1];
		json_t *mods;

		if (!path || strstr(path, "..") || path[0] == '/' ||
		    modules_slug(path, cls ? cls : REPOCFG_DEFAULT_CLASS, slug) < 0) {
			buf_printf(reply, "`/kernelbot optimize` needs the path of a "
			    "module file in this repository, e.g. `/kernelbot optimize "
			    "models/block.py`.");
			state = "refused";
			goto out;
		}
		if (!(url = clone_url_of(c, cmd->repo))) {
			buf_printf(reply, "kernelbot has not seen a push to this "
			    "repository yet, so it does not know where to fetch it "
			    "from. Push to the default branch once, then ask again.");
			state = "refused";
			goto out;
		}
		json_t *extra = json_pack("{s:I, s:s}", "pr", (json_int_t)cmd->pr,
		    "kind", "optimize");

		mods = json_pack("[{s:s, s:s}]", "path", path, "class",
		    cls ? cls : REPOCFG_DEFAULT_CLASS);
		rc = coord_queue(c, cmd->provider, cmd->repo, url, pi->base_ref[0] ?
		    pi->base_ref : "main", head, "command", mods, extra, &job, sha,
		    err, sizeof(err));
		json_decref(mods);
		json_decref(extra);
		if (rc < 0)
			goto fail;
		buf_printf(reply, "Queued job %lld: optimizing `%s` (class `%s`) at "
		    "%.12s. The result goes to the branch `kernelbot/%s` and its "
		    "pull request.", (long long)job, path, cls ? cls :
		    REPOCFG_DEFAULT_CLASS, sha, slug);
		goto out;
	}
	if (strcmp(cmd->command, "retry") && strcmp(cmd->command, "benchmark") &&
	    strcmp(cmd->command, "stop")) {
		buf_printf(reply, "kernelbot does not know the command `%s`. "
		    "`/kernelbot help` lists the ones it takes.", cmd->command);
		state = "refused";
		goto out;
	}
	if ((rc = pr_module(c, cmd->repo, cmd->pr, pi, &d, &n)) < 0) {
		snprintf(err, sizeof(err), "store: %s", strerror(-rc));
		goto fail;
	}
	if (n == 0) {
		buf_printf(reply, "`/kernelbot %s` works on the pull requests "
		    "kernelbot opened for a module, and this is not one of them. "
		    "To optimize a module, use `/kernelbot optimize PATH`.",
		    cmd->command);
		state = "refused";
		goto out;
	}
	if (!strcmp(cmd->command, "stop")) {
		int stopped = 0;

		if ((rc = store_tasks_cancel(c->store, cmd->repo, d[0].slug,
		    &stopped)) < 0) {
			snprintf(err, sizeof(err), "store: %s", strerror(-rc));
			goto fail;
		}
		if (stopped)
			buf_printf(reply, "Stopped %d task(s) for `%s`.", stopped,
			    d[0].module);
		else
			buf_printf(reply, "Nothing was queued or running for `%s`.",
			    d[0].module);
	} else {
		int bench = !strcmp(cmd->command, "benchmark");
		json_t *mods = json_array(), *extra = json_pack("{s:I, s:s}", "pr",
		    (json_int_t)cmd->pr, "kind", bench ? "benchmark" : "optimize");

		/* Every architecture the PR has kernels for, again. */
		for (size_t i = 0; i < n; i++)
			json_array_append_new(mods, json_pack("{s:s, s:s, s:s}", "path",
			    d[i].module, "class", d[i].class_name, "arch", d[i].arch));
		rc = coord_queue(c, d[0].provider, cmd->repo, d[0].clone_url,
		    d[0].base_branch, head, bench ? "benchmark" : "retry", mods, extra,
		    &job, sha, err, sizeof(err));
		json_decref(mods);
		json_decref(extra);
		if (rc < 0)
			goto fail;
		if (bench)
			buf_printf(reply, "Queued job %lld: benchmarking this pull "
			    "request's kernel of `%s` at %.12s with `kernelbot eval` "
			    "(no search) for %zu architecture(s); the timings will be "
			    "posted here.", (long long)job, d[0].module, sha, n);
		else
			buf_printf(reply, "Queued job %lld: optimizing again `%s` at "
			    "%.12s for %zu architecture(s); this pull request will be "
			    "updated.", (long long)job, d[0].module, sha, n);
	}
	goto out;
fail:
	buf_truncate(reply, 0);
	buf_printf(reply, "kernelbot could not carry out `/kernelbot %s`: %s",
	    cmd->command, err);
	state = "failed";
out:
	store_delivered_list_free(d, n);
	free(url);
	free(args);
	return state;
}

/* Permission and fork checks, reaction, work, answer. */
static void
command_run(struct coord *c, struct store_command *cmd)
{
	struct forge *f = NULL;
	struct forge_pr_info pi;
	struct forge_comment cm;
	struct buf reply = BUF_INIT(BUF_MAX_SMALL);
	enum forge_perm perm = FORGE_PERM_NONE;
	char err[1024] = "", marker[64];
	const char *state = "failed";
	int rc;

	memset(&pi, 0, sizeof(pi));
	snprintf(marker, sizeof(marker), REPLY_MARKER, (long long)cmd->comment_id);
	if ((rc = coord_forge(c, cmd->provider, cmd->repo, &f, err, sizeof(err))) < 0)
		goto out;
	if ((rc = forge_permission(f, cmd->actor, &perm, err, sizeof(err))) < 0)
		goto out;
	if (perm < FORGE_PERM_WRITE) {
		buf_printf(&reply, "Sorry @%s, kernelbot only takes commands from "
		    "people with write access to this repository (the forge says "
		    "yours is %s). Nothing was queued.", cmd->actor,
		    forge_perm_name(perm));
		state = "refused";
		goto answer;
	}
	if ((rc = forge_pr_get(f, cmd->pr, &pi, err, sizeof(err))) < 0)
		goto out;
	if (pi.fork) {
		buf_printf(&reply, "Sorry @%s, kernelbot does not run on pull "
		    "requests from forks: their code would run on this "
		    "repository's machines. Nothing was queued.", cmd->actor);
		state = "refused";
		goto answer;
	}
	if ((rc = forge_react(f, cmd->pr, cmd->comment_id, "+1", err,
	    sizeof(err))) < 0)
		log_warn("cannot react to a command", "id=%lld err=\"%s\"",
		    (long long)cmd->id, err);
	state = obey(c, cmd, &pi, &reply);
answer:
	if ((rc = forge_comment_upsert(f, cmd->pr, marker, buf_cstr(&reply), &cm,
	    err, sizeof(err))) < 0)
		goto out;
	log_info("command answered", "id=%lld repo=%s pr=%lld command=%s actor=%s "
	    "state=%s", (long long)cmd->id, cmd->repo, (long long)cmd->pr,
	    cmd->command, cmd->actor, state);
	rc = store_command_finish(c->store, cmd->id, c->owner, state,
	    buf_cstr(&reply));
	if (rc < 0)
		log_warn("cannot record a command's end", "id=%lld err=\"%s\"",
		    (long long)cmd->id, strerror(-rc));
	buf_free(&reply);
	forge_close(f);
	return;
out:
	/* Forge trouble: the lease runs out and the command is tried again. */
	log_warn("command not carried out; will retry", "id=%lld err=\"%s\"",
	    (long long)cmd->id, err);
	buf_free(&reply);
	forge_close(f);
}

void
coord_commands_tick(struct coord *c)
{
	struct store_command cmd;

	store_commands_requeue_expired(c->store, c->opts.max_attempts);
	while (!atomic_load(&c->stop) &&
	    store_command_claim(c->store, c->owner, c->opts.lease_s, &cmd) == 0) {
		command_run(c, &cmd);
		store_command_free(&cmd);
	}
}

/*
 * The sweep of runners' work directories is queued as a cleanup once an
 * hour, and at the first look after a start (after a crash, that is when
 * leftovers are likeliest); its lease makes one coordinator do it.
 */
static void
queue_sweep(struct coord *c, time_t now)
{
	int64_t last = 0, hour = (int64_t)now / 3600;

	if (c->swept_at_start && store_clock_get(c->store, CLOCK_SWEEP, &last) == 0 &&
	    last >= hour)
		return;
	if (store_clock_set(c->store, CLOCK_SWEEP, hour) == 0 &&
	    store_cleanup_add(c->store, "work", NULL) == 0)
		c->swept_at_start = 1;
}

static void
sweep(struct coord *c, const struct store_cleanup *cl)
{
	char res[64];
	int removed = 0, rc;

	rc = coord_work_sweep(c->store, c->data_dir, c->opts.work_keep_failed_h,
	    time(NULL), &removed);
	snprintf(res, sizeof(res), "removed %d", removed);
	if (rc < 0)
		snprintf(res, sizeof(res), "%s", strerror(-rc));
	store_cleanup_finish(c->store, cl->id, c->owner, rc < 0 ? "failed" :
	    "done", res);
	log_info("work directories swept", "removed=%d keep_failed_h=%d%s%s",
	    removed, c->opts.work_keep_failed_h, rc < 0 ? " err=" : "",
	    rc < 0 ? res : "");
}

void
coord_cleanups_tick(struct coord *c)
{
	struct store_cleanup cl;
	int rc;

	queue_sweep(c, time(NULL));
	while (!atomic_load(&c->stop) &&
	    store_cleanup_claim(c->store, c->owner, c->opts.lease_s, &cl) == 0) {
		if (cl.kind && !strcmp(cl.kind, "work")) {
			sweep(c, &cl);
			store_cleanup_free(&cl);
			continue;
		}
		/* The module keeps its kernels; its next result opens a new PR. */
		rc = store_delivered_clear_pr(c->store, cl.repo, cl.pr);
		store_cleanup_finish(c->store, cl.id, c->owner, rc < 0 ? "failed" :
		    "done", cl.merged ? "merged" : "closed");
		log_info("pull request closed", "repo=%s pr=%lld merged=%d",
		    cl.repo, (long long)cl.pr, cl.merged);
		store_cleanup_free(&cl);
	}
}

/*
 * Re-optimize delivered modules: those of every arch (arch NULL: each for
 * its own arch) or, for a new arch, for that one. One job per repository.
 */
static void
reoptimize(struct coord *c, const char *trigger, const char *new_arch)
{
	struct store_delivered *d = NULL;
	size_t n = 0, i = 0;

	if (store_delivered_list(c->store, NULL, NULL, &d, &n) < 0)
		return;
	while (i < n) {
		json_t *mods = json_array();
		size_t k = i;
		char err[1024];
		int64_t job = 0;

		for (; k < n && !strcmp(d[k].repo, d[i].repo); k++) {
			/* for a new arch: each module once, whatever arch it has */
			if (new_arch && k > i && !strcmp(d[k].slug, d[k - 1].slug))
				continue;
			json_array_append_new(mods, json_pack("{s:s, s:s, s:s}", "path",
			    d[k].module, "class", d[k].class_name, "arch",
			    new_arch ? new_arch : d[k].arch));
		}
		if (coord_queue(c, d[i].provider, d[i].repo, d[i].clone_url,
		    d[i].base_branch, NULL, trigger, mods, NULL, &job, NULL, err,
		    sizeof(err)) < 0)
			log_warn("cannot queue a re-optimization", "repo=%s err=\"%s\"",
			    d[i].repo, err);
		else
			log_info("re-optimization queued", "repo=%s job=%lld trigger=%s "
			    "modules=%zu", d[i].repo, (long long)job, trigger,
			    json_array_size(mods));
		json_decref(mods);
		i = k;
	}
	store_delivered_list_free(d, n);
}

void
coord_schedule_tick(struct coord *c, time_t now)
{
	int64_t last = 0, minute = (int64_t)now / 60;
	int fire = 0;

	if (c->opts.n_schedules == 0)
		return;
	if (store_clock_get(c->store, CLOCK_SCHEDULE, &last) < 0)
		last = minute - 1;	/* first run: the current minute counts */
	if (last >= minute)
		return;
	/* Minutes missed while the daemon was down fire once, not once each. */
	for (int64_t m = minute; m > last && m > minute - 24 * 60 && !fire; m--)
		for (size_t i = 0; i < c->opts.n_schedules && !fire; i++)
			fire = cron_matches(&c->opts.schedules[i], (time_t)(m * 60));
	/* Recorded first: a crash right after cannot fire it twice. */
	if (store_clock_set(c->store, CLOCK_SCHEDULE, minute) < 0)
		return;
	if (fire)
		reoptimize(c, "schedule", NULL);
}

void
coord_arch_tick(struct coord *c)
{
	struct store_runner *v = NULL;
	size_t n = 0;

	if (store_runners_list(c->store, &v, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		char key[160];
		int64_t seen;
		int has;

		snprintf(key, sizeof(key), CLOCK_ARCH_PREFIX "%s", v[i].arch);
		if (store_clock_get(c->store, key, &seen) == 0)
			continue;
		/*
		 * Kernels for this arch, delivered or archived: nothing to port.
		 * Either way the arch is remembered, so it is looked at once.
		 */
		has = store_delivered_has_arch(c->store, v[i].arch);
		if (has == 0)
			has = archive_has_arch(c->store, v[i].arch);
		if (store_clock_set(c->store, key, (int64_t)time(NULL)) < 0)
			continue;
		if (has == 0) {
			struct store_delivered *d = NULL;
			size_t nd = 0;

			if (store_delivered_list(c->store, NULL, NULL, &d, &nd) == 0 && nd) {
				log_info("new architecture: re-optimizing delivered modules",
				    "arch=%s runner=%s", v[i].arch, v[i].name);
				reoptimize(c, "arch", v[i].arch);
			}
			store_delivered_list_free(d, nd);
		}
	}
	store_runners_free(v, n);
}
