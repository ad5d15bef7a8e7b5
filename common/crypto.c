#include "common/crypto.h"

#include <errno.h>
#include <sodium.h>
#include <string.h>

_Static_assert(sizeof(crypto_hash_sha256_state) <= sizeof(((struct crypto_sha256 *)0)->state),
    "struct crypto_sha256 too small for libsodium's state");

int
crypto_init(void)
{
	return sodium_init() < 0 ? -EIO : 0;
}

void
crypto_sha256_start(struct crypto_sha256 *h)
{
	crypto_hash_sha256_init((crypto_hash_sha256_state *)(void *)h->state);
}

void
crypto_sha256_add(struct crypto_sha256 *h, const void *p, size_t n)
{
	crypto_hash_sha256_update((crypto_hash_sha256_state *)(void *)h->state, p, n);
}

void
crypto_sha256_end(struct crypto_sha256 *h, unsigned char out[CRYPTO_SHA256_BYTES])
{
	crypto_hash_sha256_final((crypto_hash_sha256_state *)(void *)h->state, out);
}

void
crypto_hex(const unsigned char *p, size_t n, char *out)
{
	sodium_bin2hex(out, 2 * n + 1, p, n);
}

void
crypto_sha256_hex(const void *p, size_t n, char out[CRYPTO_SHA256_HEX])
{
	unsigned char d[CRYPTO_SHA256_BYTES];

	crypto_hash_sha256(d, p, n);
	crypto_hex(d, sizeof(d), out);
}

void
crypto_hmac_sha256(const void *key, size_t keylen, const void *msg,
    size_t msglen, unsigned char out[CRYPTO_SHA256_BYTES])
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, key, keylen);
	crypto_auth_hmacsha256_update(&st, msg, msglen);
	crypto_auth_hmacsha256_final(&st, out);
	sodium_memzero(&st, sizeof(st));
}

int
crypto_equal(const void *a, const void *b, size_t n)
{
	return sodium_memcmp(a, b, n) == 0;
}

void
crypto_random(void *p, size_t n)
{
	randombytes_buf(p, n);
}

uint64_t
crypto_random_seed(void)
{
	uint64_t s;

	randombytes_buf(&s, sizeof(s));
	return s >> 1;
}
