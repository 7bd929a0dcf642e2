/* The pipe pool.  Pipes are made on first use and kept: a READ reply
 * borrows one from its splice into it until its bytes have gone out. */
#include "config.h"

#include <fcntl.h>
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
static int in_transit;

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
	if (bytes_left == 0 && num_spare < max_pipes) {
		spare[num_spare++] = *p;
		return;
	}
	close(p->rd);
	close(p->wr);
	num_made--;
}

void pipes_spliced_out(void)
{
	in_transit = 1;
}

/* Unread bytes in out_fd: FIONREAD counts a pipe's contents from either
 * end; SIOCOUTQ (TIOCOUTQ) what a socket's peer has not read. */
static int out_unread(void)
{
	int n = 0;

	if (ioctl(out_fd, out_is_socket ? TIOCOUTQ : FIONREAD, &n) == -1)
		return 1; /* cannot tell: assume the worst */
	return n;
}

void pipes_output_closed(void)
{
	/* Nobody will read what is in transit: it cannot be seen changing. */
	out_fd = -1;
	in_transit = 0;
}

int pipes_in_transit(void)
{
	if (in_transit && (out_fd < 0 || out_unread() == 0))
		in_transit = 0;
	return in_transit;
}
