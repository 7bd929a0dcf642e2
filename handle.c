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

static struct handle *handles;
static unsigned num_slots; /* allocated */
static unsigned num_used;  /* in use */
static unsigned max_handles = 1U << 20;
static int first_free = -1; /* LIFO list through next_free */

void handle_set_limit(unsigned max)
{
	max_handles = max;
}

unsigned handle_count(void)
{
	return num_used;
}

static int handle_slot_alloc(void)
{
	struct handle *grown;
	int idx;

	if (first_free != -1) {
		idx = first_free;
		first_free = handles[idx].next_free;
		return idx;
	}
	/* Grow one slot at a time in index space, a few at a time in
	 * memory. */
	if (num_slots % 64 == 0) {
		grown = realloc(handles, (num_slots + 64) * sizeof(*handles));
		if (grown == NULL)
			return -1;
		handles = grown;
	}
	idx = (int)num_slots++;
	memset(&handles[idx], 0, sizeof(handles[idx]));
	return idx;
}

int handle_new(enum handle_kind kind, const char *name, int fd, DIR *dirp,
               int flags)
{
	struct handle *h;
	struct stat st;
	char *copy;
	int idx;

	if (num_used >= max_handles) {
		errno = EMFILE;
		return -1;
	}
	if ((copy = strdup(name)) == NULL)
		return -1;
	if ((idx = handle_slot_alloc()) == -1) {
		free(copy);
		errno = ENOMEM;
		return -1;
	}
	h = &handles[idx];
	memset(h, 0, sizeof(*h));
	h->kind = kind;
	h->fd = fd;
	h->dirp = dirp;
	h->flags = flags;
	h->name = copy;
	h->next_free = -1;
	xferlog_now(&h->opened);
	if (fd >= 0 && fstat(fd, &st) == 0) {
		h->dev = st.st_dev;
		h->ino = st.st_ino;
		h->is_regular = S_ISREG(st.st_mode);
		h->type = st.st_mode & S_IFMT;
	}
	num_used++;
	return idx;
}

struct handle *handle_get(int idx, enum handle_kind kind)
{
	struct handle *h;

	if (idx < 0 || (unsigned)idx >= num_slots)
		return NULL;
	h = &handles[idx];
	if (h->kind == HANDLE_UNUSED)
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

int handle_close(int idx)
{
	struct handle *h = handle_get(idx, HANDLE_UNUSED);
	int rc = 0;

	if (h == NULL) {
		errno = ENOENT;
		return -1;
	}
	upload_discard(h->upload);
	if (h->kind == HANDLE_FILE)
		rc = close(h->fd);
	else if (h->dirp != NULL)
		rc = closedir(h->dirp);
	free(h->name);
	memset(h, 0, sizeof(*h));
	h->kind = HANDLE_UNUSED;
	h->next_free = first_free;
	first_free = idx;
	num_used--;
	return rc;
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
		h = &handles[i];
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
