/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Cold random READs read direct (direct.h says when and why): the decision,
 * pure, and the system calls that ask the file system and open the file
 * again. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "direct.h"
#include "log.h"
#include "testkernel.h"

/* Descriptors open for direct reads in this session: at most one. */
static unsigned descriptors_held;

int direct_read_candidate(uint32_t offset_align, uint64_t off, uint64_t len,
                          int continues_stream, uint64_t stream_at)
{
	uint64_t apart = off >= stream_at ? off - stream_at : stream_at - off;

	/* A stream's READs are read ahead into the page cache (readahead.h):
	 * reading them direct would read those bytes twice. */
	if (offset_align == 0 || continues_stream)
		return 0;
	if (apart < DIRECT_NEAR)
		return 0;
	return len > 0 && off % offset_align == 0 && len % offset_align == 0;
}

unsigned direct_backoff(unsigned backoff, int uncached)
{
	if (uncached == 1)
		return 0;
	if (backoff == 0)
		return 1;
	return backoff >= DIRECT_BACKOFF_MAX / 2 ? DIRECT_BACKOFF_MAX
	                                         : 2 * backoff;
}

int direct_ask(struct direct_state *d)
{
	if (d->unasked == 0)
		return 1;
	d->unasked--;
	return 0;
}

void direct_answered(struct direct_state *d, int uncached)
{
	d->backoff = direct_backoff(d->backoff, uncached);
	d->unasked = d->backoff;
}

uint64_t direct_piece_len(uint32_t mem_align, uint64_t header, uint64_t len)
{
	return header + len + (mem_align > 1 ? mem_align - 1 : 0);
}

uintptr_t direct_bytes_at(uintptr_t p, uint32_t mem_align, uint64_t header)
{
	uintptr_t at = p + (uintptr_t)header;

	if (mem_align > 1 && at % mem_align != 0)
		at += mem_align - at % mem_align;
	return at;
}

/* The file's direct I/O alignment from statx(2): 0 where it has none.
 * Built without Linux 6.1's headers (STATX_DIOALIGN): none anywhere. */
static uint32_t ask_alignment(int fd, uint32_t *mem_align)
{
#ifdef STATX_DIOALIGN
	struct statx stx;

	if (testkernel_before(6, 1))
		return 0;
	memset(&stx, 0, sizeof(stx));
	/* AT_STATX_DONT_SYNC: the loop waits for this call; a network
	 * file system need not ask its server (none gives an alignment). */
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_DIOALIGN,
	          &stx) == -1 ||
	    !(stx.stx_mask & STATX_DIOALIGN))
		return 0;
	*mem_align = stx.stx_dio_mem_align;
	/* Memory alignments above a page have not been seen; such a file
	 * would waste READ memory, so it reads through the page cache. */
	if (*mem_align == 0 || *mem_align > 4096)
		return 0;
	return stx.stx_dio_offset_align;
#else
	(void)fd;
	(void)mem_align;
	return 0;
#endif
}

uint32_t direct_offset_align(struct direct_state *d, int fd)
{
	if (d->way == DIRECT_UNASKED) {
		d->offset_align = ask_alignment(fd, &d->mem_align);
		d->way = d->offset_align != 0 ? DIRECT_OPEN : DIRECT_REFUSED;
		d->fd = -1;
	}
	return d->way == DIRECT_OPEN ? d->offset_align : 0;
}

/* The file of fd opened again for direct reads: the descriptor, or -1 with
 * errno.  Through /proc/self/fd, not the name, which may now be another
 * file's; O_RDONLY is checked against the file's mode again, as at open
 * (the caller reads only handles opened for reading).  In a chroot /proc
 * may be the user's own directory, whose entry could name another file,
 * a FIFO or a device: the open does not wait (O_NONBLOCK, cleared once it
 * is known to be fd's own regular file), and a file that is not fd's is
 * refused (EXDEV). */
static int reopen_direct(int fd)
{
	struct stat mine, again;
	char path[64];
	int dfd, err;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	dfd =
	    open(path, O_RDONLY | O_DIRECT | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (dfd == -1)
		return -1;
	if (fstat(fd, &mine) == -1 || fstat(dfd, &again) == -1)
		err = errno;
	else if (!S_ISREG(again.st_mode) || again.st_dev != mine.st_dev ||
	         again.st_ino != mine.st_ino)
		err = EXDEV;
	else if (fcntl(dfd, F_SETFL, O_DIRECT) == -1)
		err = errno;
	else
		return dfd;
	(void)close(dfd);
	errno = err;
	return -1;
}

int direct_read_begin(struct direct_state *d, int fd, int spare)
{
	if (d->way != DIRECT_OPEN)
		return -1;
	if (d->fd < 0) {
		if (descriptors_held > 0 || !spare)
			return -1;
		if ((d->fd = reopen_direct(fd)) == -1) {
			debug2("direct reads: reopening descriptor %d: %s", fd,
			       strerror(errno));
			if (errno != EMFILE && errno != ENFILE)
				d->way = DIRECT_REFUSED;
			return -1;
		}
		descriptors_held++;
	}
	d->busy++;
	return d->fd;
}

void direct_read_done(struct direct_state *d, long result)
{
	if (result == -EINVAL || result == -EOPNOTSUPP)
		d->way = DIRECT_REFUSED;
	if (d->busy > 0 && --d->busy == 0)
		direct_close(d);
}

void direct_close(struct direct_state *d)
{
	if (d->way != DIRECT_UNASKED && d->fd >= 0) {
		(void)close(d->fd);
		descriptors_held--;
	}
	d->fd = -1;
	d->busy = 0;
}
