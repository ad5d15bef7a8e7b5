/*
 * kernelbot config check [FILE]: the check `serve` makes before it
 * listens (cli/config_check.h), secrets read, on FILE (default
 * /etc/kernelbot/kernelbot.yml, or the built-in defaults when it does
 * not exist). A bad file: serve's "FILE:LINE: KEY: message" on stderr,
 * exit 2. A good one: the effective configuration on stdout as YAML
 * that `config check` takes back, exit 0. Secrets appear only as the
 * file or variable they come from, never as a value.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "conf/config.h"
#include "cli/config_check.h"
#include "common/buf.h"

#define CONFIG_OUT_MAX (4u << 20)	/* bytes of the printed configuration */
#define SECRET_NOTE "  # secret: ********"

static void
config_usage(FILE *f)
{
	fprintf(f, "usage: kernelbot config check [FILE]\n\n"
	    "Check every section of a server configuration as serve does before\n"
	    "it listens (secrets read), FILE defaulting to %s.\n"
	    "Errors: FILE:LINE: KEY: message, exit 2. Valid: the effective\n"
	    "configuration (defaults filled in, secrets masked), exit 0.\n",
	    CONFIG_DEFAULT_PATH);
}

static void
pad(struct buf *b, int n)
{
	while (n-- > 0)
		buf_addch(b, ' ');
}

/* A scalar or an empty or nested container, on one line (JSON is YAML). */
static int
emit_flow(struct buf *b, const json_t *v)
{
	char *s;
	int error;

	if (json_is_real(v)) {
		double d = json_real_value(v);
		char num[64];

		snprintf(num, sizeof(num), "%.15g", d);
		if (strtod(num, NULL) != d)
			snprintf(num, sizeof(num), "%.17g", d);
		if (!strpbrk(num, ".en"))
			strcat(num, ".0");	/* stays a float when read back */
		return buf_addstr(b, num);
	}
	if (!(s = json_dumps(v, JSON_ENCODE_ANY | JSON_PRESERVE_ORDER)))
		return -ENOMEM;
	error = buf_addstr(b, s);
	free(s);
	return error;
}

static int
emit_key(struct buf *b, const char *k)
{
	json_t *s;
	int error;

	for (const char *p = k; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			goto quote;
	if (*k)
		return buf_addstr(b, k);
quote:
	if (!(s = json_string(k)))
		return -ENOMEM;
	error = emit_flow(b, s);
	json_decref(s);
	return error;
}

static int emit_map(struct buf *b, const json_t *o, int indent, int inline_first);

/* A list with a mapping in it goes in block style, one item a line. */
static int
block_list(const json_t *a)
{
	size_t i;
	json_t *v;

	json_array_foreach(a, i, v)
		if (json_is_object(v) && json_object_size(v))
			return 1;
	return 0;
}

static int
emit_seq(struct buf *b, const json_t *a, int indent)
{
	size_t i;
	json_t *v;
	int error = 0;

	json_array_foreach(a, i, v) {
		pad(b, indent);
		buf_addstr(b, "- ");
		if (json_is_object(v) && json_object_size(v))
			error = emit_map(b, v, indent + 2, 1);
		else if ((error = emit_flow(b, v)) == 0)
			error = buf_addch(b, '\n');
		if (error < 0)
			return error;
	}
	return 0;
}

/* The members of o at indent; the first one's indent already written when inline_first. */
static int
emit_map(struct buf *b, const json_t *o, int indent, int inline_first)
{
	const char *k;
	json_t *v;
	int error;

	json_object_foreach((json_t *)o, k, v) {
		if (!inline_first)
			pad(b, indent);
		inline_first = 0;
		if ((error = emit_key(b, k)) < 0)
			return error;
		if (json_is_object(v) && json_object_size(v)) {
			buf_addstr(b, ":\n");
			error = emit_map(b, v, indent + 2, 0);
		} else if (json_is_array(v) && block_list(v)) {
			buf_addstr(b, ":\n");
			error = emit_seq(b, v, indent + 2);
		} else {
			buf_addstr(b, ": ");
			if ((error = emit_flow(b, v)) == 0 && json_is_string(v) &&
			    config_check_secret_key(k))
				error = buf_addstr(b, SECRET_NOTE);
			if (error == 0)
				error = buf_addch(b, '\n');
		}
		if (error < 0)
			return error;
	}
	return 0;
}

static int
config_check_cmd(const char *path)
{
	struct config *cfg = NULL;
	struct buf out = BUF_INIT(CONFIG_OUT_MAX);
	json_t *eff = NULL;
	char err[CONFIG_ERR_MAX];
	int rc, error;

	if ((rc = config_load_cli("config check", path, 0, &cfg)) != 0)
		return rc;
	if ((error = config_check(cfg, 0, &eff, err, sizeof(err))) < 0) {
		fprintf(stderr, "kernelbot config check: %s\n", err);
		rc = error == -EINVAL ? EXIT_USAGE : 1;
		goto out;
	}
	buf_printf(&out, "# %s: valid. The configuration serve uses, defaults filled "
	    "in;\n# secrets are read from the files and variables named, never "
	    "shown.\n", config_path(cfg));
	if ((error = emit_map(&out, eff, 0, 0)) < 0 ||
	    fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout) != 0) {
		fprintf(stderr, "kernelbot config check: cannot print the "
		    "configuration: %s\n", strerror(error < 0 ? -error : errno));
		rc = 1;
	}
out:
	buf_free(&out);
	json_decref(eff);
	config_free(cfg);
	return rc;
}

int
cmd_config(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		config_usage(stdout);
		return 0;
	}
	if (argc < 2 || strcmp(argv[1], "check")) {
		config_usage(stderr);
		return EXIT_USAGE;
	}
	if (argc > 3)
		return cli_usage_error("config check", "unexpected argument '%s'",
		    argv[3]);
	if (argc == 3 && argv[2][0] == '-') {
		if (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")) {
			config_usage(stdout);
			return 0;
		}
		return cli_usage_error("config check", "unknown option '%s'", argv[2]);
	}
	return config_check_cmd(argc == 3 ? argv[2] : NULL);
}
