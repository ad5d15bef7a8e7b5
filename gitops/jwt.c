/*
 * gitops/jwt.c: RS256 signing over OpenSSL 3's EVP interface.
 */
#include "gitops/jwt.h"

#include <errno.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

static int
b64url(struct buf *b, const unsigned char *p, size_t n)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i += 3) {
		unsigned v = (unsigned)p[i] << 16 |
		    (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
		    (i + 2 < n ? p[i + 2] : 0);
		char out[4] = { tab[(v >> 18) & 63], tab[(v >> 12) & 63],
			tab[(v >> 6) & 63], tab[v & 63] };

		/* No padding in base64url JWTs. */
		rc = buf_add(b, out, n - i >= 3 ? 4 : n - i + 1);
	}
	return rc;
}

static int
ssl_error(const char *what, char *err, size_t errlen)
{
	unsigned long e = ERR_get_error();
	char msg[256];

	ERR_error_string_n(e, msg, sizeof(msg));
	ERR_clear_error();
	snprintf(err, errlen, "%s: %s", what, e ? msg : "unknown OpenSSL error");
	return -EINVAL;
}

int
jwt_rs256(const char *pem, size_t pemlen, const char *payload, char **out,
    char *err, size_t errlen)
{
	static const char header[] = "{\"alg\":\"RS256\",\"typ\":\"JWT\"}";
	struct buf b = BUF_INIT(JWT_MAX_KEY);
	EVP_PKEY *key = NULL;
	EVP_MD_CTX *md = NULL;
	BIO *bio = NULL;
	unsigned char *sig = NULL;
	size_t siglen = 0;
	int rc = -ENOMEM;

	if (pemlen > JWT_MAX_KEY || !(bio = BIO_new_mem_buf(pem, (int)pemlen)))
		goto out;
	if (!(key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL))) {
		rc = ssl_error("private key", err, errlen);
		goto out;
	}
	if (EVP_PKEY_get_base_id(key) != EVP_PKEY_RSA) {
		rc = -EINVAL;
		snprintf(err, errlen, "private key: not an RSA key");
		goto out;
	}
	if ((rc = b64url(&b, (const unsigned char *)header, strlen(header))) < 0 ||
	    (rc = buf_addch(&b, '.')) < 0 ||
	    (rc = b64url(&b, (const unsigned char *)payload, strlen(payload))) < 0)
		goto out;
	rc = -EINVAL;
	if (!(md = EVP_MD_CTX_new()) ||
	    EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1 ||
	    EVP_DigestSign(md, NULL, &siglen, (const unsigned char *)b.data,
	    b.len) != 1 || !(sig = OPENSSL_malloc(siglen)) ||
	    EVP_DigestSign(md, sig, &siglen, (const unsigned char *)b.data,
	    b.len) != 1) {
		rc = ssl_error("sign", err, errlen);
		goto out;
	}
	if ((rc = buf_addch(&b, '.')) < 0 || (rc = b64url(&b, sig, siglen)) < 0)
		goto out;
	*out = buf_detach(&b, NULL);
	rc = 0;
out:
	OPENSSL_free(sig);
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(key);
	BIO_free(bio);
	buf_free(&b);
	return rc;
}

int
jwt_github_app(const char *pem, size_t pemlen, long long app_id,
    long long now, char **out, char *err, size_t errlen)
{
	char claims[160];

	/* Back-dated a minute for clock drift; GitHub allows at most 10 min. */
	snprintf(claims, sizeof(claims), "{\"iat\":%lld,\"exp\":%lld,"
	    "\"iss\":\"%lld\"}", now - 60, now + 540, app_id);
	return jwt_rs256(pem, pemlen, claims, out, err, errlen);
}
