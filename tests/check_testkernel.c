/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of the test hook URING_SFTP_TEST_KERNEL (testkernel.c): the
 * io_uring operations and Landlock ABI of the kernels the matrix names. */
#include "config.h"

#include <check.h>
#include <liburing.h>
#include <stdlib.h>

#include "log.h"
#include "testkernel.h"

static void act_as(const char *version)
{
	if (version == NULL)
		unsetenv(TESTKERNEL_ENV);
	else
		setenv(TESTKERNEL_ENV, version, 1);
	testkernel_init();
}

START_TEST(test_off)
{
	act_as(NULL);
	ck_assert_int_eq(testkernel_uring_op(IORING_OP_READ), 1);
	ck_assert_int_eq(testkernel_uring_op(IORING_OP_LINKAT), 1);
	ck_assert_int_eq(testkernel_landlock_abi(7), 7);
	ck_assert_int_eq(testkernel_landlock_abi(-1), -1);
	ck_assert_int_eq(testkernel_before(99, 0), 0);
}
END_TEST

START_TEST(test_ignored_values)
{
	static const char *const bad[] = {"",       "5",     "5.",    ".14",
	                                  "5.14.1", "x5.14", "5.14x", "1.0"};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		act_as(bad[i]);
		ck_assert_msg(testkernel_landlock_abi(7) == 7, "%s", bad[i]);
		ck_assert_msg(!testkernel_before(99, 0), "%s", bad[i]);
	}
}
END_TEST

START_TEST(test_uring_ops)
{
	act_as("5.14"); /* RHEL 9 */
	ck_assert_int_eq(testkernel_uring_op(IORING_OP_READ), 1);
	ck_assert_int_eq(testkernel_uring_op(IORING_OP_FADVISE), 1);
	ck_assert_int_eq(testkernel_uring_op(IORING_OP_SPLICE), 1);
	ck_assert_int_eq(testkernel_uring_op(IORING_OP_UNLINKAT), 1);
	ck_assert_int_eq(testkernel_uring_op(IORING_OP_MKDIRAT), 0);
	act_as("5.15"); /* Ubuntu 22.04 */
	ck_assert_int_eq(testkernel_uring_op(IORING_OP_LINKAT), 1);
	ck_assert_int_eq(testkernel_uring_op(IORING_OP_MSG_RING), 0);
	act_as("6.1"); /* Debian 12 */
	ck_assert_int_eq(testkernel_uring_op(IORING_OP_SENDMSG_ZC), 1);
	ck_assert_int_eq(testkernel_uring_op(IORING_OP_SENDMSG_ZC + 1), 0);
	act_as("5.6");
	ck_assert_int_eq(testkernel_uring_op(IORING_OP_READ), 1);
	ck_assert_int_eq(testkernel_uring_op(IORING_OP_SPLICE), 0);
	act_as("5.4");
	ck_assert_int_eq(testkernel_uring_op(IORING_OP_READ), 0);
	ck_assert_int_eq(testkernel_uring_op(IORING_OP_FSYNC), 1);
	act_as("6.18"); /* newer than the table: everything */
	ck_assert_int_eq(testkernel_uring_op(IORING_OP_LAST - 1), 1);
}
END_TEST

START_TEST(test_landlock_abi)
{
	act_as("5.14");
	ck_assert_int_eq(testkernel_landlock_abi(7), 1);
	ck_assert_int_eq(testkernel_landlock_abi(-1), -1);
	act_as("5.19");
	ck_assert_int_eq(testkernel_landlock_abi(7), 2);
	act_as("6.1");
	ck_assert_int_eq(testkernel_landlock_abi(7), 2);
	ck_assert_int_eq(testkernel_landlock_abi(1), 1); /* never more */
	act_as("6.2");
	ck_assert_int_eq(testkernel_landlock_abi(7), 3);
	act_as("6.12");
	ck_assert_int_eq(testkernel_landlock_abi(7), 6);
	act_as("6.18");
	ck_assert_int_eq(testkernel_landlock_abi(7), 7);
}
END_TEST

START_TEST(test_before)
{
	act_as("6.1");
	ck_assert_int_eq(testkernel_before(6, 2), 1);
	ck_assert_int_eq(testkernel_before(6, 1), 0);
	ck_assert_int_eq(testkernel_before(5, 15), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("testkernel");
	TCase *tc = tcase_create("testkernel");
	SRunner *sr;
	int failed;

	log_init("check_testkernel", LOG_LEVEL_QUIET, 0, 1);
	tcase_add_test(tc, test_off);
	tcase_add_test(tc, test_ignored_values);
	tcase_add_test(tc, test_uring_ops);
	tcase_add_test(tc, test_landlock_abi);
	tcase_add_test(tc, test_before);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
