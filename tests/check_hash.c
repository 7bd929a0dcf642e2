/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* hash.c: the check-file algorithms.  Known digests, the choice
 * from the client's list, and a context reused block after block. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "hash.h"

static void hex(const uint8_t *d, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static const char *digest_of(const char *alg, const char *data)
{
	static char out[2 * HASH_MAX_DIGEST + 1];
	const struct hash_algo *a = hash_pick(alg, strlen(alg));
	uint8_t d[HASH_MAX_DIGEST];
	struct hash_ctx c;

	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(hash_init(&c, a), 0);
	ck_assert_int_eq(hash_update(&c, data, strlen(data)), 0);
	ck_assert_int_eq(hash_final(&c, d), 0);
	hex(d, hash_algo_len(a), out);
	/* The context starts over after a digest: the same input gives the
	 * same digest again (per-block hashes rely on it). */
	{
		uint8_t again[HASH_MAX_DIGEST];

		ck_assert_int_eq(hash_update(&c, data, strlen(data)), 0);
		ck_assert_int_eq(hash_final(&c, again), 0);
		ck_assert_mem_eq(d, again, hash_algo_len(a));
	}
	hash_free(&c);
	return out;
}

START_TEST(test_known_digests)
{
	ck_assert_str_eq(digest_of("md5", "abc"),
	                 "900150983cd24fb0d6963f7d28e17f72");
	ck_assert_str_eq(digest_of("sha1", "abc"),
	                 "a9993e364706816aba3e25717850c26c9cd0d89d");
	ck_assert_str_eq(digest_of("sha256", ""),
	                 "e3b0c44298fc1c149afbf4c8996fb924"
	                 "27ae41e4649b934ca495991b7852b855");
	ck_assert_str_eq(digest_of("sha224", "abc"),
	                 "23097d223405d8228642a477bda255b3"
	                 "2aadbce4bda0b3f7e36c9da7");
	ck_assert_uint_eq(strlen(digest_of("sha384", "abc")), 96);
	ck_assert_uint_eq(strlen(digest_of("sha512", "abc")), 128);
	/* crc32 (zlib's, IEEE 802.3), big-endian. */
	ck_assert_str_eq(digest_of("crc32", "123456789"), "cbf43926");
	ck_assert_str_eq(digest_of("crc32", ""), "00000000");
}
END_TEST

static const char *pick(const char *list)
{
	const struct hash_algo *a = hash_pick(list, strlen(list));

	return a != NULL ? hash_algo_name(a) : "(none)";
}

START_TEST(test_pick)
{
	ck_assert_str_eq(pick("sha256"), "sha256");
	ck_assert_str_eq(pick("blake3,sha512,md5"), "sha512");
	ck_assert_str_eq(pick(",,md5"), "md5");
	ck_assert_str_eq(pick("SHA256,crc32"), "crc32"); /* exact names */
	ck_assert_str_eq(pick("sha25"), "(none)");
	ck_assert_str_eq(pick("sha2566"), "(none)");
	ck_assert_str_eq(pick(""), "(none)");
	ck_assert_str_eq(pick(HASH_NAMES), "md5");
	/* The list is counted, not terminated: a NUL is just a byte. */
	ck_assert_ptr_null(hash_pick("md5\0", 4));
	ck_assert_str_eq(hash_algo_name(hash_pick("x\0y,sha1", 8)), "sha1");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hash");
	TCase *tc = tcase_create("hash");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_known_digests);
	tcase_add_test(tc, test_pick);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
