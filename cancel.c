/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Stopping work whose client has gone; see cancel.h for why. */
#include "config.h"

#include <poll.h>
#include <stdio.h>

#include "cancel.h"
#include "monotonic.h"
#include "reply.h"
#include "sftp.h"

int cancel_look_due(struct cancel_watch *w, int64_t now_ns)
{
	if (w->seen == CLIENT_GONE || now_ns < w->next_look_ns)
		return 0;
	w->next_look_ns = now_ns + CANCEL_LOOK_EVERY_NS;
	return 1;
}

void cancel_saw(struct cancel_watch *w, enum client_presence found,
                int64_t now_ns)
{
	if (found <= w->seen)
		return;
	if (w->seen == CLIENT_HERE)
		w->input_end_ns = now_ns; /* a gone client's input ended too */
	w->seen = found;
}

int cancel_should_stop(const struct cancel_watch *w, int64_t now_ns)
{
	switch (w->seen) {
	case CLIENT_GONE:
		return 1;
	case CLIENT_INPUT_ENDED:
		return now_ns - w->input_end_ns >= CANCEL_INPUT_GRACE_NS;
	default:
		return 0;
	}
}

size_t cancel_step_size(size_t asked, size_t moved, int64_t took_ns, size_t min,
                        size_t max)
{
	uint64_t next = asked;

	if (moved > 0 && took_ns > 0) {
		/* moved is at most max (16 MiB), CANCEL_STEP_NS 1e8: the
		 * product fits in 64 bits. */
		next = (uint64_t)moved * CANCEL_STEP_NS / (uint64_t)took_ns;
		if (next / 4 > asked)
			next = (uint64_t)asked * 4;
	}
	if (next < min)
		next = min;
	if (next > max)
		next = max;
	/* Whole multiples of min: a reflink shares whole blocks only. */
	return (size_t)(next - next % min);
}

/* The look itself: stdin and stdout, without waiting.  POLLRDHUP is a
 * socket's half-close (sshd may hand us a socketpair); a pipe says
 * POLLHUP once its writer has closed it, even with data still unread.
 * stdout says POLLERR (a pipe) or POLLHUP (a socket) once nobody can read
 * it.  A descriptor that is not open (POLLNVAL) tells nothing. */
static enum client_presence look(void)
{
	struct pollfd fds[2] = {
	    {.fd = 0, .events = POLLIN | POLLRDHUP},
	    {.fd = 1, .events = 0},
	};

	if (poll(fds, 2, 0) <= 0)
		return CLIENT_HERE;
	if (fds[1].revents & (POLLERR | POLLHUP))
		return CLIENT_GONE;
	if (fds[0].revents & (POLLHUP | POLLRDHUP | POLLERR))
		return CLIENT_INPUT_ENDED;
	return CLIENT_HERE;
}

static struct cancel_watch watch;
static int watching; /* fds 0 and 1 are the client's */

void work_cancel_watch_stdio(void)
{
	watching = 1;
}

int work_cancelled(const char **why)
{
	int64_t now;

	if (!watching)
		return 0;
	now = monotonic_ns();

	if (cancel_look_due(&watch, now))
		cancel_saw(&watch, look(), now);
	if (!cancel_should_stop(&watch, now))
		return 0;
	*why = watch.seen == CLIENT_GONE ? "the client has gone"
	                                 : "the client's input has ended";
	return 1;
}

void work_cancel_reset(void)
{
	struct cancel_watch fresh = {0};

	watch = fresh;
}

void send_cancelled(struct request *req, const char *why)
{
	char msg[96];

	snprintf(msg, sizeof(msg), "Cancelled: %s", why);
	send_status_msg(req, SSH2_FX_FAILURE, msg);
}
