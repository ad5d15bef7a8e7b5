/*
 * The http section of the configuration (docs/configuration.md): limits,
 * deadlines and the per-client keys, trusted proxies as CIDR ranges.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config_int.h"

void
config_http_defaults(struct config_http *h)
{
	h->max_body_bytes = 25u << 20;
	h->max_buffered_bytes = 256u << 20;
	h->max_header_bytes = 32u << 10;
	h->max_connections = 256;
	h->max_connections_per_ip = 64;
	h->connection_timeout_s = 10;
	h->request_timeout_s = 30;
	h->threads = 8;
	h->head_timeout_s = 10;
	h->min_body_bytes_per_s = 1024;
	h->max_buffered_bytes_per_ip = 32u << 20;	/* max_buffered_bytes / 8; see load_http_clients() */
	h->small_body_bytes = 256u << 10;	/* at most max_body_bytes; see load_http_clients() */
	h->small_body_reserve = 64u << 20;	/* max_connections small bodies; ditto */
}

/* --- http: per-client keys (issue 23) --- */

/* "ADDR" or "ADDR/BITS", IPv4 or IPv6: 0 or -EINVAL. */
static int
parse_cidr(const char *s, struct config_cidr *out)
{
	char addr[INET6_ADDRSTRLEN + 1], *end;
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	unsigned long bits;
	unsigned max;

	if (n == 0 || n >= sizeof(addr))
		return -EINVAL;
	memcpy(addr, s, n);
	addr[n] = '\0';
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, addr, out->addr) == 1)
		out->family = AF_INET, max = 32;
	else if (inet_pton(AF_INET6, addr, out->addr) == 1)
		out->family = AF_INET6, max = 128;
	else
		return -EINVAL;
	out->bits = max;
	if (slash) {
		errno = 0;
		bits = strtoul(slash + 1, &end, 10);
		if (!slash[1] || *end || errno || bits > max || slash[1] == '-' ||
		    slash[1] == '+')
			return -EINVAL;
		out->bits = (unsigned)bits;
	}
	return 0;
}

/*
 * Whether a trusted proxy network is wider than any set of proxies: IPv4
 * shorter than /8, IPv6 shorter than /8 (fd00::/8 is all of the unique
 * local addresses), and an IPv6 network that holds IPv4 addresses judged
 * by its IPv4 part: the IPv4-mapped (::ffff:0:0/96), IPv4-compatible
 * (::/96), NAT64 (64:ff9b::/96) and 6to4 (2002::/16) prefixes, whole
 * (::/80 holds all of ::ffff:0:0/96) or with fewer than 8 bits of their
 * IPv4 part fixed.
 */
static int
cidr_too_wide(const struct config_cidr *n)
{
	static const struct {
		unsigned char addr[16];
		int bits;		/* the prefix's length */
		int v4;			/* where its IPv4 part starts */
	} embed[] = {
		{ { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff }, 96, 96 },
		{ { 0 }, 96, 96 },
		{ { 0, 0x64, 0xff, 0x9b }, 96, 96 },
		{ { 0x20, 0x02 }, 16, 16 },
	};

	if (n->family == AF_INET)
		return n->bits < CONFIG_MIN_PROXY_BITS4;
	if (n->bits < CONFIG_MIN_PROXY_BITS6)
		return 1;
	for (size_t i = 0; i < sizeof(embed) / sizeof(embed[0]); i++) {
		int bits = (int)n->bits, common = bits < embed[i].bits ? bits : embed[i].bits, b;

		/* Do the first `common` bits of the network and the prefix agree? */
		for (b = 0; b < common; b++)
			if ((n->addr[b / 8] ^ embed[i].addr[b / 8]) & (0x80 >> (b % 8)))
				break;
		if (b < common)
			continue;
		if (bits - embed[i].v4 < CONFIG_MIN_PROXY_BITS4)
			return 1;
	}
	return 0;
}

static int
load_http_clients(struct config *c, const json_t *h, char *err, size_t errlen)
{
	struct config_http *hp = &c->http;
	const json_t *list = json_object_get(h, "trusted_proxies"), *v;
	size_t i;

	if (!hp->max_buffered_bytes_per_ip) {
		hp->max_buffered_bytes_per_ip = hp->max_buffered_bytes / 8;
		if (hp->max_buffered_bytes_per_ip < hp->max_body_bytes)
			hp->max_buffered_bytes_per_ip = hp->max_body_bytes;
	} else if (hp->max_buffered_bytes_per_ip < hp->max_body_bytes ||
	    hp->max_buffered_bytes_per_ip > hp->max_buffered_bytes) {
		return config_error(c, err, errlen, "http.max_buffered_bytes_per_ip",
		    NULL, "must be from http.max_body_bytes (%zu) to "
		    "http.max_buffered_bytes (%zu)", hp->max_body_bytes,
		    hp->max_buffered_bytes);
	}
	/*
	 * Room for a small body on every connection at once, so that no
	 * number of bodies under way can keep a small one out of memory
	 * (the third outside attack's F3): larger bodies may not take it.
	 * Capped so that one largest body still fits beside it.
	 */
	if (!hp->small_body_bytes) {
		hp->small_body_bytes = 256u << 10;
		if (hp->small_body_bytes > hp->max_body_bytes)
			hp->small_body_bytes = hp->max_body_bytes;
	} else if (hp->small_body_bytes > hp->max_body_bytes) {
		return config_error(c, err, errlen, "http.small_body_bytes", NULL,
		    "must be at most http.max_body_bytes (%zu)", hp->max_body_bytes);
	}
	hp->small_body_reserve = (size_t)hp->max_connections * hp->small_body_bytes;
	if (hp->small_body_reserve > hp->max_buffered_bytes - hp->max_body_bytes)
		hp->small_body_reserve = hp->max_buffered_bytes - hp->max_body_bytes;
	if (!list || json_is_null(list))
		return 0;
	if (!json_is_array(list) || json_array_size(list) > CONFIG_MAX_PROXIES)
		return config_error(c, err, errlen, "http.trusted_proxies", list,
		    "must be a list of at most %d addresses or networks",
		    CONFIG_MAX_PROXIES);
	json_array_foreach(list, i, v) {
		if (!json_is_string(v) || parse_cidr(json_string_value(v),
		    &hp->trusted_proxies[i]) < 0)
			return config_error(c, err, errlen, "http.trusted_proxies", v,
			    "'%s' is not an address or ADDR/BITS",
			    json_is_string(v) ? json_string_value(v) : "?");
		if (cidr_too_wide(&hp->trusted_proxies[i]))
			return config_error(c, err, errlen, "http.trusted_proxies", v,
			    "'%s' is too wide: every address in it may set its "
			    "identity by X-Forwarded-For and escape the per-client "
			    "limits; name the proxies (IPv4 at least /%d, IPv6 at "
			    "least /%d)", json_string_value(v), CONFIG_MIN_PROXY_BITS4,
			    CONFIG_MIN_PROXY_BITS6);
	}
	hp->n_trusted_proxies = json_array_size(list);
	return 0;
}

/* --- end of http's per-client keys --- */

int
config_load_http(struct config *c, const json_t *h, char *err, size_t errlen)
{
	static const char *const keys[] = { "max_body_bytes", "max_buffered_bytes",
		"max_header_bytes",
		"max_connections", "max_connections_per_ip",
		"connection_timeout_s", "request_timeout_s", "threads",
		"head_timeout_s", "min_body_bytes_per_s", "max_buffered_bytes_per_ip",
		"small_body_bytes", "trusted_proxies", NULL };
	unsigned long long v;
	int error;

	c->http.max_buffered_bytes_per_ip = 0;	/* unless given: derived */
	c->http.small_body_bytes = 0;		/* likewise */
	if (!h || json_is_null(h))
		return load_http_clients(c, NULL, err, errlen);
	if (!json_is_object(h))
		return config_error(c, err, errlen, "http", h, "must be a mapping");
	if ((error = config_check_keys(c, h, "http", keys, err, errlen)) < 0)
		return error;
#define UINT(name, lo, hi, field) do { \
	v = c->http.field; \
	if ((error = config_get_uint(c, h, name, "http." name, lo, hi, &v, err, errlen)) < 0) \
		return error; \
	c->http.field = v; \
} while (0)
	UINT("max_body_bytes", 1024, CONFIG_MAX_BODY_LIMIT, max_body_bytes);
	UINT("max_buffered_bytes", 1024, CONFIG_MAX_BUFFERED_LIMIT, max_buffered_bytes);
	UINT("max_header_bytes", 4096, 1u << 20, max_header_bytes);
	UINT("max_connections", 1, 65536, max_connections);
	UINT("max_connections_per_ip", 1, 65536, max_connections_per_ip);
	UINT("connection_timeout_s", 1, 3600, connection_timeout_s);
	UINT("request_timeout_s", 1, 3600, request_timeout_s);
	UINT("threads", 1, 256, threads);
	UINT("head_timeout_s", 1, 3600, head_timeout_s);
	UINT("min_body_bytes_per_s", 1, 1u << 30, min_body_bytes_per_s);
	UINT("max_buffered_bytes_per_ip", 1024, CONFIG_MAX_BUFFERED_LIMIT,
	    max_buffered_bytes_per_ip);
	UINT("small_body_bytes", 1024, CONFIG_MAX_BODY_LIMIT, small_body_bytes);
#undef UINT
	if (c->http.max_buffered_bytes < c->http.max_body_bytes)
		return config_error(c, err, errlen, "http.max_buffered_bytes", NULL,
		    "must be at least http.max_body_bytes (%zu)", c->http.max_body_bytes);
	/* one client may not hold every connection; unset, it is capped */
	if (c->http.max_connections_per_ip > c->http.max_connections) {
		if (json_object_get(h, "max_connections_per_ip"))
			return config_error(c, err, errlen,
			    "http.max_connections_per_ip", NULL, "must be at most "
			    "http.max_connections (%u): one client could hold every "
			    "connection", c->http.max_connections);
		c->http.max_connections_per_ip = c->http.max_connections;
	}
	return load_http_clients(c, h, err, errlen);
}
