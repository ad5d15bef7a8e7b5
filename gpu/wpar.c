#include "gpu/wpar.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

enum { OP_COUNT, OP_PREAD, OP_PWRITE };

struct part {
	int op;
	/* OP_COUNT */
	const unsigned char *p, *again, *other;
	const unsigned char *pat;
	int elsize;
	struct wpar_counts c;
	/* OP_PREAD / OP_PWRITE */
	int fd;
	unsigned char *buf;
	off_t off;
	/* the range, in bytes from the start of the buffers */
	size_t lo, hi;
	int error;
};

/* The CPUs this process may run on: sched_getaffinity needs no /sys or /proc. */
static int
cpus(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return 1;
	n = CPU_COUNT(&set);
	return n < 1 ? 1 : n > WPAR_MAX_THREADS ? WPAR_MAX_THREADS : n;
}

static size_t
count_eq(const unsigned char *p, size_t n, int elsize, const unsigned char pat[8])
{
	size_t hits = 0;

	if (elsize == 4) {
		uint32_t v, x;
		memcpy(&v, pat, 4);
		for (size_t i = 0; i + 4 <= n; i += 4) {
			memcpy(&x, p + i, 4);
			hits += x == v;
		}
		return hits;
	}
	if (elsize == 2) {
		uint16_t v, x;
		memcpy(&v, pat, 2);
		for (size_t i = 0; i + 2 <= n; i += 2) {
			memcpy(&x, p + i, 2);
			hits += x == v;
		}
		return hits;
	}
	for (size_t i = 0; i + (size_t)elsize <= n; i += (size_t)elsize)
		hits += !memcmp(p + i, pat, (size_t)elsize);
	return hits;
}

/* Elements that differ between a and b; a block compare first (the usual case: none). */
static size_t
count_ne(const unsigned char *a, const unsigned char *b, size_t n, int elsize)
{
	size_t hits = 0;

	if (!memcmp(a, b, n))
		return 0;
	for (size_t i = 0; i + (size_t)elsize <= n; i += (size_t)elsize)
		hits += memcmp(a + i, b + i, (size_t)elsize) != 0;
	return hits;
}

static void *
run_part(void *arg)
{
	struct part *t = arg;
	size_t n = t->hi - t->lo, done = 0;
	ssize_t r;

	switch (t->op) {
	case OP_COUNT:
		if (t->pat)
			t->c.poison = count_eq(t->p + t->lo, n, t->elsize, t->pat);
		if (t->again)
			t->c.late = count_ne(t->p + t->lo, t->again + t->lo, n, t->elsize);
		if (t->other)
			t->c.differ = count_ne(t->p + t->lo, t->other + t->lo, n, t->elsize);
		break;
	case OP_PREAD:
		while (done < n) {
			r = pread(t->fd, t->buf + t->lo + done, n - done, t->off + (off_t)(t->lo + done));
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				t->error = r < 0 ? -errno : -EPROTO;
				break;
			}
			done += (size_t)r;
		}
		break;
	case OP_PWRITE:
		while (done < n) {
			r = pwrite(t->fd, t->buf + t->lo + done, n - done, (off_t)(t->lo + done));
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				t->error = r < 0 ? -errno : -EIO;
				break;
			}
			done += (size_t)r;
		}
		break;
	}
	return NULL;
}

/*
 * Split [0, n) into parts aligned to `align` bytes, run them on threads
 * (the first on the caller's), and wait. A thread that cannot be created
 * runs its part on the caller's thread: the result never depends on it.
 */
static void
parallel(struct part *tmpl, size_t n, size_t align, struct part *parts, int *nparts)
{
	pthread_t tid[WPAR_MAX_THREADS];
	int started[WPAR_MAX_THREADS] = { 0 };
	size_t per, lo = 0;
	int k = cpus();

	if ((size_t)k > n / WPAR_MIN_CHUNK)
		k = (int)(n / WPAR_MIN_CHUNK);
	if (k < 1)
		k = 1;
	per = (n / (size_t)k + align - 1) / align * align;
	for (int i = 0; i < k; i++) {
		parts[i] = *tmpl;
		parts[i].lo = lo;
		parts[i].hi = i == k - 1 || lo + per > n ? n : lo + per;
		lo = parts[i].hi;
	}
	for (int i = 1; i < k; i++)
		started[i] = pthread_create(&tid[i], NULL, run_part, &parts[i]) == 0;
	run_part(&parts[0]);
	for (int i = 1; i < k; i++) {
		if (started[i])
			pthread_join(tid[i], NULL);
		else
			run_part(&parts[i]);
	}
	*nparts = k;
}

void
wpar_count(const unsigned char *p, const unsigned char *again,
    const unsigned char *other, size_t n, int elsize, const unsigned char pat[8],
    struct wpar_counts *c)
{
	struct part t = { .op = OP_COUNT, .p = p, .again = again, .other = other,
		.pat = pat, .elsize = elsize > 0 ? elsize : 1 };
	struct part parts[WPAR_MAX_THREADS] = { { 0 } };
	int k;

	parallel(&t, n, (size_t)t.elsize * 64, parts, &k);
	for (int i = 0; i < k; i++) {
		c->poison += parts[i].c.poison;
		c->late += parts[i].c.late;
		c->differ += parts[i].c.differ;
	}
}

static int
io(int op, int fd, unsigned char *buf, size_t n, off_t off)
{
	struct part t = { .op = op, .fd = fd, .buf = buf, .off = off };
	struct part parts[WPAR_MAX_THREADS] = { { 0 } };
	int k;

	parallel(&t, n, 4096, parts, &k);
	for (int i = 0; i < k; i++)
		if (parts[i].error)
			return parts[i].error;
	return 0;
}

int
wpar_pread(int fd, unsigned char *buf, size_t n, off_t off)
{
	return io(OP_PREAD, fd, buf, n, off);
}

int
wpar_pwrite(int fd, const unsigned char *buf, size_t n)
{
	return io(OP_PWRITE, fd, (unsigned char *)buf, n, 0);
}
