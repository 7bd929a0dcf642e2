/* The pipe pool.  Pipes are made on first use and kept: a READ reply
 * borrows one from its splice into it until its bytes have gone out. */
#include "config.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include "pipes.h"

static struct pipe_pair *spare;
static unsigned num_spare, num_made, max_pipes;
static size_t pipe_capacity;
static int out_fd = -1;
static int out_is_socket;

int pipes_init(unsigned max, size_t capacity, int fd)
{
	struct stat st;

	max_pipes = 0;
	pipe_capacity = capacity;
	out_fd = fd;
	if (fstat(fd, &st) == -1 ||
	    !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
		return -1;
	out_is_socket = S_ISSOCK(st.st_mode);
	if (max == 0 || (spare = calloc(max, sizeof(*spare))) == NULL)
		return -1;
	max_pipes = max;
	return 0;
}

/* A new pipe that holds a whole READ, so that a splice into it never
 * waits for the reader (us).  The kernel may refuse the size
 * (fs.pipe-user-pages-soft): then no splicing at all. */
static int pipe_make(struct pipe_pair *p)
{
	int fds[2];

	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) == -1)
		return -1;
	if (fcntl(fds[1], F_SETPIPE_SZ, (int)pipe_capacity) <
	    (int)pipe_capacity) {
		close(fds[0]);
		close(fds[1]);
		max_pipes = 0;
		return -1;
	}
	p->rd = fds[0];
	p->wr = fds[1];
	num_made++;
	return 0;
}

int pipe_get(struct pipe_pair *p)
{
	if (num_spare > 0) {
		*p = spare[--num_spare];
		return 0;
	}
	if (num_made >= max_pipes)
		return -1;
	return pipe_make(p);
}

void pipe_put(struct pipe_pair *p, size_t bytes_left)
{
	/* Keep every empty pipe: a download at full depth uses one per READ
	 * in flight, and making a pipe (pipe2, F_SETPIPE_SZ, two closes
	 * later) cost more than the splices it serves.  OPEN and OPENDIR
	 * take the descriptors back when they run short (EMFILE), and the
	 * event loop closes them after a second of idleness. */
	if (bytes_left == 0) {
		spare[num_spare++] = *p;
		return;
	}
	close(p->rd);
	close(p->wr);
	num_made--;
}

/* Spliced data handed to out_fd, by file and page range: those are the
 * file's pages until out_fd's reader has read up to end (a position in all
 * bytes written).  Ranges of one file that touch are kept as one; more
 * ranges than fit here count as "every file". */
#define TRANSIT_MAX 32
#define PAGE_MASK ((uint64_t)4095)

struct transit {
	dev_t dev;
	ino_t ino;
	uint64_t first, last; /* page-rounded: [first, last) */
	uint64_t end;
};

static struct transit transit[TRANSIT_MAX];
static unsigned num_transit;
static int transit_overflow; /* a range was not recorded: assume all */
static uint64_t out_total;   /* bytes written to out_fd so far */

void pipes_output_written(size_t n)
{
	out_total += n;
}

uint64_t pipes_output_total(void)
{
	return out_total;
}

void pipes_spliced_out(dev_t dev, ino_t ino, uint64_t off, uint64_t len)
{
	uint64_t first = off & ~PAGE_MASK,
	         last = (off + len + PAGE_MASK) & ~PAGE_MASK;
	struct transit *t;
	unsigned i;

	for (i = 0; i < num_transit; i++) {
		t = &transit[i];
		if (t->dev == dev && t->ino == ino && first <= t->last &&
		    t->first <= last)
			break;
	}
	if (i == num_transit) {
		if (num_transit == TRANSIT_MAX) {
			transit_overflow = 1;
			return;
		}
		t = &transit[num_transit++];
		t->dev = dev;
		t->ino = ino;
		t->first = first;
		t->last = last;
	}
	if (first < t->first)
		t->first = first;
	if (last > t->last)
		t->last = last;
	t->end = out_total;
}

/* Unread bytes in out_fd: FIONREAD counts a pipe's contents from either
 * end; SIOCOUTQ (TIOCOUTQ) what a socket's peer has not read (in buffer
 * memory, which errs on the side of "not read yet"). */
static uint64_t out_unread(void)
{
	int n = 0;

	if (ioctl(out_fd, out_is_socket ? TIOCOUTQ : FIONREAD, &n) == -1)
		return out_total; /* cannot tell: assume nothing was read */
	return (uint64_t)n;
}

/* Forget what the reader has read by now. */
static void transit_expire(void)
{
	uint64_t unread, consumed;
	unsigned i = 0;

	if (num_transit == 0 && !transit_overflow)
		return;
	unread = out_fd < 0 ? 0 : out_unread();
	consumed = unread < out_total ? out_total - unread : 0;
	if (unread == 0)
		transit_overflow = 0;
	while (i < num_transit) {
		if (out_fd < 0 || transit[i].end <= consumed)
			transit[i] = transit[--num_transit];
		else
			i++;
	}
}

void pipes_output_closed(void)
{
	/* Nobody will read what is in transit: it cannot be seen changing. */
	out_fd = -1;
	num_transit = 0;
	transit_overflow = 0;
}

int pipes_in_transit(void)
{
	transit_expire();
	return num_transit > 0 || transit_overflow;
}

int pipes_range_in_transit(dev_t dev, ino_t ino, uint64_t start, uint64_t end)
{
	const struct transit *t;
	unsigned i;

	transit_expire();
	if (transit_overflow)
		return 1;
	for (i = 0; i < num_transit; i++) {
		t = &transit[i];
		if (t->dev == dev && t->ino == ino && start < t->last &&
		    t->first < end)
			return 1;
	}
	return 0;
}

int pipes_have_spares(void)
{
	return num_spare > 0;
}

void pipes_release_spares(void)
{
	while (num_spare > 0) {
		num_spare--;
		close(spare[num_spare].rd);
		close(spare[num_spare].wr);
		num_made--;
	}
}
