/*
 * kernelbot sandbox-exec: run one program inside the sandbox with stdio
 * passed through. The judge launches every untrusted worker this way; it
 * is also the way to try the sandbox by hand.
 *
 * Exit status: the program's, 128+signal when it was killed (the deadline
 * included), 125 when the sandbox could not be set up (the reason on
 * stderr), 2 for a usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "common/jsonx.h"
#include "common/spawn.h"
#include "gpu/sandbox.h"

#define EXIT_SANDBOX 125
#define TIMEOUT_MAX_S (7 * 24 * 3600)

static const char usage_text[] =
    "usage: kernelbot sandbox-exec [--profile compiler|candidate] --scratch DIR\n"
    "           [--ro PATH]... [--mem BYTES] [--timeout SECONDS] [--gpu N]\n"
    "           [--env K=V]... [--cpu SECONDS] [--nproc N] [--nofile N]\n"
    "           [--fsize BYTES] [--disk BYTES] [--allow-degraded] [--report FILE]\n"
    "           [--verbose]\n"
    "           -- PROGRAM [ARGS...]\n"
    "\n"
    "Run PROGRAM in the sandbox, stdio passed through. Exit status: the\n"
    "program's, 128+signal when it was killed, 125 when the sandbox cannot be\n"
    "set up, 2 for a usage error. Sizes take K, M, G suffixes. Options [default]:\n"
    "  --profile P             compiler, or candidate (locks down further once\n"
    "                          the worker has set up) [compiler]\n"
    "  --scratch DIR           the one writable directory (required)\n"
    "  --ro PATH               also visible, read-only; repeatable, at most 64\n"
    "  --mem BYTES             memory limit [1G]\n"
    "  --timeout SECONDS       wall-clock deadline, the whole tree killed [600]\n"
    "  --gpu N                 the only GPU visible, PCI bus order; -1: none [-1]\n"
    "  --env K=V               add to the environment built from nothing;\n"
    "                          repeatable, at most 64\n"
    "  --cpu SECONDS           RLIMIT_CPU per process [600]\n"
    "  --nproc N               processes and threads [max(512, 4 x CPUs + 64)]\n"
    "  --nofile N              open files per process [1024]\n"
    "  --fsize BYTES           largest file [the memory limit]\n"
    "  --disk BYTES            scratch quota [4G compiler, 2G candidate]\n"
    "  --allow-degraded        run where the host lacks a feature, and say which\n"
    "  --report FILE           write the checks (applied or missing) as JSON\n"
    "  --verbose               print every check on stderr\n"
    "docs/commands/sandbox-exec.md; what is confined and how: docs/sandbox.md.\n";

/* "123", "512M", "4G": bytes. */
static int
parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end || !v)
		return -EINVAL;
	*out = (size_t)v;
	return 0;
}


static void
print_checks(const json_t *checks, int only_failed)
{
	const json_t *c;
	size_t i;

	json_array_foreach(checks, i, c) {
		int ok = jsonx_bool(c, "passed", 0);
		if (only_failed && ok)
			continue;
		fprintf(stderr, "kernelbot sandbox-exec: %s %s: %s\n", ok ? "ok" : "MISSING",
		    jsonx_str(c, "name", "?"), jsonx_str(c, "detail", ""));
	}
}

/*
 * The command line, and what the command makes of it and frees at the
 * end: the absolute scratch, program and --ro paths, the library path.
 */
struct exec_args {
	struct sandbox_opts so;
	const char *ro[SANDBOX_RO_PATHS_MAX + 1];
	char *owned[SANDBOX_RO_PATHS_MAX];	/* the --ro paths made absolute */
	const char *extra[SANDBOX_ENV_MAX + 1];
	const char *report;
	char scratch[PATH_MAX], *program, *llp_env;
	int n_ro, n_env, timeout_s, verbose;
};

/*
 * The options up to PROGRAM. 0 to go on, 0 with *done set after --help,
 * or the exit status of a usage error (the message printed).
 */
static int
parse_args(int argc, char **argv, struct exec_args *a, int *done)
{
	static const struct option longopts[] = {
		{ "profile", required_argument, NULL, 'p' },
		{ "scratch", required_argument, NULL, 's' },
		{ "ro", required_argument, NULL, 'r' },
		{ "mem", required_argument, NULL, 'm' },
		{ "timeout", required_argument, NULL, 't' },
		{ "gpu", required_argument, NULL, 'g' },
		{ "env", required_argument, NULL, 'e' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "nproc", required_argument, NULL, 'n' },
		{ "nofile", required_argument, NULL, 'f' },
		{ "fsize", required_argument, NULL, 'F' },
		{ "disk", required_argument, NULL, 'D' },
		{ "allow-degraded", no_argument, NULL, 'd' },
		{ "report", required_argument, NULL, 'R' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sandbox_opts *so = &a->so;
	int c;

	*done = 0;
	optind = 1;
	/* "+": options end at the first non-option, so PROGRAM's own flags stay its own. */
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (!strcmp(optarg, "compiler"))
				so->profile = SANDBOX_COMPILER;
			else if (!strcmp(optarg, "candidate"))
				so->profile = SANDBOX_CANDIDATE;
			else
				return cli_usage_error("sandbox-exec", "--profile is compiler or candidate");
			break;
		case 's':
			so->scratch = optarg;
			break;
		case 'r':
			if (a->n_ro >= SANDBOX_RO_PATHS_MAX)
				return cli_usage_error("sandbox-exec", "at most %d --ro paths", SANDBOX_RO_PATHS_MAX);
			a->ro[a->n_ro++] = optarg;
			break;
		case 'm':
			if (parse_size(optarg, &so->mem_bytes) < 0)
				return cli_usage_error("sandbox-exec", "--mem takes bytes (K, M, G suffixes allowed)");
			break;
		case 'F':
			if (parse_size(optarg, &so->fsize_bytes) < 0)
				return cli_usage_error("sandbox-exec", "--fsize takes bytes (K, M, G suffixes allowed)");
			break;
		case 'D':
			if (parse_size(optarg, &so->disk_bytes) < 0)
				return cli_usage_error("sandbox-exec", "--disk takes bytes (K, M, G suffixes allowed)");
			break;
		case 't':
			if (cli_parse_int(optarg, 1, TIMEOUT_MAX_S, &a->timeout_s) < 0)
				return cli_usage_error("sandbox-exec", "--timeout takes whole seconds, 1 to %d", TIMEOUT_MAX_S);
			break;
		case 'g':
			if (cli_parse_int(optarg, -1, 1023, &so->gpu) < 0)
				return cli_usage_error("sandbox-exec", "--gpu takes a GPU index (or -1 for none)");
			break;
		case 'e':
			if (!strchr(optarg, '=') || optarg[0] == '=')
				return cli_usage_error("sandbox-exec", "--env takes NAME=VALUE");
			if (a->n_env >= SANDBOX_ENV_MAX)
				return cli_usage_error("sandbox-exec", "at most %d --env pairs", SANDBOX_ENV_MAX);
			a->extra[a->n_env++] = optarg;
			break;
		case 'c':
			if (cli_parse_int(optarg, 1, TIMEOUT_MAX_S, &so->cpu_s) < 0)
				return cli_usage_error("sandbox-exec", "--cpu takes whole seconds");
			break;
		case 'n':
			if (cli_parse_int(optarg, 1, 1 << 20, &so->nproc) < 0)
				return cli_usage_error("sandbox-exec", "--nproc takes a count");
			break;
		case 'f':
			if (cli_parse_int(optarg, 3, 1 << 20, &so->nofile) < 0)
				return cli_usage_error("sandbox-exec", "--nofile takes a count");
			break;
		case 'd':
			so->allow_degraded = 1;
			break;
		case 'R':
			a->report = optarg;
			break;
		case 'v':
			a->verbose = 1;
			break;
		case 'h':
			fputs(usage_text, stdout);
			*done = 1;
			return 0;
		default:
			fputs(usage_text, stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc)
		return cli_usage_error("sandbox-exec", "no program given (after --)");
	if (!so->scratch)
		return cli_usage_error("sandbox-exec", "--scratch DIR is required");
	return 0;
}

/*
 * Relative paths are the caller's: the scratch, PROGRAM (argv[optind],
 * replaced) and the --ro paths made absolute before the sandbox moves the
 * root. -1 with why set when one does not resolve.
 */
static int
absolute_paths(struct exec_args *a, char **argv, char *why, size_t whylen)
{
	if (!realpath(a->so.scratch, a->scratch)) {
		snprintf(why, whylen, "scratch %s: %s", a->so.scratch, strerror(errno));
		return -1;
	}
	a->so.scratch = a->scratch;
	/* A relative program path means the caller's directory, not the sandbox's. */
	if (strchr(argv[optind], '/') && argv[optind][0] != '/') {
		if (!(a->program = realpath(argv[optind], NULL))) {
			snprintf(why, whylen, "%s: %s", argv[optind], strerror(errno));
			return -1;
		}
		argv[optind] = a->program;
	}
	/* Relative --ro paths are the user's shorthand; the library wants them absolute. */
	for (int i = 0; i < a->n_ro; i++) {
		char *abs = realpath(a->ro[i], NULL);
		if (!abs) {
			snprintf(why, whylen, "--ro %s: %s", a->ro[i], strerror(errno));
			return -1;
		}
		a->ro[i] = abs;
		a->owned[i] = abs;
	}
	a->so.ro_paths = a->ro;
	return 0;
}

/*
 * The one variable we pass on unasked: the library path we ourselves
 * needed to start (device-bundle/run sets it), when the program is
 * this very binary (the judge's `kernelbot __worker`).
 */
static void
pass_library_path(struct exec_args *a, const char *program)
{
	struct stat st_prog, st_self;
	const char *llp = getenv("LD_LIBRARY_PATH");

	if (llp && a->n_env < SANDBOX_ENV_MAX && stat(program, &st_prog) == 0 &&
	    stat("/proc/self/exe", &st_self) == 0 && st_prog.st_dev == st_self.st_dev &&
	    st_prog.st_ino == st_self.st_ino &&
	    asprintf(&a->llp_env, "LD_LIBRARY_PATH=%s", llp) > 0)
		a->extra[a->n_env++] = a->llp_env;
}

int
cmd_sandbox_exec(int argc, char **argv)
{
	struct exec_args a = { .so = SANDBOX_OPTS_INIT };
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct spawn_result r = { 0 };
	char **env = NULL, why[PATH_MAX + 128] = "";
	json_t *checks = NULL;
	int rc, error, done;

	if ((rc = parse_args(argc, argv, &a, &done)) != 0 || done)
		return rc;
	rc = EXIT_SANDBOX;
	if (absolute_paths(&a, argv, why, sizeof(why)) < 0)
		goto out;
	pass_library_path(&a, argv[optind]);
	if ((error = sandbox_env_build(a.scratch, a.extra, &env)) < 0) {
		snprintf(why, sizeof(why), "environment: %s", strerror(-error));
		goto out;
	}
	o.argv = (const char *const *)(argv + optind);
	o.envp = (const char *const *)env;
	o.search_path = !strchr(argv[optind], '/');
	o.stdio_inherit = 1;
	o.timeout_ms = a.timeout_s * 1000;

	error = sandbox_run(&a.so, &o, &r, &checks);
	if (error == -ENOTSUP) {
		fprintf(stderr, "kernelbot sandbox-exec: this host lacks what the sandbox "
		    "needs (--allow-degraded runs anyway, reporting it):\n");
		print_checks(checks, 1);
	} else if (error < 0) {
		fprintf(stderr, "kernelbot sandbox-exec: cannot run %s: %s\n", argv[optind],
		    strerror(-error));
		print_checks(checks, 1);
	} else {
		rc = r.status;
		if (a.verbose)
			print_checks(checks, 0);
		else if (a.so.allow_degraded)
			print_checks(checks, 1);
		if (r.timed_out)
			fprintf(stderr, "kernelbot sandbox-exec: the deadline (%d s) passed; "
			    "the process tree was killed\n", o.timeout_ms ? a.timeout_s :
			    SANDBOX_DEFAULT_TIMEOUT_MS / 1000);
	}
	if (a.report && checks && json_dump_file(checks, a.report, JSON_INDENT(2)) < 0) {
		fprintf(stderr, "kernelbot sandbox-exec: cannot write the report %s\n", a.report);
		if (rc == 0)
			rc = EXIT_SANDBOX;
	}
out:
	if (why[0]) {
		/* Failed before the sandbox was tried: the report still says why. */
		fprintf(stderr, "kernelbot sandbox-exec: %s\n", why);
		checks = json_pack("[{s:s, s:b, s:s}]", "name", "setup", "passed", 0, "detail", why);
		if (a.report && checks)
			json_dump_file(checks, a.report, JSON_INDENT(2));
	}
	json_decref(checks);
	free(a.program);
	free(a.llp_env);
	spawn_result_free(&r);
	sandbox_env_free(env);
	for (int i = 0; i < a.n_ro; i++)
		free(a.owned[i]);
	return rc;
}
