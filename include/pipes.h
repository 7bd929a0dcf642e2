/* A pool of private pipes for zero-copy READ replies: file bytes are
 * spliced into a pipe, then from the pipe to stdout behind their header. */
#ifndef PIPES_H
#define PIPES_H

#include <stddef.h>

struct pipe_pair {
	int rd;
	int wr;
};

/* Allow up to max pipes of at least capacity bytes each (their data goes
 * to stdout through output.h).  Returns 0, or -1 when out of memory (the
 * pool then stays empty). */
int pipes_init(unsigned max, size_t capacity);
/* An empty pipe, or -1 when none is available (use a copy instead). */
int pipe_get(struct pipe_pair *p);
/* Give a pipe back; one that still holds bytes is closed, not reused. */
void pipe_put(struct pipe_pair *p, size_t bytes_left);
/* Empty pipes are kept for the next READs. */
int pipes_have_spares(void);
/* Close the spare pipes (their descriptors are wanted elsewhere, or the
 * session is idle). */
void pipes_release_spares(void);

#endif
