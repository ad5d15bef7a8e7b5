/* store/store_llm.c: the llm_calls audit trail. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "t.h"

static const char SHA[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

int
main(void)
{
	char dir[] = "/tmp/llm-test-store-XXXXXX", cmd[300];
	struct store *s = NULL;
	struct store_llm_totals t;
	struct store_llm_call c = { 0, "m1", "openai", "translate", SHA, "ok", 200, 1,
		1000, 500, 0.007, 1.5 };
	int64_t job;

	if (!mkdtemp(dir) || store_open(dir, 0, &s) < 0 || !s)
		return 1;
	CHECK_INT("a call without a job", store_llm_call_add(s, &c), 0);
	c.status = "http_error";
	c.http_status = 429;
	c.tokens_in = c.tokens_out = 0;
	c.cost = 0;
	c.attempt = 2;
	CHECK_INT("a failed attempt", store_llm_call_add(s, &c), 0);
	{
		struct store_delivery d = { 0 };
		d.provider = "github";
		d.delivery_id = "x";
		d.event = "push";
		d.repo = "o/r";
		d.outcome = "accepted";
		d.work = STORE_WORK_JOB;
		d.clone_url = "https://example.com/o/r.git";
		d.sha = "1111111111111111111111111111111111111111";
		d.ref = "refs/heads/main";
		d.trigger = "push";
		CHECK_INT("a job", store_intake(s, &d, 1), 0);
		job = d.work_id;
	}
	c.job = job;
	c.status = "ok";
	c.http_status = 200;
	c.tokens_in = 10;
	c.tokens_out = 20;
	c.cost = 0.25;
	c.attempt = 1;
	CHECK_INT("a call of the job", store_llm_call_add(s, &c), 0);
	CHECK_INT("totals of all", store_llm_totals(s, 0, &t), 0);
	CHECK("all: calls, tokens, cost", t.calls == 3 && t.tokens_in == 1010 &&
	    t.tokens_out == 520 && t.cost > 0.2569 && t.cost < 0.2571);
	CHECK_INT("totals of the job", store_llm_totals(s, job, &t), 0);
	CHECK("job: its call only", t.calls == 1 && t.tokens_in == 10 && t.cost == 0.25);
	CHECK_INT("totals of no job", store_llm_totals(s, job + 100, &t), 0);
	CHECK("none", t.calls == 0 && t.cost == 0);
	c.model = NULL;
	CHECK_INT("no model", store_llm_call_add(s, &c), -EINVAL);
	c.model = "m";
	c.attempt = 0;
	CHECK_INT("attempt 0", store_llm_call_add(s, &c), -EINVAL);
	c.attempt = 1;
	c.cost = -1;
	CHECK_INT("a negative cost", store_llm_call_add(s, &c), -EINVAL);
	c.cost = 0;
	c.job = job + 100;
	CHECK("an unknown job is refused", store_llm_call_add(s, &c) < 0);
	store_close(s);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return t_done("test_store_llm");
}
