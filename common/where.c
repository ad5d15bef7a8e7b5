#include "common/where.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static struct where current = WHERE_INIT;

/* The string fields: current's are its own copies (or NULL). */
static const size_t strings[] = {
	offsetof(struct where, python), offsetof(struct where, harness),
	offsetof(struct where, ncu), offsetof(struct where, include),
	offsetof(struct where, cache), offsetof(struct where, prompts),
	offsetof(struct where, judge_dir), offsetof(struct where, sandbox_pretend_missing),
};
#define NSTRINGS (sizeof(strings) / sizeof(strings[0]))
#define FIELD(w, off) (*(const char **)(void *)((char *)(w) + (off)))

const struct where *
where(void)
{
	return &current;
}

int
where_set(const struct where *w)
{
	struct where next = *w;
	size_t i;

	for (i = 0; i < NSTRINGS; i++) {
		const char *s = FIELD(w, strings[i]);

		if (s && !(FIELD(&next, strings[i]) = strdup(s))) {
			while (i--)
				free((char *)FIELD(&next, strings[i]));
			return -ENOMEM;
		}
	}
	for (i = 0; i < NSTRINGS; i++)
		free((char *)FIELD(&current, strings[i]));
	current = next;
	return 0;
}
