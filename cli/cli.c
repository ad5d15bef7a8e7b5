#include "cli/cli.h"

#include "conf/config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
cli_parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

int
cli_parse_num(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (*end || end == s || v < 0)
		return -EINVAL;
	*out = v;
	return 0;
}

int
cli_parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end || !v || v > (~0ull >> shift))
		return -EINVAL;
	*out = (size_t)(v << shift);
	return 0;
}

int
cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kernelbot %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	return EXIT_USAGE;
}

int
config_load_cli(const char *cmd, const char *path, int flags,
    struct config **out)
{
	char err[CONFIG_ERR_MAX];
	int error;

	if (!path && access(CONFIG_DEFAULT_PATH, F_OK) < 0)
		error = config_default(out);
	else
		error = config_load(path ? path : CONFIG_DEFAULT_PATH, flags, out,
		    err, sizeof(err));
	if (error == -EINVAL) {
		fprintf(stderr, "kernelbot %s: %s\n", cmd, err);
		return EXIT_USAGE;
	}
	if (error < 0) {
		fprintf(stderr, "kernelbot %s: %s: %s\n", cmd,
		    path ? path : CONFIG_DEFAULT_PATH,
		    error == -EFBIG ? "file too large" : strerror(-error));
		return error == -ENOENT ? EXIT_USAGE : 1;
	}
	return 0;
}
