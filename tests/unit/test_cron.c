/* coord/cron: parsing, matching and next-fire times of schedule: entries. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "coord/cron.h"
#include "t.h"

/* Seconds since the epoch of a UTC date. */
static time_t
utc(int y, int mo, int d, int h, int mi)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	return timegm(&tm);
}

static int
matches(const char *expr, time_t t)
{
	struct cron c;
	char err[256];

	if (cron_parse(expr, &c, err, sizeof(err)) < 0) {
		printf("     parse failed: %s: %s\n", expr, err);
		return -1;
	}
	return cron_matches(&c, t);
}

static int
refused(const char *expr, const char *want)
{
	struct cron c;
	char err[256] = "";
	int rc = cron_parse(expr, &c, err, sizeof(err));

	if (rc != -EINVAL || !strstr(err, want)) {
		printf("     %s: rc %d err \"%s\", want \"%s\"\n", expr, rc, err, want);
		return 0;
	}
	return 1;
}

int
main(void)
{
	/* 2026-12-02 was a Wednesday. */
	time_t wed = utc(2026, 12, 2, 3, 0);
	struct cron c;
	char err[256];

	CHECK_INT("every minute matches", matches("* * * * *", wed + 17 * 60), 1);
	CHECK_INT("0 3 * * * at 03:00", matches("0 3 * * *", wed), 1);
	CHECK_INT("0 3 * * * not at 03:01", matches("0 3 * * *", wed + 60), 0);
	CHECK_INT("seconds inside the minute still match", matches("0 3 * * *", wed + 59), 1);
	CHECK_INT("*/15 at :45", matches("*/15 * * * *", utc(2026, 12, 2, 7, 45)), 1);
	CHECK_INT("*/15 not at :50", matches("*/15 * * * *", utc(2026, 12, 2, 7, 50)), 0);
	CHECK_INT("range 1-5 with step 2: 3 yes", matches("1-5/2 * * * *", utc(2026, 1, 1, 0, 3)), 1);
	CHECK_INT("range 1-5 with step 2: 4 no", matches("1-5/2 * * * *", utc(2026, 1, 1, 0, 4)), 0);
	CHECK_INT("list 5,10-12: 11", matches("5,10-12 * * * *", utc(2026, 1, 1, 0, 11)), 1);
	CHECK_INT("list 5,10-12: 6", matches("5,10-12 * * * *", utc(2026, 1, 1, 0, 6)), 0);
	CHECK_INT("Wednesday is 3", matches("0 3 * * 3", wed), 1);
	CHECK_INT("Sunday as 0", matches("0 0 * * 0", utc(2026, 12, 6, 0, 0)), 1);
	CHECK_INT("Sunday as 7", matches("0 0 * * 7", utc(2026, 12, 6, 0, 0)), 1);
	CHECK_INT("month field: December", matches("0 0 1 12 *", utc(2026, 12, 1, 0, 0)), 1);
	CHECK_INT("month field: not November", matches("0 0 1 11 *", utc(2026, 12, 1, 0, 0)), 0);
	/* Both day fields restricted: either matches (crontab(5)). */
	CHECK_INT("day 15 or Wednesday: a Wednesday", matches("0 3 15 * 3", wed), 1);
	CHECK_INT("day 15 or Wednesday: the 15th", matches("0 3 15 * 3", utc(2026, 12, 15, 3, 0)), 1);
	CHECK_INT("day 15 or Wednesday: neither", matches("0 3 15 * 3", utc(2026, 12, 4, 3, 0)), 0);
	CHECK_INT("day restricted, weekday *: only the day", matches("0 3 15 * *", wed), 0);
	CHECK_INT("@daily", matches("@daily", utc(2026, 12, 2, 0, 0)), 1);
	CHECK_INT("@weekly on a Wednesday", matches("@weekly", utc(2026, 12, 2, 0, 0)), 0);

	CHECK("minute 60 refused", refused("60 * * * *", "minute: '60' is out of range 0-59"));
	CHECK("hour 24 refused", refused("0 24 * * *", "hour"));
	CHECK("day 0 refused", refused("0 0 0 * *", "day of month"));
	CHECK("month 13 refused", refused("0 0 * 13 *", "month"));
	CHECK("weekday 8 refused", refused("0 0 * * 8", "day of week"));
	CHECK("four fields refused", refused("* * * *", "does not have 5 fields"));
	CHECK("six fields refused", refused("* * * * * *", "does not have 5 fields"));
	CHECK("step 0 refused", refused("*/0 * * * *", "bad step"));
	CHECK("backwards range refused", refused("5-1 * * * *", "out of range"));
	CHECK("names refused", refused("0 0 * jan *", "cannot read"));
	CHECK("a trailing comma refused", refused("1, * * * *", "cannot read"));
	CHECK("empty refused", refused("", "does not have 5 fields"));

	CHECK_INT("parse ok", cron_parse("30 4 * * 1-5", &c, err, sizeof(err)), 0);
	CHECK_INT("next weekday 04:30 after Wednesday 03:00",
	    (long long)cron_next(&c, wed), (long long)utc(2026, 12, 2, 4, 30));
	CHECK_INT("next after Friday 05:00 is Monday 04:30",
	    (long long)cron_next(&c, utc(2026, 12, 4, 5, 0)), (long long)utc(2026, 12, 7, 4, 30));
	CHECK_INT("next is strictly after", (long long)cron_next(&c, utc(2026, 12, 2, 4, 30)),
	    (long long)utc(2026, 12, 3, 4, 30));
	CHECK_INT("parse Feb 30", cron_parse("0 0 30 2 *", &c, err, sizeof(err)), 0);
	CHECK_INT("a date that never comes: -1", (long long)cron_next(&c, wed), -1);
	return t_done("test_cron");
}
