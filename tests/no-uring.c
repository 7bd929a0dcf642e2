/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/*
 * no-uring: run a command with io_uring denied, as Docker 25 and later
 * deny it in their default seccomp profile: io_uring_setup, io_uring_enter
 * and io_uring_register fail with EPERM (or the errno given).  Everything
 * else is allowed.  The filter is inherited across fork and exec.
 *
 *   no-uring [--errno=N] [--landlock] COMMAND [ARG]...
 *
 * With --landlock it denies Landlock's three system calls instead, as a
 * kernel without Landlock would (tests/confine.sh, with --errno=38 for
 * ENOSYS).
 *
 * Exit status: the command's, or 125 when the filter cannot be installed
 * (no seccomp), 126/127 when the command cannot be run, 2 on bad usage.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "landlock-sys.h"

#include "seccomp-arch.h"

/* The same numbers on every architecture but alpha. */
#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif
#ifndef __NR_io_uring_enter
#define __NR_io_uring_enter 426
#endif
#ifndef __NR_io_uring_register
#define __NR_io_uring_register 427
#endif

#define EXIT_NO_FILTER 125

/* The three system calls denied. */
static const unsigned uring_calls[3] = {
    __NR_io_uring_setup, __NR_io_uring_enter, __NR_io_uring_register};
static const unsigned landlock_calls[3] = {__NR_landlock_create_ruleset,
                                           __NR_landlock_add_rule,
                                           __NR_landlock_restrict_self};

static void usage(void)
{
	fprintf(stderr,
	        "usage: no-uring [--errno=N] [--landlock] COMMAND [ARG]...\n");
	exit(2);
}

static int install_filter(const unsigned *nr, unsigned err)
{
	struct sock_filter code[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	             offsetof(struct seccomp_data, arch)),
	    /* Another ABI (e.g. 32-bit code on a 64-bit kernel): leave it. */
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	             offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr[0], 3, 0),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr[1], 2, 0),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr[2], 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	    BPF_STMT(BPF_RET | BPF_K,
	             SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)),
	};
	struct sock_fprog prog = {
	    .len = (unsigned short)(sizeof(code) / sizeof(code[0])),
	    .filter = code,
	};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		perror("no-uring: PR_SET_NO_NEW_PRIVS");
		return -1;
	}
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		perror("no-uring: PR_SET_SECCOMP");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const unsigned *nr = uring_calls;
	unsigned long err = EPERM;
	char *end;
	int first = 1;

	if (argc > 1 && strncmp(argv[1], "--errno=", 8) == 0) {
		errno = 0;
		err = strtoul(argv[1] + 8, &end, 10);
		if (errno != 0 || *end != '\0' || err == 0 || err > 4095)
			usage();
		first = 2;
	}
	if (first < argc && strcmp(argv[first], "--landlock") == 0) {
		nr = landlock_calls;
		first++;
	}
	if (first >= argc || argv[first][0] == '-')
		usage();
	if (install_filter(nr, (unsigned)err) != 0)
		return EXIT_NO_FILTER;
	/* Prove the filter took before trusting it (a harmless call: a
	 * version query, or a ring of one entry with no parameters). */
	if ((nr == landlock_calls ? syscall(nr[0], NULL, 0, 1UL)
	                          : syscall(nr[0], 1, NULL)) != -1 ||
	    errno != (int)err) {
		fprintf(stderr, "no-uring: system call %u is not denied (%s)\n",
		        nr[0], strerror(errno));
		return EXIT_NO_FILTER;
	}
	execvp(argv[first], argv + first);
	fprintf(stderr, "no-uring: %s: %s\n", argv[first], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
