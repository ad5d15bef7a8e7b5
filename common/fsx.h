/*
 * fsx: the two file-system steps every part of kernelbot that writes
 * results needs, done once: a directory with its parents, and a file
 * replaced whole (written beside it, fsync'd, renamed), so a crash leaves
 * the old file or the new one, never half of one.
 */
#ifndef KB_COMMON_FSX_H
#define KB_COMMON_FSX_H

#include <stddef.h>
#include <sys/types.h>

/* mkdir -p path, creating what is missing with mode. 0 or -errno. */
int fsx_mkdir_p(const char *path, mode_t mode);

/* The same for the directories above the file path (not path itself). */
int fsx_mkdir_parents(const char *path, mode_t mode);

/* Replace path with data (mode 0644). 0 or -errno; path untouched on error. */
int fsx_write_file(const char *path, const void *data, size_t len);

/*
 * rm -r path without following symbolic links; 0 also when path does
 * not exist, else -errno of the first failure.
 */
int fsx_rmtree(const char *path);

#endif
