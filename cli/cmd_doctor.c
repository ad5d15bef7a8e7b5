/*
 * kernelbot doctor: what this host can do. Each missing piece gets one line
 * saying what it costs; the exit status is 1 only when even the CPU
 * backend cannot run (no C compiler, or no Python with PyTorch).
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/version.h"
#include "common/buf.h"
#include "common/jsonx.h"
#include "common/spawn.h"
#include "gpu/device.h"
#include "gpu/harness.h"
#include "gpu/judgesrv.h"
#include "gpu/sandbox.h"

#define TOOL_PATH "/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin"

/* Run `tool ARG` and return the first line of its output that has `want`. */
static char *
tool_line(const char *path, const char *arg, const char *want)
{
	const char *argv[] = { path, arg, NULL };
	const char *envp[] = { "PATH=" TOOL_PATH, "LANG=C", NULL };
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct spawn_result r = { 0 };
	char *line = NULL, *p, *save = NULL;

	o.argv = argv;
	o.envp = envp;
	o.timeout_ms = 20000;
	if (spawn_run(&o, &r) == 0 && r.status == 0) {
		char *text = r.out.len ? r.out.data : r.err.data;
		for (p = text ? strtok_r(text, "\n", &save) : NULL; p;
		    p = strtok_r(NULL, "\n", &save))
			if (!want || strstr(p, want)) {
				line = strdup(p);
				break;
			}
	}
	spawn_result_free(&r);
	return line;
}

static char *
find_tool(const char *name)
{
	char *p = NULL;
	const char *env = getenv("PATH");
	struct buf path = BUF_INIT(8192);

	buf_printf(&path, "%s:%s", env ? env : "", TOOL_PATH);
	if (spawn_which(name, buf_cstr(&path), &p) < 0)
		p = NULL;
	buf_free(&path);
	return p;
}

static void
add_missing(json_t *missing, const char *line)
{
	json_array_append_new(missing, json_string(line));
}

static json_t *
tool_entry(const char *name, const char *version_arg, const char *want,
    json_t *missing, const char *why)
{
	char *path = find_tool(name), *ver;
	json_t *o;
	char line[512];

	if (!path) {
		snprintf(line, sizeof(line), "%s not found: %s", name, why);
		add_missing(missing, line);
		return json_null();
	}
	ver = version_arg ? tool_line(path, version_arg, want) : NULL;
	o = json_pack("{s:s, s:s?}", "path", path, "version", ver);
	free(path);
	free(ver);
	return o;
}

static json_t *
doctor_collect(void)
{
	struct gpu_device *gpus = NULL;
	struct sandbox_features sf;
	json_t *doc, *missing = json_array(), *arr = json_array(), *info = NULL;
	json_t *req, *reply = NULL;
	const char *python = NULL, *script = NULL;
	char why[512] = "", drv[32], err[1024];
	int n = 0;

	if (gpu_list(&gpus, &n, why, sizeof(why)) < 0 || n == 0) {
		snprintf(err, sizeof(err), "no GPU: %s; only the CPU backend is available",
		    why[0] ? why : "the driver reported none");
		add_missing(missing, err);
	}
	for (int i = 0; i < n; i++) {
		char cc[16], sm[16];
		snprintf(cc, sizeof(cc), "%d.%d", gpus[i].cc_major, gpus[i].cc_minor);
		snprintf(sm, sizeof(sm), "sm_%d%d", gpus[i].cc_major, gpus[i].cc_minor);
		json_array_append_new(arr, json_pack(
		    "{s:i, s:s, s:s, s:s, s:I, s:i, s:i, s:i, s:s, s:f}",
		    "index", gpus[i].index, "name", gpus[i].name,
		    "compute_capability", cc, "arch", sm,
		    "memory_bytes", (json_int_t)gpus[i].mem_bytes,
		    "sm_count", gpus[i].sm_count, "l2_bytes", gpus[i].l2_bytes,
		    "smem_optin_bytes", gpus[i].smem_optin_bytes,
		    "pci_bus_id", gpus[i].pci_bus_id,
		    "peak_bandwidth_gbs", gpus[i].peak_bw_gbs));
	}
	free(gpus);
	gpu_driver_version(drv, sizeof(drv));

	doc = json_pack("{s:s, s:o, s:s?}", "kernelbot", KERNELBOT_VERSION,
	    "gpus", arr, "driver", drv[0] ? drv : NULL);
	json_object_set_new(doc, "nvcc", tool_entry("nvcc", "--version", "release",
	    missing, "the CUDA backend cannot compile kernels"));
	json_object_set_new(doc, "cc", tool_entry("cc", "--version", NULL,
	    missing, "the CPU backend cannot compile kernels"));
	json_object_set_new(doc, "compute_sanitizer", tool_entry("compute-sanitizer",
	    NULL, NULL, missing, "--sanitize (memcheck, racecheck) is unavailable"));
	/* lists a candidate's own kernels, which racecheck covers
	 * (gpu/harness/kbh/judge_sanitize.py) */
	json_object_set_new(doc, "cuobjdump", tool_entry("cuobjdump", NULL, NULL, missing,
	    "--sanitize runs racecheck on every kernel, a library's too: minutes for a large GEMM"));
	json_object_set_new(doc, "ncu", tool_entry("ncu", NULL, NULL, missing,
	    "profiling feedback falls back to timings and the roofline"));

	if (harness_locate(&python, &script, err, sizeof(err)) < 0) {
		add_missing(missing, err);
	} else {
		req = json_pack("{s:s}", "verb", "info");
		if (harness_call(req, 120000, &reply, err, sizeof(err)) < 0)
			add_missing(missing, err);
		else if (!jsonx_bool(reply, "ok", 0))
			add_missing(missing, jsonx_str(reply, "error.message", "harness info failed"));
		else
			info = json_incref(json_object_get(reply, "info"));
		json_decref(req);
		json_decref(reply);
		json_object_set_new(doc, "harness", json_pack("{s:s, s:s}",
		    "python", python, "script", script));
	}
	json_object_set_new(doc, "torch", info ? info : json_null());
	if (info && !jsonx_bool(info, "compile_available", 0))
		add_missing(missing, "torch.compile not available (PyTorch < 2): "
		    "no torch.compile baseline in speedup tables");
	if (info && n > 0 && !jsonx_bool(info, "cuda_available", 0))
		add_missing(missing, "PyTorch cannot use the GPU: no eager or "
		    "torch.compile baselines on CUDA");

	sandbox_probe(&sf);
	json_object_set_new(doc, "sandbox", json_pack(
	    "{s:b, s:b, s:b, s:b, s:b, s:b, s:b, s:b, s:s?, s:s?, s:b}",
	    "user_ns", sf.user_ns, "net_ns", sf.net_ns, "mount_ns", sf.mount_ns,
	    "pid_ns", sf.pid_ns, "ipc_ns", sf.ipc_ns, "proc_mount", sf.proc_mount,
	    "seccomp", sf.seccomp,
	    "cgroup_memory", sf.cgroup_memory,
	    "cgroup_path", sf.cgroup_memory ? sf.cgroup_path : NULL,
	    "cgroup_why", sf.cgroup_memory ? NULL : sf.cgroup_why,
	    "cgroup_shared", sf.cgroup_shared));
	{
		static const char *const names[] = { "user", "network", "mount", "pid", "IPC" };
		const int have[] = { sf.user_ns, sf.net_ns, sf.mount_ns, sf.pid_ns, sf.ipc_ns };
		for (int i = 0; i < 5; i++)
			if (!have[i]) {
				snprintf(err, sizeof(err), "no %s namespaces: candidates "
				    "cannot be sandboxed here (evaluation refuses to run them)",
				    names[i]);
				add_missing(missing, err);
			}
		if (!sf.proc_mount && sf.pid_ns && sf.mount_ns)
			add_missing(missing, "no fresh /proc in a sandbox (this host masks "
			    "parts of its own): candidates would see the host's processes "
			    "(evaluation refuses to run them)");
		if (!sf.seccomp)
			add_missing(missing, "no seccomp: candidates cannot be "
			    "sandboxed here (evaluation refuses to run them)");
		if (sf.cgroup_shared)
			add_missing(missing, "no memory cgroup: this process shares its "
			    "cgroup v2 with others, so the memory controller cannot be "
			    "enabled below it (EBUSY); memory limits fall back to "
			    "RLIMIT_AS (RLIMIT_DATA for CUDA processes), which do not "
			    "count shared memory; no pids cgroup. Run kernelbot under "
			    "systemd with Delegate=yes");
		else if (!sf.cgroup_memory)
			add_missing(missing, "no writable memory cgroup: memory limits "
			    "fall back to RLIMIT_AS (RLIMIT_DATA for CUDA processes), "
			    "which do not count shared memory; no pids cgroup");
	}
	{
		char jdir[PATH_MAX];

		if (judgesrv_dir(jdir, sizeof(jdir), err, sizeof(err)) == 0)
			json_object_set_new(doc, "judge_dir", json_string(jdir));
		else
			add_missing(missing, err);	/* evaluations then use one-shot judges */
	}
	json_object_set_new(doc, "missing", missing);
	return doc;
}

static void
doctor_print(const json_t *d)
{
	json_t *g, *t, *m;
	size_t i;

	printf("kernelbot %s\n", jsonx_str(d, "kernelbot", "?"));
	json_array_foreach(json_object_get(d, "gpus"), i, g)
		printf("gpu %zu      %s, %s (compute %s), %.1f GiB, %lld SMs, L2 %lld MiB\n",
		    i, jsonx_str(g, "name", "?"), jsonx_str(g, "arch", "?"),
		    jsonx_str(g, "compute_capability", "?"),
		    (double)jsonx_int(g, "memory_bytes", 0) / (1 << 30),
		    jsonx_int(g, "sm_count", 0), jsonx_int(g, "l2_bytes", 0) >> 20);
	if (jsonx_str(d, "driver", NULL))
		printf("driver     CUDA %s\n", jsonx_str(d, "driver", ""));
	if ((t = json_object_get(d, "nvcc")) && json_is_object(t))
		printf("nvcc       %s (%s)\n", jsonx_str(t, "version", "?"), jsonx_str(t, "path", "?"));
	if ((t = json_object_get(d, "cc")) && json_is_object(t))
		printf("cc         %s (%s)\n", jsonx_str(t, "version", "?"), jsonx_str(t, "path", "?"));
	if ((t = json_object_get(d, "harness")))
		printf("python     %s\n", jsonx_str(t, "python", "?"));
	if ((t = json_object_get(d, "torch")) && json_is_object(t))
		printf("torch      %s (python %s), CUDA %s, torch.compile %s\n",
		    jsonx_str(t, "torch", "?"), jsonx_str(t, "python", "?"),
		    jsonx_bool(t, "cuda_available", 0) ? "available" : "not available",
		    jsonx_bool(t, "compile_available", 0) ? "available" : "not available");
	if ((t = json_object_get(d, "sandbox")))
		printf("sandbox    user ns %s, net ns %s, mount ns %s, pid ns %s, "
		    "ipc ns %s, fresh /proc %s, seccomp %s, memory cgroup %s%s\n",
		    jsonx_bool(t, "user_ns", 0) ? "yes" : "no",
		    jsonx_bool(t, "net_ns", 0) ? "yes" : "no",
		    jsonx_bool(t, "mount_ns", 0) ? "yes" : "no",
		    jsonx_bool(t, "pid_ns", 0) ? "yes" : "no",
		    jsonx_bool(t, "ipc_ns", 0) ? "yes" : "no",
		    jsonx_bool(t, "proc_mount", 0) ? "yes" : "no",
		    jsonx_bool(t, "seccomp", 0) ? "yes" : "no",
		    jsonx_bool(t, "cgroup_memory", 0) ? "yes" : "no",
		    jsonx_bool(t, "cgroup_shared", 0) ?
		    " (shared cgroup: RLIMIT_DATA fallback)" : "");
	if ((t = json_object_get(d, "compute_sanitizer")) && json_is_object(t))
		printf("sanitizer  %s\n", jsonx_str(t, "path", "?"));
	if ((t = json_object_get(d, "ncu")) && json_is_object(t))
		printf("ncu        %s\n", jsonx_str(t, "path", "?"));
	if (jsonx_str(d, "judge_dir", NULL))
		printf("judge      servers in %s (kernelbot judge status)\n",
		    jsonx_str(d, "judge_dir", ""));
	json_array_foreach(json_object_get(d, "missing"), i, m)
		printf("missing: %s\n", json_string_value(m));
}

int
cmd_doctor(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int json_out = 0, c, rc;
	json_t *d;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'j') {
			json_out = 1;
		} else if (c == 'h') {
			printf("usage: kernelbot doctor [--json]\n\n"
			    "What this host can do: GPUs, driver, nvcc, C compiler, Python and\n"
			    "PyTorch, torch.compile, sandbox features, compute-sanitizer,\n"
			    "cuobjdump, ncu, the judge directory. Options [default]:\n"
			    "  --json                  the same as one JSON object [off]\n"
			    "docs/commands/doctor.md.\n");
			return 0;
		} else {
			fprintf(stderr, "usage: kernelbot doctor [--json]\n");
			return EXIT_USAGE;
		}
	}
	if (optind != argc)
		return cli_usage_error("doctor", "takes no arguments");
	if (!(d = doctor_collect())) {
		fprintf(stderr, "kernelbot doctor: out of memory\n");
		return 1;
	}
	if (json_out) {
		json_dumpf(d, stdout, JSON_INDENT(2));
		printf("\n");
	} else {
		doctor_print(d);
	}
	rc = json_is_object(json_object_get(d, "cc")) &&
	    json_is_object(json_object_get(d, "torch")) ? 0 : 1;
	json_decref(d);
	return rc;
}
