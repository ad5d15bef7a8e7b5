/*
 * kernelbot: a self-hosted bot that turns the PyTorch modules of a
 * repository into verified, optimized kernels and proposes them as pull
 * requests. This file is only the git-style dispatcher.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/version.h"
#include "common/log.h"

const struct cli_command cli_commands[] = {
	{ "trace", cmd_trace, "stage 1: print a problem's graph IR" },
	{ "changes", cmd_changes, "the modules a push changed, to optimize or retire" },
	{ "publish", cmd_publish, "put a module's result on its branch, PR, comment, status" },
	{ "forge", cmd_forge, "one forge call: permission, react, status, comment" },
	{ "compile", cmd_compile, "graph compiler: a problem or IR to kernel source" },
	{ "demo", cmd_demo, "the whole loop on examples/: repository, serve, push, pull requests" },
	{ "report", cmd_report, "a module's PR files and body from optimize directories" },
	{ "optimize", cmd_optimize, "evolutionary search: a problem or repository to verified kernels" },
	{ "doctor", cmd_doctor, "what this host can do: GPUs, nvcc, torch, sandbox" },
	{ "serve", cmd_serve, "the daemon: webhook intake, /healthz, /metrics" },
	{ "config", cmd_config, "config check [FILE]: check a server configuration, print it" },
	{ "runner", cmd_runner, "a GPU (or CPU) worker: run optimization tasks from the store" },
	{ "jobs", cmd_jobs, "list the jobs in the store, newest first, with their tasks" },
	{ "archive", cmd_archive, "the kernel archive: list, show, search, similar, export, import, add" },
	{ "eval", cmd_eval, "verify and time candidate kernels against a problem" },
	{ "judge", cmd_judge, "the judge servers: status, stop" },
	{ "profile", cmd_profile, "profile a correct CUDA kernel under Nsight Compute (ncu)" },
	{ "__worker", cmd_worker, "(internal) the evaluator's sandboxed candidate worker" },
	{ "sandbox-exec", cmd_sandbox_exec, "run a program inside the sandbox (stdio passed through)" },
	{ "__sandbox-check", cmd_sandbox_check, "(internal) inside the sandbox: what this process can do" },
	{ NULL, NULL, NULL },
};

static void
usage(FILE *f)
{
	fprintf(f, "usage: kernelbot [--log-level LEVEL] COMMAND [ARGS...]\n\n"
	    "commands:\n");
	for (const struct cli_command *c = cli_commands; c->name; c++)
		fprintf(f, "  %-10s %s\n", c->name, c->summary);
	fprintf(f, "\nkernelbot COMMAND --help describes each command.\n");
}

int
main(int argc, char **argv)
{
	const char *env_level = getenv("KERNELBOT_LOG_LEVEL");
	enum log_level level;
	int i = 1;

	/* Children get explicit environments; a closed pipe is an error, not a death. */
	signal(SIGPIPE, SIG_IGN);
	if (env_level && log_level_parse(env_level, &level) == 0)
		log_set_level(level);
	if (cli_where_load() < 0) {
		fprintf(stderr, "kernelbot: out of memory\n");
		return 1;
	}

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			printf("kernelbot %s\n", KERNELBOT_VERSION);
			return 0;
		} else if (!strcmp(argv[i], "--log-level") && i + 1 < argc) {
			if (log_level_parse(argv[++i], &level) < 0) {
				fprintf(stderr, "kernelbot: unknown log level '%s'\n", argv[i]);
				return EXIT_USAGE;
			}
			log_set_level(level);
		} else {
			fprintf(stderr, "kernelbot: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[i], "help")) {
		usage(stdout);
		return 0;
	}
	for (const struct cli_command *c = cli_commands; c->name; c++)
		if (!strcmp(argv[i], c->name))
			return c->run(argc - i, argv + i);
	fprintf(stderr, "kernelbot: '%s' is not a command; see kernelbot --help\n",
	    argv[i]);
	return EXIT_USAGE;
}

/* Here, beside the table: library code (cli/cmd_*.c) links without it. */
int
cli_has_sandbox_exec(void)
{
	for (const struct cli_command *c = cli_commands; c->name; c++)
		if (!strcmp(c->name, "sandbox-exec"))
			return 1;
	return 0;
}
