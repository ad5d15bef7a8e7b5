#include "webhooks/verify.h"

#include <errno.h>
#include <string.h>

#include "common/crypto.h"

void
wh_sign_hex(const char *secret, size_t secret_len, const void *body,
    size_t len, char out[WH_SIG_HEX])
{
	unsigned char mac[CRYPTO_SHA256_BYTES];

	crypto_hmac_sha256(secret, secret_len, body, len, mac);
	crypto_hex(mac, sizeof(mac), out);
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Decode the 64 hex digits first and compare the binary MACs: comparing
 * hex text would make upper- and lowercase digits different signatures.
 */
static int
verify_hex_mac(const char *secret, size_t secret_len, const char *hex,
    const void *body, size_t len)
{
	unsigned char want[CRYPTO_SHA256_BYTES], got[CRYPTO_SHA256_BYTES];

	if (strlen(hex) != 2 * CRYPTO_SHA256_BYTES)
		return -EBADMSG;
	for (size_t i = 0; i < CRYPTO_SHA256_BYTES; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EBADMSG;
		got[i] = (unsigned char)(hi << 4 | lo);
	}
	crypto_hmac_sha256(secret, secret_len, body, len, want);
	return crypto_equal(want, got, sizeof(want)) ? 0 : -EACCES;
}

int
wh_verify_github(const char *secret, size_t secret_len, const char *header,
    const void *body, size_t len)
{
	if (!header || strncmp(header, "sha256=", 7))
		return -EBADMSG;
	return verify_hex_mac(secret, secret_len, header + 7, body, len);
}

int
wh_verify_gitea(const char *secret, size_t secret_len, const char *header,
    const void *body, size_t len)
{
	if (!header)
		return -EBADMSG;
	return verify_hex_mac(secret, secret_len, header, body, len);
}

/* Hash both sides so the comparison takes the same time whatever the lengths. */
int
wh_verify_gitlab(const char *token, size_t token_len, const char *header)
{
	unsigned char a[CRYPTO_SHA256_BYTES], b[CRYPTO_SHA256_BYTES];
	struct crypto_sha256 h;

	if (!header || !*header)
		return -EBADMSG;
	crypto_sha256_start(&h);
	crypto_sha256_add(&h, token, token_len);
	crypto_sha256_end(&h, a);
	crypto_sha256_start(&h);
	crypto_sha256_add(&h, header, strlen(header));
	crypto_sha256_end(&h, b);
	return crypto_equal(a, b, sizeof(a)) ? 0 : -EACCES;
}
