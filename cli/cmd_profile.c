/*
 * kernelbot profile PROBLEM KERNEL.cu: the kernel verified once, then its
 * kernels under Nsight Compute (gpu/profile.h, docs/profile.md). Prints
 * the paragraph the optimize prompts get; --json adds the parsed figures.
 * Exit 0 with a profile, 1 when there is none (no ncu, no permission, an
 * incorrect kernel: the reason is printed), 2 for a usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "gpu/profile.h"

static const char profile_usage[] =
    "usage: kernelbot profile PROBLEM KERNEL [--json] [--backend cpu|cuda]\n"
    "                         [--device N] [--timeout SECONDS] [--class NAME]\n"
    "\n"
    "Verify KERNEL once against PROBLEM, then profile one forward call of it\n"
    "under Nsight Compute ($KERNELBOT_NCU, else ncu on PATH, else\n"
    "/usr/local/cuda/bin/ncu) and print the paragraph the optimize prompts get.\n"
    "Exit 0 with a profile, 1 without one (the reason is printed), 2 for a\n"
    "usage error. Options [default]:\n"
    "  --json                  the parsed figures and ncu's command line as JSON\n"
    "  --backend cpu|cuda      the backend [as kernelbot eval decides]\n"
    "  --device N              CUDA device ordinal, 0 to 1023 [0]\n"
    "  --timeout SECONDS       the ncu run, replays included, 1 to 86400 [180]\n"
    "  --class NAME            the problem's module class [Model]\n"
    "docs/commands/profile.md; the metrics: docs/profile.md.\n";

static void
print_json(const struct profile_result *res)
{
	json_t *o = json_pack("{s:s, s:s?, s:s?, s:o, s:o?, s:O?, s:O?}",
	    "status", res->status,
	    "reason", res->reason[0] ? res->reason : NULL,
	    "summary", res->summary,
	    "source", json_string(!strcmp(res->status, "ok") ? "ncu" : "none"),
	    "bandwidth_gbs", res->bw_gbs > 0 ? json_real(res->bw_gbs) : NULL,
	    "command", res->command,
	    "eval", res->eval);
	char *s;

	if (o && !strcmp(res->status, "ok"))
		json_object_set_new(o, "kernels", profile_report_json(&res->report));
	if (o && (s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(6)))) {
		printf("%s\n", s);
		free(s);
	}
	json_decref(o);
}

int
cmd_profile(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "json", no_argument, NULL, 'j' },
		{ "device", required_argument, NULL, 'd' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "class", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct profile_opts o = PROFILE_OPTS_INIT;
	struct profile_result res;
	char err[4096];
	int json = 0, c, error;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (strcmp(optarg, "cpu") && strcmp(optarg, "cuda"))
				return cli_usage_error("profile", "--backend is cpu or cuda");
			o.backend = optarg;
			break;
		case 'j': json = 1; break;
		case 'd':
			if (cli_parse_int(optarg, 0, 1023, &o.device) < 0)
				return cli_usage_error("profile", "bad --device '%s'", optarg);
			break;
		case 'T':
			if (cli_parse_int(optarg, 1, 86400, &o.timeout_s) < 0)
				return cli_usage_error("profile", "--timeout: seconds, 1 to 86400");
			break;
		case 'c': o.class_name = optarg; break;
		case 'h': fputs(profile_usage, stdout); return 0;
		default: fputs(profile_usage, stderr); return EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		fputs(profile_usage, stderr);
		return EXIT_USAGE;
	}
	o.problem = argv[optind];
	o.kernel = argv[optind + 1];
	o.have_sandbox_exec = cli_has_sandbox_exec();
	cli_eval_env(&o.env);
	if ((error = profile_run(&o, &res, err, sizeof(err))) < 0) {
		fprintf(stderr, "kernelbot profile: %s\n", err);
		profile_result_free(&res);
		return error == -EINVAL ? EXIT_USAGE : 1;
	}
	if (json)
		print_json(&res);
	else if (!strcmp(res.status, "ok"))
		printf("%s\n", res.summary);
	else
		fprintf(stderr, "kernelbot profile: no profile (%s): %s\n", res.status, res.reason);
	error = strcmp(res.status, "ok") ? 1 : 0;
	profile_result_free(&res);
	return error;
}
