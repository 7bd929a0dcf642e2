/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of lease.c: a READ splices only under a read lease; someone
 * truncating the file waits until we let go, which we do only once the
 * file's pages are no longer in transit; a closed handle keeps its lease
 * while they are; no lease where someone has the file open for writing. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lease.h"

static char dir[] = "/tmp/check_lease.XXXXXX";
static int in_transit; /* what busy() answers */

static int busy(dev_t dev, ino_t ino)
{
	(void)dev;
	(void)ino;
	return in_transit;
}

static void on_sigio(int sig)
{
	(void)sig;
	lease_note_break();
}

static void make_file(const char *name)
{
	int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "AAAAAAAA", 8), 8);
	close(fd);
}

static off_t size_of(const char *name)
{
	struct stat st;

	ck_assert_int_eq(stat(name, &st), 0);
	return st.st_size;
}

/* A child that truncates name to 0; it blocks while we hold a lease. */
static pid_t truncate_in_child(const char *name)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(truncate(name, 0) == 0 ? 0 : 1);
	return pid;
}

/* Wait for the lease-break signal (a second at most per try). */
static void wait_for_break(void)
{
	int tries;

	for (tries = 0; tries < 20 && !lease_pending(); tries++)
		usleep(50000);
	ck_assert_int_eq(lease_pending(), 1);
}

static int child_done(pid_t pid)
{
	int status;
	pid_t rc = waitpid(pid, &status, WNOHANG);

	ck_assert_int_ge(rc, 0);
	if (rc == 0)
		return 0;
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return 1;
}

static int wait_child(pid_t pid)
{
	int tries;

	for (tries = 0; tries < 200; tries++) {
		if (child_done(pid))
			return 1;
		usleep(10000);
	}
	return 0;
}

/* Said out loud: the test then proves less. */
static void no_leases(int fd)
{
	fprintf(stderr, "SKIP: no read lease on a file in %s: %s\n", dir,
	        strerror(errno));
	ck_assert_int_eq(lease_close(fd), 0);
}

START_TEST(test_truncation_waits_for_the_pages)
{
	uint64_t size = 0;
	int fd;
	pid_t pid;

	make_file("f");
	fd = open("f", O_RDONLY);
	ck_assert_int_ge(fd, 0);
	if (!lease_for_splice(fd)) {
		/* No leases here (a file system without them): copying is
		 * the safe answer, and what the server then does. */
		no_leases(fd);
		return;
	}
	ck_assert_int_eq(lease_for_splice(fd), 1); /* held, not taken again */
	ck_assert_int_eq(lease_held_size(fd, &size), 1);
	ck_assert_uint_eq(size, 8);
	in_transit = 1;
	pid = truncate_in_child("f");
	wait_for_break();
	/* Pages still in transit: the lease is kept, the truncation waits,
	 * and READs of the handle copy from now on. */
	lease_poll(busy);
	ck_assert_int_eq(lease_for_splice(fd), 0);
	ck_assert_int_eq(lease_held_size(fd, &size), 0);
	usleep(100000);
	ck_assert_int_eq(child_done(pid), 0);
	ck_assert_int_eq(size_of("f"), 8);
	ck_assert_int_eq(lease_pending(), 1);
	/* They were read: we let go, the truncation goes ahead. */
	in_transit = 0;
	lease_poll(busy);
	ck_assert_int_eq(lease_pending(), 0);
	ck_assert_int_eq(wait_child(pid), 1);
	ck_assert_int_eq(size_of("f"), 0);
	ck_assert_int_eq(lease_for_splice(fd), 0); /* still copies */
	ck_assert_int_eq(lease_close(fd), 0);
	ck_assert_int_eq(fcntl(fd, F_GETFD), -1);
}
END_TEST

START_TEST(test_closed_handle_keeps_its_lease)
{
	int fd;
	pid_t pid;

	make_file("g");
	fd = open("g", O_RDONLY);
	ck_assert_int_ge(fd, 0);
	if (!lease_for_splice(fd)) {
		no_leases(fd);
		return;
	}
	in_transit = 1;
	ck_assert_int_eq(lease_close(fd), 0);
	ck_assert_int_ge(fcntl(fd, F_GETFD), 0); /* kept */
	ck_assert_int_eq(lease_pending(), 1);
	pid = truncate_in_child("g");
	wait_for_break();
	lease_poll(busy);
	usleep(100000);
	ck_assert_int_eq(child_done(pid), 0);
	in_transit = 0;
	lease_poll(busy);
	ck_assert_int_eq(wait_child(pid), 1);
	ck_assert_int_eq(fcntl(fd, F_GETFD), -1); /* closed now */
	ck_assert_int_eq(lease_pending(), 0);
}
END_TEST

START_TEST(test_no_lease_while_open_for_writing)
{
	int w = open("h", O_WRONLY | O_CREAT | O_TRUNC, 0644), fd;

	ck_assert_int_ge(w, 0);
	fd = open("h", O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(lease_for_splice(fd), 0);
	ck_assert_int_eq(lease_for_splice(fd), 0);
	ck_assert_int_eq(lease_close(fd), 0);
	ck_assert_int_eq(fcntl(fd, F_GETFD), -1);
	close(w);
}
END_TEST

START_TEST(test_release_all_lets_our_own_open_through)
{
	int fd, w;

	make_file("k");
	fd = open("k", O_RDONLY);
	ck_assert_int_ge(fd, 0);
	if (!lease_for_splice(fd)) {
		no_leases(fd);
		return;
	}
	/* Before this session opens the file for writing itself. */
	lease_release_all();
	w = open("k", O_WRONLY | O_TRUNC | O_NONBLOCK);
	ck_assert_int_ge(w, 0); /* not EWOULDBLOCK: no lease in the way */
	/* Taken again only when nobody writes. */
	ck_assert_int_eq(lease_for_splice(fd), 0);
	close(w);
	ck_assert_int_eq(lease_close(fd), 0);
	ck_assert_int_eq(lease_pending(), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("lease");
	TCase *tc = tcase_create("lease");
	struct sigaction sa = {0};
	sigset_t block;
	SRunner *sr;
	int failed;

	if (mkdtemp(dir) == NULL || chdir(dir) != 0) {
		perror(dir);
		return 1;
	}
	/* As main: the lease-break signal only notes the break. */
	sa.sa_handler = on_sigio;
	sigaction(SIGIO, &sa, NULL);
	sigemptyset(&block);
	sigprocmask(SIG_SETMASK, &block, NULL);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_truncation_waits_for_the_pages);
	tcase_add_test(tc, test_closed_handle_keeps_its_lease);
	tcase_add_test(tc, test_no_lease_while_open_for_writing);
	tcase_add_test(tc, test_release_all_lets_our_own_open_through);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
