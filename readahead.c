/* Read-ahead for sequential READ streams.  The client may keep only a few
 * requests in flight; without help a cold file is then read from disk at
 * that depth.  We ask the kernel to start reading the next window into the
 * page cache (posix_fadvise WILLNEED), so READs stay coherent with other
 * writers: nothing is cached privately, every READ reads the page cache
 * when it runs. */
#include "config.h"

#include <fcntl.h>

#include "handle.h"
#include "readahead.h"

/* How far ahead of a sequential stream the kernel is asked to read, and
 * how much of that may be consumed before asking again. */
#define READAHEAD_WINDOW (16 * 256 * 1024)
#define READAHEAD_REFILL (READAHEAD_WINDOW / 2)

void readahead_on_open(struct handle *h)
{
	/* Doubles the kernel's own read-ahead for this file. */
	(void)posix_fadvise(h->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	h->next_read = 0;
	h->ahead_until = 0;
}

void readahead_on_read(struct handle *h, uint64_t off, uint32_t len)
{
	uint64_t end = off + len, from;

	if (off != h->next_read) {
		/* A seek: start over from here, with no hint until the stream
		 * proves sequential again. */
		h->next_read = end;
		h->ahead_until = end;
		return;
	}
	h->next_read = end;
	if (h->ahead_until >= end + READAHEAD_REFILL)
		return;
	from = h->ahead_until > end ? h->ahead_until : end;
	h->ahead_until = end + READAHEAD_WINDOW;
	/* A hint: failure only means no read-ahead. */
	(void)posix_fadvise(h->fd, (off_t)from, (off_t)(h->ahead_until - from),
	                    POSIX_FADV_WILLNEED);
}
