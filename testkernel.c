/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* URING_SFTP_TEST_KERNEL: see testkernel.h.  The tables are facts about
 * Linux releases (the io_uring_enter(2) and io_uring_register(2) man
 * pages, Landlock's documentation); they only need rows for kernels a
 * test may name. */
#include "config.h"

#include <stdlib.h>

#include "log.h"
#include "testkernel.h"

#define KVERSION(major, minor) ((major)*1000u + (minor))

static unsigned acting_as; /* KVERSION(), or 0: the test mode is off */

/* io_uring's operations are numbered in the order they came: the count a
 * release had is the first it lacked. */
static const struct {
	unsigned since;
	int ops;
} uring_ops[] = {
    {KVERSION(5, 1), 8},   /* NOP .. POLL_REMOVE */
    {KVERSION(5, 2), 9},   /* SYNC_FILE_RANGE */
    {KVERSION(5, 3), 11},  /* SENDMSG, RECVMSG */
    {KVERSION(5, 4), 12},  /* TIMEOUT */
    {KVERSION(5, 5), 17},  /* TIMEOUT_REMOVE .. CONNECT */
    {KVERSION(5, 6), 30},  /* FALLOCATE .. EPOLL_CTL: READ, FADVISE, ... */
    {KVERSION(5, 7), 33},  /* SPLICE, PROVIDE_ and REMOVE_BUFFERS */
    {KVERSION(5, 8), 34},  /* TEE */
    {KVERSION(5, 11), 37}, /* SHUTDOWN, RENAMEAT, UNLINKAT */
    {KVERSION(5, 15), 40}, /* MKDIRAT, SYMLINKAT, LINKAT */
    {KVERSION(5, 18), 41}, /* MSG_RING */
    {KVERSION(5, 19), 47}, /* the xattr calls, SOCKET, URING_CMD */
    {KVERSION(6, 0), 48},  /* SEND_ZC */
    {KVERSION(6, 1), 49},  /* SENDMSG_ZC */
    {KVERSION(6, 7), 54},  /* READ_MULTISHOT, WAITID, the futex calls */
    {KVERSION(6, 8), 55},  /* FIXED_FD_INSTALL */
    {KVERSION(6, 9), 56},  /* FTRUNCATE */
    {KVERSION(6, 11), 58}, /* BIND, LISTEN */
    {KVERSION(6, 15), 62}, /* RECV_ZC, EPOLL_WAIT, READV_ and WRITEV_FIXED */
    {KVERSION(6, 16), 63}, /* PIPE */
};

static const struct {
	unsigned since;
	int abi;
} landlock_abis[] = {
    {KVERSION(5, 13), 1}, {KVERSION(5, 19), 2}, /* REFER */
    {KVERSION(6, 2), 3},                        /* TRUNCATE */
    {KVERSION(6, 7), 4},                        /* TCP bind and connect */
    {KVERSION(6, 10), 5},                       /* IOCTL_DEV */
    {KVERSION(6, 12), 6},                       /* scoped signals, sockets */
    {KVERSION(6, 15), 7},                       /* audit logging flags */
};

#define ROWS(t) (sizeof(t) / sizeof((t)[0]))

/* "MAJOR.MINOR" as KVERSION(), or 0. */
static unsigned parse_version(const char *s)
{
	unsigned long major, minor;
	char *end;

	if (*s < '0' || *s > '9')
		return 0;
	major = strtoul(s, &end, 10);
	if (*end != '.' || end[1] < '0' || end[1] > '9')
		return 0;
	minor = strtoul(end + 1, &end, 10);
	if (*end != '\0' || major < 2 || major > 99 || minor > 999)
		return 0;
	return KVERSION((unsigned)major, (unsigned)minor);
}

void testkernel_init(void)
{
	const char *v = secure_getenv(TESTKERNEL_ENV);

	acting_as = 0;
	if (v == NULL)
		return;
	if ((acting_as = parse_version(v)) == 0) {
		logit("%s=\"%s\" is no MAJOR.MINOR: ignored", TESTKERNEL_ENV,
		      v);
		return;
	}
	logit("%s=%s: io_uring operations and Landlock as in Linux %u.%u "
	      "(a test mode)",
	      TESTKERNEL_ENV, v, acting_as / 1000, acting_as % 1000);
}

int testkernel_acting_as(unsigned *major, unsigned *minor)
{
	*major = acting_as / 1000;
	*minor = acting_as % 1000;
	return acting_as != 0;
}

int testkernel_before(unsigned major, unsigned minor)
{
	return acting_as != 0 && acting_as < KVERSION(major, minor);
}

int testkernel_uring_op(int op)
{
	int ops = 0;
	size_t i;

	if (acting_as == 0)
		return 1;
	for (i = 0; i < ROWS(uring_ops) && uring_ops[i].since <= acting_as; i++)
		ops = uring_ops[i].ops;
	/* Newer than the table: it had every operation ours knows of. */
	if (i == ROWS(uring_ops))
		return 1;
	return op >= 0 && op < ops;
}

int testkernel_landlock_abi(int abi)
{
	int had = 0;
	size_t i;

	if (acting_as == 0 || abi < 0)
		return abi;
	for (i = 0;
	     i < ROWS(landlock_abis) && landlock_abis[i].since <= acting_as;
	     i++)
		had = landlock_abis[i].abi;
	if (i == ROWS(landlock_abis))
		return abi;
	/* Before 5.13 tests/oldkernel denies Landlock's calls themselves. */
	return had > 0 && had < abi ? had : abi;
}
