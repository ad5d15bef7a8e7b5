/*
 * kernelbot trace PROBLEM: stage 1 alone. Loads the problem in the harness,
 * traces and verifies it, and prints the graph IR (docs/graph-ir.md).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/jsonx.h"
#include "gpu/harness.h"

#define TRACE_TIMEOUT_S 600

static const char trace_usage[] =
    "usage: kernelbot trace PROBLEM [--json] [--class NAME] [--seed N]\n"
    "                       [--init SPEC] [--inputs SPEC] [--variants SPEC] [--path DIR]\n"
    "                       [--verify auto|full|reduced|none] [--timeout SECONDS]\n"
    "\n"
    "Stage 1: load a KernelBench-format problem in the sandboxed harness, trace\n"
    "it with torch.fx, check the trace against the module, print the graph IR.\n"
    "Exit 0 with a graph, 1 when the problem cannot be loaded, traced or\n"
    "verified, 2 for a usage error. Options [default]:\n"
    "  --json                  the graph IR as JSON instead of a listing\n"
    "  --class NAME            the module class [Model]\n"
    CLI_ENTRY_HELP
    "  --seed N                the seed the module and its inputs are built\n"
    "                          under [0]\n"
    "  --verify MODE           check the trace on fresh inputs: full (the\n"
    "                          problem's sizes), reduced (its int globals shrunk),\n"
    "                          auto (full when cheap, else reduced) or none [auto]\n"
    "  --timeout SECONDS       the whole trace, 1 to 86400 [600]\n"
    "docs/commands/trace.md; the graph IR: docs/graph-ir.md.\n";

static void
print_shape(const json_t *shape)
{
	size_t i;
	json_t *d;

	printf("[");
	json_array_foreach(shape, i, d)
		printf("%s%lld", i ? ", " : "", (long long)json_integer_value(d));
	printf("]");
}

static void
print_value(const json_t *v)
{
	size_t i;
	json_t *e;
	const char *k;

	if (json_is_object(v) && json_object_get(v, "ref"))
		printf("%s", jsonx_str(v, "ref", "?"));
	else if (json_is_object(v) && json_object_get(v, "float"))
		printf("%s", jsonx_str(v, "float", "?"));
	else if (json_is_object(v) && json_object_get(v, "dtype"))
		printf("%s", jsonx_str(v, "dtype", "?"));
	else if (json_is_array(v)) {
		printf("[");
		json_array_foreach(v, i, e) {
			printf("%s", i ? ", " : "");
			print_value(e);
		}
		printf("]");
	} else if (json_is_object(v)) {
		printf("{");
		i = 0;
		json_object_foreach((json_t *)v, k, e) {
			printf("%s%s: ", i++ ? ", " : "", k);
			print_value(e);
		}
		printf("}");
	} else {
		char *s = json_dumps(v, JSON_ENCODE_ANY);
		printf("%s", s ? s : "?");
		free(s);
	}
}

static void
print_ir(const json_t *ir)
{
	json_t *list, *e, *a;
	const char *k;
	size_t i, j;

	printf("problem  %s (%s)\n", jsonx_str(ir, "problem", "?"),
	    jsonx_str(ir, "class", "Model"));
	printf("sha256   %s\ntorch    %s\n", jsonx_str(ir, "source_sha256", "?"),
	    jsonx_str(ir, "torch_version", "?"));
	printf("\ninputs\n");
	list = json_object_get(ir, "inputs");
	json_array_foreach(list, i, e) {
		printf("  %-24s %-9s %-8s ", jsonx_str(e, "name", "?"),
		    jsonx_str(e, "role", "?"), jsonx_str(e, "dtype", "?"));
		print_shape(json_object_get(e, "shape"));
		printf("\n");
	}
	printf("\nnodes\n");
	list = json_object_get(ir, "nodes");
	json_array_foreach(list, i, e) {
		printf("  %-20s = %s(", jsonx_str(e, "name", "?"), jsonx_str(e, "op", "?"));
		json_array_foreach(json_object_get(e, "args"), j, a) {
			printf("%s", j ? ", " : "");
			print_value(a);
		}
		j = json_array_size(json_object_get(e, "args"));
		json_object_foreach(json_object_get(e, "kwargs"), k, a) {
			printf("%s%s=", j++ ? ", " : "", k);
			print_value(a);
		}
		printf(")  %s ", jsonx_str(e, "dtype", "?"));
		print_shape(json_object_get(e, "shape"));
		printf("\n");
	}
	printf("\noutputs\n");
	list = json_object_get(ir, "outputs");
	json_array_foreach(list, i, e) {
		printf("  %-24s %-8s ", jsonx_str(e, "name", "?"), jsonx_str(e, "dtype", "?"));
		print_shape(json_object_get(e, "shape"));
		printf("\n");
	}
}

int
cmd_trace(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "class", required_argument, NULL, 'c' },
		{ "init", required_argument, NULL, 1001 },
		{ "inputs", required_argument, NULL, 1002 },
		{ "variants", required_argument, NULL, 1003 },
		{ "path", required_argument, NULL, 1004 },
		{ "seed", required_argument, NULL, 's' },
		{ "verify", required_argument, NULL, 'v' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cls = "Model", *verify = "auto";
	long long seed = 0;
	long timeout_s = TRACE_TIMEOUT_S;
	char path[PATH_MAX], err[2048], *end;
	json_t *req = NULL, *reply = NULL;
	struct harness_opts ho = HARNESS_OPTS_INIT;
	struct harness_entry entry = { NULL, NULL, NULL, { NULL } };
	const char *ro[] = { path, NULL };
	static char dirs[HARNESS_PATH_MAX][PATH_MAX];
	int json_out = 0, c, rc = 1, error;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json_out = 1;
			break;
		case 'c':
			cls = optarg;
			break;
		case 1001: entry.init = optarg; break;
		case 1002: entry.inputs = optarg; break;
		case 1003: entry.variants = optarg; break;
		case 1004:
			if ((error = cli_path_arg("trace", optarg, entry.path, dirs)) != 0)
				return error;
			break;
		case 's':
			seed = strtoll(optarg, &end, 10);
			if (*end || !*optarg)
				return cli_usage_error("trace", "--seed wants an integer, not '%s'", optarg);
			break;
		case 'v':
			if (strcmp(optarg, "auto") && strcmp(optarg, "full") &&
			    strcmp(optarg, "reduced") && strcmp(optarg, "none"))
				return cli_usage_error("trace", "--verify is auto, full, reduced or none");
			verify = optarg;
			break;
		case 't':
			timeout_s = strtol(optarg, &end, 10);
			if (*end || timeout_s <= 0 || timeout_s > 86400)
				return cli_usage_error("trace", "--timeout wants seconds (1-86400)");
			break;
		case 'h':
			fputs(trace_usage, stdout);
			return 0;
		default:
			fputs(trace_usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		fputs(trace_usage, stderr);
		return EXIT_USAGE;
	}
	if (!realpath(argv[optind], path)) {
		fprintf(stderr, "kernelbot trace: %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}

	req = json_pack("{s:s, s:s, s:s, s:I, s:s}", "verb", "trace", "problem",
	    path, "class", cls, "seed", seed, "verify", verify);
	if (!req || harness_entry_put(req, &entry, "") < 0)
		goto out;
	/* The module runs at import: the sandbox shows the harness only it. */
	ho.ro_paths = ro;
	ho.stage = "trace";
	if ((error = harness_call_sandboxed(req, (int)timeout_s * 1000, &ho, &reply, err,
	    sizeof(err))) < 0) {
		fprintf(stderr, "kernelbot trace: %s\n", err);
		goto out;
	}
	if (!jsonx_bool(reply, "ok", 0)) {
		fprintf(stderr, "kernelbot trace: %s: %s failed: %s\n", argv[optind],
		    jsonx_str(reply, "error.stage", "harness"),
		    jsonx_str(reply, "error.message", "no message"));
		goto out;
	}
	if (json_out) {
		json_dumpf(json_object_get(reply, "ir"), stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII);
		printf("\n");
	} else {
		print_ir(json_object_get(reply, "ir"));
	}
	rc = 0;
out:
	json_decref(req);
	json_decref(reply);
	return rc;
}
