/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of --check's decisions and formats (hostcheck.h): what a
 * host's facts mean, and how the text and JSON reports say it.  The
 * facts are made up here; tests/kernel-matrix.sh and
 * tests/seccomp-suite.sh check the probes on simulated kernels. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostcheck.h"

/* A host where everything works: io_uring with every operation,
 * Landlock ABI 6, O_TMPFILE linked by descriptor, RWF_DONTCACHE. */
static void good_host(struct hostcheck *h)
{
	size_t i;

	memset(h, 0, sizeof(*h));
	h->uid = 1000;
	strcpy(h->user, "alice");
	strcpy(h->kernel, "6.18.0");
	h->uring.listed = 1;
	for (i = 0; i < URING_OPS_USED; i++)
		h->uring.has[i] = 1;
	h->uring_group = -1;
	h->memlock = 8 << 20;
	h->landlock_abi = 6;
	h->pipes = (struct pipe_limits){16384, 0, 256, 0};
	h->sessions = 1;
	h->page_size = 4096;
	h->plan = (struct pipe_plan){512, 256, 256, 256};
	strcpy(h->start_dir, "/home/alice");
	strcpy(h->fs_type, "ext2/3/4");
	h->upload_way = UPLOAD_WAY_LINK_FD;
	strcpy(h->confine_dir, "/home/alice");
}

/* Which entry of uring_ops_used is name. */
static size_t op_index(const char *name)
{
	size_t i;

	for (i = 0; i < URING_OPS_USED; i++)
		if (strcmp(uring_ops_used[i].name, name) == 0)
			return i;
	ck_abort_msg("no operation %s", name);
	return 0;
}

/* The report as a string (the caller frees it). */
static char *report(const struct hostcheck *h, int json)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	ck_assert_ptr_nonnull(f);
	if (json)
		hostcheck_print_json(h, f);
	else
		hostcheck_print_text(h, f);
	fclose(f);
	return out;
}

#define ck_assert_has(hay, needle)                                             \
	ck_assert_msg(strstr((hay), (needle)) != NULL, "\"%s\" not in:\n%s",   \
	              (needle), (hay))
#define ck_assert_lacks(hay, needle)                                           \
	ck_assert_msg(strstr((hay), (needle)) == NULL, "\"%s\" in:\n%s",       \
	              (needle), (hay))

START_TEST(test_uring_usable_or_why_not)
{
	struct hostcheck h;
	char why[1024];

	good_host(&h);
	ck_assert_int_eq(hostcheck_uring_usable(&h, why, sizeof(why)), 1);
	/* A metadata operation missing: usable, its calls go to workers. */
	h.uring.has[op_index("MKDIRAT")] = 0;
	ck_assert_int_eq(hostcheck_uring_usable(&h, why, sizeof(why)), 1);
	/* One the ring needs: not. */
	h.uring.has[op_index("FADVISE")] = 0;
	h.uring.has[op_index("READ")] = 0;
	ck_assert_int_eq(hostcheck_uring_usable(&h, why, sizeof(why)), 0);
	ck_assert_str_eq(why, "the kernel's io_uring has no IORING_OP_READ, "
	                      "IORING_OP_FADVISE");
	/* No IORING_REGISTER_PROBE (before 5.6). */
	good_host(&h);
	h.uring.listed = 0;
	ck_assert_int_eq(hostcheck_uring_usable(&h, why, sizeof(why)), 0);
	ck_assert_has(why, "cannot list io_uring's operations");
}
END_TEST

START_TEST(test_uring_refusal_explained)
{
	struct hostcheck h;
	char why[1024];

	good_host(&h);
	h.uring.setup = -EPERM;
	h.uring.listed = 0;
	h.uring_disabled = 2;
	ck_assert_int_eq(hostcheck_uring_usable(&h, why, sizeof(why)), 0);
	ck_assert_has(why, "kernel.io_uring_disabled is 2");
	h.uring_disabled = 1;
	h.uring_group = 1234;
	hostcheck_uring_usable(&h, why, sizeof(why));
	ck_assert_has(why, "not in kernel.io_uring_group (1234)");
	/* In the group, EPERM comes from elsewhere: a seccomp filter. */
	h.in_uring_group = 1;
	h.seccomp = 2;
	hostcheck_uring_usable(&h, why, sizeof(why));
	ck_assert_has(why, "under a seccomp filter");
	h.uring_disabled = 0;
	h.uring.setup = -ENOSYS;
	hostcheck_uring_usable(&h, why, sizeof(why));
	ck_assert_has(why, "under a seccomp filter");
	h.seccomp = 0;
	hostcheck_uring_usable(&h, why, sizeof(why));
	ck_assert_has(why, "the kernel has no io_uring_setup");
	h.uring.setup = -ENOMEM;
	h.memlock = 65536;
	hostcheck_uring_usable(&h, why, sizeof(why));
	ck_assert_has(why, "RLIMIT_MEMLOCK (65536 bytes)");
	h.memlock_unlimited = 1;
	hostcheck_uring_usable(&h, why, sizeof(why));
	ck_assert_lacks(why, "RLIMIT_MEMLOCK");
}
END_TEST

/* decide(h) says works, and its reason contains says. */
static void expect(int (*decide)(const struct hostcheck *, char *, size_t),
                   const struct hostcheck *h, int works, const char *says)
{
	char why[4096];

	ck_assert_int_eq(decide(h, why, sizeof(why)), works);
	ck_assert_has(why, says);
}

START_TEST(test_options_would_work_or_why_not)
{
	struct hostcheck h;

	good_host(&h);
	expect(hostcheck_confine, &h, 1,
	       "Landlock ABI 6, confined to \"/home/alice\"");
	strcpy(h.confine_why, "\"/home\" is writable by others");
	expect(hostcheck_confine, &h, 0, "\"/home\" is writable by others");
	h.landlock_abi = -EOPNOTSUPP;
	expect(hostcheck_confine, &h, 0, "not enabled at boot");

	good_host(&h);
	expect(hostcheck_atomic_uploads, &h, 1,
	       "O_TMPFILE, linked by descriptor");
	h.upload_way = UPLOAD_WAY_LINK_PROC;
	expect(hostcheck_atomic_uploads, &h, 1, "/proc");
	h.upload_way = UPLOAD_WAY_NAMED;
	h.tmpfile_err = EOPNOTSUPP;
	expect(hostcheck_atomic_uploads, &h, 1,
	       "hidden named temporary files (O_TMPFILE: ");
	h.upload_way = UPLOAD_WAY_UNKNOWN;
	h.tmpfile_err = EACCES;
	expect(hostcheck_atomic_uploads, &h, 0, "takes no new file");

	good_host(&h);
	expect(hostcheck_nocache, &h, 1,
	       "RWF_DONTCACHE on every read and write");
	h.dontcache_err = EOPNOTSUPP;
	expect(hostcheck_nocache, &h, 1, "the server's own way");
	strcpy(h.fs_type, "tmpfs");
	expect(hostcheck_nocache, &h, 1, "; on tmpfs nothing is dropped");
	h.fadvise_err = ESPIPE;
	expect(hostcheck_nocache, &h, 0, "neither RWF_DONTCACHE");
	h.probe_file_err = EACCES;
	expect(hostcheck_nocache, &h, 0, "cannot tell");
}
END_TEST

START_TEST(test_text_says_each_fact)
{
	struct hostcheck h;
	char *out;

	good_host(&h);
	h.uring.has[op_index("MKDIRAT")] = 0;
	h.uring.has[op_index("LINKAT")] = 0;
	h.landlock_abi = 2;
	h.test_major = 5;
	h.test_minor = 19;
	h.direct_err = EINVAL;
	h.fadvise_err = HC_NOT_PROBED;
	out = report(&h, 0);
	ck_assert_has(out, "as user alice (uid 1000)\n");
	ck_assert_has(out, "\ntest mode                  io_uring operations "
	                   "and Landlock as in Linux 5.19");
	ck_assert_has(out, "\n--backend=auto uses        io_uring\n");
	ck_assert_has(out, "\n  operations               READ FSYNC FADVISE "
	                   "STATX UNLINKAT SYMLINKAT RENAMEAT CLOSE\n");
	ck_assert_has(out, "\n  operations missing       MKDIRAT LINKAT\n");
	ck_assert_has(out, "\nLandlock                   ABI 2\n");
	/* The gaps of ABI 2 (confine.c's sentences), not REFER's. */
	ck_assert_has(out, "\n  no LANDLOCK_ACCESS_FS_TRUNCATE");
	ck_assert_lacks(out, "no LANDLOCK_ACCESS_FS_REFER");
	ck_assert_has(out, "\n  O_DIRECT                 no (");
	ck_assert_has(out, "\n  POSIX_FADV_DONTNEED      not probed");
	ck_assert_has(out,
	              "\n--confine                  works: Landlock ABI 2");
	free(out);

	/* io_uring refused: no operation lines, the plain back end. */
	h.uring.setup = -EPERM;
	h.seccomp = 2;
	h.landlock_abi = -ENOSYS;
	out = report(&h, 0);
	ck_assert_has(out, "\nio_uring                   no: io_uring_setup:");
	ck_assert_has(out, "\n--backend=auto uses        plain system calls\n");
	ck_assert_lacks(out, "\n  operations");
	ck_assert_has(out, "\nLandlock                   no (");
	ck_assert_has(out, "\n--confine                  would not work: "
	                   "Landlock is not available");
	free(out);
}
END_TEST

START_TEST(test_json_keys_and_escapes)
{
	struct hostcheck h;
	char *out;

	good_host(&h);
	strcpy(h.start_dir, "/home/a \"b\"\n\\c");
	h.uring.has[op_index("CLOSE")] = 0;
	h.dontcache_err = EOPNOTSUPP;
	h.fadvise_err = HC_NOT_PROBED;
	out = report(&h, 1);
	ck_assert_has(out, "\"path\": \"/home/a \\\"b\\\"\\u000a\\\\c\"");
	ck_assert_has(out, "\"usable\": true");
	ck_assert_has(out, "\"setup_error\": null");
	ck_assert_has(out, "\"READ\": true");
	ck_assert_has(out, "\"CLOSE\": false");
	ck_assert_has(out, "\"backend_auto\": \"io_uring\"");
	ck_assert_has(out, "\"abi\": 6, \"error\": null, \"gaps\": []");
	ck_assert_has(out, "\"rwf_dontcache\": false, "
	                   "\"rwf_dontcache_error\": \"EOPNOTSUPP\"");
	ck_assert_has(out, "\"fadv_dontneed\": null, "
	                   "\"fadv_dontneed_error\": null");
	ck_assert_has(out, "\"test_kernel\": null");
	ck_assert_has(out, "\"nocache\": {\"works\": false");
	free(out);
	/* The text keeps each fact on its line. */
	out = report(&h, 0);
	ck_assert_has(out, "\nstart directory            /home/a \"b\"?\\c (");
	free(out);

	h.uring.setup = -EPERM;
	h.landlock_abi = -ENOSYS;
	h.memlock_unlimited = 1;
	h.uring_disabled = -1;
	out = report(&h, 1);
	ck_assert_has(out, "\"usable\": false");
	ck_assert_has(out, "\"setup_error\": \"EPERM\"");
	ck_assert_has(out, "\"backend_auto\": \"plain\"");
	ck_assert_has(out, "\"abi\": null, \"error\": \"ENOSYS\"");
	ck_assert_has(out, "\"memlock_bytes\": null");
	ck_assert_has(out, "\"io_uring_disabled\": null");
	free(out);
}
END_TEST

static Suite *hostcheck_suite(void)
{
	Suite *s = suite_create("hostcheck");
	TCase *tc = tcase_create("decisions and formats");

	tcase_add_test(tc, test_uring_usable_or_why_not);
	tcase_add_test(tc, test_uring_refusal_explained);
	tcase_add_test(tc, test_options_would_work_or_why_not);
	tcase_add_test(tc, test_text_says_each_fact);
	tcase_add_test(tc, test_json_keys_and_escapes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(hostcheck_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
