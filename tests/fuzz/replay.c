/*
 * replay: runs a libFuzzer target over every file of a corpus directory
 * without libFuzzer, so `make test` replays the corpus (under the
 * sanitizers with SANITIZE=...). A crash or sanitizer report fails the
 * run; the last line is "fuzz_NAME: N passed, 0 failed".
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REPLAY_MAX_INPUT (4u << 20)	/* corpus files are small; refuse surprises */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
replay_file(const char *path)
{
	struct stat st;
	uint8_t *data;
	ssize_t n;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0 || (size_t)st.st_size > REPLAY_MAX_INPUT) {
		fprintf(stderr, "replay: %s: %s\n", path, fd < 0 ? strerror(errno) : "unreadable or too large");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* An exact-size heap copy, so ASan sees any read past the end. */
	data = malloc((size_t)st.st_size ? (size_t)st.st_size : 1);
	while (data && got < (size_t)st.st_size &&
	    (n = read(fd, data + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	close(fd);
	if (!data || got != (size_t)st.st_size) {
		free(data);
		return -1;
	}
	LLVMFuzzerTestOneInput(data, got);
	free(data);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	char **names = NULL, path[4096];
	size_t n = 0, cap = 0;
	int passed = 0, failed = 0;
	struct dirent *e;
	DIR *d;

	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", name);
		return 2;
	}
	if (!(d = opendir(argv[1]))) {
		fprintf(stderr, "%s: %s: %s\n", name, argv[1], strerror(errno));
		printf("%s: 0 passed, 1 failed\n", name);
		return 1;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **p;
			cap = cap ? cap * 2 : 64;
			if (!(p = realloc(names, cap * sizeof(*names))))
				return 1;
			names = p;
		}
		if (!(names[n++] = strdup(e->d_name)))
			return 1;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", argv[1], names[i]);
		if (replay_file(path) < 0)
			failed++;
		else
			passed++;
		free(names[i]);
	}
	free(names);
	if (passed == 0 && failed == 0) {
		fprintf(stderr, "%s: empty corpus %s\n", name, argv[1]);
		failed = 1;
	}
	printf("%s: %d passed, %d failed\n", name, passed, failed);
	return failed ? 1 : 0;
}
