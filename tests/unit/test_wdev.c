/*
 * test_wdev: the worker device's CPU side through gpu/wdev.h: the judge's
 * element changes (wdev_put_elems, in order, the last to an element
 * wins) and its refresh (wdev_permute, dst[e] = src[(a*e + b) mod n])
 * for every element size, against the formula; the refresh's mask
 * (wdev_xor_normal) flips the low bits of normal values only.
 */
#include <stdint.h>
#include <string.h>

#include "gpu/wdev.h"
#include "t.h"

static int
permute_ok(struct wdev *d, int elsize, size_t n, uint64_t a, uint64_t b)
{
	unsigned char src[64 * 8], dst[64 * 8];

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)(i * 7 + 3);
	memset(dst, 0xee, sizeof(dst));
	if (wdev_permute(d, dst, src, n, elsize, a, b) < 0)
		return 0;
	for (size_t e = 0; e < n; e++)
		if (memcmp(dst + e * (size_t)elsize, src + ((a * e + b) % n) * (size_t)elsize,
		    (size_t)elsize))
			return 0;
	/* Nothing past the n elements. */
	return dst[n * (size_t)elsize] == 0xee;
}

int
main(void)
{
	struct wdev *d = NULL;
	char err[256];
	float x[4] = { 1, 2, 3, 4 };
	struct wdev_elem e[3] = {
		{ &x[1], { 0 }, 4 },
		{ &x[3], { 0 }, 4 },
		{ &x[1], { 0 }, 4 },
	};
	float v[3] = { 10, 20, 30 };

	if (!CHECK("the CPU opens", wdev_open(&d, 0, 0, err, sizeof(err)) == 0))
		return t_done("test_wdev");
	for (int i = 0; i < 3; i++)
		memcpy(e[i].v, &v[i], 4);
	CHECK_INT("put_elems", wdev_put_elems(d, e, 3), 0);
	CHECK("put_elems writes each, the last to an element winning",
	    x[0] == 1 && x[1] == 30 && x[2] == 3 && x[3] == 20);
	CHECK_INT("put_elems of none", wdev_put_elems(d, e, 0), 0);
	CHECK_STR("the CPU's changes are stores", wdev_put_elems_how(d), "stores");
	CHECK_INT("the CPU permutes", wdev_can_permute(d), 1);
	CHECK("permute 4-byte elements", permute_ok(d, 4, 48, 5, 7));
	CHECK("permute 8-byte elements", permute_ok(d, 8, 63, 62, 0));
	CHECK("permute 2-byte elements", permute_ok(d, 2, 64, 3, 63));
	CHECK("permute 1-byte elements", permute_ok(d, 1, 64, 33, 1));
	CHECK("permute with a = 1 is a rotation by b", permute_ok(d, 4, 10, 1, 9));
	CHECK_INT("the CPU masks", wdev_can_xor_normal(d), 1);
	{
		/* 0, -0, 1.5, -2.75, a subnormal, inf, NaN */
		uint32_t f[7] = { 0, 0x80000000u, 0x3fc00000u, 0xc0300000u, 5, 0x7f800000u,
		    0x7fc00001u };
		uint32_t fw[7] = { 0, 0x80000000u, 0x3fc000ffu, 0xc03000ffu, 5, 0x7f800000u,
		    0x7fc00001u };
		uint64_t g[4] = { 0, 0x3ff8000000000000ull, 1, 0xfff0000000000000ull };
		uint64_t gw[4] = { 0, 0x3ff8001234567890ull, 1, 0xfff0000000000000ull };

		CHECK_INT("mask float32", wdev_xor_normal(d, f, 7, 4, 0xff), 0);
		CHECK("the mask flips normal float32 values only", !memcmp(f, fw, sizeof(f)));
		CHECK_INT("mask float64", wdev_xor_normal(d, g, 4, 8, 0x1234567890ull), 0);
		CHECK("the mask flips normal float64 values only", !memcmp(g, gw, sizeof(g)));
		CHECK_INT("the same mask again", wdev_xor_normal(d, f, 7, 4, 0xff), 0);
		fw[2] = 0x3fc00000u;
		fw[3] = 0xc0300000u;
		CHECK("the mask undoes itself", !memcmp(f, fw, sizeof(f)));
	}
	wdev_close(d);
	return t_done("test_wdev");
}
