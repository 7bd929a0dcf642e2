/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Work that outlives its client.  A checksum of a 16 TiB sparse file, or a
 * copy-data or copy-file of one, is hours of work for one request; if the
 * client has gone, nobody will read the answer, and the server would go
 * on for those hours before it sees its input's end.  So the loops that
 * do such work (checksum.c's steps, copy_run in extensions.c) ask
 * work_cancelled() once per chunk: it looks at stdin and stdout at most
 * every CANCEL_LOOK_EVERY_NS (a poll(2) with no timeout) and says when to
 * stop.  The decision is the pure functions below; work_cancelled() only
 * supplies the clock and the look. */
#ifndef CANCEL_H
#define CANCEL_H

#include <stddef.h>
#include <stdint.h>

/* What a look at the client's two pipes found.  Ordered: a later state
 * never goes back to an earlier one (a pipe's end does not come back). */
enum client_presence {
	CLIENT_HERE,        /* both open */
	CLIENT_INPUT_ENDED, /* stdin's writer closed it (EOF, half-close) */
	CLIENT_GONE,        /* stdout's reader left (POLLERR/POLLHUP) */
};

/* Look at most this often: a poll(2) each time, nothing in between but
 * reading the clock. */
#define CANCEL_LOOK_EVERY_NS (50 * 1000000LL)
/* After stdin's end, work still in progress may go on this long: a client
 * that half-closes its input and waits for the answer still gets it for
 * ordinary requests; nobody's work goes on for long after. */
#define CANCEL_INPUT_GRACE_NS (250 * 1000000LL)

struct cancel_watch {
	int64_t next_look_ns;      /* 0: look at the first chance */
	int64_t input_end_ns;      /* when stdin's end was first seen */
	enum client_presence seen; /* the latest state seen */
};

/* Is a look due at now_ns?  Then the next one is CANCEL_LOOK_EVERY_NS
 * later.  No look is due once the client is known to be gone. */
int cancel_look_due(struct cancel_watch *w, int64_t now_ns);
/* Record what a look at now_ns found (an earlier state is ignored). */
void cancel_saw(struct cancel_watch *w, enum client_presence found,
                int64_t now_ns);
/* Should work in progress stop at now_ns? */
int cancel_should_stop(const struct cancel_watch *w, int64_t now_ns);

/* Work the kernel does in one call (copy_file_range) cannot be stopped
 * midway, so each call is sized by the time the last one took: about
 * CANCEL_STEP_NS each, whatever the storage (16 MiB took 0.6 to 0.9 s on
 * a FUSE file system with 1 ms per call; on network storage more).
 * cancel_step_size gives the next call's length from the last one's:
 * asked (its length), moved (what it did) and took_ns.  Between min and
 * max, a multiple of min (XFS and btrfs share whole blocks only: an
 * unaligned length would copy the bytes); at most 4 times asked (one quick
 * call, a hole or a cached range, says little of the next); asked again when
 * the last call says nothing (it moved nothing, or took no time). */
#define CANCEL_STEP_NS (100 * 1000000LL)
size_t cancel_step_size(size_t asked, size_t moved, int64_t took_ns, size_t min,
                        size_t max);

/* fds 0 and 1 are the client's pipes: main says so before serving.  Until
 * then work_cancelled() never stops anything, so that the unit tests and
 * the fuzzer, whose fds 0 and 1 are whatever ran them (a closed stdin
 * under dpkg-buildpackage), run every request to its end. */
void work_cancel_watch_stdio(void);
/* The process's own watch, for the loops: 1 when the work should stop,
 * with *why saying so for the log and the status message. */
int work_cancelled(const char **why);
/* Forget what was seen (tests, and the fuzzer's many sessions). */
void work_cancel_reset(void);

struct request;
/* The answer to a request whose work stopped: SSH2_FX_FAILURE, with why
 * in the message (read only by a client whose input alone has ended). */
void send_cancelled(struct request *req, const char *why);

#endif
