#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "t.h"

int
main(void)
{
	struct buf b = BUF_INIT(16);
	char *p;
	size_t len;

	CHECK_STR("empty buffer reads as an empty string", buf_cstr(&b), "");
	CHECK_INT("append under the cap", buf_addstr(&b, "hello"), 0);
	CHECK_INT("printf under the cap", buf_printf(&b, " %d", 42), 0);
	CHECK_STR("contents are NUL-terminated", buf_cstr(&b), "hello 42");
	CHECK_INT("append past the cap is refused", buf_addstr(&b, "0123456789"), -ENOBUFS);
	CHECK_STR("a refused append leaves the buffer unchanged", buf_cstr(&b), "hello 42");
	CHECK_INT("printf past the cap is refused", buf_printf(&b, "%s", "0123456789"), -ENOBUFS);
	CHECK_INT("capped append reports dropped bytes", buf_add_capped(&b, "abcdefghijkl", 12), 4);
	CHECK_INT("capped append fills to the cap", b.len, 16);
	CHECK_STR("capped append keeps the head", buf_cstr(&b), "hello 42abcdefgh");
	buf_truncate(&b, 5);
	CHECK_STR("truncate", buf_cstr(&b), "hello");
	p = buf_detach(&b, &len);
	CHECK_STR("detach hands over the data", p, "hello");
	CHECK_INT("detach gives the length", len, 5);
	CHECK(__FILE__ ": detach empties the buffer", b.len == 0 && b.data == NULL);
	free(p);
	p = buf_detach(&b, NULL);
	CHECK_STR("detaching an empty buffer gives \"\"", p, "");
	free(p);

	struct buf big = BUF_INIT(1u << 20);
	int ok = 1;
	for (int i = 0; i < 100000 && ok; i++)
		ok = buf_addch(&big, (char)('a' + i % 26)) == 0;
	CHECK("many small appends grow the buffer", ok && big.len == 100000);
	CHECK("growth keeps the contents", big.data[99999] == (char)('a' + 99999 % 26));
	buf_reset(&big);
	CHECK_INT("reset empties", big.len, 0);
	buf_free(&big);
	buf_free(&b);

	{
		char path[] = "/tmp/kbbufXXXXXX";
		int fd = mkstemp(path);
		struct buf f = BUF_INIT(8);
		(void)!write(fd, "0123456789", 10);
		close(fd);
		CHECK_INT("read_file past the cap is -EFBIG", buf_read_file(&f, path), -EFBIG);
		CHECK_INT("and leaves the buffer as it was", f.len, 0);
		f.max = 64;
		buf_addstr(&f, ">");
		CHECK_INT("read_file appends", buf_read_file(&f, path), 0);
		CHECK_STR("read_file contents", buf_cstr(&f), ">0123456789");
		unlink(path);
		CHECK_INT("read_file of a missing file", buf_read_file(&f, path), -ENOENT);
		buf_free(&f);
	}
	{
		/* A FIFO with no writer: refused at once, not waited on. */
		char dir[] = "/tmp/kbbufXXXXXX", fifo[64], file[64];
		struct buf f = BUF_INIT(64);
		FILE *fp;

		CHECK("a scratch directory", mkdtemp(dir) != NULL);
		snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
		snprintf(file, sizeof(file), "%s/file", dir);
		CHECK("a FIFO", mkfifo(fifo, 0600) == 0);
		CHECK_INT("read_regular refuses a FIFO", buf_read_regular(&f, fifo), -EINVAL);
		CHECK_INT("read_regular refuses a directory", buf_read_regular(&f, dir), -EISDIR);
		CHECK_INT("read_regular refuses a device", buf_read_regular(&f, "/dev/null"), -EINVAL);
		CHECK_INT("read_regular of a missing file", buf_read_regular(&f, "/nonexistent/x"), -ENOENT);
		CHECK_INT("and nothing was read", f.len, 0);
		fp = fopen(file, "w");
		fputs("s3cret", fp);
		fclose(fp);
		CHECK_INT("read_regular reads a regular file", buf_read_regular(&f, file), 0);
		CHECK_STR("its contents", buf_cstr(&f), "s3cret");
		buf_reset(&f);
		CHECK_INT("read_secret reads a regular file", buf_read_secret(&f, file), 0);
		CHECK_STR("the same", buf_cstr(&f), "s3cret");
		buf_reset(&f);
		CHECK_INT("read_secret refuses /proc", buf_read_secret(&f, "/proc/self/environ"), -EPERM);
		CHECK_INT("read_secret refuses /sys", buf_read_secret(&f, "/sys/kernel/uevent_seqnum"), -EPERM);
		CHECK_INT("and a FIFO as before", buf_read_secret(&f, fifo), -EINVAL);
		CHECK_INT("nothing read", f.len, 0);
		unlink(fifo);
		unlink(file);
		rmdir(dir);
		buf_free(&f);
	}
	return t_done("test_buf");
}
