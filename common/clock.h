/*
 * clock: the monotonic clock in seconds, for deadlines and the durations
 * kernelbot reports (never for timestamps: those are wall-clock time).
 */
#ifndef KB_COMMON_CLOCK_H
#define KB_COMMON_CLOCK_H

double clock_mono_s(void);

#endif
