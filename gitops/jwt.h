/*
 * jwt: RS256 JSON Web Tokens, for authenticating as a GitHub App. OpenSSL
 * is included here only.
 */
#ifndef KB_GITOPS_JWT_H
#define KB_GITOPS_JWT_H

#include <stddef.h>

#define JWT_MAX_KEY (64u << 10)	/* bytes of a PEM private key file */

/*
 * Sign the JSON object text payload with the PEM-encoded RSA private key
 * pem: "base64url(header).base64url(payload).base64url(signature)" with
 * header {"alg":"RS256","typ":"JWT"}. 0 and *out (caller frees), or
 * -EINVAL (not an RSA private key; OpenSSL's reason in err), -ENOMEM.
 */
int jwt_rs256(const char *pem, size_t pemlen, const char *payload,
    char **out, char *err, size_t errlen);

/*
 * The claims GitHub wants from an App: {"iat": now-60, "exp": now+540,
 * "iss": "APP_ID"}, signed. now is Unix seconds.
 */
int jwt_github_app(const char *pem, size_t pemlen, long long app_id,
    long long now, char **out, char *err, size_t errlen);

#endif
