/*
 * wpar: the evaluation worker's passes over large host buffers, split
 * across threads.
 *
 * At GPU sizes a trial's outputs are hundreds of MiB; the worker reads
 * a set's input file, counts the poison left in the outputs, compares
 * them with a second look taken after a pause and with the other run's,
 * compares the inputs with a pristine copy, and writes the outputs for
 * the judge. One thread does each of these at a few GB/s, several at the
 * memory's bandwidth. Threads are what the worker's lockdown still allows
 * (no processes); they exist only for the duration of one call, so no
 * worker thread runs while the candidate does.
 */
#ifndef KB_GPU_WPAR_H
#define KB_GPU_WPAR_H

#include <stddef.h>
#include <sys/types.h>

#define WPAR_MAX_THREADS 16
#define WPAR_MIN_CHUNK (4u << 20)	/* below this per thread, fewer threads */

/* The counts of one pass over n bytes of elements of elsize bytes. */
struct wpar_counts {
	size_t poison;		/* elements of p equal to pat */
	size_t late;		/* elements of p that differ in `again` */
	size_t differ;		/* elements of p that differ in `other` */
};

/*
 * One fused pass over p (n bytes, elements of elsize bytes): poison hits
 * against pat (NULL: not counted), elements that differ in again and in
 * other (either NULL: not counted). Counts are added to *c.
 */
void wpar_count(const unsigned char *p, const unsigned char *again,
    const unsigned char *other, size_t n, int elsize, const unsigned char pat[8],
    struct wpar_counts *c);

/* Read exactly n bytes at off of fd into buf. 0, -errno, or -EPROTO (short). */
int wpar_pread(int fd, unsigned char *buf, size_t n, off_t off);

/* Write n bytes of buf at offset 0 of fd. 0 or -errno. */
int wpar_pwrite(int fd, const unsigned char *buf, size_t n);

#endif
