/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of attribute encoding and the ls -l long name. */
#include "config.h"

#include <check.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "attrib.h"
#include "buf.h"
#include "sftp.h"

#define ALL_BASIC                                                              \
	(SSH2_FILEXFER_ATTR_SIZE | SSH2_FILEXFER_ATTR_UIDGID |                 \
	 SSH2_FILEXFER_ATTR_PERMISSIONS | SSH2_FILEXFER_ATTR_ACMODTIME)

/* An id no test machine has in /etc/passwd or /etc/group. */
#define UNKNOWN_ID 2999999999U

/* 2023-11-14 22:13:20 UTC: a fixed "now" so dates are predictable. */
#define FIXED_NOW ((time_t)1700000000)
#define HALF_YEAR ((time_t)15768000)

static struct attrib sample_attrib(void)
{
	struct attrib a;

	attrib_clear(&a);
	a.flags = ALL_BASIC;
	a.size = 0x0102030405060708ULL;
	a.uid = 1000;
	a.gid = 0xfffffffeU;
	a.perm = S_IFREG | 0640;
	a.atime = 0x11223344;
	a.mtime = 0xaabbccdd;
	return a;
}

/* Field by field: a struct copy need not keep padding bytes. */
static void assert_attrib_eq(const struct attrib *x, const struct attrib *y)
{
	ck_assert_uint_eq(x->flags, y->flags);
	ck_assert_uint_eq(x->size, y->size);
	ck_assert_uint_eq(x->uid, y->uid);
	ck_assert_uint_eq(x->gid, y->gid);
	ck_assert_uint_eq(x->perm, y->perm);
	ck_assert_uint_eq(x->atime, y->atime);
	ck_assert_uint_eq(x->mtime, y->mtime);
}

/* Extended pairs as a client would send them after the basic fields. */
static void put_extended(struct wbuf *w, uint32_t count)
{
	uint32_t i;

	ck_assert_int_eq(wbuf_put_u32(w, count), BUF_OK);
	for (i = 0; i < count; i++) {
		ck_assert_int_eq(wbuf_put_cstring(w, "vendor@example.com"),
		                 BUF_OK);
		ck_assert_int_eq(wbuf_put_string(w, "\0\1\2", 3), BUF_OK);
	}
}

START_TEST(test_round_trip_all_flags)
{
	struct attrib in = sample_attrib(), out;
	struct wbuf w;
	struct rbuf r;

	wbuf_init(&w, 1024);
	ck_assert_int_eq(attrib_encode(&w, &in), BUF_OK);
	/* flags, size, uid, gid, perm, atime, mtime */
	ck_assert_uint_eq(w.len, 4 + 8 + 4 + 4 + 4 + 4 + 4);
	ck_assert_uint_eq(peek_u32(w.data), ALL_BASIC);

	rbuf_init(&r, w.data, w.len);
	ck_assert_int_eq(attrib_decode(&r, &out), BUF_OK);
	ck_assert_uint_eq(rbuf_left(&r), 0);
	assert_attrib_eq(&in, &out);
	wbuf_free(&w);
}
END_TEST

START_TEST(test_round_trip_each_flag_alone)
{
	static const uint32_t flags[] = {
	    0,
	    SSH2_FILEXFER_ATTR_SIZE,
	    SSH2_FILEXFER_ATTR_UIDGID,
	    SSH2_FILEXFER_ATTR_PERMISSIONS,
	    SSH2_FILEXFER_ATTR_ACMODTIME,
	};
	static const size_t lengths[] = {4, 12, 12, 8, 12};
	size_t i;

	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		struct attrib in = sample_attrib(), out, expect;
		struct wbuf w;
		struct rbuf r;

		in.flags = flags[i];
		wbuf_init(&w, 1024);
		ck_assert_int_eq(attrib_encode(&w, &in), BUF_OK);
		ck_assert_uint_eq(w.len, lengths[i]);
		rbuf_init(&r, w.data, w.len);
		ck_assert_int_eq(attrib_decode(&r, &out), BUF_OK);
		ck_assert_uint_eq(rbuf_left(&r), 0);

		/* Fields whose flag is clear decode as zero. */
		attrib_clear(&expect);
		expect.flags = flags[i];
		if (flags[i] & SSH2_FILEXFER_ATTR_SIZE)
			expect.size = in.size;
		if (flags[i] & SSH2_FILEXFER_ATTR_UIDGID) {
			expect.uid = in.uid;
			expect.gid = in.gid;
		}
		if (flags[i] & SSH2_FILEXFER_ATTR_PERMISSIONS)
			expect.perm = in.perm;
		if (flags[i] & SSH2_FILEXFER_ATTR_ACMODTIME) {
			expect.atime = in.atime;
			expect.mtime = in.mtime;
		}
		assert_attrib_eq(&expect, &out);
		wbuf_free(&w);
	}
}
END_TEST

START_TEST(test_extended_pairs_are_skipped)
{
	struct attrib in = sample_attrib(), out;
	struct wbuf w;
	struct rbuf r;

	in.flags |= SSH2_FILEXFER_ATTR_EXTENDED;
	wbuf_init(&w, 4096);
	/* Encode the basic fields, then replace our count 0 by 3 pairs. */
	ck_assert_int_eq(attrib_encode(&w, &in), BUF_OK);
	ck_assert_uint_eq(peek_u32(w.data + w.len - 4), 0);
	w.len -= 4;
	put_extended(&w, 3);
	ck_assert_int_eq(wbuf_put_u32(&w, 0xdeadbeef), BUF_OK);

	rbuf_init(&r, w.data, w.len);
	ck_assert_int_eq(attrib_decode(&r, &out), BUF_OK);
	assert_attrib_eq(&in, &out);
	/* Only what follows the attributes is left. */
	ck_assert_uint_eq(rbuf_left(&r), 4);
	wbuf_free(&w);
}
END_TEST

START_TEST(test_unknown_flag_bits_are_ignored)
{
	static const uint8_t bytes[] = {0x00, 0x00, 0x01, 0x70};
	struct attrib a;
	struct rbuf r;

	rbuf_init(&r, bytes, sizeof(bytes));
	ck_assert_int_eq(attrib_decode(&r, &a), BUF_OK);
	ck_assert_uint_eq(a.flags, 0x170);
	ck_assert_uint_eq(rbuf_left(&r), 0);
}
END_TEST

START_TEST(test_truncated_at_every_length)
{
	struct attrib in = sample_attrib(), out;
	struct wbuf w;
	size_t len;

	in.flags |= SSH2_FILEXFER_ATTR_EXTENDED;
	wbuf_init(&w, 4096);
	ck_assert_int_eq(attrib_encode(&w, &in), BUF_OK);
	w.len -= 4;
	put_extended(&w, 2);

	for (len = 0; len < w.len; len++) {
		struct rbuf r;
		/* A copy of exactly len bytes, so a read past it is caught
		 * by the sanitizers, not hidden by the rest of w. */
		uint8_t *copy = malloc(len ? len : 1);

		memcpy(copy, w.data, len);
		rbuf_init(&r, copy, len);
		ck_assert_int_eq(attrib_decode(&r, &out), BUF_ERR_SHORT);
		free(copy);
	}
	wbuf_free(&w);
}
END_TEST

START_TEST(test_extended_count_bound)
{
	struct attrib out;
	struct wbuf w;
	struct rbuf r;

	wbuf_init(&w, 64);
	wbuf_put_u32(&w, SSH2_FILEXFER_ATTR_EXTENDED);
	wbuf_put_u32(&w, 0x100001);
	rbuf_init(&r, w.data, w.len);
	ck_assert_int_eq(attrib_decode(&r, &out), BUF_ERR_FORMAT);

	/* The largest count allowed is only short of data here. */
	wbuf_reset(&w);
	wbuf_put_u32(&w, SSH2_FILEXFER_ATTR_EXTENDED);
	wbuf_put_u32(&w, 0x100000);
	rbuf_init(&r, w.data, w.len);
	ck_assert_int_eq(attrib_decode(&r, &out), BUF_ERR_SHORT);

	/* A huge string length inside a pair is not trusted either. */
	wbuf_reset(&w);
	wbuf_put_u32(&w, SSH2_FILEXFER_ATTR_EXTENDED);
	wbuf_put_u32(&w, 1);
	wbuf_put_u32(&w, 0xffffffff);
	rbuf_init(&r, w.data, w.len);
	ck_assert_int_eq(attrib_decode(&r, &out), BUF_ERR_SHORT);
	wbuf_free(&w);
}
END_TEST

START_TEST(test_extended_type_with_nul)
{
	struct attrib out;
	struct wbuf w;
	struct rbuf r;

	wbuf_init(&w, 64);
	wbuf_put_u32(&w, SSH2_FILEXFER_ATTR_EXTENDED);
	wbuf_put_u32(&w, 1);
	wbuf_put_string(&w, "a\0b", 3);
	wbuf_put_string(&w, "", 0);
	rbuf_init(&r, w.data, w.len);
	ck_assert_int_eq(attrib_decode(&r, &out), BUF_ERR_FORMAT);
	/* A NUL that ends the type is allowed, as sshbuf allows it. */
	wbuf_reset(&w);
	wbuf_put_u32(&w, SSH2_FILEXFER_ATTR_EXTENDED);
	wbuf_put_u32(&w, 1);
	wbuf_put_string(&w, "ab\0", 3);
	wbuf_put_string(&w, "", 0);
	rbuf_init(&r, w.data, w.len);
	ck_assert_int_eq(attrib_decode(&r, &out), BUF_OK);
	wbuf_free(&w);
}
END_TEST

START_TEST(test_encode_respects_buffer_limit)
{
	struct attrib in = sample_attrib();
	struct wbuf w;

	wbuf_init(&w, 10);
	ck_assert_int_eq(attrib_encode(&w, &in), BUF_ERR_FULL);
	wbuf_free(&w);
}
END_TEST

START_TEST(test_from_stat)
{
	char path[] = "/tmp/check_attrib.XXXXXX";
	struct attrib a;
	struct stat st;
	int fd;

	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "hello", 5), 5);
	ck_assert_int_eq(fchmod(fd, 04750), 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	close(fd);
	unlink(path);

	attrib_from_stat(&st, &a);
	ck_assert_uint_eq(a.flags, ALL_BASIC);
	ck_assert_uint_eq(a.size, 5);
	ck_assert_uint_eq(a.uid, st.st_uid);
	ck_assert_uint_eq(a.gid, st.st_gid);
	/* The file type bits travel too. */
	ck_assert_uint_eq(a.perm, S_IFREG | 04750);
	ck_assert_uint_eq(a.atime, (uint32_t)st.st_atime);
	ck_assert_uint_eq(a.mtime, (uint32_t)st.st_mtime);

	memset(&st, 0, sizeof(st));
	st.st_mode = S_IFDIR | 0755;
	st.st_size = 0x123456789aLL;
	st.st_mtime = 0x1ffffffffLL; /* past 2106: cut to 32 bits */
	attrib_from_stat(&st, &a);
	ck_assert_uint_eq(a.perm, S_IFDIR | 0755);
	ck_assert_uint_eq(a.size, 0x123456789aULL);
	ck_assert_uint_eq(a.mtime, 0xffffffffU);
}
END_TEST

static struct stat make_stat(mode_t mode, nlink_t links, uid_t uid, gid_t gid,
                             off_t size, time_t mtime)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	st.st_mode = mode;
	st.st_nlink = links;
	st.st_uid = uid;
	st.st_gid = gid;
	st.st_size = size;
	st.st_mtime = mtime;
	return st;
}

static void assert_longname(const struct stat *st, const char *name, time_t now,
                            const char *expect)
{
	char *line = ls_longname(name, st, now);

	ck_assert_ptr_nonnull(line);
	ck_assert_str_eq(line, expect);
	free(line);
}

/* Root's names as this system has them (they are "root" nearly always). */
static const char *root_user(void)
{
	struct passwd *pw = getpwuid(0);

	return pw != NULL ? pw->pw_name : "0";
}

static const char *root_group(void)
{
	struct group *gr = getgrgid(0);

	return gr != NULL ? gr->gr_name : "0";
}

static void setup_utc(void)
{
	setenv("TZ", "UTC", 1);
	tzset();
}

START_TEST(test_longname_recent_file)
{
	struct stat st =
	    make_stat(S_IFREG | 0644, 1, 0, 0, 0, FIXED_NOW - 3600);
	char expect[256];

	/* strmode's trailing space plus the format's: two spaces. */
	snprintf(expect, sizeof(expect),
	         "-rw-r--r--    1 %-8s %-8s        0 Nov 14 21:13 e208",
	         root_user(), root_group());
	assert_longname(&st, "e208", FIXED_NOW, expect);
}
END_TEST

START_TEST(test_longname_date_forms)
{
	struct stat st = make_stat(S_IFREG | 0600, 1, 0, 0, 7, 0);
	char expect[256];
	const char *u = root_user(), *g = root_group();

	/* Exactly half a year old is already "old". */
	st.st_mtime = FIXED_NOW - HALF_YEAR;
	snprintf(expect, sizeof(expect),
	         "-rw-------    1 %-8s %-8s        7 May 16  2023 f", u, g);
	assert_longname(&st, "f", FIXED_NOW, expect);

	st.st_mtime = FIXED_NOW - HALF_YEAR + 1;
	snprintf(expect, sizeof(expect),
	         "-rw-------    1 %-8s %-8s        7 May 16 10:13 f", u, g);
	assert_longname(&st, "f", FIXED_NOW, expect);

	st.st_mtime = FIXED_NOW;
	snprintf(expect, sizeof(expect),
	         "-rw-------    1 %-8s %-8s        7 Nov 14 22:13 f", u, g);
	assert_longname(&st, "f", FIXED_NOW, expect);

	/* The future shows the year. */
	st.st_mtime = FIXED_NOW + 1;
	snprintf(expect, sizeof(expect),
	         "-rw-------    1 %-8s %-8s        7 Nov 14  2023 f", u, g);
	assert_longname(&st, "f", FIXED_NOW, expect);

	/* %e pads a one-digit day with a space. */
	st.st_mtime = 1000000000;
	snprintf(expect, sizeof(expect),
	         "-rw-------    1 %-8s %-8s        7 Sep  9  2001 f", u, g);
	assert_longname(&st, "f", FIXED_NOW, expect);
}
END_TEST

START_TEST(test_longname_types_and_widths)
{
	struct stat st;
	char expect[256];
	const char *u = root_user(), *g = root_group();

	st = make_stat(S_IFDIR | 01777, 1234, 0, 0, 4096, FIXED_NOW);
	snprintf(expect, sizeof(expect),
	         "drwxrwxrwt  1234 %-8s %-8s     4096 Nov 14 22:13 tmp", u, g);
	assert_longname(&st, "tmp", FIXED_NOW, expect);

	st = make_stat(S_IFLNK | 0777, 1, 0, 0, 5, FIXED_NOW);
	snprintf(expect, sizeof(expect),
	         "lrwxrwxrwx    1 %-8s %-8s        5 Nov 14 22:13 sym", u, g);
	assert_longname(&st, "sym", FIXED_NOW, expect);

	/* Sizes wider than the 8-character column just push it right. */
	st = make_stat(S_IFREG | 06755, 2, 0, 0, 12345678901LL, FIXED_NOW);
	snprintf(expect, sizeof(expect),
	         "-rwsr-sr-x    2 %-8s %-8s 12345678901 Nov 14 22:13 big", u,
	         g);
	assert_longname(&st, "big", FIXED_NOW, expect);

	st = make_stat(S_IFIFO | 0644, 1, 0, 0, 0, FIXED_NOW);
	snprintf(expect, sizeof(expect),
	         "prw-r--r--    1 %-8s %-8s        0 Nov 14 22:13 p", u, g);
	assert_longname(&st, "p", FIXED_NOW, expect);
}
END_TEST

START_TEST(test_longname_unknown_ids_are_numeric)
{
	struct stat st;

	if (getpwuid(UNKNOWN_ID) != NULL || getgrgid(UNKNOWN_ID) != NULL ||
	    getpwuid(12345) != NULL || getgrgid(54321) != NULL)
		return; /* an unusual system; nothing to check */

	st = make_stat(S_IFREG | 0644, 1, 12345, 54321, 0, FIXED_NOW);
	assert_longname(&st, "odd", FIXED_NOW,
	                "-rw-r--r--    1 12345    54321           0 "
	                "Nov 14 22:13 odd");

	/* Ten digits: wider than 8, no padding, one space between. */
	st = make_stat(S_IFREG | 0644, 1, UNKNOWN_ID, UNKNOWN_ID, 0, FIXED_NOW);
	assert_longname(&st, "x", FIXED_NOW,
	                "-rw-r--r--    1 2999999999 2999999999        0 "
	                "Nov 14 22:13 x");
}
END_TEST

START_TEST(test_longname_keeps_name_bytes)
{
	struct stat st = make_stat(S_IFREG | 0644, 1, 0, 0, 0, FIXED_NOW);
	char expect[256];

	/* The name is sent as it is; escaping is the client's business. */
	snprintf(expect, sizeof(expect),
	         "-rw-r--r--    1 %-8s %-8s        0 Nov 14 22:13 "
	         "caf\303\251 x\ty",
	         root_user(), root_group());
	assert_longname(&st, "caf\303\251 x\ty", FIXED_NOW, expect);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("attrib");
	TCase *wire = tcase_create("wire");
	TCase *longname = tcase_create("longname");
	SRunner *sr;
	int failed;

	tcase_add_test(wire, test_round_trip_all_flags);
	tcase_add_test(wire, test_round_trip_each_flag_alone);
	tcase_add_test(wire, test_extended_pairs_are_skipped);
	tcase_add_test(wire, test_unknown_flag_bits_are_ignored);
	tcase_add_test(wire, test_truncated_at_every_length);
	tcase_add_test(wire, test_extended_count_bound);
	tcase_add_test(wire, test_extended_type_with_nul);
	tcase_add_test(wire, test_encode_respects_buffer_limit);
	tcase_add_test(wire, test_from_stat);
	suite_add_tcase(s, wire);

	tcase_add_checked_fixture(longname, setup_utc, NULL);
	tcase_add_test(longname, test_longname_recent_file);
	tcase_add_test(longname, test_longname_date_forms);
	tcase_add_test(longname, test_longname_types_and_widths);
	tcase_add_test(longname, test_longname_unknown_ids_are_numeric);
	tcase_add_test(longname, test_longname_keeps_name_bytes);
	suite_add_tcase(s, longname);

	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
