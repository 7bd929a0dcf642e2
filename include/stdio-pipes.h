/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Growing our stdin and stdout pipes.  sshd moves data through them in
 * small pieces; bigger pipes mean fewer, larger turns of our loop and of
 * sshd's.  Pipes are charged to their user's pipe quota
 * (fs.pipe-user-pages-soft), shared by all of the user's processes, so a
 * session grows them only within its share of it. */
#ifndef STDIO_PIPES_H
#define STDIO_PIPES_H

#include <stddef.h>

#include "pipe-quota.h"

/* Who reads our stdout.  sshd reads a subsystem's stdout 32 KiB at a time
 * and sends on at once whatever it finds: the more a pipe holds, the
 * longer its bursts to the client, and the ssh client spends more CPU per
 * byte on bursts than the whole transfer saves here (doc/design.md,
 * "Stdio pipes").  So with sshd as its reader stdout keeps the size sshd
 * made it (64 KiB), is not paced and never grows; a local client (sftp
 * -D, a test harness) gets a pipe sized to its rate. */
enum stdout_reader { STDOUT_READER_LOCAL, STDOUT_READER_SSHD };
/* Pure: sshd sets SSH_CONNECTION for every session it starts, and
 * SSH_TTY only for one with a terminal, which a subsystem never has: a
 * local client (sftp -D) started from an interactive ssh login sees both
 * and keeps a sized stdout. */
enum stdout_reader stdout_reader_of(const char *ssh_connection,
                                    const char *ssh_tty);
/* Pure: may writes to stdout block?  Only with sshd as the reader of a
 * pipe stdout.  sshd reads it 32 KiB at a time; a write that blocks until
 * all of it is in the pipe is woken inside the kernel at each of those
 * reads, as OpenSSH's server's writes are, where a non-blocking stdout
 * cost a return to the loop, a ppoll and a writev per 32-64 KiB (a 256
 * MiB get through sshd: 1.2-1.4K system calls against 16-18K, 0.57-0.94
 * of OpenSSH's server CPU against 1.01-1.29; doc/benchmarks.md).  Meanwhile
 * nothing is read from stdin, which sshd buffers.  A local client may
 * write requests without reading replies until we read them
 * (tests/hostile.sh's eager writer): with a blocking stdout both would
 * wait for ever, so its stdout never blocks; nor does a socket, whose
 * open file, and so its O_NONBLOCK, stdin shares. */
int stdout_may_block(enum stdout_reader reader, int stdout_is_pipe);
/* Set once at start, before stdio_pipe_grow. */
void stdio_set_reader(enum stdout_reader reader);
enum stdout_reader stdio_reader(void);

/* Grow a stdio pipe of ours (stdin first, then stdout) as far as the
 * session's share allows: stdin at once; stdout (read by a local client)
 * to 256 KiB, and further later by stdio_stdout_resize as its reader's
 * rate asks. */
void stdio_pipe_grow(int fd);
/* stdout's size at start, its smallest, and as far as it may grow
 * (bytes; 0 when stdout is no pipe). */
size_t stdio_stdout_least(void);
size_t stdio_stdout_most(void);
/* Grow or shrink stdout towards bytes, within those bounds; a pipe that
 * holds more than the new size keeps its size for now.  Returns its size
 * (0: no pipe). */
size_t stdio_stdout_resize(size_t bytes);

/* The decisions, pure (tests/check_pipes.c).  Sizes in pages. */
/* Pages one session may grow its stdio pipes by, given what it would like
 * and how many sessions of this server the user runs now. */
unsigned long pipe_session_budget(const struct pipe_limits *l,
                                  unsigned long want, unsigned sessions);
/* The size (pages, a power of two up to want) a stdio pipe of old pages
 * may grow to, when the others grew by used and keep pages must stay in
 * the budget (for stdout, when stdin is grown first); 0: none larger than
 * old. */
unsigned long pipe_stdio_size(unsigned long budget, unsigned long used,
                              unsigned long old, unsigned long want,
                              unsigned long keep);
/* What a session would get, with sshd's pipes at their default size (16
 * pages): its budget, and what stdin, then stdout grow to within it
 * (before the reserve is asked for: stdio_pipe_grow) with a local client
 * reading stdout; and what stdin grows to under sshd, where stdout keeps
 * its 16 pages and leaves stdin the whole budget. */
struct pipe_plan {
	unsigned long budget, stdin_pages, stdout_pages, sshd_stdin_pages;
};
void pipe_stdio_plan(const struct pipe_limits *l, unsigned sessions,
                     unsigned long page_size, struct pipe_plan *p);
/* Pages of the user's quota a session leaves free for other programs. */
unsigned long pipe_reserve_pages(const struct pipe_limits *l);

#endif
