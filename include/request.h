/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* One request from the client, from framing to its encoded reply. */
#ifndef REQUEST_H
#define REQUEST_H

#include <stdint.h>
#include <sys/stat.h>

#include "backend.h"
#include "buf.h"
#include "nocache.h"
#include "order.h"

struct handler;
struct input_chunk;
struct write_run;

/* A packet is copied unless it is a WRITE big enough to stay in its input
 * chunk (frame.c): into the request itself up to this size (no
 * allocation), else into an allocation of its own (a small WRITE, long
 * paths). */
#define REQUEST_INLINE_PACKET 512

/* What a request does with a path argument, which decides how --confine
 * resolves it (get_path in parse.c).  The default, 0, suits a request that
 * follows a final symlink, as OPEN does. */
enum path_use {
	PATH_FOLLOW = 0,
	PATH_NOFOLLOW,     /* acts on a final symlink itself (LSTAT, REMOVE) */
	PATH_NOT_RESOLVED, /* not a path of ours (a symlink's target, a user
	                    * name), or resolved by sftp_realpath */
};

enum request_state {
	REQ_WAITING,   /* admitted, not started */
	REQ_PARSED,    /* I/O request parsed, waiting for a conflict to clear */
	REQ_IN_FLIGHT, /* I/O submitted to the back end */
	REQ_DONE       /* reply encoded in reply */
};

struct request {
	uint32_t id;
	uint8_t type;
	uint8_t *packet; /* type byte and body */
	size_t packet_len;
	/* Where the packet lives: inline_packet, a chunk of the input buffer
	 * (a large WRITE, not copied), or its own allocation. */
	struct input_chunk *chunk;
	int packet_allocated;
	struct rbuf body; /* handlers read their fields from here */
	/* Its row in the request table (handlers.c), set by request_classify
	 * at admission and, for an EXTENDED request, by its handler once the
	 * name is read; NULL when unknown. */
	const struct handler *handler;
	uint8_t path_use[2]; /* enum path_use of its first two paths */
	enum request_state state;
	struct wbuf reply;     /* one encoded reply packet */
	struct wbuf log_lines; /* its log lines, kept until they are written
	                        * in arrival order (log_capture) */

	/* File I/O set up by the READ and WRITE handlers. */
	struct io_op io;
	int handle;
	dev_t dev; /* the file's identity and the byte range, */
	ino_t ino; /* for the overlap rule */
	uint64_t start;
	uint64_t end; /* UINT64_MAX for append writes */
	int is_write;
	int regular_file; /* the handle's is_regular, for coalescing */
	size_t io_want;   /* bytes asked for */
	size_t io_done;   /* bytes moved so far (short I/O is resumed) */
	/* Builds the reply once the I/O is finished (io.result holds the
	 * last result, io_done the total). */
	void (*io_finish)(struct request *req);

	/* Called before the I/O is submitted, until it returns other than
	 * IO_PREPARE_WAIT (a READ waiting for READ memory to come back). */
	int (*io_prepare)(struct request *req);

	/* A request that runs in steps (check-file): each finished I/O goes
	 * to io_step instead of io_finish.  It returns 1 when it set up
	 * req->io for the next step, which the queue submits on its next
	 * turn (so the requests that may run beside it are served in
	 * between), and 0 once the reply is encoded.  job holds its state
	 * and job_free releases it, whenever the request is freed. */
	int (*io_step)(struct request *req);
	void *job;
	void (*job_free)(struct request *req);
	struct request *step_next; /* the queue's list of steps to submit */

	/* A READ's piece of READ memory (readmem.h), NULL when none: its
	 * DATA reply, header and bytes, read_reply_len of them once done
	 * (0: the reply is in reply, a STATUS). */
	uint8_t *read_mem;
	int read_mem_slot;
	size_t read_reply_len;
	/* A READ that reads direct (direct.h): its bytes' memory alignment;
	 * 0 for one through the page cache. */
	uint32_t read_direct_align;
	/* --nocache: which of a READ's pages were cached before it. */
	struct nocache_read nocache_read;
	/* A READ whose range the kernel was asked to read ahead, or need not
	 * be (readahead.h): while it waits for READ memory, once is enough. */
	int ahead_hinted;

	/* An OPEN or OPENDIR whose file was opened, maybe by a worker
	 * thread: what the loop makes a handle of (open_finish). */
	int reserved_handle; /* the slot its handle will have; -1: none */
	int opened_fd;
	void *opened_dir; /* DIR * */
	char *opened_name;
	int opened_flags;
	struct stat opened_st;
	int opened_has_st;
	int opened_pseudo; /* on /proc, /sys and the like (pseudo_fs) */
	unsigned long opened_fs_type; /* statfs(2)'s f_type, 0 if unknown */
	struct upload *opened_upload; /* what its CLOSE must do (upload.h) */

	/* A request whose one system call goes to the ring (route.h,
	 * ROUTE_RING): its handler sets req->io up for that call instead of
	 * making it, and io_finish answers.  The names and the statx buffer
	 * the call uses live here until it is answered. */
	int via_ring;
	char *meta_path[2];
	struct statx meta_stx;

	/* What it acts on, for the ordering rule (request_scope). */
	struct order_scope scope;

	/* A WRITE merged with its neighbours (coalesce.c). */
	struct write_run *run;
	struct request *run_next;

	/* Set with HANDLER_PARSE_ERROR: the fatal log line. */
	char fatal[128];

	struct request *next;
	uint8_t inline_packet[REQUEST_INLINE_PACKET];
};

/* A request for one packet (type byte and body, len > 0).  With chunk (a
 * reference the caller took), the packet is used where it is; else it is
 * copied.  NULL when out of memory. */
struct request *request_new(const uint8_t *packet, size_t len, size_t max_reply,
                            struct input_chunk *chunk);
/* Release everything the request holds; the struct is kept for reuse. */
void request_free(struct request *req);
/* Give back a READ's memory before its reply goes (an EOF or an error
 * needs none). */
void request_give_read_mem(struct request *req);
/* The encoded reply: what goes to stdout. */
static inline const uint8_t *request_reply(const struct request *req,
                                           size_t *len)
{
	if (req->read_reply_len > 0) {
		*len = req->read_reply_len;
		return req->read_mem;
	}
	*len = req->reply.len;
	return req->reply.data;
}

/* enum path_use of the request's argi-th path (0 or 1). */
static inline int path_use_of(const struct request *req, int argi)
{
	return argi < 0 || argi > 1 ? PATH_FOLLOW : req->path_use[argi];
}

/* io_prepare results. */
#define IO_PREPARE_WAIT 0
#define IO_PREPARE_SUBMIT 1

/* Handler results. */
#define HANDLER_DONE 0        /* reply encoded */
#define HANDLER_IO 1          /* req->io set up; queue runs it */
#define HANDLER_PARSE_ERROR 2 /* body malformed: fatal, as in OpenSSH */
#define HANDLER_REFUSED 3     /* a path refused by --confine: status encoded */
#define HANDLER_FINISH 4 /* the reply is io_finish's, on the loop's thread */

#endif
