/*
 * cli: the subcommands of the kernelbot binary. Each cmd_* takes the
 * arguments after its own name (argv[0] is the command name) and returns
 * the process exit status: 0 success, 1 failure, 2 usage error.
 */
#ifndef KB_CLI_CLI_H
#define KB_CLI_CLI_H

#include "gpu/harness.h"
#include <limits.h>
#include <stddef.h>

struct config;

#define EXIT_USAGE 2

struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

int cmd_trace(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_jobs(int argc, char **argv);
int cmd_changes(int argc, char **argv);
int cmd_publish(int argc, char **argv);
int cmd_forge(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_judge(int argc, char **argv);
int cmd_worker(int argc, char **argv);
int cmd_sandbox_exec(int argc, char **argv);
int cmd_sandbox_check(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_archive(int argc, char **argv);
int cmd_runner(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_optimize(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_config(int argc, char **argv);

/* The command table, terminated by a zeroed entry. */
extern const struct cli_command cli_commands[];

/*
 * Command-line numbers: the whole of s, in [lo, hi] (cli_parse_num: not
 * negative). 0, or -EINVAL with *out unchanged.
 */
int cli_parse_int(const char *s, int lo, int hi, int *out);
int cli_parse_num(const char *s, double *out);
/* Bytes, not 0: "123", "512K", "64M", "4G". 0, or -EINVAL with *out unchanged. */
int cli_parse_size(const char *s, size_t *out);

/* 1 when this binary has `kernelbot sandbox-exec` (eval_opts'
 * have_sandbox_exec). In cli/main.c, with the table: not for library
 * code that test binaries link. */
int cli_has_sandbox_exec(void);

/*
 * The evaluator's environment variables (struct eval_env in gpu/eval.h
 * names each), read here and nowhere below the CLI: every command that
 * evaluates fills its eval_opts' env, or the options that carry it down,
 * with this. A KERNELBOT_CHECK_FRACTION that is not a number from 0 to 1
 * is left unset, with a warning on stderr.
 */
struct eval_env;
void cli_eval_env(struct eval_env *e);

/*
 * Read the environment's settings for the layers below (common/where.h:
 * KERNELBOT_PYTHON, KERNELBOT_HARNESS, KERNELBOT_NCU, KERNELBOT_INCLUDE,
 * KERNELBOT_CACHE or else $XDG_CACHE_HOME/kernelbot or else
 * $HOME/.cache/kernelbot, KERNELBOT_PROMPTS, KERNELBOT_JUDGE_DIR,
 * KERNELBOT_JUDGE_IDLE_S, KERNELBOT_JUDGE_WAIT_S,
 * KERNELBOT_SANDBOX_PRETEND_MISSING, KERNELBOT_SANDBOX_ALLOW_DEGRADED) and
 * set them: main() does, first; so does a test or a helper program that
 * links the library and means its environment to count. 0 or -ENOMEM.
 */
int cli_where_load(void);

/* Print "kernelbot CMD: msg" to stderr and return EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * For commands: load `path` (NULL: CONFIG_DEFAULT_PATH, or the defaults
 * when that file does not exist), printing "kernelbot CMD: FILE:LINE: KEY:
 * message" on failure. Returns an exit status: 0, 2 for a bad or missing
 * file, 1 when it cannot be read.
 */
int config_load_cli(const char *cmd, const char *path, int flags,
    struct config **out);

/* The usage lines of --init, --inputs, --variants and --path (trace, eval, optimize). */
#define CLI_ENTRY_HELP \
    "  --init SPEC, --inputs SPEC, --variants SPEC\n" \
    "                          the constructor's arguments, forward's inputs\n" \
    "                          and the shape variants: a function of the\n" \
    "                          problem file, MODULE:FUNCTION of a module on\n" \
    "                          its path, or a literal JSON list (as\n" \
    "                          .kernelbot.yml's init:, inputs:, variants:)\n" \
    "                          [get_init_inputs, get_inputs, get_input_variants]\n" \
    "  --path DIR              a folder first on the problem's module path,\n" \
    "                          shown read-only to its sandbox (a repository's\n" \
    "                          root, its src/); repeatable, up to 8\n"

/*
 * --path DIR for command cmd: DIR made absolute into the first free slot
 * of path (NULL-terminated, HARNESS_PATH_MAX slots), its text kept in
 * store[slot]. 0, or an exit status after a message (no such folder, too
 * many).
 */
int cli_path_arg(const char *cmd, const char *dir, const char **path,
    char (*store)[PATH_MAX]);

#endif
