/*
 * fuzz_event: the body of the payload-parser targets. An input is the
 * event name, a newline, and the body (tests/fuzz/corpus/<forge>/).
 */
#ifndef KB_FUZZ_EVENT_H
#define KB_FUZZ_EVENT_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "webhooks/event.h"

static int
fuzz_event(enum config_forge forge, const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	struct wh_event ev;
	char err[300], *event, *body;
	size_t blen;

	if (!nl)
		return 0;
	if (!(event = strndup((const char *)data, (size_t)(nl - data))))
		return 0;
	blen = size - (size_t)(nl - data) - 1;
	/* Exact size, not NUL-terminated: the parser must honour the length. */
	if ((body = malloc(blen ? blen : 1))) {
		memcpy(body, nl + 1, blen);
		(void)wh_event_label(forge, event);
		int rc;

		err[0] = '\0';
		if ((rc = wh_event_parse(forge, event, body, blen, &ev, err, sizeof(err))) == 0) {
			/* Touch every string the event hands out. */
			size_t sum = 0;
			const char *s[] = { ev.repo, ev.clone_url, ev.default_branch, ev.ref,
				ev.before, ev.after, ev.command, ev.args, ev.actor,
				ev.author_association, ev.head_ref, ev.reason };
			for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
				sum += s[i] ? strlen(s[i]) : 0;
			if (ev.kind == WH_COMMAND && (!ev.command || !ev.args))
				abort();
			(void)sum;
			wh_event_free(&ev);
		} else if (rc == -EINVAL && !err[0]) {
			abort();	/* every refusal explains itself */
		}
		free(body);
	}
	free(event);
	return 0;
}

#endif
