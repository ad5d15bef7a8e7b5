/* wpar: the worker's threaded passes count exactly what one pass would,
 * across thread boundaries and element sizes, and its file I/O is exact. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/wpar.h"
#include "tests/unit/t.h"

#define BIG ((size_t)9 * WPAR_MIN_CHUNK + 4 * 13)	/* several threads, a ragged end */

int
main(void)
{
	unsigned char *a = malloc(BIG), *b = malloc(BIG), *c = malloc(BIG), *r = malloc(BIG);
	const unsigned char pat4[8] = { 0xA5, 0xA5, 0xA5, 0x7F }, pat2[8] = { 0xA5, 0x7D };
	struct wpar_counts k = { 0 };
	char path[] = "/tmp/evalperf-test-wpar.XXXXXX";
	size_t holes[] = { 0, 1, WPAR_MIN_CHUNK / 4 - 1, WPAR_MIN_CHUNK / 4,
		BIG / 4 / 2, BIG / 4 - 1 };
	int fd;

	if (!a || !b || !c || !r)
		return 1;
	for (size_t i = 0; i < BIG; i++)
		a[i] = (unsigned char)(i * 7 + 3);
	memcpy(b, a, BIG);
	memcpy(c, a, BIG);

	wpar_count(a, b, c, BIG, 4, pat4, &k);
	CHECK_INT("equal buffers: nothing late", k.late, 0);
	CHECK_INT("equal buffers: nothing differs", k.differ, 0);
	CHECK_INT("no poison in a ramp", k.poison, 0);

	/* Poison at chunk edges (first, last, around a thread boundary). */
	for (size_t i = 0; i < sizeof(holes) / sizeof(holes[0]); i++)
		memcpy(a + holes[i] * 4, pat4, 4);
	memcpy(b, a, BIG);
	memcpy(c, a, BIG);
	b[5] ^= 1;			/* element 1 */
	b[BIG - 1 - 4 * 13] ^= 0x80;	/* inside the last whole element */
	c[WPAR_MIN_CHUNK] ^= 2;
	memset(&k, 0, sizeof(k));
	wpar_count(a, b, c, BIG, 4, pat4, &k);
	CHECK_INT("poison found at every chunk edge", k.poison, sizeof(holes) / sizeof(holes[0]));
	CHECK_INT("two late elements", k.late, 2);
	CHECK_INT("one differing element", k.differ, 1);

	memset(&k, 0, sizeof(k));
	wpar_count(a, NULL, NULL, BIG, 2, pat2, &k);
	CHECK("2-byte elements: counted without the other buffers", k.late == 0 && k.differ == 0);
	{
		size_t want = 0;
		for (size_t i = 0; i + 2 <= BIG; i += 2)
			want += a[i] == 0xA5 && a[i + 1] == 0x7D;
		CHECK_INT("2-byte poison count matches one pass", k.poison, want);
	}
	memset(&k, 0, sizeof(k));
	wpar_count(a, b, NULL, BIG, 1, NULL, &k);
	CHECK_INT("byte granularity: two bytes differ", k.late, 2);
	memset(&k, 0, sizeof(k));
	wpar_count(a, b, NULL, 0, 4, pat4, &k);
	CHECK("an empty buffer counts nothing", k.poison == 0 && k.late == 0);

	CHECK("temporary file", (fd = mkstemp(path)) >= 0);
	CHECK_INT("threaded write", wpar_pwrite(fd, a, BIG), 0);
	CHECK_INT("threaded read back", wpar_pread(fd, r, BIG, 0), 0);
	CHECK("read equals written", !memcmp(a, r, BIG));
	CHECK_INT("read at an offset", wpar_pread(fd, r, 100, 7), 0);
	CHECK("offset read equals", !memcmp(a + 7, r, 100));
	CHECK_INT("past the end is short", wpar_pread(fd, r, 64, (off_t)BIG - 32), -EPROTO);
	CHECK_INT("a rewrite in place, shorter", wpar_pwrite(fd, c, 1000), 0);
	CHECK_INT("read of the rewritten head", wpar_pread(fd, r, 1000, 0), 0);
	CHECK("rewritten head holds the new bytes", !memcmp(c, r, 1000));
	close(fd);
	unlink(path);
	CHECK_INT("a bad descriptor fails", wpar_pread(-1, r, 10, 0), -EBADF);
	free(a);
	free(b);
	free(c);
	free(r);
	return t_done("test_wpar");
}
