/*
 * cron: one bitmask per field; matching a minute is five bit tests.
 */
#include "coord/cron.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	int lo, hi;
} fields[5] = {
	{ "minute", 0, 59 }, { "hour", 0, 23 }, { "day of month", 1, 31 },
	{ "month", 1, 12 }, { "day of week", 0, 7 },
};

static int
number(const char **p, int *out)
{
	char *end;
	long v;

	if (**p < '0' || **p > '9')
		return -EINVAL;
	v = strtol(*p, &end, 10);
	if (v > 1000)
		return -EINVAL;
	*p = end;
	*out = (int)v;
	return 0;
}

/* One comma-separated field into *bits; *star when it is a bare `*`. */
static int
field(const char *s, int f, uint64_t *bits, int *star, char *err, size_t errlen)
{
	const char *p = s;
	int lo = fields[f].lo, hi = fields[f].hi;

	*bits = 0;
	*star = !strcmp(s, "*");
	for (;;) {
		int a, b, step = 1;

		if (*p == '*') {
			a = lo;
			b = hi;
			p++;
		} else {
			if (number(&p, &a) < 0)
				goto bad;
			b = a;
			if (*p == '-') {
				p++;
				if (number(&p, &b) < 0)
					goto bad;
			}
		}
		if (*p == '/') {
			p++;
			if (number(&p, &step) < 0 || step < 1) {
				snprintf(err, errlen, "%s: bad step in '%s'",
				    fields[f].name, s);
				return -EINVAL;
			}
		}
		if (a < lo || b > hi || a > b) {
			snprintf(err, errlen, "%s: '%s' is out of range %d-%d",
			    fields[f].name, s, lo, hi);
			return -EINVAL;
		}
		for (int v = a; v <= b; v += step)
			*bits |= 1ull << v;
		if (*p == '\0')
			break;
		if (*p != ',')
			goto bad;
		p++;
	}
	return 0;
bad:
	snprintf(err, errlen, "%s: cannot read '%s' (want *, N, A-B, */N, "
	    "A-B/N or a list of them)", fields[f].name, s);
	return -EINVAL;
}

int
cron_parse(const char *expr, struct cron *out, char *err, size_t errlen)
{
	static const struct {
		const char *macro, *expr;
	} macros[] = {
		{ "@hourly", "0 * * * *" }, { "@daily", "0 0 * * *" },
		{ "@weekly", "0 0 * * 0" }, { "@monthly", "0 0 1 * *" },
		{ "@yearly", "0 0 1 1 *" },
	};
	char buf[CRON_MAX_EXPR], *tok[6], *save = NULL, *t;
	struct cron c;
	uint64_t bits;
	int n = 0, star;

	if (!expr || strlen(expr) >= sizeof(buf)) {
		snprintf(err, errlen, "not a cron expression (empty or too long)");
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(macros) / sizeof(macros[0]); i++)
		if (!strcmp(expr, macros[i].macro))
			expr = macros[i].expr;
	snprintf(buf, sizeof(buf), "%s", expr);
	for (t = strtok_r(buf, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
		if (n == 5) {
			n++;
			break;
		}
		tok[n++] = t;
	}
	if (n != 5) {
		snprintf(err, errlen, "'%s' does not have 5 fields (minute hour "
		    "day-of-month month day-of-week)", expr);
		return -EINVAL;
	}
	memset(&c, 0, sizeof(c));
	for (int f = 0; f < 5; f++) {
		if (field(tok[f], f, &bits, &star, err, errlen) < 0)
			return -EINVAL;
		switch (f) {
		case 0: c.minute = bits; break;
		case 1: c.hour = (uint32_t)bits; break;
		case 2: c.mday = (uint32_t)bits; c.mday_star = star; break;
		case 3: c.month = (uint16_t)bits; break;
		case 4:
			/* 7 is Sunday too. */
			c.wday = (uint8_t)((bits | (bits >> 7)) & 0x7f);
			c.wday_star = star;
			break;
		}
	}
	*out = c;
	return 0;
}

int
cron_matches(const struct cron *c, time_t t)
{
	struct tm tm;
	int dom, dow;

	if (!gmtime_r(&t, &tm))
		return 0;
	if (!(c->minute >> tm.tm_min & 1) || !(c->hour >> tm.tm_hour & 1) ||
	    !(c->month >> (tm.tm_mon + 1) & 1))
		return 0;
	dom = (int)(c->mday >> tm.tm_mday & 1);
	dow = (int)(c->wday >> tm.tm_wday & 1);
	if (!c->mday_star && !c->wday_star)
		return dom || dow;
	return dom && dow;
}

time_t
cron_next(const struct cron *c, time_t t)
{
	time_t m = t - (t % 60 + 60) % 60 + 60;

	/* Minute by minute, skipping whole hours and days that cannot match. */
	for (int i = 0; i < 4 * 366 * 24 * 60; i++) {
		struct tm tm;

		if (cron_matches(c, m))
			return m;
		gmtime_r(&m, &tm);
		if (!(c->hour >> tm.tm_hour & 1))
			m += (60 - tm.tm_min) * 60;
		else
			m += 60;
	}
	return -1;
}
