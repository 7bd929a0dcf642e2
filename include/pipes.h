/* A pool of private pipes for zero-copy READ replies: file bytes are
 * spliced into a pipe, then from the pipe to stdout behind their header. */
#ifndef PIPES_H
#define PIPES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct pipe_pair {
	int rd;
	int wr;
};

/* Allow up to max pipes of at least capacity bytes each; out_fd is where
 * their data goes (stdout).  Returns 0, or -1 when splicing cannot work
 * here (the pool then stays empty). */
int pipes_init(unsigned max, size_t capacity, int out_fd);
/* An empty pipe, or -1 when none is available (use a copy instead). */
int pipe_get(struct pipe_pair *p);
/* Give a pipe back; one that still holds bytes is closed, not reused. */
void pipe_put(struct pipe_pair *p, size_t bytes_left);
/* out_fd's reader has gone. */
void pipes_output_closed(void);
/* n bytes (of any kind) were written to out_fd. */
void pipes_output_written(size_t n);
/* All bytes written to out_fd so far. */
uint64_t pipes_output_total(void);
/* The bytes just written were spliced from this file, from [off, off +
 * len) of the READ they answer. */
void pipes_spliced_out(dev_t dev, ino_t ino, uint64_t off, uint64_t len);
/* Spliced bytes handed to out_fd may not have been read by its reader
 * yet.  They are references to file pages, not copies, so until they are
 * read nothing may change those files: any file, or this one. */
int pipes_in_transit(void);
int pipes_range_in_transit(dev_t dev, ino_t ino, uint64_t start, uint64_t end);
/* Empty pipes are kept for the next READs. */
int pipes_have_spares(void);
/* Close the spare pipes (their descriptors are wanted elsewhere, or the
 * session is idle). */
void pipes_release_spares(void);

#endif
