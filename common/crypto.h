/*
 * crypto: hashing, MACs and randomness, over libsodium (included here
 * only). Content addresses, webhook signatures and fresh evaluation seeds
 * all come from this module.
 */
#ifndef KB_COMMON_CRYPTO_H
#define KB_COMMON_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#define CRYPTO_SHA256_BYTES 32
#define CRYPTO_SHA256_HEX (2 * CRYPTO_SHA256_BYTES + 1)

/* Must succeed once before any other call; 0 or -EIO. Idempotent, thread-safe. */
int crypto_init(void);

/* An incremental SHA-256, for content addresses built from several parts. */
struct crypto_sha256 {
	unsigned char state[128];	/* opaque; large enough for libsodium's state */
};

void crypto_sha256_start(struct crypto_sha256 *h);
void crypto_sha256_add(struct crypto_sha256 *h, const void *p, size_t n);
void crypto_sha256_end(struct crypto_sha256 *h, unsigned char out[CRYPTO_SHA256_BYTES]);

/* One-shot SHA-256 of p as lowercase hex into out (NUL-terminated). */
void crypto_sha256_hex(const void *p, size_t n, char out[CRYPTO_SHA256_HEX]);

void crypto_hex(const unsigned char *p, size_t n, char *out);	/* out: 2n+1 bytes */

/* HMAC-SHA256 of msg under key. */
void crypto_hmac_sha256(const void *key, size_t keylen, const void *msg,
    size_t msglen, unsigned char out[CRYPTO_SHA256_BYTES]);

/* Constant-time comparison of n bytes: 1 equal, 0 not. */
int crypto_equal(const void *a, const void *b, size_t n);

/* Unpredictable bytes / a 63-bit seed from the OS's generator. */
void crypto_random(void *p, size_t n);
uint64_t crypto_random_seed(void);

#endif
