#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/yamldoc.h"
#include "t.h"

static struct yamldoc *
parse(const char *text, char *err, size_t errlen, int *rc)
{
	struct yamldoc *d = NULL;

	*rc = yamldoc_parse("test.yml", text, strlen(text), &d, err, errlen);
	return d;
}

int
main(void)
{
	const char *cfg =
	    "# kernelbot server config\n"
	    "listen: 127.0.0.1:8080\n"
	    "data_dir: /var/lib/kernelbot\n"
	    "allow_repos:\n"
	    "  - acme/*\n"
	    "  - '!acme/secret'\n"
	    "forges:\n"
	    "  github:\n"
	    "    webhook_secret_file: /etc/kb/secret\n"
	    "    enabled: true\n"
	    "workers: 4\n"
	    "ratio: 0.5\n"
	    "quoted: \"42\"\n"
	    "empty:\n"
	    "big: 1e3\n"
	    "hex: 0x10\n"
	    "text: |\n"
	    "  line one\n"
	    "  line two\n";
	char err[512];
	struct yamldoc *d;
	json_t *root, *arr;
	int rc;

	d = parse(cfg, err, sizeof(err), &rc);
	CHECK_INT("a config parses", rc, 0);
	if (!d)
		return t_done("test_yamldoc");
	root = yamldoc_root(d);
	CHECK_STR("plain scalar string", jsonx_str(root, "listen", NULL), "127.0.0.1:8080");
	CHECK_STR("nested mapping", jsonx_str(root, "forges.github.webhook_secret_file", NULL), "/etc/kb/secret");
	CHECK_INT("boolean", jsonx_bool(root, "forges.github.enabled", 0), 1);
	CHECK_INT("integer", jsonx_int(root, "workers", 0), 4);
	CHECK("float", jsonx_num(root, "ratio", 0) == 0.5);
	CHECK("exponent float", jsonx_num(root, "big", 0) == 1000.0);
	CHECK_INT("hex integer", jsonx_int(root, "hex", 0), 16);
	CHECK_STR("quoted numbers stay strings", jsonx_str(root, "quoted", NULL), "42");
	CHECK("empty value is null", json_is_null(json_object_get(root, "empty")));
	CHECK_STR("block scalar", jsonx_str(root, "text", NULL), "line one\nline two\n");
	arr = json_object_get(root, "allow_repos");
	CHECK_INT("sequence", json_array_size(arr), 2);
	CHECK_STR("quoted sequence item", json_string_value(json_array_get(arr, 1)), "!acme/secret");
	CHECK_INT("line of a string node", yamldoc_line(d, json_object_get(root, "listen")), 2);
	CHECK_INT("line of a nested node", yamldoc_line(d, jsonx_path(root, "forges.github.webhook_secret_file")), 9);
	CHECK_INT("line of a sequence", yamldoc_line(d, arr), 5);
	CHECK_INT("line of a boolean member", yamldoc_member_line(d, jsonx_path(root, "forges.github"), "enabled"), 10);
	CHECK_INT("line of a null member", yamldoc_member_line(d, root, "empty"), 14);
	CHECK_INT("no line for an unknown node", yamldoc_line(d, NULL), 0);
	yamldoc_free(d);

	d = parse("a: 1\na: 2\n", err, sizeof(err), &rc);
	CHECK_INT("duplicate keys are refused", rc, -EINVAL);
	CHECK("duplicate key error names file and line", strstr(err, "test.yml:2:") && strstr(err, "duplicate key 'a'"));
	d = parse("a: [1, 2\n", err, sizeof(err), &rc);
	CHECK_INT("malformed YAML is refused", rc, -EINVAL);
	CHECK("malformed YAML error names the file", strncmp(err, "test.yml:", 9) == 0);
	d = parse("a: &x [1]\nb: *x\n", err, sizeof(err), &rc);
	CHECK_INT("anchors and aliases are refused", rc, -EINVAL);
	d = parse("? [1]\n: 2\n", err, sizeof(err), &rc);
	CHECK_INT("non-scalar keys are refused", rc, -EINVAL);
	d = parse("a: 1\n---\nb: 2\n", err, sizeof(err), &rc);
	CHECK_INT("a second document is refused", rc, -EINVAL);

	char deep[400];
	memset(deep, '[', 200);
	deep[200] = '\0';
	d = parse(deep, err, sizeof(err), &rc);
	CHECK_INT("nesting past the limit is refused", rc, -EINVAL);

	d = parse("", err, sizeof(err), &rc);
	CHECK("an empty document is null", rc == 0 && d && json_is_null(yamldoc_root(d)));
	yamldoc_free(d);
	d = parse("x: .inf\n", err, sizeof(err), &rc);
	CHECK_INT("non-finite floats are refused", rc, -EINVAL);
	CHECK_INT("a missing file", yamldoc_load("/nonexistent/kb.yml", &d, err, sizeof(err)), -ENOENT);
	CHECK("missing file error names the path", strstr(err, "/nonexistent/kb.yml") != NULL);
	return t_done("test_yamldoc");
}
