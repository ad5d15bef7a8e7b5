#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/jsonx.h"
#include "t.h"

int
main(void)
{
	const char *text = "{\"forges\": {\"github\": {\"token_file\": \"/run/t\", \"n\": 3}},"
	    " \"on\": true, \"x\": 2.5}";
	char err[256], path[] = "/tmp/kbjsonXXXXXX";
	struct buf b = BUF_INIT(1024);
	json_t *v = NULL;
	int fd;

	CHECK_INT("parse valid JSON", jsonx_parse(text, strlen(text), &v, err, sizeof(err)), 0);
	CHECK_STR("dotted path to a string", jsonx_str(v, "forges.github.token_file", NULL), "/run/t");
	CHECK_INT("dotted path to an integer", jsonx_int(v, "forges.github.n", -1), 3);
	CHECK_INT("missing member gives the default", jsonx_int(v, "forges.gitlab.n", -1), -1);
	CHECK_INT("wrong type gives the default", jsonx_int(v, "forges.github.token_file", 7), 7);
	CHECK_INT("boolean getter", jsonx_bool(v, "on", 0), 1);
	CHECK("number getter", jsonx_num(v, "x", 0) == 2.5);
	CHECK_INT("dump into a buf", jsonx_dump(v, JSON_COMPACT | JSON_SORT_KEYS, &b), 0);
	CHECK("dump is compact JSON", strstr(buf_cstr(&b), "\"on\":true") != NULL);
	json_decref(v);

	CHECK_INT("malformed JSON is refused", jsonx_parse("{\"a\": }", 7, &v, err, sizeof(err)), -EINVAL);
	CHECK("the error names the line and column", strstr(err, "line 1 column") != NULL);

	struct buf small = BUF_INIT(4);
	v = json_pack("{s:s}", "key", "a long value");
	CHECK_INT("dump past the cap fails", jsonx_dump(v, 0, &small), -ENOBUFS);
	CHECK_INT("and leaves nothing behind", small.len, 0);
	json_decref(v);

	fd = mkstemp(path);
	(void)!write(fd, "[1, 2, 3]", 9);
	close(fd);
	CHECK_INT("load a file", jsonx_load_file(path, 100, &v, err, sizeof(err)), 0);
	CHECK_INT("file contents", json_array_size(v), 3);
	json_decref(v);
	CHECK_INT("a file over the cap is refused", jsonx_load_file(path, 4, &v, err, sizeof(err)), -EFBIG);
	unlink(path);
	CHECK_INT("a missing file", jsonx_load_file(path, 100, &v, err, sizeof(err)), -ENOENT);

	const char *sv[] = { "a", "b", NULL };
	v = jsonx_strv(sv);
	CHECK("string vector", json_array_size(v) == 2 && !strcmp(json_string_value(json_array_get(v, 1)), "b"));
	json_decref(v);
	buf_free(&b);
	buf_free(&small);
	return t_done("test_jsonx");
}
