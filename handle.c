/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The handle table: slots reused last-freed-first, like OpenSSH's, so a
 * client sees the same handle values. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "handle.h"
#include "log.h"
#include "upload.h"
#include "xferlog.h"

/* Slots live in blocks that never move once made: worker threads read
 * handles (workers.h) while the loop makes new ones. */
#define BLOCK_SLOTS 64
#define MAX_BLOCKS ((1U << 20) / BLOCK_SLOTS)
static struct handle *blocks[MAX_BLOCKS];
static unsigned num_slots; /* made */
static unsigned num_used;  /* in use */
static unsigned max_handles = 1U << 20;
static int first_free = -1; /* LIFO list through next_free */

void handle_set_limit(unsigned max)
{
	max_handles = max;
}

uint64_t handle_limit_for(uint64_t nofile, unsigned reserved,
                          unsigned per_handle)
{
	if (nofile <= reserved || per_handle == 0)
		return 0;
	return (nofile - reserved) / per_handle;
}

unsigned handle_count(void)
{
	return num_used;
}

int handle_descriptors_to_spare(void)
{
	return num_used < max_handles / 2;
}

static struct handle *slot(unsigned idx)
{
	return &blocks[idx / BLOCK_SLOTS][idx % BLOCK_SLOTS];
}

static int handle_slot_alloc(void)
{
	int idx;

	if (first_free != -1) {
		idx = first_free;
		first_free = slot((unsigned)idx)->next_free;
		return idx;
	}
	/* Grow one slot at a time in index space, a block at a time in
	 * memory. */
	if (num_slots % BLOCK_SLOTS == 0) {
		if (num_slots / BLOCK_SLOTS >= MAX_BLOCKS)
			return -1;
		blocks[num_slots / BLOCK_SLOTS] =
		    calloc(BLOCK_SLOTS, sizeof(struct handle));
		if (blocks[num_slots / BLOCK_SLOTS] == NULL)
			return -1;
	}
	idx = (int)num_slots++;
	return idx;
}

int handle_new(enum handle_kind kind, const char *name, int fd, DIR *dirp,
               int flags)
{
	struct stat st;

	return handle_new_stat(kind, name, fd, dirp, flags,
	                       fd >= 0 && fstat(fd, &st) == 0 ? &st : NULL);
}

int handle_new_stat(enum handle_kind kind, const char *name, int fd, DIR *dirp,
                    int flags, const struct stat *st)
{
	int idx = handle_reserve();

	if (idx != -1 &&
	    handle_fill(idx, kind, name, fd, dirp, flags, st) != 0) {
		handle_unreserve(idx);
		idx = -1;
	}
	return idx;
}

int handle_reserve(void)
{
	struct handle *h;
	int idx;

	if (num_used >= max_handles) {
		errno = EMFILE;
		return -1;
	}
	if ((idx = handle_slot_alloc()) == -1) {
		errno = ENOMEM;
		return -1;
	}
	h = slot((unsigned)idx);
	memset(h, 0, sizeof(*h));
	h->kind = HANDLE_RESERVED;
	h->next_free = -1;
	num_used++;
	return idx;
}

int handle_fill(int idx, enum handle_kind kind, const char *name, int fd,
                DIR *dirp, int flags, const struct stat *st)
{
	struct handle *h = slot((unsigned)idx);
	char *copy;

	if ((copy = strdup(name)) == NULL)
		return -1;
	h->kind = kind;
	h->fd = fd;
	h->dirp = dirp;
	h->flags = flags;
	h->name = copy;
	xferlog_now(&h->opened);
	if (st != NULL) {
		h->dev = st->st_dev;
		h->ino = st->st_ino;
		h->is_regular = S_ISREG(st->st_mode);
		h->type = st->st_mode & S_IFMT;
	}
	return 0;
}

/* Give a slot back to the free list. */
static void slot_free(int idx)
{
	struct handle *h = slot((unsigned)idx);

	memset(h, 0, sizeof(*h));
	h->kind = HANDLE_UNUSED;
	h->next_free = first_free;
	first_free = idx;
	num_used--;
}

void handle_unreserve(int idx)
{
	if (idx >= 0 && (unsigned)idx < num_slots &&
	    slot((unsigned)idx)->kind == HANDLE_RESERVED)
		slot_free(idx);
}

struct handle *handle_get(int idx, enum handle_kind kind)
{
	struct handle *h;

	if (idx < 0 || (unsigned)idx >= num_slots)
		return NULL;
	h = slot((unsigned)idx);
	if (h->kind == HANDLE_UNUSED || h->kind == HANDLE_RESERVED)
		return NULL;
	if (kind != HANDLE_UNUSED && h->kind != kind)
		return NULL;
	return h;
}

const char *handle_name(int idx)
{
	struct handle *h = handle_get(idx, HANDLE_UNUSED);

	/* What OpenSSH's log lines show for a bad handle (a NULL to %s). */
	return h != NULL ? h->name : "(null)";
}

int handle_parse(struct rbuf *r, int *idx)
{
	const uint8_t *p;
	size_t len;
	int rc;

	if ((rc = rbuf_get_string(r, &p, &len)) != BUF_OK)
		return rc;
	*idx = -1;
	if (len == 4) {
		uint32_t v = peek_u32(p);

		if (v < num_slots)
			*idx = (int)v;
	}
	return BUF_OK;
}

int handle_put(struct wbuf *w, int idx)
{
	uint8_t b[4];

	poke_u32(b, (uint32_t)idx);
	return wbuf_put_string(w, b, sizeof(b));
}

int handle_detach(int idx, int *fd, DIR **dirp)
{
	struct handle *h = handle_get(idx, HANDLE_UNUSED);

	if (h == NULL)
		return -1;
	*fd = h->kind == HANDLE_FILE ? h->fd : -1;
	*dirp = h->kind == HANDLE_DIR ? h->dirp : NULL;
	free(h->name);
	nocache_forget(&h->nocache);
	direct_close(&h->direct);
	slot_free(idx);
	return 0;
}

int handle_close(int idx)
{
	struct handle *h = handle_get(idx, HANDLE_UNUSED);
	DIR *dirp;
	int fd;

	/* An upload not finished by CLOSE is given up (upload.h). */
	if (h != NULL && h->upload != NULL) {
		upload_discard(h->upload);
		h->upload = NULL;
	}
	if (handle_detach(idx, &fd, &dirp) != 0) {
		errno = ENOENT;
		return -1;
	}
	if (dirp != NULL)
		return closedir(dirp);
	return fd >= 0 ? close(fd) : 0;
}

int handle_seek(const struct handle *h, uint64_t off, uint64_t *pos)
{
	off_t r;

	if (h->is_regular) {
		if (off > (uint64_t)INT64_MAX)
			return -EINVAL;
		*pos = off;
		return 0;
	}
	if ((r = lseek(h->fd, (off_t)off, SEEK_SET)) == -1)
		return -errno;
	*pos = (uint64_t)r;
	return 0;
}

void handle_close_all(void)
{
	struct handle *h;
	unsigned i;

	for (i = 0; i < num_slots; i++) {
		h = slot(i);
		if (h->kind == HANDLE_FILE) {
			logit(
			    "forced close \"%s\" bytes read %llu written %llu",
			    h->name, (unsigned long long)h->bytes_read,
			    (unsigned long long)h->bytes_written);
			handle_log_transfer(h, 1);
		} else if (h->kind == HANDLE_DIR)
			logit("forced closedir \"%s\"", h->name);
		else
			continue;
		handle_close((int)i);
	}
}

/* Here, not in xferlog.c: which transfer a handle was (upload or download)
 * is the handle's to say, and xferlog.c stays a plain line writer. */
void handle_log_transfer(const struct handle *h, int forced)
{
	int upload = h->bytes_written > 0 || (h->flags & O_ACCMODE) == O_WRONLY;

	xferlog_write(h->name, upload ? h->bytes_written : h->bytes_read,
	              &h->opened, upload ? 'i' : 'o',
	              !forced &&
	                  !(upload && (h->write_failed || h->upload_lost)));
}
