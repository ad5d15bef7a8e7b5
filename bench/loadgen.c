/*
 * loadgen: signed GitHub push deliveries against a kernelbot serve, from
 * a separate process, closed loop over keep-alive connections. Every
 * delivery has a fresh X-GitHub-Delivery id and a fresh commit id, so
 * dedup never short-circuits and every 202 is a new durable job.
 *
 *   loadgen --port N --secret-file F --body F [--connections C]
 *           [--seconds S] [--rate R] [--prefix P] [--host 127.0.0.1]
 *
 * Without --rate each connection sends as fast as answers come back (the
 * saturation throughput). With --rate R the connections together offer R
 * deliveries per second on a fixed schedule, and latency is measured from
 * each request's scheduled time, so a stalled server cannot hide its
 * stalls by slowing the client down (no coordinated omission).
 * Prints one line of JSON: sent, accepted, other (non-202 answers),
 * errors (connection failures), seconds, rate (accepted per second) and
 * latency percentiles in milliseconds.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/crypto.h"
#include "webhooks/verify.h"

#define LG_MAX_CONNS	256
#define LG_MAX_SAMPLES	(1u << 22)	/* latencies kept per run */
#define LG_SHA_MARK	"76ae82c7b1a177c8d03f9e96e0adf2466113728f"

struct lg_opts {
	const char *host, *prefix;
	int port, conns;
	double seconds, rate;
	char *secret, *body;
	size_t secret_len, body_len;
};

struct lg_thread {
	const struct lg_opts *o;
	int id;
	pthread_t th;
	unsigned long sent, accepted, other, errors;
	double *lat;		/* seconds */
	size_t n_lat, cap_lat;
};

static struct timespec lg_start;
static volatile int lg_stop;

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - lg_start.tv_sec) + (t.tv_nsec - lg_start.tv_nsec) / 1e9;
}

static char *
read_file(const char *path, size_t *len)
{
	struct buf b = BUF_INIT(BUF_MAX_DEFAULT);
	char chunk[8192];
	size_t n;
	FILE *f = fopen(path, "rb");

	if (!f)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (buf_add(&b, chunk, n) < 0) {
			fclose(f);
			buf_free(&b);
			return NULL;
		}
	fclose(f);
	return buf_detach(&b, len);
}

static int
lg_connect(const struct lg_opts *o)
{
	struct sockaddr_in a;
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)o->port);
	inet_pton(AF_INET, o->host, &a.sin_addr);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int
send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Read one response: status code, or -1. Bodies are small JSON with Content-Length. */
static int
read_response(int fd, char *buf, size_t cap)
{
	size_t got = 0;
	char *hdr_end = NULL, *cl;
	long want = -1;

	for (;;) {
		ssize_t r = recv(fd, buf + got, cap - 1 - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
		buf[got] = '\0';
		if (!hdr_end && (hdr_end = strstr(buf, "\r\n\r\n"))) {
			cl = strcasestr(buf, "\r\nContent-Length:");
			want = cl && cl < hdr_end ? strtol(cl + 17, NULL, 10) : 0;
		}
		if (hdr_end && (long)(got - (size_t)(hdr_end + 4 - buf)) >= want)
			break;
		if (got >= cap - 1)
			return -1;
	}
	if (strncmp(buf, "HTTP/1.1 ", 9))
		return -1;
	return atoi(buf + 9);
}

static void *
lg_run(void *arg)
{
	struct lg_thread *t = arg;
	const struct lg_opts *o = t->o;
	struct buf req = BUF_INIT(BUF_MAX_DEFAULT);
	char *body = malloc(o->body_len + 1), *mark, sig[WH_SIG_HEX], resp[8192];
	char sha[CRYPTO_SHA256_HEX], id[128];
	int fd = -1;
	double interval = o->rate > 0 ? o->conns / o->rate : 0;
	double next = interval * t->id / o->conns;	/* stagger the connections */

	if (!body)
		return NULL;
	memcpy(body, o->body, o->body_len);
	body[o->body_len] = '\0';
	mark = strstr(body, LG_SHA_MARK);
	while (!lg_stop) {
		double t0;
		int status;

		if (fd < 0 && (fd = lg_connect(o)) < 0) {
			t->errors++;
			usleep(10000);
			continue;
		}
		if (interval > 0) {
			double wait = next - now_s();
			if (wait > 0)
				usleep((useconds_t)(wait * 1e6));
			if (lg_stop)
				break;
		}
		snprintf(id, sizeof(id), "%s-%d-%lu", o->prefix, t->id, t->sent);
		if (mark) {
			crypto_sha256_hex(id, strlen(id), sha);
			memcpy(mark, sha, 40);
		}
		wh_sign_hex(o->secret, o->secret_len, body, o->body_len, sig);
		buf_reset(&req);
		buf_printf(&req, "POST /webhooks/github HTTP/1.1\r\nHost: %s:%d\r\n"
		    "Content-Type: application/json\r\nX-GitHub-Event: push\r\n"
		    "X-GitHub-Delivery: %s\r\nX-Hub-Signature-256: sha256=%s\r\n"
		    "Content-Length: %zu\r\n\r\n", o->host, o->port, id, sig, o->body_len);
		buf_add(&req, body, o->body_len);
		t0 = interval > 0 ? next : now_s();
		next += interval;
		t->sent++;
		if (send_all(fd, req.data, req.len) < 0 ||
		    (status = read_response(fd, resp, sizeof(resp))) < 0) {
			t->errors++;
			close(fd);
			fd = -1;
			continue;
		}
		if (t->n_lat == t->cap_lat && t->cap_lat < LG_MAX_SAMPLES) {
			size_t cap = t->cap_lat ? t->cap_lat * 2 : 4096;
			double *p = realloc(t->lat, cap * sizeof(*p));
			if (p) {
				t->lat = p;
				t->cap_lat = cap;
			}
		}
		if (t->n_lat < t->cap_lat)
			t->lat[t->n_lat++] = now_s() - t0;
		if (status == 202)
			t->accepted++;
		else
			t->other++;
		if (strcasestr(resp, "\r\nConnection: close")) {
			close(fd);
			fd = -1;
		}
	}
	if (fd >= 0)
		close(fd);
	buf_free(&req);
	free(body);
	return NULL;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
pct(const double *v, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1] * 1000.0;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "host", required_argument, NULL, 'H' },
		{ "port", required_argument, NULL, 'p' },
		{ "secret-file", required_argument, NULL, 's' },
		{ "body", required_argument, NULL, 'b' },
		{ "connections", required_argument, NULL, 'c' },
		{ "seconds", required_argument, NULL, 't' },
		{ "prefix", required_argument, NULL, 'P' },
		{ "rate", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	struct lg_opts o = { "127.0.0.1", "bench", 0, 16, 10.0, 0, NULL, NULL, 0, 0 };
	struct lg_thread *ts;
	const char *secret_file = NULL, *body_file = NULL;
	unsigned long sent = 0, accepted = 0, other = 0, errors = 0;
	double *all, elapsed;
	size_t n = 0;
	int opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'H': o.host = optarg; break;
		case 'p': o.port = atoi(optarg); break;
		case 's': secret_file = optarg; break;
		case 'b': body_file = optarg; break;
		case 'c': o.conns = atoi(optarg); break;
		case 't': o.seconds = atof(optarg); break;
		case 'P': o.prefix = optarg; break;
		case 'r': o.rate = atof(optarg); break;
		default: return 2;
		}
	}
	if (o.port <= 0 || !secret_file || !body_file || o.conns < 1 ||
	    o.conns > LG_MAX_CONNS || o.seconds <= 0 || o.rate < 0) {
		fprintf(stderr, "usage: loadgen --port N --secret-file F --body F "
		    "[--connections 1..%d] [--seconds S] [--rate R] [--prefix P]\n", LG_MAX_CONNS);
		return 2;
	}
	if (crypto_init() < 0 ||
	    !(o.secret = read_file(secret_file, &o.secret_len)) ||
	    !(o.body = read_file(body_file, &o.body_len))) {
		fprintf(stderr, "loadgen: cannot read the secret or the body\n");
		return 1;
	}
	while (o.secret_len && (o.secret[o.secret_len - 1] == '\n' ||
	    o.secret[o.secret_len - 1] == '\r'))
		o.secret[--o.secret_len] = '\0';
	if (!(ts = calloc((size_t)o.conns, sizeof(*ts))))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &lg_start);
	for (int i = 0; i < o.conns; i++) {
		ts[i].o = &o;
		ts[i].id = i;
		pthread_create(&ts[i].th, NULL, lg_run, &ts[i]);
	}
	while (now_s() < o.seconds)
		usleep(20000);
	lg_stop = 1;
	for (int i = 0; i < o.conns; i++) {
		pthread_join(ts[i].th, NULL);
		n += ts[i].n_lat;
	}
	elapsed = now_s();
	if (!(all = malloc((n ? n : 1) * sizeof(*all))))
		return 1;
	n = 0;
	for (int i = 0; i < o.conns; i++) {
		memcpy(all + n, ts[i].lat, ts[i].n_lat * sizeof(*all));
		n += ts[i].n_lat;
		sent += ts[i].sent;
		accepted += ts[i].accepted;
		other += ts[i].other;
		errors += ts[i].errors;
		free(ts[i].lat);
	}
	qsort(all, n, sizeof(*all), cmp_double);
	printf("{\"connections\":%d,\"offered\":%.0f,\"seconds\":%.2f,\"sent\":%lu,\"accepted\":%lu,"
	    "\"other\":%lu,\"errors\":%lu,\"rate\":%.1f,\"p50_ms\":%.2f,"
	    "\"p90_ms\":%.2f,\"p99_ms\":%.2f,\"max_ms\":%.2f}\n", o.conns, o.rate, elapsed,
	    sent, accepted, other, errors, (double)accepted / elapsed,
	    pct(all, n, 0.50), pct(all, n, 0.90), pct(all, n, 0.99),
	    n ? all[n - 1] * 1000.0 : 0.0);
	free(all);
	free(ts);
	free(o.secret);
	free(o.body);
	return errors || other ? 1 : 0;
}
