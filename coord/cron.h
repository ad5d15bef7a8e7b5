/*
 * cron: the five-field cron expressions of the server's `schedule:`
 * (minute hour day-of-month month day-of-week), as crontab(5) has them:
 * `*`, numbers, ranges `a-b`, steps `*\/n` and `a-b/n`, lists `a,b-c`;
 * day-of-week 0-7 (0 and 7 are Sunday); when both day fields are
 * restricted, a day matching either one matches (Vixie cron's rule).
 * Names (jan, mon) and @-macros other than @hourly, @daily, @weekly,
 * @monthly and @yearly are not accepted. Times are UTC.
 */
#ifndef KB_COORD_CRON_H
#define KB_COORD_CRON_H

#include <stdint.h>
#include <time.h>

#define CRON_MAX_EXPR 256

struct cron {
	uint64_t minute;	/* bit n: minute n matches */
	uint32_t hour;
	uint32_t mday;		/* bits 1..31 */
	uint16_t month;		/* bits 1..12 */
	uint8_t wday;		/* bits 0..6 */
	int mday_star, wday_star;
};

/*
 * Parse expr. 0, or -EINVAL with a reason naming the field in err
 * ("hour: 24 is out of range 0-23").
 */
int cron_parse(const char *expr, struct cron *out, char *err, size_t errlen);

/* 1 when the minute holding t (seconds since the epoch, UTC) matches. */
int cron_matches(const struct cron *c, time_t t);

/*
 * The first matching minute strictly after t, as seconds since the epoch
 * (a multiple of 60); -1 when none comes within about four years.
 */
time_t cron_next(const struct cron *c, time_t t);

#endif
