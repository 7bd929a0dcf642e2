/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* A test mode: act as an older kernel where a seccomp filter cannot make
 * the difference (doc/design.md, "The kernel matrix").  tests/oldkernel
 * makes the system calls a kernel lacked fail with ENOSYS and sets
 * URING_SFTP_TEST_KERNEL=MAJOR.MINOR for the server; what no filter can
 * see is answered here: which io_uring operations that kernel had (they
 * are named inside the ring, not in system call arguments) and its
 * Landlock ABI version (a return value).  It only ever takes features
 * away.  Without the variable every function says "as the kernel says". */
#ifndef TESTKERNEL_H
#define TESTKERNEL_H

/* The environment variable, read once by testkernel_init. */
#define TESTKERNEL_ENV "URING_SFTP_TEST_KERNEL"

/* Read the variable (secure_getenv: ignored in a set-user-ID or
 * file-capability start, as LD_PRELOAD is) and log the test mode at INFO
 * when it is set.  A value that is no MAJOR.MINOR is logged and ignored.
 * Called by main after logging is set up, before the back end starts. */
void testkernel_init(void);

/* Acting as an older kernel?  Then 1 and its version in *major, *minor. */
int testkernel_acting_as(unsigned *major, unsigned *minor);

/* Acting as a kernel older than major.minor? */
int testkernel_before(unsigned major, unsigned minor);

/* Had that kernel io_uring operation op (an IORING_OP_ value)?  1 when
 * the test mode is off. */
int testkernel_uring_op(int op);

/* The Landlock ABI version to use: abi (what the kernel answered), or
 * less when acting as a kernel whose Landlock was older. */
int testkernel_landlock_abi(int abi);

#endif
