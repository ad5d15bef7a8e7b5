/*
 * log: one line per event on stderr (or a log file), logfmt-style:
 *
 *   ts=2026-12-02T10:52:22.123Z level=info msg="job claimed" job=12 runner=gpu0
 *
 * `fields` is a printf format producing the key=value pairs (may be NULL).
 * Values that can contain spaces or quotes go through %s with log_quote():
 * the caller builds them, the logger never guesses.
 *
 * Leaf modules log at debug at most; the caller that decides logs once.
 */
#ifndef KB_COMMON_LOG_H
#define KB_COMMON_LOG_H

#include <stddef.h>

enum log_level {
	LOG_DEBUG,
	LOG_INFO,
	LOG_WARN,
	LOG_ERROR,
	LOG_OFF,
};

void log_set_level(enum log_level level);
enum log_level log_get_level(void);

/* "debug", "info", "warn", "error", "off"; -EINVAL for anything else. */
int log_level_parse(const char *name, enum log_level *out);

/*
 * Send logs to path (appending, created 0640), or back to stderr with NULL.
 * Called again with the same path it reopens the file: SIGHUP after a log
 * rotation. 0 or -errno; on failure the previous destination stays.
 */
int log_open(const char *path);
int log_reopen(void);

void log_msg(enum log_level level, const char *msg, const char *fields, ...)
	__attribute__((format(printf, 3, 4)));

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

/*
 * Quote s for a logfmt value into dst (always NUL-terminated, truncated
 * with "..." when it does not fit). Returns dst, so it can sit in the
 * argument list: log_info("x", "path=%s", log_quote(q, sizeof(q), path)).
 */
const char *log_quote(char *dst, size_t len, const char *s);

#endif
