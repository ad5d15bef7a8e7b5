/*
 * t.h: the unit-test harness. One binary per module; every check is named
 * and reported; the last line is "NAME: N passed, N failed" and the exit
 * status is 1 when anything failed.
 */
#ifndef KB_TESTS_T_H
#define KB_TESTS_T_H

#include <stdio.h>
#include <string.h>

static int t_passed, t_failed;

static inline int
t_check(const char *file, int line, const char *name, int ok)
{
	if (ok) {
		t_passed++;
	} else {
		t_failed++;
		printf("FAIL %s (%s:%d)\n", name, file, line);
	}
	return ok;
}

#define CHECK(name, cond) t_check(__FILE__, __LINE__, (name), !!(cond))
#define CHECK_INT(name, got, want) do { \
	long long g_ = (long long)(got), w_ = (long long)(want); \
	if (!t_check(__FILE__, __LINE__, (name), g_ == w_)) \
		printf("     got %lld, want %lld\n", g_, w_); \
} while (0)
#define CHECK_STR(name, got, want) do { \
	const char *g_ = (got), *w_ = (want); \
	if (!t_check(__FILE__, __LINE__, (name), g_ && w_ && !strcmp(g_, w_))) \
		printf("     got \"%s\", want \"%s\"\n", g_ ? g_ : "(null)", w_); \
} while (0)

static inline int
t_done(const char *suite)
{
	printf("%s: %d passed, %d failed\n", suite, t_passed, t_failed);
	return t_failed ? 1 : 0;
}

#endif
