/*
 * gpu/profile's parser and paragraph: the fixture in ncu's format, real
 * H200 reports, and broken input.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/buf.h"
#include "gpu/profile.h"
#include "t.h"

static int
parse_file(const char *path, struct profile_report *r, char *err, size_t errlen)
{
	struct buf b = BUF_INIT(PROFILE_CSV_MAX);
	int error;

	if ((error = buf_read_file(&b, path)) < 0) {
		snprintf(err, errlen, "cannot read %s", path);
		return error;
	}
	error = profile_parse_csv(b.data, b.len, r, err, errlen);
	buf_free(&b);
	return error;
}

static int
parse_str(const char *s, struct profile_report *r, char *err, size_t errlen)
{
	return profile_parse_csv(s, strlen(s), r, err, errlen);
}

static int
near(double a, double b)
{
	return fabs(a - b) <= 1e-6 * fabs(b) + 1e-9;
}

static int
stall_index(const char *name)
{
	for (int i = 0; i < PROFILE_N_STALLS; i++)
		if (!strcmp(profile_stall_names[i], name))
			return i;
	return -1;
}

static void
fixture(void)
{
	struct profile_report r = PROFILE_REPORT_INIT;
	char err[512] = "", *s;
	const struct profile_kernel *a, *b;
	json_t *j;

	CHECK_INT("the fixture parses", parse_file("tests/fixtures/profile/ncu-raw.csv", &r, err,
	    sizeof(err)), 0);
	if (err[0])
		printf("     %s\n", err);
	CHECK_INT("three launches read", r.rows, 3);
	CHECK_INT("two distinct kernels", r.n, 2);
	CHECK_INT("every metric asked for is there", r.missing, 0);
	if (r.n != 2)
		goto out;
	a = &r.k[0];
	b = &r.k[1];
	CHECK_STR("longest first, name without return type and arguments", a->name,
	    "scale_bias_kernel");
	CHECK_STR("a template name with a comma inside quotes", b->name, "reduce_rows<float, 128>");
	CHECK_INT("the repeated launch merged", a->launches, 2);
	CHECK("durations summed (thousands separators)", near(a->time_ns, 40960));
	CHECK("DRAM bytes summed", near(a->dram_bytes, 2 * 33554432.0));
	CHECK("FP32 operations: 2 per FFMA", near(a->fp32_flop, 2 * 2 * 2097152.0));
	CHECK("FP32 operations: FFMA, FADD and FMUL", near(b->fp32_flop,
	    2 * 1048576.0 + 131072 + 65536));
	CHECK("occupancy achieved", near(a->occ_achieved, 85.5));
	CHECK("occupancy theoretical", near(b->occ_theoretical, 25));
	CHECK_STR("the occupancy limiter is the smallest block limit", b->limiter, "registers");
	CHECK_INT("registers per thread", b->regs, 96);
	CHECK_INT("block size", b->block, 128);
	CHECK_INT("grid size", a->grid, 8192);
	CHECK("shared memory per block", near(b->smem_block, 16384));
	CHECK("n/a is missing, not zero", isnan(b->dram_pct));
	CHECK("a stall given as n/a is missing", isnan(a->stall[stall_index("branch_resolving")]));
	CHECK("a stall figure read", near(a->stall[stall_index("long_scoreboard")], 30.5));
	CHECK("compute capability from the CC column", near(a->cc, 9.0));
	CHECK("FP32 peak: SMs x 128 lanes x 2 x clock on cc 9.0",
	    near(profile_fp32_peak(a, NULL), 132.0 * 128 * 2 * 1.755e9));

	s = profile_summary(&r, 3000);
	CHECK("a summary", s != NULL);
	if (s) {
		CHECK("the summary is short enough for a prompt", strlen(s) <= PROFILE_SUMMARY_MAX + 100);
		CHECK("it names the longest kernel", strstr(s, "`scale_bias_kernel` x2") != NULL);
		CHECK("achieved bandwidth against the measured one",
		    strstr(s, "DRAM 1638 GB/s = 55% of measured") != NULL);
		CHECK("ncu's own share of peak", strstr(s, "ncu 39% of peak") != NULL);
		CHECK("the FP32 peak and where it comes from",
		    strstr(s, "FP32 peak 59.3 TFLOP/s = 132 SMs x 128 lanes x 2 x 1.75 GHz") != NULL);
		CHECK("occupancy with its limiter",
		    strstr(s, "occupancy 24% of 25% theoretical (limit: registers)") != NULL);
		CHECK("no limiter at full theoretical occupancy",
		    strstr(s, "occupancy 86% of 100% theoretical;") != NULL);
		CHECK("top stall reasons with shares",
		    strstr(s, "stalls long_scoreboard 88%, wait 6%, drain 4%") != NULL);
		CHECK("the second kernel's stalls", strstr(s, "stalls barrier 52%") != NULL);
		free(s);
	}
	s = profile_summary(&r, 0);
	CHECK("without a measured bandwidth, ncu's share only", s &&
	    !strstr(s, "of measured") && strstr(s, "ncu 39% of peak"));
	free(s);
	j = profile_report_json(&r);
	CHECK_INT("JSON: one object per kernel", json_array_size(j), 2);
	CHECK("JSON: a missing figure is null",
	    json_is_null(json_object_get(json_array_get(j, 1), "dram_pct_of_peak")));
	CHECK("JSON: achieved bandwidth", near(json_real_value(json_object_get(
	    json_array_get(j, 0), "dram_gbs")), 1638.4));
	json_decref(j);
out:
	profile_report_free(&r);
}

static void
real_reports(void)
{
	struct profile_report r = PROFILE_REPORT_INIT;
	char err[512] = "", *s;

	CHECK_INT("a real H200 --metrics report parses", parse_file(
	    "tests/fixtures/profile/h200-metrics.csv", &r, err, sizeof(err)), 0);
	CHECK_INT("its three kernels", r.n, 3);
	CHECK("its stall metrics (another family) are counted missing", r.missing > 0);
	if (r.n == 3) {
		CHECK("longest first", r.k[0].time_ns >= r.k[1].time_ns &&
		    r.k[1].time_ns >= r.k[2].time_ns);
		CHECK("bytes read", near(r.k[1].dram_bytes + r.k[2].dram_bytes,
		    17305600.0 + 17223168.0));
		CHECK("the SM clock in hz", r.k[0].sm_hz > 1e9 && r.k[0].sm_hz < 3e9);
		CHECK_INT("the SM count", r.k[0].sm_count, 132);
		CHECK("theoretical occupancy", near(r.k[0].occ_theoretical, 62.5));
		CHECK_STR("limited by registers", r.k[0].limiter, "registers");
		s = profile_summary(&r, 4000);
		CHECK("a summary without stall figures", s && !strstr(s, "stalls"));
		free(s);
	}
	profile_report_free(&r);
	CHECK_INT("a real H200 --section report parses", parse_file(
	    "tests/fixtures/profile/h200-sections.csv", &r, err, sizeof(err)), 0);
	CHECK_INT("its two kernels", r.n, 2);
	if (r.n == 2) {
		int ls = stall_index("long_scoreboard");
		const struct profile_kernel *k = !strncmp(r.k[0].name, "vectorized", 10) ? &r.k[0] : &r.k[1];

		CHECK("the stall metric names match ncu's", near(k->stall[ls], 98.67));
		s = profile_summary(&r, 4000);
		CHECK("long_scoreboard leads the elementwise kernel's stalls",
		    s && strstr(s, "stalls long_scoreboard 76%"));
		free(s);
	}
	profile_report_free(&r);
}

static void
broken(void)
{
	struct profile_report r = PROFILE_REPORT_INIT;
	char err[512];
	char *s;

	err[0] = 0;
	CHECK_INT("no header is refused", parse_str("==PROF== Connected\nhello\n", &r, err,
	    sizeof(err)), -EPROTO);
	CHECK("the error says so", strstr(err, "no ncu CSV report") != NULL);
	CHECK_INT("a permission error is not a report", parse_str(
	    "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\n", &r, err,
	    sizeof(err)), -EPROTO);
	CHECK_INT("an unterminated quote is refused", parse_str(
	    "\"ID\",\"Kernel Name\"\n\"\",\"\"\n\"0\",\"k(int\n", &r, err, sizeof(err)), -EPROTO);
	CHECK("the error names the line", strstr(err, "line 3") != NULL);
	CHECK_INT("a short row is refused", parse_str(
	    "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"\",\"\",\"ns\"\n\"0\",\"k\"\n",
	    &r, err, sizeof(err)), -EPROTO);
	CHECK_INT("a units row of the wrong width is refused", parse_str(
	    "\"ID\",\"Kernel Name\"\n\"\"\n", &r, err, sizeof(err)), -EPROTO);
	CHECK_INT("no Kernel Name column is refused", parse_str(
	    "\"ID\",\"x\"\n\"\",\"\"\n", &r, err, sizeof(err)), -EPROTO);
	CHECK_INT("text after a closing quote is refused", parse_str(
	    "\"ID\",\"Kernel Name\"\n\"\",\"\"\n\"0\"x,\"k\"\n", &r, err, sizeof(err)), -EPROTO);

	CHECK_INT("a header and no kernels parses", parse_str(
	    "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"\",\"\",\"ns\"\n"
	    "==WARNING== No kernels were profiled.\n", &r, err, sizeof(err)), 0);
	CHECK_INT("to no kernels", r.n, 0);
	s = profile_summary(&r, 100);
	CHECK("whose summary says so", s && strstr(s, "no kernel"));
	free(s);
	profile_report_free(&r);

	CHECK_INT("only a name and a time (every other metric missing)", parse_str(
	    "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"\",\"\",\"usecond\"\n"
	    "\"0\",\"void k(float*)\",\"1.5\"\n", &r, err, sizeof(err)), 0);
	CHECK("scaled units read", r.n == 1 && near(r.k[0].time_ns, 1500));
	CHECK("missing metrics counted", r.missing == 18 + PROFILE_N_STALLS);
	s = profile_summary(&r, 3000);
	CHECK("the summary keeps what there is", s && strstr(s, "`k` 1.5 us (100%).") &&
	    !strstr(s, "DRAM") && !strstr(s, "occupancy") && !strstr(s, "FP32 peak"));
	free(s);
	profile_report_free(&r);
}

static void
many_kernels(void)
{
	struct buf b = BUF_INIT(1u << 20);
	struct profile_report r = PROFILE_REPORT_INIT;
	char err[512], *s;

	buf_addstr(&b, "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"dram__bytes.sum\"\n"
	    "\"\",\"\",\"ns\",\"byte\"\n");
	for (int i = 0; i < 10; i++)
		buf_printf(&b, "\"%d\",\"void kernel_with_a_rather_long_name_number_%d<float, 4, "
		    "true>(float const*, float*, long)\",\"%d\",\"1,000\"\n", i, i, 1000 + i);
	CHECK_INT("ten kernels parse", profile_parse_csv(b.data, b.len, &r, err, sizeof(err)), 0);
	s = profile_summary(&r, 3000);
	CHECK("the top three kernels at most", s && strstr(s, "(7 more kernels.)"));
	CHECK("the paragraph stays short", s && strlen(s) <= PROFILE_SUMMARY_MAX + 100);
	free(s);
	profile_report_free(&r);
	buf_free(&b);
}

static void
args(void)
{
	json_t *a = profile_ncu_args();
	const char *m = NULL;
	size_t i;
	json_t *v;

	CHECK("ncu arguments", json_is_array(a));
	json_array_foreach(a, i, v)
		if (!strcmp(json_string_value(v), "--metrics"))
			m = json_string_value(json_array_get(a, i + 1));
	CHECK("CSV raw page", json_array_size(a) > 3 &&
	    !strcmp(json_string_value(json_array_get(a, 0)), "--csv"));
	CHECK("a metric list", m && strstr(m, "gpu__time_duration.sum") &&
	    strstr(m, "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"));
	json_decref(a);
}

int
main(void)
{
	cli_where_load();	/* the settings tests/run.sh gives in the environment */
	fixture();
	real_reports();
	broken();
	many_kernels();
	args();
	return t_done("test_profile");
}
