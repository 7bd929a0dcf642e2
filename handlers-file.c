/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Requests on open handles: OPEN, CLOSE, READ, WRITE, FSTAT, FSETSTAT,
 * OPENDIR, READDIR.  READ and WRITE parse, find where OpenSSH's lseek would
 * leave the file (handle_seek) and set up req->io (setup_io); a READ also
 * asks for read-ahead and takes a piece of READ memory right before its
 * read is submitted (take_read_mem, readmem.h).  The queue runs
 * the I/O through the back end (writes inline, perhaps merged by
 * coalesce.c) and calls io_finish (read_finish, write_finish) for the
 * reply.  The others here act and answer at once. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "confine.h"
#include "direct.h"
#include "handle.h"
#include "handlers.h"
#include "listing.h"
#include "log.h"
#include "nocache.h"
#include "parse.h"
#include "readahead.h"
#include "readmem.h"
#include "ring-call.h"
#include "reply.h"
#include "server.h"
#include "setstat.h"
#include "sftp.h"
#include "status.h"
#include "upload.h"

/* READDIR sends at most this many names per reply (OpenSSH: 100), and
 * stops adding names once the reply is about this long, which comes first
 * (549 names of 8 bytes): every client takes packets of 64 KiB
 * (libssh2, paramiko, sshfs, lftp, OpenSSH and rclone take 256 KiB;
 * tests/sshd-test.sh lists 3005 entries through each).  Fewer, longer
 * replies are fewer round trips. */
#define READDIR_BATCH 1024
#define READDIR_REPLY_BYTES (60 * 1024)
/* A NAME reply's bound, its length field included: what READDIR_BATCH
 * names of READDIR_REPLY_BYTES estimated come to once their owners and
 * groups are known must still fit. */
#define READDIR_REPLY_MAX (64 * 1024)
/* DATA reply header: length, type, id, data length. */
#define DATA_HEADER_LEN 13

static int flags_from_portable(uint32_t pflags)
{
	int flags = 0;

	if ((pflags & SSH2_FXF_READ) && (pflags & SSH2_FXF_WRITE))
		flags = O_RDWR;
	else if (pflags & SSH2_FXF_READ)
		flags = O_RDONLY;
	else if (pflags & SSH2_FXF_WRITE)
		flags = O_WRONLY;
	if (pflags & SSH2_FXF_APPEND)
		flags |= O_APPEND;
	if (pflags & SSH2_FXF_CREAT)
		flags |= O_CREAT;
	if (pflags & SSH2_FXF_TRUNC)
		flags |= O_TRUNC;
	if (pflags & SSH2_FXF_EXCL)
		flags |= O_EXCL;
	return flags;
}

/* The flag names of OpenSSH's open log line, in its order. */
static void string_from_portable(uint32_t pflags, char *out, size_t size)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} names[] = {
	    {SSH2_FXF_READ, "READ"},      {SSH2_FXF_WRITE, "WRITE"},
	    {SSH2_FXF_APPEND, "APPEND"},  {SSH2_FXF_CREAT, "CREATE"},
	    {SSH2_FXF_TRUNC, "TRUNCATE"}, {SSH2_FXF_EXCL, "EXCL"},
	};
	size_t i;

	out[0] = '\0';
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(pflags & names[i].bit))
			continue;
		if (out[0] != '\0')
			strlcat(out, ",", size);
		strlcat(out, names[i].name, size);
	}
}

static DIR *opendir_by_name(const char *path)
{
	DIR *dirp;
	int fd, err;

	if (!confine_active())
		return opendir(path);
	fd = confine_open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd == -1)
		return NULL;
	if ((dirp = fdopendir(fd)) == NULL) {
		err = errno;
		close(fd);
		errno = err;
	}
	return dirp;
}

/* Is a file system (by its magic number) one whose files are made as they
 * are read (procfs, sysfs and their kin)?  Their sizes say nothing (0 for
 * /proc files), reading at an offset that is not where the last read ended
 * regenerates everything before it, and seeking may fail where reading
 * would not: so they are read as OpenSSH reads them, lseek() then read(),
 * one at a time (like a device: not a regular file to us). */
static int pseudo_fs(unsigned long fs_type)
{
	static const unsigned long magic[] = {
	    0x9fa0,     /* procfs */
	    0x62656572, /* sysfs */
	    0x64626720, /* debugfs */
	    0x74726163, /* tracefs */
	    0x73636673, /* securityfs */
	    0x27e0eb,   /* cgroup */
	    0x63677270, /* cgroup2 */
	    0x62656570, /* configfs */
	    0xcafe4a11, /* bpf */
	    0x6165676c, /* pstore */
	    0xde5e81e4, /* efivarfs */
	};
	size_t i;

	for (i = 0; i < sizeof(magic) / sizeof(magic[0]); i++)
		if (fs_type == magic[i])
			return 1;
	return 0;
}

/* The file system's magic number (statfs(2)'s f_type), 0 when unknown. */
static unsigned long fs_type_of(int fd)
{
	struct statfs fs;

	return fstatfs(fd, &fs) == 0 ? (unsigned long)fs.f_type : 0;
}

/* A FIFO, socket or character device may make a read or a write wait
 * for another process (forever, for a FIFO nobody writes): those never
 * wait here, they fail with EAGAIN (FAILURE) where OpenSSH would wait.
 * Everything else waits as usual (an io_uring read of a regular file
 * opened O_NONBLOCK would fail when its pages are not cached). */
static int set_blocking_mode(struct handle *h)
{
	int nonblock =
	    S_ISFIFO(h->type) || S_ISCHR(h->type) || S_ISSOCK(h->type);
	int want = nonblock ? h->flags | O_NONBLOCK : h->flags & ~O_NONBLOCK;

	/* h->flags are the open flags: no system call for a regular file. */
	if (want == h->flags)
		return 0;
	if (fcntl(h->fd, F_SETFL, want) == -1)
		return -1;
	h->flags = want;
	return 0;
}

/* The handle for what an OPEN or OPENDIR opened: in the slot it took as
 * it started (so handles are numbered in arrival order, as OpenSSH's),
 * or a new one.  The index, or -1. */
static int handle_take(struct request *req, enum handle_kind kind, int fd,
                       DIR *dirp, int flags, const struct stat *st)
{
	int idx = req->reserved_handle;

	if (idx == -1)
		return handle_new_stat(kind, req->opened_name, fd, dirp, flags,
		                       st);
	if (handle_fill(idx, kind, req->opened_name, fd, dirp, flags, st) != 0)
		return -1; /* the slot goes back with the request */
	req->reserved_handle = -1;
	return idx;
}

/* The loop's part of an OPEN: a handle for the file the handler opened
 * (maybe in a worker thread), in the loop because the handle table is the
 * loop's.  Nothing here waits on the storage: the fstat() was done with
 * the open. */
static void open_finish(struct request *req)
{
	struct handle *h;
	uint32_t status = SSH2_FX_FAILURE;
	int idx, fd = req->opened_fd, flags = req->opened_flags;

	idx = handle_take(req, HANDLE_FILE, fd, NULL, flags,
	                  req->opened_has_st ? &req->opened_st : NULL);
	req->opened_fd = -1;
	if (idx != -1) {
		/* The handle has the upload now (handle_close discards it). */
		h = handle_get(idx, HANDLE_FILE);
		h->upload = req->opened_upload;
		req->opened_upload = NULL;
	}
	if (idx == -1) {
		close(fd); /* the upload goes with the request (request_free) */
	} else if (set_blocking_mode(h) == -1) {
		status = errno_to_status(errno);
		handle_close(idx);
	} else {
		/* Read where its last read left it, as OpenSSH does. */
		if (req->opened_pseudo)
			h->is_regular = 0;
		if ((flags & O_ACCMODE) != O_WRONLY)
			readahead_on_open(h, req->opened_fs_type);
		/* Without a size nothing written counts as new (kept). */
		nocache_open(&h->nocache, h->fd, h->is_regular, h->dev,
		             req->opened_has_st
		                 ? (uint64_t)req->opened_st.st_size
		                 : UINT64_MAX);
		/* With --nocache no hint at all: its pages would stay. */
		if (h->nocache.mode != NOCACHE_OFF)
			h->hint_waiting = 0;
		send_handle(req, idx);
		status = SSH2_FX_OK;
	}
	if (status != SSH2_FX_OK)
		send_status(req, status);
	free(req->opened_name);
	req->opened_name = NULL;
}

int process_open(struct request *req)
{
	struct attrib a;
	char *name, flagstr[64];
	uint32_t pflags, status = SSH2_FX_FAILURE;
	int flags, mode, fd, rc, use;
	struct upload *up = NULL;

	if (get_string(req, "process_open", &name) != 0)
		return HANDLER_PARSE_ERROR;
	if (get_u32(req, "process_open", &pflags) != 0 ||
	    get_attrib(req, "process_open", &a) != 0) {
		free(name);
		return HANDLER_PARSE_ERROR;
	}
	flags = flags_from_portable(pflags);
	/* With O_CREAT and O_EXCL the kernel follows no final symlink (an
	 * existing one is EEXIST): neither does the resolution.  O_EXCL
	 * alone changes nothing. */
	use = (flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL)
	          ? PATH_NOFOLLOW
	          : path_use_of(req, 0);
	if ((rc = confine_path(req, "process_open", use, &name)) != 0)
		return rc;
	debug3("request %u: open flags %d", req->id, pflags);
	mode = (a.flags & SSH2_FILEXFER_ATTR_PERMISSIONS) ? (int)a.perm : 0666;
	string_from_portable(pflags, flagstr, sizeof(flagstr));
	logit("open \"%s\" flags %s mode 0%o", name, flagstr, mode);
	if (srv.opt.readonly && ((flags & O_ACCMODE) != O_RDONLY ||
	                         (flags & (O_CREAT | O_TRUNC)) != 0)) {
		verbose("Refusing open request in read-only mode");
		status = SSH2_FX_PERMISSION_DENIED;
	} else if ((fd = upload_open(name, &flags, mode, flags & O_TRUNC,
	                             &up)) == -1) {
		status = errno_to_status(errno);
	} else {
		req->opened_fd = fd;
		req->opened_flags = flags;
		req->opened_has_st = fstat(fd, &req->opened_st) == 0;
		req->opened_fs_type = fs_type_of(fd);
		req->opened_pseudo = pseudo_fs(req->opened_fs_type);
		req->opened_name = name;
		req->opened_upload = up;
		req->io_finish = open_finish;
		return HANDLER_FINISH;
	}
	send_status(req, status);
	free(name);
	return HANDLER_DONE;
}

/* What CLOSE still does for a file with upload work (upload_pending: the
 * fsync of --fsync-on-close, the link of --atomic-uploads) once its handle
 * is out of the table: upload_finish and close(2) in a worker
 * (close_upload_call),
 * then, back in the loop, the transfer log's line, which says whether the
 * upload was finished (close_finish). */
struct close_job {
	struct upload *up;
	int writable, failed;
	int ran; /* close_upload_call ran (else close_finish cleans up) */
	struct handle h; /* the handle as it was, for the transfer log */
};

/* The job for h, which takes its upload over; NULL when there is no
 * upload work (or no memory: then it is done here and now). */
static struct close_job *close_job_new(struct handle *h)
{
	int writable = (h->flags & O_ACCMODE) != O_RDONLY;
	struct close_job *job;

	if (!upload_pending(h->upload, writable))
		return NULL;
	if ((job = calloc(1, sizeof(*job))) == NULL ||
	    (job->h.name = strdup(h->name)) == NULL) {
		free(job);
		h->upload_lost = upload_finish(h->upload, h->name, h->fd,
		                               writable, h->writes_failed) < 0;
		h->upload = NULL;
		return NULL;
	}
	job->up = h->upload;
	job->writable = writable;
	job->failed = h->writes_failed;
	job->h.flags = h->flags;
	job->h.bytes_read = h->bytes_read;
	job->h.bytes_written = h->bytes_written;
	job->h.opened = h->opened;
	job->h.write_failed = h->write_failed;
	h->upload = NULL;
	return job;
}

/* The close line, and (unless a job writes it later) the transfer log's. */
static void log_close(int idx, const struct close_job *job)
{
	struct handle *h = handle_get(idx, HANDLE_FILE);

	if (h != NULL) {
		logit("close \"%s\" bytes read %llu written %llu", h->name,
		      (unsigned long long)h->bytes_read,
		      (unsigned long long)h->bytes_written);
		if (job == NULL)
			handle_log_transfer(h, 0);
	} else
		logit("closedir \"%s\"", handle_name(idx));
}

/* CLOSE's closedir(3), in a worker thread (a file's close(2) is an
 * IO_CLOSE, io.h): on network storage it may wait on the storage. */
static void closedir_call(struct io_op *op)
{
	int rc = closedir(op->buf);

	op->result = rc == 0 ? 0 : -errno;
}

/* The same with a job: first upload_finish (which may fsync and link),
 * its log lines kept with the request's, as the queue keeps a handler's
 * (log.h). */
static void close_upload_call(struct io_op *op)
{
	struct request *req = op->owner;
	struct close_job *job = op->buf;
	int rc;

	log_capture(&req->log_lines);
	rc = upload_finish(job->up, job->h.name, op->fd, job->writable,
	                   job->failed);
	log_capture(NULL);
	job->up = NULL;
	job->ran = 1;
	job->h.upload_lost = rc < 0;
	if (close(op->fd) != 0 && rc == 0)
		rc = -errno;
	op->result = rc;
}

static void close_finish(struct request *req)
{
	struct close_job *job =
	    req->io.call == close_upload_call ? req->io.buf : NULL;

	if (job != NULL) {
		if (!job->ran) { /* never submitted: given up */
			upload_discard(job->up);
			close(req->io.fd);
			job->h.upload_lost = 1;
		}
		handle_log_transfer(&job->h, 0);
		free(job->h.name);
		free(job);
		req->io.buf = NULL;
	}
	if (req->io.result < 0) {
		/* An upload discarded for its failed writes: FAILURE. */
		send_status(req, errno_to_status((int)-req->io.result));
		return;
	}
	send_result(req, 0);
}

int process_close(struct request *req)
{
	struct close_job *job = NULL;
	struct handle *h;
	DIR *dirp;
	int idx, fd;

	if (get_handle(req, "process_close", &idx) != 0)
		return HANDLER_PARSE_ERROR;
	debug3("request %u: close handle %u", req->id, idx);
	if ((h = handle_get(idx, HANDLE_FILE)) != NULL) {
		nocache_close(&h->nocache, h->fd);
		job = close_job_new(h);
	}
	log_close(idx, job);
	/* The slot is free now, as OpenSSH's is once it answers: later
	 * requests see the handle gone. */
	if (handle_detach(idx, &fd, &dirp) != 0) {
		errno = ENOENT;
		send_result(req, -1);
		return HANDLER_DONE;
	}
	memset(&req->io, 0, sizeof(req->io));
	/* A file's close(2) is a metadata call: the ring's where the kernel
	 * has IORING_OP_CLOSE, else a worker's (io.h). */
	req->io.opcode = job == NULL && dirp == NULL ? IO_CLOSE : IO_CALL;
	req->io.call = job != NULL    ? close_upload_call
	               : dirp != NULL ? closedir_call
	                              : NULL;
	req->io.fd = fd;
	req->io.buf = job != NULL ? (void *)job : (void *)dirp;
	req->io.owner = req;
	req->io_finish = close_finish;
	return HANDLER_IO;
}

/* OpenSSH seeks, then reads or writes, and names the failing step in its
 * log line.  On a regular file we use one positioned call; EINVAL from it
 * means the offset was out of the file system's range, which is where
 * lseek fails.  Anything else was seeked first (handle_seek): its EINVAL
 * is the read's or write's own (a /dev/kmsg record longer than the READ). */
static const char *io_step(int handle, ssize_t err, const char *verb)
{
	const struct handle *h = handle_get(handle, HANDLE_FILE);

	return err == -EINVAL && h != NULL && h->is_regular ? "seek" : verb;
}

/* The reply is built where the bytes were read: the DATA header goes in
 * front of them, in the same piece of READ memory, so header and data
 * leave in one write. */
static void read_finish(struct request *req)
{
	struct handle *h = handle_get(req->handle, HANDLE_FILE);
	ssize_t last = req->io.result;
	size_t n = req->io_done;
	uint8_t *p = req->read_mem;

	if (h != NULL) {
		nocache_after_io(&h->nocache, h->fd, req->io.rw_refused);
		nocache_after_read(&h->nocache, h->fd, req->start, n,
		                   &req->nocache_read);
	}
	if (n == 0) {
		request_give_read_mem(req);
		if (last < 0) {
			error("process_read: %s \"%.100s\": %s",
			      io_step(req->handle, last, "read"),
			      handle_name(req->handle), errno_text((int)-last));
			send_status(req, errno_to_status((int)-last));
		} else {
			debug("read eof");
			send_status(req, SSH2_FX_EOF);
		}
		return;
	}
	poke_u32(p, (uint32_t)(DATA_HEADER_LEN - 4 + n));
	p[4] = SSH2_FXP_DATA;
	poke_u32(p + 5, req->id);
	poke_u32(p + 9, (uint32_t)n);
	req->read_reply_len = DATA_HEADER_LEN + n;
	if (h != NULL)
		h->bytes_read += n;
	debug("request %u: sent data len %d", req->id, (int)n);
}

/* Right before the read is submitted (so that READ memory goes only to
 * READs about to run, in arrival order): a piece for the header and the
 * bytes, or wait until earlier replies have gone out and given theirs
 * back.  The wait always ends: the pieces are held by requests ahead of
 * this one, whose replies leave first. */
static int take_read_mem(struct request *req)
{
	uint32_t align = req->read_direct_align;
	size_t want = DATA_HEADER_LEN + req->io.len;
	uint8_t *p, *bytes;

	/* A direct read's bytes start at its memory alignment, the header
	 * right in front of them, so that header and bytes still leave in
	 * one piece. */
	if (align != 0)
		want = direct_piece_len(align, DATA_HEADER_LEN, req->io.len);
	if ((p = readmem_take(want, &req->read_mem_slot)) == NULL)
		return IO_PREPARE_WAIT;
	bytes = align != 0 ? (uint8_t *)direct_bytes_at((uintptr_t)p, align,
	                                                DATA_HEADER_LEN)
	                   : p + DATA_HEADER_LEN;
	req->io_prepare = NULL;
	req->read_mem = bytes - DATA_HEADER_LEN;
	req->io.buf = bytes;
	return IO_PREPARE_SUBMIT;
}

/* A READ that starts no stream (continues: 0) reads direct where its file
 * can and the page cache holds none of its range (direct.h). */
static void choose_direct(struct request *req, struct handle *h, uint64_t pos,
                          uint32_t len, int continues, uint64_t stream_at)
{
	int fd, uncached;

	/* A handle opened for writing only is not read: its read fails
	 * (EBADF), as OpenSSH's does, and the O_RDONLY descriptor opened
	 * again must not lend it what its own lacks. */
	if (continues || (h->flags & O_ACCMODE) == O_WRONLY ||
	    !direct_read_candidate(direct_offset_align(&h->direct, h->fd), pos,
	                           len, continues, stream_at) ||
	    !direct_ask(&h->direct))
		return;
	uncached = readahead_uncached(h, pos, len);
	direct_answered(&h->direct, uncached);
	if (uncached != 1 ||
	    (fd = direct_read_begin(&h->direct, h->fd,
	                            handle_descriptors_to_spare())) == -1)
		return;
	req->io.fd = fd;
	req->read_direct_align = h->direct.mem_align;
}

static void setup_io(struct request *req, struct handle *h, int idx,
                     enum io_opcode op, uint64_t off, void *buf, size_t len)
{
	req->handle = idx;
	req->dev = h->dev;
	req->ino = h->ino;
	req->regular_file = h->is_regular;
	req->is_write = op == IO_WRITE;
	req->start = off;
	req->end = off + len;
	req->io.offset = off;
	if (req->is_write && (h->flags & O_APPEND)) {
		/* The kernel picks the offset: it may touch any byte.  The
		 * client's offset is ignored, as OpenSSH ignores it (any
		 * value, 2^64-1 too); the file may not even seek. */
		req->start = 0;
		req->end = UINT64_MAX;
		req->io.offset = IO_NO_OFFSET;
	}
	req->io.opcode = op;
	req->io.fd = h->fd;
	req->io.rw_flags = h->is_regular ? nocache_rw_flags(&h->nocache) : 0;
	req->io.rw_refused = 0;
	req->io.buf = buf;
	req->io.len = len;
	req->io.owner = req;
	req->io_want = len;
	req->io_done = 0;
}

int process_read(struct request *req)
{
	struct handle *h;
	uint64_t off, pos, stream_at;
	uint32_t len;
	int idx, err, cached_path, continues;

	if (get_handle(req, "process_read", &idx) != 0 ||
	    get_u64(req, "process_read", &off) != 0 ||
	    get_u32(req, "process_read", &len) != 0)
		return HANDLER_PARSE_ERROR;
	debug("request %u: read \"%s\" (handle %d) off %llu len %u", req->id,
	      handle_name(idx), idx, (unsigned long long)off, len);
	if ((h = handle_get(idx, HANDLE_FILE)) == NULL) {
		send_status(req, SSH2_FX_FAILURE);
		return HANDLER_DONE;
	}
	if (len > SFTP_MAX_READ_LENGTH) {
		debug2("read change len %u to %u", len, SFTP_MAX_READ_LENGTH);
		len = SFTP_MAX_READ_LENGTH;
	}
	if ((err = -handle_seek(h, off, &pos)) != 0) {
		error("process_read: seek \"%.100s\": %s", h->name,
		      errno_text(err));
		send_status(req, errno_to_status(err));
		return HANDLER_DONE;
	}
	if (len == 0) {
		reply_begin(req, SSH2_FXP_DATA);
		if (wbuf_put_u32(&req->reply, 0) != BUF_OK)
			fatal_exit(255, "process_read: encode failed");
		reply_end(req);
		debug("request %u: sent data len %d", req->id, 0);
		return HANDLER_DONE;
	}
	/* A READ that continues a stream is in its read-ahead window:
	 * read_hint_waiting need not look at it again.  With --nocache
	 * there are no hints (their pages would stay cached). */
	cached_path = h->is_regular && h->nocache.mode == NOCACHE_OFF;
	stream_at = h->next_read;
	continues = cached_path && readahead_on_read(h, pos, len);
	if (continues)
		req->ahead_hinted = 1;
	nocache_before_read(&h->nocache, h->fd, pos, len, &req->nocache_read);
	/* The bytes are copied out of the file when the read runs, into
	 * memory of ours (take_read_mem): a reply holds what the file held
	 * then, whatever happens to the file afterwards. */
	setup_io(req, h, idx, IO_READ, pos, NULL, len);
	if (cached_path)
		choose_direct(req, h, pos, len, continues, stream_at);
	req->io_finish = read_finish;
	req->io_prepare = take_read_mem;
	req->io.at_submit = !h->is_regular;
	return HANDLER_IO;
}

/* The range of a READ that has not run yet: the first one waiting (its
 * handler ran) or one behind it (its packet, as sent); 0, or -1 when it is
 * no READ of a regular file. */
/* A READ not yet started: its handle, offset and length as sent (after
 * the type and the id), without consuming them: 0, or -1 when it is no
 * READ or malformed (its handler will say so).  Here, beside the READ
 * handler that parses the same fields, not in handlers.c: the request
 * table calls this file's handlers, so a call back would close a loop. */
static int request_read_range(const struct request *req, int *idx,
                              uint64_t *off, uint32_t *len)
{
	struct rbuf r;

	rbuf_init(&r, req->packet + 1, req->packet_len - 1);
	return req->type == SSH2_FXP_READ && rbuf_skip(&r, 4) == BUF_OK &&
	               handle_parse(&r, idx) == BUF_OK &&
	               rbuf_get_u64(&r, off) == BUF_OK &&
	               rbuf_get_u32(&r, len) == BUF_OK
	           ? 0
	           : -1;
}

static int waiting_read_range(const struct request *req, struct handle **h,
                              uint64_t *off, uint32_t *len)
{
	int idx = req->handle;

	if (req->state == REQ_PARSED) {
		*off = req->io.offset;
		*len = (uint32_t)req->io.len;
	} else if (req->state != REQ_WAITING ||
	           request_read_range(req, &idx, off, len) != 0) {
		return -1;
	}
	/* An offset the READ will refuse (handle_seek) gets no hint. */
	if ((*h = handle_get(idx, HANDLE_FILE)) == NULL || !(*h)->is_regular ||
	    *len == 0 || *off > (uint64_t)INT64_MAX)
		return -1;
	if (*len > SFTP_MAX_READ_LENGTH)
		*len = SFTP_MAX_READ_LENGTH;
	return 0;
}

/* Ask the kernel to read [from, end) of h ahead for the READs from first to
 * last: they are marked hinted (1), or left to be asked again on a later
 * turn (0; readahead_queued). */
static int hint_run(struct handle *h, uint64_t from, uint64_t end,
                    struct request *first, struct request *last)
{
	struct request *r;
	int done = readahead_queued(h, from, end - from);

	for (r = first; r != last->next; r = r->next)
		if (r->type == SSH2_FXP_READ)
			r->ahead_hinted = done;
	return done;
}

int read_hint_waiting(struct request *waiting)
{
	struct request *r, *first = NULL, *last = NULL;
	struct handle *h, *run = NULL;
	uint64_t off, from = 0, end = 0;
	uint32_t len;
	int left = 0;

	/* Adjacent READs of one file (a sequential stream) make one hint. */
	for (r = waiting; r != NULL; r = r->next) {
		if (r->ahead_hinted ||
		    waiting_read_range(r, &h, &off, &len) != 0)
			continue;
		if (h == run && off == end) {
			end += len;
			last = r;
			continue;
		}
		if (run != NULL && !hint_run(run, from, end, first, last))
			left = 1;
		run = h;
		from = off;
		end = off + len;
		first = last = r;
	}
	if (run != NULL && !hint_run(run, from, end, first, last))
		left = 1;
	return left;
}

static void write_finish(struct request *req)
{
	struct handle *h = handle_get(req->handle, HANDLE_FILE);
	ssize_t last = req->io.result;

	/* The transfer log calls an upload whose last WRITE failed
	 * incomplete. */
	if (h != NULL) {
		h->write_failed = req->io_done != req->io_want;
		h->writes_failed |= h->write_failed;
		nocache_after_io(&h->nocache, h->fd, req->io.rw_refused);
		nocache_after_write(&h->nocache, h->fd,
		                    req->end == UINT64_MAX ? UINT64_MAX
		                                           : req->start,
		                    req->io_done);
	}
	if (req->io_done == req->io_want) {
		/* Only acknowledged bytes count, as in OpenSSH's close line. */
		if (h != NULL)
			h->bytes_written += req->io_done;
		send_status(req, SSH2_FX_OK);
	} else if (req->io_done > 0 || last >= 0) {
		/* A short write: OpenSSH says FAILURE here; the retry of the
		 * remainder may have told us more precisely why.  The log line
		 * is OpenSSH's wording for this case, kept although some bytes
		 * may have been written. */
		debug2("nothing at all written");
		send_status(req, last < 0 ? errno_to_status((int)-last)
		                          : SSH2_FX_FAILURE);
	} else {
		error("process_write: %s \"%.100s\": %s",
		      io_step(req->handle, last, "write"),
		      handle_name(req->handle), errno_text((int)-last));
		send_status(req, errno_to_status((int)-last));
	}
}

int process_write(struct request *req)
{
	struct handle *h;
	const uint8_t *data;
	uint64_t off, pos = 0;
	size_t len;
	int idx, err;

	if (get_handle(req, "process_write", &idx) != 0 ||
	    get_u64(req, "process_write", &off) != 0 ||
	    get_data(req, "process_write", &data, &len) != 0)
		return HANDLER_PARSE_ERROR;
	debug("request %u: write \"%s\" (handle %d) off %llu len %zu", req->id,
	      handle_name(idx), idx, (unsigned long long)off, len);
	if ((h = handle_get(idx, HANDLE_FILE)) == NULL) {
		send_status(req, SSH2_FX_FAILURE);
		return HANDLER_DONE;
	}
	/* An append handle does not seek at all (setup_io). */
	if (!(h->flags & O_APPEND) && (err = -handle_seek(h, off, &pos)) != 0) {
		h->write_failed = h->writes_failed = 1;
		error("process_write: seek \"%.100s\": %s", h->name,
		      errno_text(err));
		send_status(req, errno_to_status(err));
		return HANDLER_DONE;
	}
	if (len == 0) {
		send_status(req, SSH2_FX_OK);
		return HANDLER_DONE;
	}
	/* The data stays in the request's packet until the write is done. */
	setup_io(req, h, idx, IO_WRITE, pos, (void *)data, len);
	req->io_finish = write_finish;
	return HANDLER_IO;
}

int process_fstat(struct request *req)
{
	struct handle *h;
	struct attrib a;
	struct stat st;
	int idx;

	if (get_handle(req, "process_fstat", &idx) != 0)
		return HANDLER_PARSE_ERROR;
	debug("request %u: fstat \"%s\" (handle %u)", req->id, handle_name(idx),
	      idx);
	if ((h = handle_get(idx, HANDLE_FILE)) == NULL) {
		send_status(req, SSH2_FX_FAILURE);
	} else if (req->via_ring) {
		/* No CLOSE of it runs meanwhile (order.h). */
		return ring_call(req, IO_STATX, h->fd, NULL, NULL,
		                 AT_EMPTY_PATH, 0);
	} else if (fstat(h->fd, &st) == -1) {
		send_errno(req);
	} else {
		attrib_from_stat(&st, &a);
		send_attrib(req, &a);
	}
	return HANDLER_DONE;
}

int process_fsetstat(struct request *req)
{
	struct handle *h;
	struct attrib a;
	int idx;

	if (get_handle(req, "process_fsetstat", &idx) != 0 ||
	    get_attrib(req, "process_fsetstat", &a) != 0)
		return HANDLER_PARSE_ERROR;
	debug("request %u: fsetstat handle %d", req->id, idx);
	if ((h = handle_get(idx, HANDLE_FILE)) == NULL) {
		send_status(req, SSH2_FX_FAILURE);
		return HANDLER_DONE;
	}
	send_status(req, apply_attrib(h->name, h->fd, &a, SETSTAT_FD));
	return HANDLER_DONE;
}

static void opendir_finish(struct request *req)
{
	DIR *dirp = req->opened_dir;
	int idx;

	req->opened_dir = NULL;
	if ((idx = handle_take(req, HANDLE_DIR, -1, dirp, 0, NULL)) == -1) {
		closedir(dirp);
		send_status(req, SSH2_FX_FAILURE);
	} else {
		send_handle(req, idx);
	}
	free(req->opened_name);
	req->opened_name = NULL;
}

int process_opendir(struct request *req)
{
	char *path;
	DIR *dirp;
	int rc;

	if (get_string(req, "process_opendir", &path) != 0)
		return HANDLER_PARSE_ERROR;
	if ((rc = confine_path(req, "process_opendir", path_use_of(req, 0),
	                       &path)) != 0)
		return rc;
	debug3("request %u: opendir", req->id);
	logit("opendir \"%s\"", path);
	if ((dirp = opendir_by_name(path)) == NULL) {
		send_errno(req);
		free(path);
		return HANDLER_DONE;
	}
	req->opened_dir = dirp;
	req->opened_name = path;
	req->io_finish = opendir_finish;
	return HANDLER_FINISH;
}

/* Append one NAME entry: file name, long name, lstat attributes; 1, or
 * 0 when it made the reply too long (then it is taken out again). */
static int put_dir_entry(struct request *req, const struct listing_entry *e,
                         time_t now, uint32_t count)
{
	size_t mark = req->reply.len;
	char *longname;
	struct attrib a;
	int rc;

	if ((longname = ls_longname(e->name, &e->st, now)) == NULL)
		fatal_exit(255, "process_readdir: out of memory");
	attrib_from_stat(&e->st, &a);
	rc = wbuf_put_cstring(&req->reply, e->name) == BUF_OK &&
	     wbuf_put_cstring(&req->reply, longname) == BUF_OK &&
	     attrib_encode(&req->reply, &a) == BUF_OK;
	free(longname);
	if (!rc)
		fatal_exit(255, "process_readdir: encode failed");
	if (listing_fits(req->reply.len, READDIR_REPLY_MAX, count))
		return 1;
	req->reply.len = mark;
	return 0;
}

/* The fine-grained clock: file times may be fine-grained too (multigrain
 * timestamps), so time(2)'s coarse clock can be a second behind a file
 * just changed, which would print it with a year instead of a time. */
static time_t wall_clock_now(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return time(NULL);
	return ts.tv_sec;
}

int process_readdir(struct request *req)
{
	struct listing l = {0};
	struct handle *h;
	uint32_t count = 0;
	time_t now = wall_clock_now();
	size_t i;
	int idx;

	if (get_handle(req, "process_readdir", &idx) != 0)
		return HANDLER_PARSE_ERROR;
	debug("request %u: readdir \"%s\" (handle %d)", req->id,
	      handle_name(idx), idx);
	if ((h = handle_get(idx, HANDLE_DIR)) == NULL) {
		send_status(req, SSH2_FX_FAILURE);
		return HANDLER_DONE;
	}
	reply_begin(req, SSH2_FXP_NAME);
	if (wbuf_put_u32(&req->reply, 0) != BUF_OK) /* count, patched below */
		fatal_exit(255, "process_readdir: encode failed");
	/* Entries that cannot be looked up are skipped, as OpenSSH skips
	 * them: a batch of those only is followed by another. */
	do {
		if (listing_read(h->dirp, &l, READDIR_BATCH,
		                 READDIR_REPLY_BYTES) != 0)
			fatal_exit(255, "process_readdir: out of memory");
		listing_stat(h->dirp, h->name, &l);
		for (i = 0; i < l.n; i++) {
			if (!l.e[i].ok)
				continue;
			if (!put_dir_entry(req, &l.e[i], now, count)) {
				/* The next READDIR starts at this one. */
				seekdir(h->dirp, l.e[i].pos);
				break;
			}
			count++;
		}
	} while (count == 0 && l.n > 0);
	listing_free(&l);
	if (count == 0) {
		send_status(req, SSH2_FX_EOF);
		return HANDLER_DONE;
	}
	poke_u32(req->reply.data + 9, count);
	reply_end(req);
	debug("request %u: sent names count %d", req->id, (int)count);
	return HANDLER_DONE;
}
