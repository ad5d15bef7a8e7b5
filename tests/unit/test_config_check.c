/* cli/config_check: every section checked at once, and the effective configuration. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/config.h"
#include "cli/config_check.h"
#include "common/jsonx.h"
#include "t.h"

static char dir[] = "/tmp/kb-test-config-check-XXXXXX";

/* Parse text (flags for the load) and check it (flags for the check). */
static int
check(const char *text, int flags, json_t **eff, char *err)
{
	struct config *c = NULL;
	int rc;

	err[0] = '\0';
	if ((rc = config_parse("kb.yml", text, strlen(text), flags, &c, err,
	    CONFIG_ERR_MAX)) == 0)
		rc = config_check(c, flags, eff, err, CONFIG_ERR_MAX);
	config_free(c);
	return rc;
}

/* text must fail the check with a message holding want. */
static void
bad(const char *name, int flags, const char *text, const char *want)
{
	char err[CONFIG_ERR_MAX];
	int rc = check(text, flags, NULL, err);

	if (!CHECK(name, rc == -EINVAL && strstr(err, want)))
		printf("     rc=%d err=\"%s\" want \"%s\"\n", rc, err, want);
}

static void
good(const char *name, int flags, const char *text)
{
	char err[CONFIG_ERR_MAX];
	int rc = check(text, flags, NULL, err);

	if (!CHECK(name, rc == 0))
		printf("     rc=%d err=\"%s\"\n", rc, err);
}

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

int
main(void)
{
	char text[4096], token[300], fifo[300], err[CONFIG_ERR_MAX];
	json_t *eff = NULL;

	if (!mkdtemp(dir))
		return 1;
	snprintf(token, sizeof(token), "%s/token", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	write_file(token, "tok-0123456789abcdef\n");
	if (mkfifo(fifo, 0600) < 0)
		return 1;
	unsetenv("KB_TEST_UNSET_KEY");

	good("an empty file", 0, "");
	/* sections owned elsewhere, checked here */
	bad("llm provider", 0, "llm:\n  models:\n    - provider: foo\n      model: m\n",
	    "kb.yml:3: llm.models[0].provider: must be openai or anthropic");
	bad("budgets negative", 0, "budgets:\n  dollars: -5\n", "kb.yml:2: budgets.dollars:");
	bad("profile", 0, "\nprofile: sometimes\n", "kb.yml:2: profile: must be auto, ncu or off");
	bad("runners", 0, "runners:\n  leases: 3\n", "kb.yml:2: runners.leases: unknown key");
	bad("schedule", 0, "schedule: '* * *'\n", "kb.yml:1: schedule:");
	bad("sandbox keys", 0, "sandbox:\n  net: true\n", "kb.yml:2: sandbox.net: unknown key");
	bad("archive not a mapping", 0, "archive: 3\n", "kb.yml:1: archive: must be a mapping");
	good("an empty sandbox section", 0, "sandbox: {}\npython:\n");
	/* LLM keys: read unless CONFIG_NO_SECRETS */
	snprintf(text, sizeof(text), "llm:\n  models:\n    - provider: openai\n      model: m\n"
	    "      api_key_file: %s\n", fifo);
	bad("a FIFO key file", 0, text, "kb.yml:5: llm.models[0].api_key_file: ");
	good("a FIFO key file unread without secrets", CONFIG_NO_SECRETS, text);
	bad("an unset key variable", 0, "llm:\n  models:\n    - provider: openai\n      model: m\n"
	    "      api_key_env: KB_TEST_UNSET_KEY\n",
	    "kb.yml:5: llm.models[0].api_key_env: KB_TEST_UNSET_KEY is not set");
	/* forge clients: opened while the coordinator runs */
	bad("github without credentials", 0, "forges:\n  github:\n    api_url: http://127.0.0.1:9\n",
	    "kb.yml:2: forges.github: needs token_file");
	good("without the coordinator no client is opened", 0,
	    "forges:\n  github:\n    api_url: http://127.0.0.1:9\nrunners:\n  coordinator: false\n");
	good("nor without secrets", CONFIG_NO_SECRETS, "forges:\n  github: {}\n");
	snprintf(text, sizeof(text), "forges:\n  gitea:\n    token_file: %s\n", token);
	bad("gitea without api_url", 0, text, "kb.yml:2: forges.gitea.api_url: required");
	snprintf(text, sizeof(text), "forges:\n  gitea:\n    api_url: ftp://x\n    token_file: %s\n", token);
	bad("a driver's key error names the key's line", 0, text,
	    "kb.yml:3: forges.gitea.api_url: must be an http(s) URL");
	snprintf(text, sizeof(text), "forges:\n  gitlab:\n    token_file: %s\n", fifo);
	bad("a FIFO token", 0, text, "kb.yml:3: forges.gitlab.token_file: ");
	snprintf(text, sizeof(text), "forges:\n  github:\n    driver: local\n    out_dir: %s/out\n", dir);
	bad("another driver's error names this section", 0, text,
	    "kb.yml:2: forges.github.bare_repo: required");
	snprintf(text, sizeof(text), "forges:\n  github:\n    token_file: %s\n    write_interval_ms: -1\n", token);
	bad("a driver's number", 0, text, "kb.yml:4: forges.github.write_interval_ms: must be an integer");
	snprintf(text, sizeof(text), "forges:\n  github:\n    token_file: %s\n", token);
	good("github with a token", 0, text);

	/* the effective configuration */
	snprintf(text, sizeof(text),
	    "runners: 2\n"
	    "budgets:\n  llm_usd: 3\n  gpu_minutes: 2\n"
	    "llm:\n  models:\n    - provider: anthropic\n      model: m\n      api_key_file: %s\n"
	    "schedule: '0 3 * * 0'\n", token);
	CHECK_INT("a full file checks", check(text, 0, &eff, err), 0);
	CHECK_INT("runners: N is runners.local: N", json_integer_value(jsonx_path(eff, "runners.local")), 2);
	CHECK_INT("runners.lease_s default", jsonx_int(eff, "runners.lease_s", 0), 60);
	CHECK("budgets.llm_usd is dollars", jsonx_num(eff, "budgets.dollars", 0) == 3);
	CHECK("budgets.gpu_minutes is gpu_seconds", jsonx_num(eff, "budgets.gpu_seconds", 0) == 120);
	CHECK("no alias left", !jsonx_path(eff, "budgets.llm_usd"));
	CHECK_STR("a model's default base_url", jsonx_str(json_array_get(jsonx_path(eff,
	    "llm.models"), 0), "base_url", NULL), "https://api.anthropic.com");
	CHECK_STR("its key file by name", jsonx_str(json_array_get(jsonx_path(eff,
	    "llm.models"), 0), "api_key_file", NULL), token);
	CHECK_INT("schedule is a list", json_array_size(jsonx_path(eff, "schedule")), 1);
	CHECK_STR("profile default", jsonx_str(eff, "profile", NULL), "auto");
	CHECK_STR("listen default", jsonx_str(eff, "listen", NULL), CONFIG_DEFAULT_LISTEN);
	CHECK_INT("http default", jsonx_int(eff, "http.threads", 0), 8);
	{
		char *dump = json_dumps(eff, 0);
		CHECK("the key file's content is nowhere", dump && !strstr(dump, "tok-0123"));
		free(dump);
	}
	json_decref(eff);

	/* attack F5: one secret on two forges, by content, whatever the source */
	{
		char a[300], b[300], d[300];

		snprintf(a, sizeof(a), "%s/a.secret", dir);
		snprintf(b, sizeof(b), "%s/b.secret", dir);
		snprintf(d, sizeof(d), "%s/d.secret", dir);
		write_file(a, "shared-secret-0123456789\n");
		write_file(b, "shared-secret-0123456789");
		write_file(d, "another-secret-0123456789\n");
		snprintf(text, sizeof(text), "forges:\n  github:\n    webhook_secret_file: %s\n"
		    "  gitea:\n    webhook_secret_file: %s\n", a, b);
		bad("the same secret in two files", 0, text, "kb.yml:5: "
		    "forges.gitea.webhook_secret_file: the same secret as "
		    "forges.github.webhook_secret_file: give each forge its own");
		setenv("KB_TEST_SHARED", "shared-secret-0123456789", 1);
		snprintf(text, sizeof(text), "forges:\n  gitlab:\n    webhook_token_env: KB_TEST_SHARED\n"
		    "  github:\n    webhook_secret_file: %s\n", a);
		bad("a file and a variable", 0, text, "kb.yml:3: forges.gitlab.webhook_token_env: "
		    "the same secret as forges.github.webhook_secret_file");
		snprintf(text, sizeof(text), "forges:\n  github:\n    webhook_secret_file: %s\n"
		    "  gitea:\n    webhook_secret_file: %s\nrunners:\n  coordinator: false\n", a, d);
		good("two secrets", 0, text);
		snprintf(text, sizeof(text), "forges:\n  github:\n    webhook_secret_file: %s\n"
		    "  gitea:\n    webhook_secret_file: %s\nrunners:\n  coordinator: false\n", a, a);
		good("not read without secrets", CONFIG_NO_SECRETS, text);
		unsetenv("KB_TEST_SHARED");
	}

	/*
	 * The fourth outside attack's F4 and F6: the files serve opens. A FIFO
	 * log had serve block in open() forever, /dev/full took the log, a
	 * missing directory or a data_dir that is a file passed here and
	 * failed serve later; llm.prompts_dir likewise, with models to ask.
	 */
	{
		char sub[300], file[300], mdl[600];

		snprintf(sub, sizeof(sub), "%s/sub", dir);
		snprintf(file, sizeof(file), "%s/afile", dir);
		mkdir(sub, 0700);
		write_file(file, "x\n");
		snprintf(text, sizeof(text), "data_dir: %s/d\nlog_file: %s\n", dir, fifo);
		bad("a FIFO log_file", 0, text, "kb.yml:2: log_file: '");
		{
			char e2[CONFIG_ERR_MAX];
			check(text, 0, NULL, e2);
			CHECK("names the FIFO", strstr(e2, "is a FIFO: the log must be a "
			    "regular file") != NULL);
		}
		snprintf(text, sizeof(text), "data_dir: %s/d\nlog_file: /dev/full\n", dir);
		bad("/dev/full as log_file", 0, text,
		    "kb.yml:2: log_file: '/dev/full' is a character device");
		snprintf(text, sizeof(text), "data_dir: %s/d\nlog_file: %s\n", dir, sub);
		bad("a directory as log_file", 0, text, "is a directory: the log must be");
		snprintf(text, sizeof(text), "data_dir: %s/d\nlog_file: %s/nodir/k.log\n", dir, dir);
		bad("a log_file in a missing directory", 0, text,
		    "kb.yml:2: log_file: the directory of '");
		snprintf(text, sizeof(text), "data_dir: %s/d\nlog_file: %s/k.log\n", dir, file);
		bad("a log_file under a file", 0, text, "kb.yml:2: log_file: the directory of '");
		snprintf(text, sizeof(text), "data_dir: %s/d\nlog_file: %s/k.log\n", dir, sub);
		good("a new log_file in a directory", 0, text);
		snprintf(text, sizeof(text), "data_dir: %s/d\nlog_file: %s\n", dir, file);
		good("an existing log_file", 0, text);
		snprintf(text, sizeof(text), "log_file: %s\ndata_dir: %s\n", file, file);
		bad("a file as data_dir", 0, text, "kb.yml:2: data_dir: '");
		{
			char e2[CONFIG_ERR_MAX];
			check(text, 0, NULL, e2);
			CHECK("says it is a file", strstr(e2, "afile' is a file, not a directory") != NULL);
		}
		{
			struct config *c = NULL;
			char e2[CONFIG_ERR_MAX], want[400];

			if (config_parse("kb.yml", "data_dir: /tmp\n", 15, 0, &c, e2,
			    sizeof(e2)) == 0 && config_set_data_dir(c, file) == 0) {
				CHECK_INT("serve --data-dir a file", config_check(c, 0, NULL,
				    e2, sizeof(e2)), -EINVAL);
				snprintf(want, sizeof(want), "--data-dir: '%s' is a file, "
				    "not a directory", file);
				CHECK_STR("named as the flag, not the file's line", e2, want);
			} else {
				CHECK("parse for --data-dir", 0);
			}
			config_free(c);
		}
		snprintf(text, sizeof(text), "data_dir: %s/x/y\n", file);
		bad("a data_dir under a file", 0, text, "' cannot be created: '");
		snprintf(text, sizeof(text), "data_dir: %s/new/deeper/\n", sub);
		good("a data_dir to create, with its parents", 0, text);
		snprintf(text, sizeof(text), "data_dir: %s\n", fifo);
		good("serve's files are not looked at without secrets (optimize)",
		    CONFIG_NO_SECRETS, text);
		snprintf(mdl, sizeof(mdl), "    - provider: openai\n      model: m\n"
		    "      api_key_file: %s\n", token);
		snprintf(text, sizeof(text), "data_dir: %s/d\nllm:\n  prompts_dir: "
		    "/nonexistent/p\n  models:\n%s", dir, mdl);
		bad("a missing prompts_dir", 0, text,
		    "kb.yml:3: llm.prompts_dir: '/nonexistent/p': No such file");
		snprintf(text, sizeof(text), "data_dir: %s/d\nllm:\n  prompts_dir: "
		    "%s\n  models:\n%s", dir, fifo, mdl);
		bad("a FIFO prompts_dir", 0, text, "is a FIFO, not a directory of prompt templates");
		snprintf(text, sizeof(text), "data_dir: %s/d\nllm:\n  prompts_dir: "
		    "%s\n  models:\n%s", dir, sub, mdl);
		bad("a prompts_dir without templates", CONFIG_NO_SECRETS, text,
		    "holds no readable translate.md");
		snprintf(text, sizeof(text), "data_dir: %s/d\nllm:\n  prompts_dir: "
		    "pipeline/prompts\n  models:\n%s", dir, mdl);
		good("the source tree's prompts", 0, text);
		snprintf(text, sizeof(text), "llm:\n  prompts_dir: /nonexistent/p\n");
		good("a prompts_dir without models is not used", CONFIG_NO_SECRETS, text);
		unlink(file);
	}

	CHECK_INT("config_check_secret_key: token_file", config_check_secret_key("token_file"), 1);
	CHECK_INT("config_check_secret_key: api_url", config_check_secret_key("api_url"), 0);
	unlink(token);
	unlink(fifo);
	{
		char cmd[400];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		(void)!system(cmd);
	}
	return t_done("test_config_check");
}
