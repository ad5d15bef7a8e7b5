/*
 * buf: the one growable byte buffer, with a mandatory size cap.
 *
 * Every buffer that can hold outside input is bounded: appends that would
 * take it past `max` fail with -ENOBUFS and leave it unchanged. The data is
 * always NUL-terminated (the terminator is not counted in len or max), so a
 * buffer of text can be handed to C string functions as it is.
 */
#ifndef KB_COMMON_BUF_H
#define KB_COMMON_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
	char *data;	/* NULL until the first append; then NUL-terminated */
	size_t len;	/* bytes used, terminator excluded */
	size_t cap;	/* bytes allocated, terminator excluded */
	size_t max;	/* hard cap on len */
};

#define BUF_INIT(maxbytes) { NULL, 0, 0, (maxbytes) }

/* Named limits for buffers that hold outside input. */
#define BUF_MAX_SMALL	(64u << 10)
#define BUF_MAX_DEFAULT	(16u << 20)

/* Append n bytes. 0, -ENOBUFS past the cap, -ENOMEM. */
int buf_add(struct buf *b, const void *p, size_t n);
int buf_addstr(struct buf *b, const char *s);
int buf_addch(struct buf *b, char c);

/* Append formatted text. 0, -ENOBUFS (nothing appended), -ENOMEM. */
int buf_printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/*
 * Append as much of p as fits under the cap; returns the number of bytes
 * dropped (0 when all fitted), or -ENOMEM. For output captures, where
 * losing the tail is acceptable and must be reported.
 */
long buf_add_capped(struct buf *b, const void *p, size_t n);

/*
 * Append the whole file at path. 0; -EFBIG when it would pass the cap
 * (the buffer is then left as it was); -errno from open/read.
 */
int buf_read_file(struct buf *b, const char *path);

/*
 * The same for a file that must be a regular file (a secret, a config):
 * opened with O_NONBLOCK, so a FIFO is refused at once instead of waited
 * on, and refused after fstat(2) unless it is regular: -EISDIR for a
 * directory, -EINVAL for a FIFO, socket or device. Symbolic links are
 * followed (Kubernetes and systemd credentials are links); what they
 * lead to must be regular.
 */
int buf_read_regular(struct buf *b, const char *path);

/*
 * The same for a secret: also -EPERM when the file is on a kernel file
 * system (/proc, /sys, debugfs, tracefs, securityfs, cgroup), whose
 * regular files (/proc/self/environ, /proc/self/status) are readable,
 * mostly predictable and never a secret. BUF_SECRET_KERNEL_MSG says so.
 */
int buf_read_secret(struct buf *b, const char *path);
#define BUF_SECRET_KERNEL_MSG "a kernel file (/proc, /sys), not a secret"

/* Make room for n more bytes without changing len. */
int buf_reserve(struct buf *b, size_t n);

/* Empty the buffer, keeping its memory. */
void buf_reset(struct buf *b);

/* Cut the buffer to len bytes (len <= b->len). */
void buf_truncate(struct buf *b, size_t len);

/*
 * Hand the data to the caller, who frees it with free(); the buffer is left
 * empty and reusable. Never NULL on success: an empty buffer gives "".
 */
char *buf_detach(struct buf *b, size_t *len);

/* A C string for the contents: "" for an empty buffer. */
const char *buf_cstr(const struct buf *b);

void buf_free(struct buf *b);

#endif
