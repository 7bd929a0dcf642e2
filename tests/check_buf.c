/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of the bounded wire buffers. */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

START_TEST(test_get_integers)
{
	static const uint8_t bytes[] = {0x01, 0x00, 0x00, 0x01, 0x02,
	                                0xff, 0xee, 0xdd, 0xcc, 0xbb,
	                                0xaa, 0x99, 0x88};
	struct rbuf r;
	uint64_t v64;
	uint32_t v32;
	uint8_t v8;

	rbuf_init(&r, bytes, sizeof(bytes));
	ck_assert_int_eq(rbuf_get_u8(&r, &v8), BUF_OK);
	ck_assert_uint_eq(v8, 1);
	ck_assert_int_eq(rbuf_get_u32(&r, &v32), BUF_OK);
	ck_assert_uint_eq(v32, 0x00000102);
	ck_assert_int_eq(rbuf_get_u64(&r, &v64), BUF_OK);
	ck_assert_uint_eq(v64, 0xffeeddccbbaa9988ULL);
	ck_assert_uint_eq(rbuf_left(&r), 0);
	ck_assert_int_eq(rbuf_get_u8(&r, &v8), BUF_ERR_SHORT);
}
END_TEST

START_TEST(test_short_reads_fail_without_moving)
{
	static const uint8_t bytes[] = {0, 0, 0};
	struct rbuf r;
	uint32_t v32;
	uint64_t v64;

	rbuf_init(&r, bytes, sizeof(bytes));
	ck_assert_int_eq(rbuf_get_u32(&r, &v32), BUF_ERR_SHORT);
	ck_assert_int_eq(rbuf_get_u64(&r, &v64), BUF_ERR_SHORT);
	ck_assert_uint_eq(r.off, 0);
	ck_assert_int_eq(rbuf_skip(&r, 4), BUF_ERR_SHORT);
	ck_assert_int_eq(rbuf_skip(&r, 3), BUF_OK);
}
END_TEST

START_TEST(test_string_lengths_are_not_trusted)
{
	/* Length claims 0xffffffff, only 2 bytes follow. */
	static const uint8_t huge[] = {0xff, 0xff, 0xff, 0xff, 'a', 'b'};
	static const uint8_t exact[] = {0, 0, 0, 2, 'a', 'b'};
	static const uint8_t one_short[] = {0, 0, 0, 3, 'a', 'b'};
	const uint8_t *p;
	struct rbuf r;
	size_t len;

	rbuf_init(&r, huge, sizeof(huge));
	ck_assert_int_eq(rbuf_get_string(&r, &p, &len), BUF_ERR_SHORT);
	ck_assert_uint_eq(r.off, 0);
	rbuf_init(&r, one_short, sizeof(one_short));
	ck_assert_int_eq(rbuf_get_string(&r, &p, &len), BUF_ERR_SHORT);
	rbuf_init(&r, exact, sizeof(exact));
	ck_assert_int_eq(rbuf_get_string(&r, &p, &len), BUF_OK);
	ck_assert_uint_eq(len, 2);
	ck_assert_int_eq(memcmp(p, "ab", 2), 0);
}
END_TEST

START_TEST(test_cstring_rejects_nul)
{
	static const uint8_t with_nul[] = {0, 0, 0, 3, 'a', 0, 'b'};
	static const uint8_t good[] = {0, 0, 0, 3, 'a', 'b', 'c', 9};
	static const uint8_t trailing_nul[] = {0, 0, 0, 3, 'a', 'b', 0};
	struct rbuf r;
	char *s = NULL;

	rbuf_init(&r, with_nul, sizeof(with_nul));
	ck_assert_int_eq(rbuf_get_cstring(&r, &s), BUF_ERR_FORMAT);
	ck_assert_ptr_null(s);
	rbuf_init(&r, good, sizeof(good));
	ck_assert_int_eq(rbuf_get_cstring(&r, &s), BUF_OK);
	ck_assert_str_eq(s, "abc");
	ck_assert_uint_eq(rbuf_left(&r), 1);
	free(s);
	/* A single NUL at the very end is allowed and dropped. */
	rbuf_init(&r, trailing_nul, sizeof(trailing_nul));
	ck_assert_int_eq(rbuf_get_cstring(&r, &s), BUF_OK);
	ck_assert_str_eq(s, "ab");
	free(s);
}
END_TEST

START_TEST(test_truncated_at_every_length)
{
	uint8_t packet[64];
	struct wbuf w;
	struct rbuf r;
	const uint8_t *p;
	uint64_t v64;
	uint32_t v32;
	size_t cut, len;
	int ok;

	wbuf_init(&w, sizeof(packet));
	ck_assert_int_eq(wbuf_put_u32(&w, 7), BUF_OK);
	ck_assert_int_eq(wbuf_put_cstring(&w, "hello"), BUF_OK);
	ck_assert_int_eq(wbuf_put_u64(&w, 42), BUF_OK);
	memcpy(packet, w.data, w.len);
	for (cut = 0; cut <= w.len; cut++) {
		rbuf_init(&r, packet, cut);
		ok = rbuf_get_u32(&r, &v32) == BUF_OK &&
		     rbuf_get_string(&r, &p, &len) == BUF_OK &&
		     rbuf_get_u64(&r, &v64) == BUF_OK;
		ck_assert_int_eq(ok, cut == w.len);
	}
	ck_assert_uint_eq(v64, 42);
	wbuf_free(&w);
}
END_TEST

START_TEST(test_writer_limit)
{
	struct wbuf w;
	uint8_t *p;

	wbuf_init(&w, 10);
	ck_assert_int_eq(wbuf_put_u64(&w, 1), BUF_OK);
	ck_assert_int_eq(wbuf_put_u32(&w, 1), BUF_ERR_FULL);
	ck_assert_uint_eq(w.len, 8);
	ck_assert_int_eq(wbuf_put_string(&w, "", 0), BUF_ERR_FULL);
	ck_assert_int_eq(wbuf_reserve(&w, 2, &p), BUF_OK);
	ck_assert_int_eq(wbuf_reserve(&w, (size_t)-1, &p), BUF_ERR_FULL);
	ck_assert_int_eq(wbuf_put_u8(&w, 9), BUF_OK);
	ck_assert_int_eq(wbuf_poke_u32(&w, 0, 0x01020304), BUF_OK);
	ck_assert_int_eq(wbuf_poke_u32(&w, 6, 0), BUF_ERR_SHORT);
	ck_assert_uint_eq(peek_u32(w.data), 0x01020304);
	wbuf_free(&w);
}
END_TEST

START_TEST(test_writer_grows)
{
	struct wbuf w;
	size_t i;

	wbuf_init(&w, 1 << 20);
	for (i = 0; i < 100000; i++)
		ck_assert_int_eq(wbuf_put_u8(&w, (uint8_t)i), BUF_OK);
	ck_assert_uint_eq(w.len, 100000);
	ck_assert_uint_eq(w.data[99999], (uint8_t)99999);
	wbuf_reset(&w);
	ck_assert_uint_eq(w.len, 0);
	wbuf_free(&w);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("buf");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_get_integers);
	tcase_add_test(tc, test_short_reads_fail_without_moving);
	tcase_add_test(tc, test_string_lengths_are_not_trusted);
	tcase_add_test(tc, test_cstring_rejects_nul);
	tcase_add_test(tc, test_truncated_at_every_length);
	tcase_add_test(tc, test_writer_limit);
	tcase_add_test(tc, test_writer_grows);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
