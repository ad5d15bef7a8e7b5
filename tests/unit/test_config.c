#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/config.h"
#include "t.h"

static char dir[] = "/tmp/kb-test-config-XXXXXX";

static int
parse(const char *text, int flags, struct config **c, char *err)
{
	*c = NULL;
	err[0] = '\0';
	return config_parse("kb.yml", text, strlen(text), flags, c, err, CONFIG_ERR_MAX);
}

/* Parse text that must fail; check the message contains want. */
static void
bad(const char *name, const char *text, const char *want)
{
	struct config *c;
	char err[CONFIG_ERR_MAX];
	int rc = parse(text, 0, &c, err);

	if (!CHECK(name, rc == -EINVAL && !c && strstr(err, want)))
		printf("     rc=%d err=\"%s\" want \"%s\"\n", rc, err, want);
	config_free(c);
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
	struct config *c;
	char err[CONFIG_ERR_MAX], text[2048], secret[300], shortsec[300];
	struct sockaddr_storage ss;
	socklen_t sl;
	size_t len;
	const char *s;

	if (!mkdtemp(dir))
		return 1;
	snprintf(secret, sizeof(secret), "%s/gh.secret", dir);
	snprintf(shortsec, sizeof(shortsec), "%s/short.secret", dir);
	write_file(secret, "It's a Secret to Everybody\n");
	write_file(shortsec, "abc\n");

	/* defaults */
	CHECK_INT("empty file parses", parse("", 0, &c, err), 0);
	CHECK_STR("default listen", config_listen(c), CONFIG_DEFAULT_LISTEN);
	CHECK_STR("default data_dir", config_data_dir(c), CONFIG_DEFAULT_DATA_DIR);
	CHECK("default log_file is stderr", config_log_file(c) == NULL);
	CHECK_INT("default body limit 25 MiB", config_http(c)->max_body_bytes, 25u << 20);
	CHECK("no forge secret by default", !config_forge_secret(c, CONFIG_GITHUB, NULL));
	CHECK("empty allow list allows nothing", !config_repo_allowed(c, "acme/x"));
	CHECK("tree is an object", json_is_object(config_tree(c)));
	config_free(c);

	/* a full file */
	snprintf(text, sizeof(text),
	    "listen: 127.0.0.1:9000\n"
	    "data_dir: /srv/kb\n"
	    "log_file: /var/log/kb.log\n"
	    "log_level: debug\n"
	    "allow_repos:\n"
	    "  - acme/*\n"
	    "  - '!acme/secret*'\n"
	    "  - Solo/Repo\n"
	    "http:\n"
	    "  max_body_bytes: 1048576\n"
	    "  threads: 2\n"
	    "forges:\n"
	    "  github:\n"
	    "    webhook_secret_file: %s\n"
	    "    api_url: https://api.github.com\n"
	    "  gitlab:\n"
	    "    webhook_token_env: KB_TEST_GITLAB_TOKEN\n"
	    "  local: {}\n"
	    "runners:\n"
	    "  - name: gpu0\n"
	    "llm: {models: []}\n", secret);
	setenv("KB_TEST_GITLAB_TOKEN", "gitlab-token-0123456789", 1);
	CHECK_INT("full file parses", parse(text, 0, &c, err), 0);
	if (c) {
		CHECK_STR("listen", config_listen(c), "127.0.0.1:9000");
		CHECK_STR("data_dir", config_data_dir(c), "/srv/kb");
		CHECK_STR("log_file", config_log_file(c), "/var/log/kb.log");
		CHECK_STR("log_level", config_log_level(c), "debug");
		CHECK_INT("http.max_body_bytes", config_http(c)->max_body_bytes, 1048576);
		CHECK_INT("http.threads", config_http(c)->threads, 2);
		CHECK_INT("http.max_connections default kept", config_http(c)->max_connections, 256);
		s = config_forge_secret(c, CONFIG_GITHUB, &len);
		CHECK_STR("github secret from file, newline cut", s, "It's a Secret to Everybody");
		CHECK_INT("github secret length", len, 26);
		CHECK_STR("gitlab token from env", config_forge_secret(c, CONFIG_GITLAB, NULL),
		    "gitlab-token-0123456789");
		CHECK("gitea not configured", !config_forge_secret(c, CONFIG_GITEA, NULL));
		CHECK("allow acme/model", config_repo_allowed(c, "acme/model"));
		CHECK("allow is case-insensitive", config_repo_allowed(c, "ACME/Model"));
		CHECK("exclusion wins", !config_repo_allowed(c, "acme/secret-sauce"));
		CHECK("exact pattern", config_repo_allowed(c, "solo/repo"));
		CHECK("other owner refused", !config_repo_allowed(c, "evil/model"));
		CHECK("empty repo refused", !config_repo_allowed(c, ""));
		CHECK("other sections kept in the tree",
		    json_is_array(json_object_get(config_tree(c), "runners")));
		CHECK_INT("override listen", config_set_listen(c, "[::1]:8081"), 0);
		CHECK_STR("override listen applied", config_listen(c), "[::1]:8081");
		CHECK_INT("bad override refused", config_set_listen(c, "nope"), -EINVAL);
		CHECK_INT("override data dir", config_set_data_dir(c, "/tmp/x"), 0);
		CHECK_STR("override data dir applied", config_data_dir(c), "/tmp/x");
		/* config_error for other modules */
		CHECK_INT("config_error returns -EINVAL",
		    config_error(c, err, sizeof(err), "forges.github.api_url", NULL,
		    "must be %s", "https"), -EINVAL);
		CHECK_STR("config_error names file, line and key", err,
		    "kb.yml:15: forges.github.api_url: must be https");
		json_t *r = json_array_get(json_object_get(config_tree(c), "allow_repos"), 1);
		config_error(c, err, sizeof(err), "allow_repos", r, "bad");
		CHECK_STR("config_error uses the node's line", err, "kb.yml:7: allow_repos: bad");
		config_error(c, err, sizeof(err), "nothere.x", NULL, "absent");
		CHECK_STR("config_error without a line", err, "kb.yml: nothere.x: absent");
		config_free(c);
	}
	CHECK_INT("no-secrets mode skips reading",
	    parse("forges:\n  github:\n    webhook_secret_file: /nonexistent\n",
	    CONFIG_NO_SECRETS, &c, err), 0);
	config_free(c);

	/* errors name the key and the line */
	bad("unknown top-level key", "listen: 127.0.0.1:1\nlistn: x\n", "kb.yml:2: listn: unknown key");
	bad("bad listen", "listen: localhost\n", "kb.yml:1: listen: 'localhost' is not ADDR:PORT");
	bad("bad port", "listen: 127.0.0.1:99999\n", "kb.yml:1: listen:");
	bad("listen not a string", "listen: [1]\n", "kb.yml:1: listen: must be a non-empty string");
	bad("bad log level", "\nlog_level: loud\n", "kb.yml:2: log_level:");
	bad("allow_repos not a list", "allow_repos: acme/*\n", "kb.yml:1: allow_repos: must be a list");
	bad("allow_repos bad entry", "allow_repos:\n  - ok/*\n  - 3\n", "kb.yml:3: allow_repos:");
	bad("allow_repos bare !", "allow_repos:\n  - '!'\n", "kb.yml:2: allow_repos:");
	bad("allow_repos owner alone", "allow_repos:\n  - acme/*\n  - solo\n",
	    "kb.yml:3: allow_repos: 'solo' never matches");
	/* attack F6, F7: globs that take everything, '*' that crosses '/' */
	bad("allow_repos every repository", "allow_repos:\n  - acme/*\n  - '*'\n",
	    "kb.yml:3: allow_repos: '*' matches every owner's repositories");
	bad("allow_repos every owner", "allow_repos:\n  - '*/*'\n",
	    "kb.yml:2: allow_repos: '*/*' matches every owner's");
	bad("allow_repos every owner, deep", "allow_repos:\n  - '**/x'\n",
	    "kb.yml:2: allow_repos: '**/x' matches every owner's");
	bad("allow_repos every owner, class", "allow_repos:\n  - '[a-z]*/*'\n",
	    "kb.yml:2: allow_repos: '[a-z]*/*' matches every owner's");
	/* attack F6: dangerous http values */
	bad("trusted_proxies 0.0.0.0/0", "http:\n  trusted_proxies: [10.0.0.1, 0.0.0.0/0]\n",
	    "kb.yml:2: http.trusted_proxies: '0.0.0.0/0' is too wide");
	bad("trusted_proxies ::/0", "http:\n  trusted_proxies: ['::/0']\n",
	    "kb.yml:2: http.trusted_proxies: '::/0' is too wide");
	bad("trusted_proxies /7", "http:\n  trusted_proxies: [10.0.0.0/7]\n",
	    "http.trusted_proxies: '10.0.0.0/7' is too wide");
	bad("trusted_proxies all of IPv4, mapped", "http:\n  trusted_proxies: ['::ffff:0:0/96']\n",
	    "http.trusted_proxies: '::ffff:0:0/96' is too wide");
	bad("trusted_proxies 2000::/3", "http:\n  trusted_proxies: ['2000::/3']\n",
	    "is too wide");
	/* the third outside attack: networks that hold all of IPv4 */
	bad("trusted_proxies ::/80", "http:\n  trusted_proxies: ['::/80']\n",
	    "http.trusted_proxies: '::/80' is too wide");
	bad("trusted_proxies ::/96", "http:\n  trusted_proxies: ['::/96']\n",
	    "http.trusted_proxies: '::/96' is too wide");
	bad("trusted_proxies NAT64", "http:\n  trusted_proxies: ['64:ff9b::/96']\n",
	    "http.trusted_proxies: '64:ff9b::/96' is too wide");
	bad("trusted_proxies 6to4", "http:\n  trusted_proxies: ['2002::/16']\n",
	    "http.trusted_proxies: '2002::/16' is too wide");
	bad("trusted_proxies 6to4 /20", "http:\n  trusted_proxies: ['2002::/20']\n",
	    "is too wide");
	{
		struct config *nc = NULL;
		char nerr[CONFIG_ERR_MAX];

		CHECK_INT("narrow IPv6 proxies, IPv4 inside included, pass",
		    parse("http:\n  trusted_proxies: ['::1', 'fd00::/8', '2001:db8::/32', "
		    "'::ffff:10.0.0.0/104', '2002:a00::/24', '64:ff9b::a00:0/104']\n", 0, &nc, nerr), 0);
		config_free(nc);
	}
	bad("per-ip connections over all", "http:\n  max_connections: 10\n"
	    "  max_connections_per_ip: 11\n",
	    "kb.yml:3: http.max_connections_per_ip: must be at most http.max_connections (10)");
	bad("secret in /proc", "forges:\n  github:\n    webhook_secret_file: /proc/self/status\n",
	    "kb.yml:3: forges.github.webhook_secret_file: cannot read '/proc/self/status': "
	    "a kernel file (/proc, /sys), not a secret");
	bad("secret in /sys", "forges:\n  github:\n    webhook_secret_file: /sys/kernel/uevent_seqnum\n",
	    "not a secret");
	bad("local_clone_urls not a boolean", "forges:\n  github:\n    local_clone_urls: yes please\n",
	    "kb.yml:3: forges.github.local_clone_urls: must be true or false");
	CHECK_INT("the widest trusted proxies allowed", parse("http:\n  trusted_proxies: "
	    "[10.0.0.0/8, 'fd00::/8', '::ffff:10.0.0.0/104']\n", 0, &c, err), 0);
	config_free(c);
	c = NULL;
	CHECK_INT("per-ip connections unset: capped", parse("http:\n  max_connections: 10\n",
	    0, &c, err), 0);
	if (c)
		CHECK_INT("per-ip connections capped at max_connections",
		    config_http(c)->max_connections_per_ip, 10);
	config_free(c);
	c = NULL;
	CHECK_INT("allow_repos segment globs", parse("allow_repos: [acme/*, 'acme/**', "
	    "'gl/*/x', 'x/**/y']\nforges:\n  github:\n    driver: local\n", 0, &c, err), 0);
	if (c) {
		struct config *c1 = NULL;

		CHECK("acme/x", config_repo_allowed(c, "acme/x"));
		CHECK("acme/** takes subgroups", config_repo_allowed(c, "acme/ml/model"));
		CHECK("gl/*/x: one segment", config_repo_allowed(c, "gl/a/x") &&
		    !config_repo_allowed(c, "gl/a/b/x") && !config_repo_allowed(c, "gl/x"));
		CHECK("x/**/y: one or more", config_repo_allowed(c, "x/a/y") &&
		    config_repo_allowed(c, "x/a/b/y") && !config_repo_allowed(c, "x/y"));
		CHECK("driver local: local clone URLs", config_forge_local_clone(c, CONFIG_GITHUB));
		CHECK("others not", !config_forge_local_clone(c, CONFIG_GITEA));
		if (parse("allow_repos: [acme/*]\nforges:\n  gitea:\n    local_clone_urls: true\n",
		    0, &c1, err) == 0) {
			CHECK("'*' does not cross '/'", !config_repo_allowed(c1, "acme/../../etc") &&
			    !config_repo_allowed(c1, "acme/ml/model") &&
			    config_repo_allowed(c1, "acme/model"));
			CHECK("local_clone_urls: true", config_forge_local_clone(c1, CONFIG_GITEA));
		}
		config_free(c1);
	}
	config_free(c);
	c = NULL;
	/* the fourth outside attack's F5: patterns no repository name can match */
	bad("allow_repos '..' segment", "allow_repos:\n  - 'acme/../*'\n",
	    "kb.yml:2: allow_repos: 'acme/../*' has a segment '.' or '..'");
	bad("allow_repos '.' segment", "allow_repos:\n  - acme/*\n  - '!acme/./x'\n",
	    "kb.yml:3: allow_repos: '!acme/./x' has a segment '.' or '..'");
	bad("allow_repos trailing '/'", "allow_repos:\n  - 'acme/*/'\n",
	    "kb.yml:2: allow_repos: 'acme/*/' has an empty segment");
	bad("allow_repos '//'", "allow_repos:\n  - 'acme//x'\n",
	    "kb.yml:2: allow_repos: 'acme//x' has an empty segment");
	bad("allow_repos leading '/': an empty owner, not every owner",
	    "allow_repos:\n  - '/acme/x'\n",
	    "kb.yml:2: allow_repos: '/acme/x' has an empty segment");
	bad("allow_repos a name ending in .git", "allow_repos:\n  - 'acme/model.git'\n",
	    "kb.yml:2: allow_repos: 'acme/model.git' has a segment ending in '.' or '.git'");
	bad("allow_repos a name ending in '.'", "allow_repos:\n  - 'acme./*'\n",
	    "kb.yml:2: allow_repos: 'acme./*' has a segment ending in '.' or '.git'");
	CHECK_INT("allow_repos names with dots", parse("allow_repos: [acme/.github, "
	    "'acme/*.gitx', acme/a.b, 'acme/x.*']\n", 0, &c, err), 0);
	config_free(c);
	c = NULL;
	/* F6: a port no forge can be told */
	bad("listen port 0", "listen: 127.0.0.1:0\n",
	    "kb.yml:1: listen: '127.0.0.1:0': port 0 listens on whatever port");
	bad("listen port 0, IPv6", "\nlisten: '[::1]:0'\n", "kb.yml:2: listen: '[::1]:0': port 0");
	bad("listen port 0, any", "listen: '*:00'\n", "kb.yml:1: listen: '*:00': port 0");
	bad("allow_repos open class", "allow_repos:\n  - 'acme/[ab'\n",
	    "kb.yml:2: allow_repos: 'acme/[ab' has a '[' without its ']'");
	bad("allow_repos odd character", "allow_repos:\n  - '!acme/x;y'\n",
	    "kb.yml:2: allow_repos: '!acme/x;y' has a character");
	bad("unknown forge", "forges:\n  bitbucket: {}\n", "kb.yml:2: forges.bitbucket: unknown forge");
	bad("unknown forge key", "forges:\n  github:\n    secret: x\n", "kb.yml:3: forges.github.secret: unknown key");
	bad("missing secret file", "forges:\n  github:\n    webhook_secret_file: /nonexistent/s\n",
	    "kb.yml:3: forges.github.webhook_secret_file: cannot read '/nonexistent/s'");
	snprintf(text, sizeof(text), "forges:\n  gitea:\n    webhook_secret_file: %s\n", shortsec);
	bad("short secret", text, "kb.yml:3: forges.gitea.webhook_secret_file: the secret is too short");
	bad("unset env", "forges:\n  gitlab:\n    webhook_token_env: KB_NOT_SET_ANYWHERE\n",
	    "environment variable KB_NOT_SET_ANYWHERE is not set");
	snprintf(text, sizeof(text), "forges:\n  github:\n    webhook_secret_file: %s\n"
	    "    webhook_secret_env: X\n", secret);
	bad("two secret sources", text, "kb.yml:4: forges.github.webhook_secret_env: only one of");
	bad("http unknown key", "http:\n  max_bodies: 3\n", "kb.yml:2: http.max_bodies: unknown key");
	bad("http out of range", "http:\n  threads: 0\n", "kb.yml:2: http.threads: must be an integer from 1 to 256");
	bad("buffered below one body", "http:\n  max_body_bytes: 4096\n  max_buffered_bytes: 2048\n",
	    "kb.yml:3: http.max_buffered_bytes: must be at least http.max_body_bytes (4096)");
	bad("http negative", "http:\n  max_body_bytes: -5\n", "kb.yml:2: http.max_body_bytes:");
	bad("a number past a double names its key", "llm:\n  models:\n    - provider: openai\n"
	    "      price_in: 1e400\n", "kb.yml:4: llm.models[0].price_in: 1e400 is out of range");
	bad("and so does one at the top", "\nlisten: -1e999\n", "kb.yml:2: listen: -1e999 is out of range");
	bad("top level not a mapping", "- a\n- b\n", "the configuration must be a mapping");
	bad("yaml syntax", "listen: [\n", "kb.yml:");
	CHECK_INT("missing file", config_load("/nonexistent/kb.yml", 0, &c, err, sizeof(err)) < 0, 1);
	/* F6: a directory is a mistake in the command line (exit 2), as a FIFO is */
	CHECK_INT("a directory as the file", config_load("/tmp", 0, &c, err, sizeof(err)), -EINVAL);
	CHECK_STR("says so", err, "/tmp: a directory, not a configuration file");

	/* the shipped example must stay valid */
	{
		const char *root = getenv("KB_ROOT");
		char ex[512];
		snprintf(ex, sizeof(ex), "%s/kernelbot.example.yml", root ? root : ".");
		CHECK_INT("kernelbot.example.yml loads", config_load(ex, CONFIG_NO_SECRETS, &c, err, sizeof(err)), 0);
		if (c) {
			CHECK("example allows acme/model", config_repo_allowed(c, "acme/model"));
			CHECK("example refuses acme/secret-x", !config_repo_allowed(c, "acme/secret-x"));
			config_free(c);
		}
	}

	/* listen addresses */
	CHECK_INT("ipv4", config_parse_listen("127.0.0.1:80", &ss, &sl), 0);
	CHECK_INT("ipv4 family", ss.ss_family, AF_INET);
	CHECK_INT("ipv6", config_parse_listen("[::1]:80", &ss, &sl), 0);
	CHECK_INT("ipv6 family", ss.ss_family, AF_INET6);
	CHECK_INT("any", config_parse_listen("*:80", &ss, &sl), 0);
	CHECK_INT("no port", config_parse_listen("127.0.0.1", &ss, &sl), -EINVAL);
	CHECK_INT("empty port", config_parse_listen("127.0.0.1:", &ss, &sl), -EINVAL);
	CHECK_INT("name not address", config_parse_listen("example.com:80", &ss, &sl), -EINVAL);
	CHECK_INT("bad ipv6", config_parse_listen("[::1:80", &ss, &sl), -EINVAL);

	unlink(secret);
	unlink(shortsec);
	rmdir(dir);
	return t_done("test_config");
}
