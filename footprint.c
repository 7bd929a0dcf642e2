/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* A session's footprint, decided from the rate its reader drains stdout:
 * see footprint.h. */
#include "config.h"

#include "footprint.h"

static void size_init(struct footprint_size *s, size_t min, size_t max)
{
	s->min = min < max ? min : max;
	s->max = max;
	s->now = s->keep = s->min;
	s->shrunk_ns = s->keep_ns = 0;
}

void footprint_init(struct footprint *f, size_t readmem_min, size_t readmem_max,
                    size_t pipe_min, size_t pipe_max)
{
	size_init(&f->readmem, readmem_min, readmem_max);
	size_init(&f->pipe, pipe_min, pipe_max);
	f->last_bytes = 0;
	f->last_ns = 0;
	f->rate = 0;
}

/* The smallest of min, 2 min, 4 min, ... that holds bytes, at most max. */
static size_t size_for(const struct footprint_size *s, double bytes)
{
	size_t n = s->min;

	while (n < s->max && (double)n < bytes)
		n *= 2;
	return n < s->max ? n : s->max;
}

/* The largest of min, 2 min, 4 min, ... up to bytes; min at least. */
static size_t size_below(const struct footprint_size *s, size_t bytes)
{
	size_t n = s->min;

	while (n * 2 <= bytes)
		n *= 2;
	return n;
}

/* Grow at once to hold bytes; shrink by half, once per window, and only
 * when a quarter of the size would hold them: a rate that wavers about a
 * size does not make it change every window. */
static void resize(struct footprint_size *s, double bytes, int64_t now_ns)
{
	size_t want = size_for(s, bytes);

	if (s->max == 0)
		return;
	if (want > s->now) {
		s->now = want;
	} else if (bytes * 4 <= (double)s->now && s->now > s->min &&
	           now_ns - s->shrunk_ns >= FOOTPRINT_WINDOW_NS) {
		s->now = size_below(s, s->now / 2);
		s->shrunk_ns = now_ns;
	}
	if (s->now >= s->keep || now_ns - s->keep_ns >= FOOTPRINT_KEEP_NS) {
		s->keep = s->now;
		s->keep_ns = now_ns;
	}
}

int footprint_update(struct footprint *f, uint64_t written, int starved,
                     int64_t now_ns)
{
	size_t readmem = f->readmem.now;
	int64_t gap = now_ns - f->last_ns;
	double sample, horizon;

	/* READs wait for memory while the reader waits for us: more of
	 * them in flight, at once. */
	if (starved && f->readmem.max != 0) {
		f->readmem.now = f->readmem.now * 2 < f->readmem.max
		                     ? f->readmem.now * 2
		                     : f->readmem.max;
		if (f->readmem.now > f->readmem.keep)
			f->readmem.keep = f->readmem.now;
	}
	if (f->last_ns == 0 || gap <= 0 || written < f->last_bytes) {
		f->last_ns = now_ns;
		f->last_bytes = written;
		return f->readmem.now != readmem;
	}
	if (gap < FOOTPRINT_WINDOW_NS)
		return f->readmem.now != readmem;
	sample = (double)(written - f->last_bytes) / (double)gap;
	/* Smoothed over a few windows, so that one burst or pause of the
	 * reader does not set the size alone; after a long sleep (a stalled
	 * or idle reader) the sample alone is the rate. */
	if (f->rate == 0 || gap >= FOOTPRINT_STALE_NS)
		f->rate = sample;
	else
		f->rate = (f->rate + sample) / 2;
	f->last_ns = now_ns;
	f->last_bytes = written;
	horizon = f->rate * FOOTPRINT_HORIZON_NS;
	/* Where stdout is sized too, READ memory only refills it: the pipe
	 * holds the horizon's bytes for the reader, and half of them behind
	 * it keep it full (cold reads that keep the reader waiting double
	 * the window above).  Under sshd the window is the only buffer. */
	if (!starved)
		resize(&f->readmem, f->pipe.max != 0 ? horizon / 2 : horizon,
		       now_ns);
	resize(&f->pipe, horizon, now_ns);
	/* Once a window, even unchanged: a size the wrapper could not
	 * apply (a pipe too full to shrink) is tried again. */
	return 1;
}

void footprint_idle(struct footprint *f)
{
	f->readmem.now = f->readmem.keep = f->readmem.min;
	f->pipe.now = f->pipe.keep = f->pipe.min;
	f->rate = 0;
}
