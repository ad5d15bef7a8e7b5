/*
 * kernelbot serve: the daemon. Loads the config, opens the store, starts
 * the HTTP intake, and then only waits for signals:
 *
 *   SIGTERM, SIGINT  stop accepting, let requests in progress finish
 *                    (bounded), exit 0
 *   SIGHUP           reopen the log file (after a rotation)
 *
 * Under systemd (NOTIFY_SOCKET set) it sends READY=1 once listening,
 * WATCHDOG=1 at half the watchdog interval, and STOPPING=1. libsystemd is
 * included here only.
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "cli/cli.h"
#include "conf/config.h"
#include "cli/config_check.h"
#include "coord/coord.h"
#include "store/store.h"
#include "common/version.h"
#include "common/crypto.h"
#include "common/log.h"
#include "webhooks/server.h"

#define SERVE_DRAIN_MS 10000	/* how long a stop waits for requests in progress */
#define SERVE_CHECKPOINT_MS 200	/* WAL checkpoint interval, off the commit path */

static void
serve_usage(FILE *f)
{
	fprintf(f, "usage: kernelbot serve [--config FILE] [--listen ADDR:PORT] "
	    "[--data-dir DIR]\n\n"
	    "The daemon: webhook intake on /webhooks/{github,gitlab,gitea},\n"
	    "/healthz and /metrics, and the coordinator. Exit 0 on SIGTERM or SIGINT,\n"
	    "1 when the store or the port cannot be opened, 2 for a usage or\n"
	    "configuration error. Options [default]:\n"
	    "  --config FILE           the server configuration\n"
	    "                          [%s, or built-in\n"
	    "                          defaults when it does not exist]\n"
	    "  --listen ADDR:PORT      where to listen [the file's listen, else\n"
	    "                          127.0.0.1:8080]\n"
	    "  --data-dir DIR          the store and kernelbot's other files [the\n"
	    "                          file's data_dir, else /var/lib/kernelbot]\n"
	    "docs/commands/serve.md; every configuration key: docs/configuration.md.\n",
	    CONFIG_DEFAULT_PATH);
}

static int
serve_loop(struct wh_server *srv)
{
	struct signalfd_siginfo si;
	uint64_t wd_usec = 0;
	int watchdog = sd_watchdog_enabled(0, &wd_usec) > 0;
	int timeout_ms = watchdog ? (int)(wd_usec / 2000) : -1;
	sigset_t set;
	int sfd;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if ((sfd = signalfd(-1, &set, SFD_CLOEXEC)) < 0) {
		log_error("signalfd failed", "err=\"%s\"", strerror(errno));
		return 1;
	}
	if (watchdog && timeout_ms < 1)
		timeout_ms = 1;
	sd_notify(0, "READY=1\nSTATUS=accepting webhooks");
	for (;;) {
		struct pollfd p = { sfd, POLLIN, 0 };
		int n = poll(&p, 1, timeout_ms);

		if (watchdog)
			sd_notify(0, "WATCHDOG=1");
		if (n <= 0)
			continue;
		if (read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
			continue;
		if (si.ssi_signo == SIGHUP) {
			int error = log_reopen();
			log_info("log reopened", "err=\"%s\"", error ? strerror(-error) : "");
			continue;
		}
		log_info("stopping", "signal=%s", strsignal((int)si.ssi_signo));
		sd_notify(0, "STOPPING=1");
		break;
	}
	close(sfd);
	wh_server_quiesce(srv);
	if (wh_server_drain(srv, SERVE_DRAIN_MS) < 0)
		log_warn("requests still running at stop; closing them", NULL);
	return 0;
}

int
cmd_serve(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "listen", required_argument, NULL, 'l' },
		{ "data-dir", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config_path = NULL, *listen = NULL, *data_dir = NULL;
	struct config *cfg = NULL;
	struct store *store = NULL;
	struct wh_server *srv = NULL;
	struct coord *coord = NULL;
	enum log_level lvl;
	char err[CONFIG_ERR_MAX], q[300];
	sigset_t set;
	int opt, rc = 1, error;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "c:l:d:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': config_path = optarg; break;
		case 'l': listen = optarg; break;
		case 'd': data_dir = optarg; break;
		case 'h': serve_usage(stdout); return 0;
		default: serve_usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind < argc)
		return cli_usage_error("serve", "unexpected argument '%s'", argv[optind]);
	/*
	 * Bodies of up to http.max_body_bytes come and go; taken from the
	 * heap, freed ones stayed with the process (the tenth outside
	 * attack's M1: 24 fake 25 MiB bodies at a time, RSS 650 MB with at
	 * most 201 MB of bodies held, 380 to 520 MB after). From 256 KiB up
	 * a block is mapped on its own and given back when freed.
	 */
	mallopt(M_MMAP_THRESHOLD, 256 << 10);
	if ((rc = config_load_cli("serve", config_path, 0, &cfg)) != 0)
		return rc;
	/*
	 * The command line's listen and data_dir first, so the check sees the
	 * directory serve will use (--listen may name port 0, for tests: the
	 * port taken is logged).
	 */
	rc = EXIT_USAGE;
	if (listen && config_set_listen(cfg, listen) < 0) {
		cli_usage_error("serve", "--listen '%s' is not ADDR:PORT", listen);
		goto out;
	}
	if (data_dir && config_set_data_dir(cfg, data_dir) < 0) {
		cli_usage_error("serve", "--data-dir must not be empty");
		goto out;
	}
	/* Every section, before anything listens: a job must not find the mistake. */
	if ((error = config_check(cfg, 0, NULL, err, sizeof(err))) < 0) {
		fprintf(stderr, "kernelbot serve: %s\n", err);
		rc = error == -EINVAL ? EXIT_USAGE : 1;
		goto out;
	}
	if ((error = config_fd_raise(cfg)) < 0) {
		fprintf(stderr, "kernelbot serve: http.max_connections: raising "
		    "RLIMIT_NOFILE to %llu open files: %s\n",
		    config_fd_need(cfg), strerror(-error));
		rc = EXIT_USAGE;
		goto out;
	}
	rc = 1;
	/* Only an explicit --log-level or KERNELBOT_LOG_LEVEL beats the file's. */
	if (!getenv("KERNELBOT_LOG_LEVEL") && log_get_level() == LOG_INFO &&
	    log_level_parse(config_log_level(cfg), &lvl) == 0)
		log_set_level(lvl);
	if (config_log_file(cfg) && (error = log_open(config_log_file(cfg))) < 0) {
		/* checked above; here only when it changed since */
		fprintf(stderr, "kernelbot serve: log_file %s: %s\n",
		    config_log_file(cfg), error == -EINVAL ? "not a regular file" :
		    strerror(-error));
		goto out;
	}
	if (crypto_init() < 0) {
		log_error("libsodium failed to initialize", NULL);
		goto out;
	}
	if ((error = store_open(config_data_dir(cfg), 0, &store)) < 0) {
		log_error("cannot open the store", "data_dir=%s err=\"%s\" detail=%s",
		    log_quote(q, sizeof(q), config_data_dir(cfg)), strerror(-error),
		    log_quote(err, sizeof(err), store ? store_errmsg(store) : ""));
		fprintf(stderr, "kernelbot serve: cannot open the store in %s: %s\n",
		    config_data_dir(cfg), strerror(-error));
		goto out;
	}
	/* Blocked before any thread starts, so only the signalfd sees them. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if ((error = store_checkpointer_start(store, SERVE_CHECKPOINT_MS)) < 0)
		log_warn("no background WAL checkpoints; commits will checkpoint",
		    "err=\"%s\"", strerror(-error));
	if ((error = wh_server_start(cfg, store, &srv, err, sizeof(err))) < 0) {
		log_error("cannot start the HTTP server", "err=%s", log_quote(q, sizeof(q), err));
		fprintf(stderr, "kernelbot serve: %s\n", err);
		goto out;
	}
	for (int f = 0; f < CONFIG_N_FORGES; f++)
		if (!config_forge_secret(cfg, (enum config_forge)f, NULL))
			log_info("forge webhook not configured; its endpoint answers 404",
			    "provider=%s", config_forge_name((enum config_forge)f));
	if (config_allow_count(cfg) == 0)
		log_warn("allow_repos is empty: every repository is refused (403)", NULL);
	log_info("listening", "version=%s listen=%s port=%d data_dir=%s",
	    KERNELBOT_VERSION, config_listen(cfg), wh_server_port(srv),
	    log_quote(q, sizeof(q), config_data_dir(cfg)));
	if ((error = coord_start(cfg, config_path, store, &coord, err,
	    sizeof(err))) < 0) {
		log_error("cannot start the coordinator", "err=%s",
		    log_quote(q, sizeof(q), err));
		fprintf(stderr, "kernelbot serve: %s\n", err);
		goto out;
	}
	rc = serve_loop(srv);
out:
	/* The coordinator first: its job keeps its lease and resumes later. */
	coord_stop(coord);
	wh_server_stop(srv);
	store_close(store);
	config_free(cfg);
	if (rc == 0)
		log_info("stopped", NULL);
	return rc;
}
