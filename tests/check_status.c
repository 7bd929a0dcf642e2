/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of the errno table, the status texts, errno_text and
 * sftp_realpath. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "realpath.h"
#include "sftp.h"
#include "status.h"

START_TEST(test_errno_table)
{
	static const struct {
		int err;
		uint32_t status;
	} table[] = {
	    {0, SSH2_FX_OK},
	    {ENOENT, SSH2_FX_NO_SUCH_FILE},
	    {ENOTDIR, SSH2_FX_NO_SUCH_FILE},
	    {EBADF, SSH2_FX_NO_SUCH_FILE},
	    {ELOOP, SSH2_FX_NO_SUCH_FILE},
	    {EPERM, SSH2_FX_PERMISSION_DENIED},
	    {EACCES, SSH2_FX_PERMISSION_DENIED},
	    {EFAULT, SSH2_FX_PERMISSION_DENIED},
	    {ENAMETOOLONG, SSH2_FX_BAD_MESSAGE},
	    {EINVAL, SSH2_FX_BAD_MESSAGE},
	    {ENOSYS, SSH2_FX_OP_UNSUPPORTED},
	    /* Everything else is a plain failure. */
	    {EEXIST, SSH2_FX_FAILURE},
	    {ENOTEMPTY, SSH2_FX_FAILURE},
	    {EISDIR, SSH2_FX_FAILURE},
	    {ENOSPC, SSH2_FX_FAILURE},
	    {EDQUOT, SSH2_FX_FAILURE},
	    {EROFS, SSH2_FX_FAILURE},
	    {EXDEV, SSH2_FX_FAILURE},
	    {EMFILE, SSH2_FX_FAILURE},
	    {EIO, SSH2_FX_FAILURE},
	    {EOPNOTSUPP, SSH2_FX_FAILURE},
	    {EAGAIN, SSH2_FX_FAILURE},
	    {EINTR, SSH2_FX_FAILURE},
	    {ETXTBSY, SSH2_FX_FAILURE},
	    {-1, SSH2_FX_FAILURE},
	    {99999, SSH2_FX_FAILURE},
	};
	size_t i;

	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		ck_assert_msg(errno_to_status(table[i].err) == table[i].status,
		              "errno %d gave %u, want %u", table[i].err,
		              errno_to_status(table[i].err), table[i].status);
}
END_TEST

static void *text_of_unknown(void *arg)
{
	return (void *)errno_text(*(int *)arg);
}

/* errno_text is strerror's text, and each thread's text its own: a worker
 * logging one error does not change another's line. */
START_TEST(test_errno_text)
{
	int other = 88888;
	const char *mine;
	void *theirs;
	pthread_t t;

	ck_assert_str_eq(errno_text(ENOENT), "No such file or directory");
	ck_assert_str_eq(errno_text(EACCES), "Permission denied");
	mine = errno_text(99999);
	ck_assert_int_eq(pthread_create(&t, NULL, text_of_unknown, &other), 0);
	ck_assert_int_eq(pthread_join(t, &theirs), 0);
	ck_assert_str_eq(mine, "Unknown error 99999");
	ck_assert_ptr_ne(mine, theirs);
}
END_TEST

START_TEST(test_status_messages)
{
	ck_assert_str_eq(status_message(SSH2_FX_OK), "Success");
	ck_assert_str_eq(status_message(SSH2_FX_EOF), "End of file");
	ck_assert_str_eq(status_message(SSH2_FX_NO_SUCH_FILE), "No such file");
	ck_assert_str_eq(status_message(SSH2_FX_PERMISSION_DENIED),
	                 "Permission denied");
	ck_assert_str_eq(status_message(SSH2_FX_FAILURE), "Failure");
	ck_assert_str_eq(status_message(SSH2_FX_BAD_MESSAGE), "Bad message");
	ck_assert_str_eq(status_message(SSH2_FX_NO_CONNECTION),
	                 "No connection");
	ck_assert_str_eq(status_message(SSH2_FX_CONNECTION_LOST),
	                 "Connection lost");
	ck_assert_str_eq(status_message(SSH2_FX_OP_UNSUPPORTED),
	                 "Operation unsupported");
	ck_assert_str_eq(status_message(9), "Unknown error");
	ck_assert_str_eq(status_message(100), "Unknown error");
	ck_assert_str_eq(status_message(UINT32_MAX), "Unknown error");
}
END_TEST

/*
 * A scratch tree for the realpath tests:
 *   base/f            regular file
 *   base/d/sub/       directories
 *   base/ld -> d      relative link to a directory
 *   base/abs -> base/d/sub (absolute)
 *   base/dang -> nope dangling link
 *   base/slash -> d/  target with a trailing slash
 *   base/loop1 <-> base/loop2
 *   base/c0 -> c1 -> ... -> c34 -> f   a chain of 35 links
 */
static char base[PATH_MAX];
static char saved_cwd[PATH_MAX];

/* Room for base plus a relative path, so snprintf never truncates. */
#define SCRATCH_MAX (2 * PATH_MAX)

#define CHAIN_LINKS 35

static void make_link(const char *target, const char *name)
{
	char path[SCRATCH_MAX];

	snprintf(path, sizeof(path), "%s/%s", base, name);
	ck_assert_int_eq(symlink(target, path), 0);
}

static void setup_tree(void)
{
	char tmpl[] = "/tmp/check_status.XXXXXX";
	char path[SCRATCH_MAX], name[32], target[32];
	int fd, i;

	ck_assert_ptr_nonnull(getcwd(saved_cwd, sizeof(saved_cwd)));
	ck_assert_ptr_nonnull(mkdtemp(tmpl));
	/* /tmp itself may be a link; compare against the real name. */
	ck_assert_ptr_nonnull(realpath(tmpl, base));

	snprintf(path, sizeof(path), "%s/f", base);
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/d", base);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/d/sub", base);
	ck_assert_int_eq(mkdir(path, 0755), 0);

	make_link("d", "ld");
	snprintf(path, sizeof(path), "%s/d/sub", base);
	make_link(path, "abs");
	make_link("nope", "dang");
	make_link("d/", "slash");
	make_link("loop2", "loop1");
	make_link("loop1", "loop2");
	for (i = 0; i < CHAIN_LINKS; i++) {
		snprintf(name, sizeof(name), "c%d", i);
		if (i + 1 < CHAIN_LINKS)
			snprintf(target, sizeof(target), "c%d", i + 1);
		else
			snprintf(target, sizeof(target), "f");
		make_link(target, name);
	}
}

static int remove_entry(const char *path, const struct stat *st, int type,
                        struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

static void teardown_tree(void)
{
	if (chdir(saved_cwd) != 0)
		return;
	/* Depth first, links not followed: only our tree goes. */
	if (nftw(base, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
		fprintf(stderr, "could not remove %s\n", base);
}

/* Resolve base/rel (or rel itself when it starts with '/'). */
static char *resolve(const char *rel, char *out)
{
	char path[SCRATCH_MAX];

	if (rel[0] == '/')
		snprintf(path, sizeof(path), "%s", rel);
	else
		snprintf(path, sizeof(path), "%s/%s", base, rel);
	return sftp_realpath(path, out);
}

static void assert_resolves(const char *rel, const char *expect_rel)
{
	char out[PATH_MAX], expect[SCRATCH_MAX];

	if (expect_rel[0] == '/')
		snprintf(expect, sizeof(expect), "%s", expect_rel);
	else if (expect_rel[0] == '\0')
		snprintf(expect, sizeof(expect), "%s", base);
	else
		snprintf(expect, sizeof(expect), "%s/%s", base, expect_rel);
	errno = 0;
	ck_assert_msg(resolve(rel, out) != NULL, "%s failed: %s", rel,
	              strerror(errno));
	ck_assert_str_eq(out, expect);
}

static void assert_fails(const char *rel, int err)
{
	char out[PATH_MAX];

	errno = 0;
	ck_assert_msg(resolve(rel, out) == NULL, "%s resolved to %s", rel, out);
	ck_assert_msg(errno == err, "%s: errno %d, want %d", rel, errno, err);
}

START_TEST(test_realpath_plain_paths)
{
	assert_resolves("", "");
	assert_resolves("f", "f");
	assert_resolves("d/sub", "d/sub");
	assert_resolves("d/sub/", "d/sub");
	assert_resolves("./d//sub/./", "d/sub");
	assert_resolves("d/sub/../../f", "f");
}
END_TEST

START_TEST(test_realpath_root_and_dots)
{
	assert_resolves("/", "/");
	assert_resolves("//", "/");
	assert_resolves("/..", "/");
	assert_resolves("/../../..", "/");
	assert_resolves("/./.", "/");
}
END_TEST

START_TEST(test_realpath_missing_components)
{
	/* The last component may be missing: clients resolve, then create. */
	assert_resolves("nope", "nope");
	assert_resolves("d/nope", "d/nope");
	/* A missing one in the middle is an error... */
	assert_fails("nope/x", ENOENT);
	assert_fails("nope/..", ENOENT);
	/* ...and so is a missing last one followed by a slash. */
	assert_fails("nope/", ENOENT);
}
END_TEST

START_TEST(test_realpath_file_in_the_middle)
{
	/* ".." is textual: "f/.." works even though f is a file. */
	assert_resolves("f/..", "");
	assert_resolves("f/.", "f");
	assert_resolves("f/", "f");
	assert_fails("f/x", ENOTDIR);
}
END_TEST

START_TEST(test_realpath_symlinks)
{
	assert_resolves("ld", "d");
	assert_resolves("ld/sub", "d/sub");
	assert_resolves("ld/..", "");
	assert_resolves("abs", "d/sub");
	assert_resolves("abs/..", "d");
	assert_resolves("slash", "d");
	assert_resolves("slash/sub", "d/sub");
	/* A dangling link resolves to its (missing) target... */
	assert_resolves("dang", "nope");
	/* ...but nothing below it exists. */
	assert_fails("dang/x", ENOENT);
	assert_fails("dang/", ENOENT);
}
END_TEST

START_TEST(test_realpath_symlink_limits)
{
	char name[32];

	assert_fails("loop1", ELOOP);
	assert_fails("loop1/x", ELOOP);

	/* 33 links in a row resolve, as in OpenSSH; the 34th is too many. */
	snprintf(name, sizeof(name), "c%d", CHAIN_LINKS - 33);
	assert_resolves(name, "f");
	snprintf(name, sizeof(name), "c%d", CHAIN_LINKS - 34);
	assert_fails(name, ELOOP);
}
END_TEST

START_TEST(test_realpath_relative_to_cwd)
{
	char out[PATH_MAX], expect[SCRATCH_MAX];

	ck_assert_int_eq(chdir(base), 0);
	ck_assert_ptr_nonnull(sftp_realpath(".", out));
	ck_assert_str_eq(out, base);
	ck_assert_ptr_nonnull(sftp_realpath("ld/sub/..", out));
	snprintf(expect, sizeof(expect), "%s/d", base);
	ck_assert_str_eq(out, expect);
	ck_assert_ptr_nonnull(sftp_realpath("newfile", out));
	snprintf(expect, sizeof(expect), "%s/newfile", base);
	ck_assert_str_eq(out, expect);

	ck_assert_int_eq(chdir("d/sub"), 0);
	ck_assert_ptr_nonnull(sftp_realpath("../../f", out));
	snprintf(expect, sizeof(expect), "%s/f", base);
	ck_assert_str_eq(out, expect);

	/* The server turns "" into "."; the function itself refuses it. */
	errno = 0;
	ck_assert_ptr_null(sftp_realpath("", out));
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

START_TEST(test_realpath_too_long)
{
	char *path = malloc(PATH_MAX + 10);
	char out[PATH_MAX];
	size_t i;

	/* "/a/a/a/..." longer than PATH_MAX. */
	for (i = 0; i + 1 < PATH_MAX + 10; i += 2) {
		path[i] = '/';
		path[i + 1] = 'a';
	}
	path[PATH_MAX + 9] = '\0';
	errno = 0;
	ck_assert_ptr_null(sftp_realpath(path, out));
	ck_assert_int_eq(errno, ENAMETOOLONG);

	/* Only slashes, which would fold to "/", but too long to take. */
	memset(path, '/', PATH_MAX + 9);
	errno = 0;
	ck_assert_ptr_null(sftp_realpath(path, out));
	ck_assert_int_eq(errno, ENAMETOOLONG);
	free(path);
}
END_TEST

START_TEST(test_realpath_keeps_errno_on_success)
{
	char out[PATH_MAX];

	errno = EXDEV;
	ck_assert_ptr_nonnull(resolve("nope", out));
	ck_assert_int_eq(errno, EXDEV);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("status");
	TCase *status = tcase_create("status");
	TCase *realpath_tc = tcase_create("realpath");
	SRunner *sr;
	int failed;

	tcase_add_test(status, test_errno_table);
	tcase_add_test(status, test_errno_text);
	tcase_add_test(status, test_status_messages);
	suite_add_tcase(s, status);

	tcase_add_checked_fixture(realpath_tc, setup_tree, teardown_tree);
	tcase_add_test(realpath_tc, test_realpath_plain_paths);
	tcase_add_test(realpath_tc, test_realpath_root_and_dots);
	tcase_add_test(realpath_tc, test_realpath_missing_components);
	tcase_add_test(realpath_tc, test_realpath_file_in_the_middle);
	tcase_add_test(realpath_tc, test_realpath_symlinks);
	tcase_add_test(realpath_tc, test_realpath_symlink_limits);
	tcase_add_test(realpath_tc, test_realpath_relative_to_cwd);
	tcase_add_test(realpath_tc, test_realpath_too_long);
	tcase_add_test(realpath_tc, test_realpath_keeps_errno_on_success);
	suite_add_tcase(s, realpath_tc);

	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
