/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of direct reads (direct.h): which READs may read direct, where
 * their bytes go in a piece of READ memory, and a real file opened again
 * for them (the same bytes as through the page cache, or no direct reads
 * at all where the file system gives no alignment). */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "direct.h"
#include "log.h"

START_TEST(test_only_aligned_reads_that_start_no_stream)
{
	ck_assert_int_eq(direct_read_candidate(512, 32768, 32768, 0, 1U << 30),
	                 1);
	ck_assert_int_eq(
	    direct_read_candidate(512, 261120, 261120, 0, 1U << 30), 1);
	/* A stream's READs are read ahead through the page cache. */
	ck_assert_int_eq(direct_read_candidate(512, 32768, 32768, 1, 1U << 30),
	                 0);
	/* No alignment: the file cannot read direct. */
	ck_assert_int_eq(direct_read_candidate(0, 32768, 32768, 0, 1U << 30),
	                 0);
	/* 255 KiB at a 4 KiB-sector device: neither offset nor length. */
	ck_assert_int_eq(
	    direct_read_candidate(4096, 261120, 32768, 0, 1U << 30), 0);
	ck_assert_int_eq(direct_read_candidate(4096, 0, 261120, 0, 1U << 30),
	                 0);
	ck_assert_int_eq(direct_read_candidate(4096, 8192, 4096, 0, 1U << 30),
	                 1);
	ck_assert_int_eq(direct_read_candidate(512, 0, 0, 0, 1U << 30), 0);
	ck_assert_int_eq(direct_read_candidate(512, 100, 512, 0, 1U << 30), 0);
	/* Near where the stream was to go on, ahead or behind: a stream
	 * whose READs came a little out of order stays buffered. */
	ck_assert_int_eq(
	    direct_read_candidate(512, 1048576, 32768, 0, 1048576 - 32768), 0);
	ck_assert_int_eq(
	    direct_read_candidate(512, 1048576 - 65536, 32768, 0, 1048576), 0);
	ck_assert_int_eq(direct_read_candidate(512, 1048576 + DIRECT_NEAR,
	                                       32768, 0, 1048576),
	                 1);
	ck_assert_int_eq(direct_read_candidate(512, 1048576 - DIRECT_NEAR - 512,
	                                       32768, 0, 1048576),
	                 1);
	/* At the start of a file, below DIRECT_NEAR. */
	ck_assert_int_eq(direct_read_candidate(512, 0, 32768, 0, 32768), 0);
}
END_TEST

START_TEST(test_bytes_aligned_behind_the_header)
{
	uintptr_t p;

	/* The piece has room for the header and the worst shift. */
	ck_assert_uint_eq(direct_piece_len(512, 13, 32768), 13 + 32768 + 511);
	ck_assert_uint_eq(direct_piece_len(1, 13, 32768), 13 + 32768);
	for (p = 4096; p < 4096 + 1024; p++) {
		uintptr_t at = direct_bytes_at(p, 512, 13);

		ck_assert_uint_eq(at % 512, 0);
		ck_assert_uint_ge(at, p + 13);
		ck_assert_uint_le(at + 32768,
		                  p + direct_piece_len(512, 13, 32768));
	}
	ck_assert_uint_eq(direct_bytes_at(4096 - 13, 512, 13), 4096);
	ck_assert_uint_eq(direct_bytes_at(4097, 1, 13), 4110);
}
END_TEST

/* A file in the build directory: read direct where its file system allows
 * it, and the bytes are the file's. */
START_TEST(test_a_real_file)
{
	char path[] = "check_direct.XXXXXX";
	struct direct_state d, other;
	uint8_t *want, *got;
	uint32_t align;
	int fd, dfd, i;

	want = malloc(65536);
	ck_assert_ptr_nonnull(want);
	for (i = 0; i < 65536; i++)
		want[i] = (uint8_t)(i * 7 + i / 251);
	ck_assert_int_ge(fd = mkstemp(path), 0);
	ck_assert_int_eq(write(fd, want, 65536), 65536);
	ck_assert_int_eq(fsync(fd), 0);
	memset(&d, 0, sizeof(d));
	align = direct_offset_align(&d, fd);
	if (align == 0) {
		/* tmpfs, FUSE and the like: never asked again, no descriptor.
		 */
		ck_assert_int_eq(d.way, DIRECT_REFUSED);
		ck_assert_int_eq(direct_read_begin(&d, fd, 1), -1);
	} else {
		ck_assert_int_eq(d.way, DIRECT_OPEN);
		ck_assert_uint_ge(d.mem_align, 1);
		ck_assert_int_ge(dfd = direct_read_begin(&d, fd, 1), 0);
		ck_assert_int_ne(dfd, fd);
		/* A second READ while the first is in flight: the same. */
		ck_assert_int_eq(direct_read_begin(&d, fd, 1), dfd);
		ck_assert_int_ne(fcntl(dfd, F_GETFL) & O_DIRECT, 0);
		ck_assert_int_eq(posix_memalign((void **)&got, 4096, 32768), 0);
		ck_assert_int_eq(pread(dfd, got, 32768, 32768), 32768);
		ck_assert_mem_eq(got, want + 32768, 32768);
		free(got);
		/* The descriptor stays while a direct READ is in flight and
		 * goes with the last. */
		direct_read_done(&d, 32768);
		ck_assert_int_ne(fcntl(dfd, F_GETFD), -1);
		direct_read_done(&d, 32768);
		ck_assert_int_eq(fcntl(dfd, F_GETFD), -1);
		ck_assert_int_eq(d.fd, -1);
		/* One descriptor per session: another handle reads through
		 * the page cache while this one holds it, and without spare
		 * descriptors none is opened; neither is a refusal. */
		ck_assert_int_ge(dfd = direct_read_begin(&d, fd, 1), 0);
		memset(&other, 0, sizeof(other));
		ck_assert_uint_ne(direct_offset_align(&other, fd), 0);
		ck_assert_int_eq(direct_read_begin(&other, fd, 1), -1);
		ck_assert_int_eq(other.way, DIRECT_OPEN);
		direct_read_done(&d, 32768);
		ck_assert_int_eq(direct_read_begin(&other, fd, 0), -1);
		ck_assert_int_eq(other.way, DIRECT_OPEN);
		ck_assert_int_ge(direct_read_begin(&other, fd, 1), 0);
		direct_close(&other);
		/* The next opens it again; a refusal ends direct reads. */
		ck_assert_int_ge(dfd = direct_read_begin(&d, fd, 1), 0);
		direct_read_done(&d, -EINVAL);
		ck_assert_int_eq(d.way, DIRECT_REFUSED);
		ck_assert_int_eq(fcntl(dfd, F_GETFD), -1);
		ck_assert_int_eq(direct_read_begin(&d, fd, 1), -1);
	}
	direct_close(&d);
	close(fd);
	unlink(path);
	free(want);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("direct");
	TCase *tc = tcase_create("direct");
	SRunner *sr;
	int failed;

	log_init("check_direct", LOG_LEVEL_ERROR, LOG_AUTH, 1);
	tcase_add_test(tc, test_only_aligned_reads_that_start_no_stream);
	tcase_add_test(tc, test_bytes_aligned_behind_the_header);
	tcase_add_test(tc, test_a_real_file);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
