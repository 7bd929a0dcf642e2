/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/*
 * upload-sim: run a command as on a system that lacks what --atomic-uploads
 * prefers, by a seccomp filter (tests/uploads.sh):
 *
 *   upload-sim [--no-tmpfile] [--no-flink] [--no-proc-link] COMMAND [ARG]...
 *
 *   --no-tmpfile    open(2) and openat(2) with O_TMPFILE fail with
 *                   EOPNOTSUPP, as on a file system without it (vfat, NFS,
 *                   FUSE before Linux 6.7 or whose daemon has no tmpfile);
 *   --no-flink      linkat(2) with AT_EMPTY_PATH fails with ENOENT, as for
 *                   an unprivileged process before Linux 6.10;
 *   --no-proc-link  linkat(2) with AT_SYMLINK_FOLLOW fails with ENOENT, as
 *                   where /proc is not mounted (a ChrootDirectory jail).
 *
 * Everything else is allowed; the filter is inherited across fork and exec.
 * Exit status: the command's, or 125 when the filter cannot be installed
 * (no seccomp), 126/127 when the command cannot be run, 2 on bad usage.
 */
#define _GNU_SOURCE /* O_TMPFILE */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "seccomp-arch.h"

/* The low 32 bits of system call argument n (little-endian only, above). */
#define ARG_LO(n) (offsetof(struct seccomp_data, args) + 8 * (n))

#define EXIT_NO_FILTER 125
#define MAX_CODE 64

struct filter {
	struct sock_filter code[MAX_CODE];
	unsigned short len;
};

static void put(struct filter *f, struct sock_filter s)
{
	f->code[f->len++] = s;
}

/* if (nr == call && (arg & mask)) return -err; (jumps stay within) */
static void deny_flag(struct filter *f, unsigned call, unsigned arg,
                      unsigned mask, unsigned err)
{
	put(f, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	                                    offsetof(struct seccomp_data, nr)));
	put(f, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, call, 0,
	                                    3));
	put(f, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	                                    ARG_LO(arg)));
	put(f, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 0,
	                                    1));
	put(f, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
	                                    SECCOMP_RET_ERRNO | err));
}

static void usage(void)
{
	fprintf(stderr, "usage: upload-sim [--no-tmpfile] [--no-flink] "
	                "[--no-proc-link] COMMAND [ARG]...\n");
	_exit(2);
}

int main(int argc, char **argv)
{
	struct filter f = {.len = 0};
	struct sock_fprog prog;
	int i = 1, any = 0;

	put(&f,
	    (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	                                 offsetof(struct seccomp_data, arch)));
	put(&f, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	                                     NATIVE_ARCH, 1, 0));
	put(&f,
	    (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
	for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++, any = 1) {
		if (strcmp(argv[i], "--no-tmpfile") == 0) {
			/* __O_TMPFILE alone: O_TMPFILE includes O_DIRECTORY */
			deny_flag(&f, __NR_openat, 2, O_TMPFILE & ~O_DIRECTORY,
			          EOPNOTSUPP);
#ifdef __NR_open
			deny_flag(&f, __NR_open, 1, O_TMPFILE & ~O_DIRECTORY,
			          EOPNOTSUPP);
#endif
		} else if (strcmp(argv[i], "--no-flink") == 0) {
			deny_flag(&f, __NR_linkat, 4, AT_EMPTY_PATH, ENOENT);
		} else if (strcmp(argv[i], "--no-proc-link") == 0) {
			deny_flag(&f, __NR_linkat, 4, AT_SYMLINK_FOLLOW,
			          ENOENT);
		} else {
			usage();
		}
	}
	if (!any || i >= argc)
		usage();
	put(&f,
	    (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
	prog.len = f.len;
	prog.filter = f.code;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		perror("upload-sim: seccomp");
		return EXIT_NO_FILTER;
	}
	execvp(argv[i], argv + i);
	fprintf(stderr, "upload-sim: %s: %s\n", argv[i], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
