/* The pipe pool.  Pipes are made on first use and kept: a READ reply
 * borrows one from its splice into it until its bytes have gone out. */
#include "config.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "pipes.h"

static struct pipe_pair *spare;
static unsigned num_spare, num_made, max_pipes;
static size_t pipe_capacity;

int pipes_init(unsigned max, size_t capacity)
{
	max_pipes = 0;
	pipe_capacity = capacity;
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
