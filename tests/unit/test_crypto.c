#include <string.h>

#include "common/crypto.h"
#include "t.h"

int
main(void)
{
	const char *secret = "It's a Secret to Everybody", *body = "Hello, World!";
	unsigned char mac[CRYPTO_SHA256_BYTES];
	char hex[CRYPTO_SHA256_HEX];
	struct crypto_sha256 h;

	CHECK_INT("init", crypto_init(), 0);
	crypto_sha256_hex("abc", 3, hex);
	CHECK_STR("SHA-256 of abc (FIPS 180-2 vector)", hex,
	    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	crypto_sha256_start(&h);
	crypto_sha256_add(&h, "a", 1);
	crypto_sha256_add(&h, "bc", 2);
	crypto_sha256_end(&h, mac);
	crypto_hex(mac, sizeof(mac), hex);
	CHECK_STR("incremental SHA-256 matches one-shot", hex,
	    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	crypto_hmac_sha256(secret, strlen(secret), body, strlen(body), mac);
	crypto_hex(mac, sizeof(mac), hex);
	CHECK_STR("HMAC-SHA256: GitHub's published webhook vector", hex,
	    "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17");
	CHECK("constant-time compare: equal", crypto_equal("abcd", "abcd", 4));
	CHECK("constant-time compare: different", !crypto_equal("abcd", "abce", 4));
	CHECK("random seeds differ", crypto_random_seed() != crypto_random_seed());
	return t_done("test_crypto");
}
