/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of the kernel's sticky-directory rule as the server applies
 * it to an atomic upload (fs.protected_regular, fs.protected_fifos), and
 * of how many handles a descriptor limit holds. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "handle.h"
#include "kernelrules.h"

#define ROOT 0
#define ME 1000
#define THEM 1001

static struct stat dir_of(mode_t mode, uid_t owner)
{
	struct stat st = {.st_mode = S_IFDIR | mode, .st_uid = owner};

	return st;
}

static struct stat file_of(mode_t type, uid_t owner)
{
	struct stat st = {.st_mode = type | 0666, .st_uid = owner};

	return st;
}

static int rule(int regular, int fifos, uid_t fsuid, struct stat dir,
                struct stat st)
{
	struct protected_levels lv = {.regular = regular, .fifos = fifos};

	return sticky_create_rule(&lv, fsuid, &dir, &st);
}

START_TEST(test_world_writable_sticky_refuses_others_files)
{
	struct stat tmp = dir_of(01777, ROOT);

	ck_assert_int_eq(rule(1, 0, ME, tmp, file_of(S_IFREG, THEM)), -EACCES);
	ck_assert_int_eq(rule(0, 1, ME, tmp, file_of(S_IFIFO, THEM)), -EACCES);
	/* root meets the rule too */
	ck_assert_int_eq(rule(1, 1, ROOT, tmp, file_of(S_IFREG, THEM)),
	                 -EACCES);
}
END_TEST

START_TEST(test_owners_pass)
{
	/* the opener's own file, or the directory owner's */
	ck_assert_int_eq(
	    rule(2, 2, ME, dir_of(01777, ROOT), file_of(S_IFREG, ME)), 0);
	ck_assert_int_eq(
	    rule(2, 2, ME, dir_of(01777, ROOT), file_of(S_IFREG, ROOT)), 0);
	/* the opener owning the directory is not enough */
	ck_assert_int_eq(
	    rule(1, 1, ME, dir_of(01777, ME), file_of(S_IFREG, THEM)), -EACCES);
}
END_TEST

START_TEST(test_levels_and_modes)
{
	struct stat them = file_of(S_IFREG, THEM);
	struct stat fifo = file_of(S_IFIFO, THEM);

	/* off, or the other type's sysctl only */
	ck_assert_int_eq(rule(0, 2, ME, dir_of(01777, ROOT), them), 0);
	ck_assert_int_eq(rule(2, 0, ME, dir_of(01777, ROOT), fifo), 0);
	/* not sticky */
	ck_assert_int_eq(rule(2, 2, ME, dir_of(0777, ROOT), them), 0);
	/* group-writable sticky: level 2 only */
	ck_assert_int_eq(rule(1, 1, ME, dir_of(01775, ROOT), them), 0);
	ck_assert_int_eq(rule(2, 2, ME, dir_of(01775, ROOT), them), -EACCES);
	ck_assert_int_eq(rule(2, 2, ME, dir_of(01775, ROOT), fifo), -EACCES);
	/* sticky, writable by its owner alone */
	ck_assert_int_eq(rule(2, 2, ME, dir_of(01755, ROOT), them), 0);
	/* other types are not the rule's */
	ck_assert_int_eq(
	    rule(2, 2, ME, dir_of(01777, ROOT), file_of(S_IFCHR, THEM)), 0);
}
END_TEST

START_TEST(test_handles_that_hold)
{
	/* OpenSSH's reckoning, one descriptor each */
	ck_assert_uint_eq(handle_limit_for(64, 5, 1), 59);
	/* two each (an atomic upload's file and directory), two sysctls */
	ck_assert_uint_eq(handle_limit_for(64, 5, 2), 29);
	ck_assert_uint_eq(handle_limit_for(64, 7, 2), 28);
	ck_assert_uint_eq(handle_limit_for(5, 5, 1), 0);
	ck_assert_uint_eq(handle_limit_for(3, 5, 2), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kernelrules");
	TCase *tc = tcase_create("rules");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_world_writable_sticky_refuses_others_files);
	tcase_add_test(tc, test_owners_pass);
	tcase_add_test(tc, test_levels_and_modes);
	tcase_add_test(tc, test_handles_that_hold);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
