#include <errno.h>
#include <string.h>

#include "common/crypto.h"
#include "webhooks/verify.h"
#include "t.h"

int
main(void)
{
	/* GitHub's published test vector (docs: "Validating webhook deliveries"). */
	const char *secret = "It's a Secret to Everybody", *body = "Hello, World!";
	const char *good = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
	size_t sl = strlen(secret), bl = strlen(body);
	char hex[WH_SIG_HEX], bad[80];

	CHECK_INT("crypto init", crypto_init(), 0);
	wh_sign_hex(secret, sl, body, bl, hex);
	CHECK_STR("sign matches GitHub's vector", hex, good + 7);
	CHECK_INT("GitHub vector verifies", wh_verify_github(secret, sl, good, body, bl), 0);
	CHECK_INT("uppercase hex verifies too", wh_verify_github(secret, sl,
	    "sha256=757107EA0EB2509FC211221CCE984B8A37570B6D7586C22C46F4379C8B043E17", body, bl), 0);
	CHECK_INT("wrong secret", wh_verify_github("It's a Secret to Everybody!", sl + 1, good, body, bl), -EACCES);
	CHECK_INT("changed body", wh_verify_github(secret, sl, good, "Hello, World?", bl), -EACCES);
	CHECK_INT("truncated body", wh_verify_github(secret, sl, good, body, bl - 1), -EACCES);
	CHECK_INT("missing header", wh_verify_github(secret, sl, NULL, body, bl), -EBADMSG);
	CHECK_INT("sha1 prefix refused", wh_verify_github(secret, sl,
	    "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59", body, bl), -EBADMSG);
	CHECK_INT("no prefix refused for GitHub", wh_verify_github(secret, sl, good + 7, body, bl), -EBADMSG);
	strcpy(bad, good);
	bad[strlen(bad) - 1] = 'g';
	CHECK_INT("non-hex digit", wh_verify_github(secret, sl, bad, body, bl), -EBADMSG);
	CHECK_INT("short signature", wh_verify_github(secret, sl, "sha256=7571", body, bl), -EBADMSG);
	strcpy(bad, good);
	strcat(bad, "00");
	CHECK_INT("long signature", wh_verify_github(secret, sl, bad, body, bl), -EBADMSG);
	strcpy(bad, good);
	bad[10] = bad[10] == '0' ? '1' : '0';
	CHECK_INT("one digit off", wh_verify_github(secret, sl, bad, body, bl), -EACCES);

	/* Gitea: the same MAC, bare hex */
	CHECK_INT("gitea verifies bare hex", wh_verify_gitea(secret, sl, good + 7, body, bl), 0);
	CHECK_INT("gitea refuses a prefixed value", wh_verify_gitea(secret, sl, good, body, bl), -EBADMSG);
	CHECK_INT("gitea wrong body", wh_verify_gitea(secret, sl, good + 7, "x", 1), -EACCES);
	CHECK_INT("gitea missing", wh_verify_gitea(secret, sl, NULL, body, bl), -EBADMSG);

	/* GitLab: the token itself */
	CHECK_INT("gitlab token", wh_verify_gitlab("tok-123", 7, "tok-123"), 0);
	CHECK_INT("gitlab wrong token", wh_verify_gitlab("tok-123", 7, "tok-124"), -EACCES);
	CHECK_INT("gitlab prefix of token", wh_verify_gitlab("tok-123", 7, "tok-12"), -EACCES);
	CHECK_INT("gitlab longer token", wh_verify_gitlab("tok-123", 7, "tok-1234"), -EACCES);
	CHECK_INT("gitlab missing", wh_verify_gitlab("tok-123", 7, NULL), -EBADMSG);
	CHECK_INT("gitlab empty", wh_verify_gitlab("tok-123", 7, ""), -EBADMSG);
	return t_done("test_wh_verify");
}
