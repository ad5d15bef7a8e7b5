/*
 * verify: is a delivery genuine? One check per forge, each over the raw
 * body exactly as received, each in constant time. There is no SHA-1
 * fallback: a delivery without X-Hub-Signature-256 is refused.
 *
 * All return 0 when the delivery is genuine, -EBADMSG when the header is
 * missing or malformed, -EACCES when it does not match.
 */
#ifndef KB_WEBHOOKS_VERIFY_H
#define KB_WEBHOOKS_VERIFY_H

#include <stddef.h>

#define WH_SIG_HEX 65	/* 64 hex digits and the NUL */

/* GitHub X-Hub-Signature-256: "sha256=" + hex HMAC-SHA256(secret, body). */
int wh_verify_github(const char *secret, size_t secret_len, const char *header,
    const void *body, size_t len);

/* Gitea/Forgejo X-Gitea-Signature: hex HMAC-SHA256(secret, body), no prefix. */
int wh_verify_gitea(const char *secret, size_t secret_len, const char *header,
    const void *body, size_t len);

/* GitLab X-Gitlab-Token: the token itself, compared in constant time. */
int wh_verify_gitlab(const char *token, size_t token_len, const char *header);

/* Lowercase hex HMAC-SHA256 of body: what a forge puts in the header. */
void wh_sign_hex(const char *secret, size_t secret_len, const void *body,
    size_t len, char out[WH_SIG_HEX]);

#endif
