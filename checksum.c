/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* File checksums: check-file-name, check-file-handle and paramiko's
 * check-file.  The handler checks the request, opens the file (by name) or
 * takes the handle's descriptor, and sets up the first read; the queue
 * runs it as an I/O request that reads and hashes HASH_STEP bytes per
 * step, so the requests that may run beside it (READs and WRITEs that do
 * not touch the range) are served between steps, and a cold file is read
 * ahead at disk speed.  Memory: one buffer of HASH_STEP bytes and the
 * digests (one, or at most one reply's worth per block) per request, and
 * the queue runs one such request at a time.  Between steps it stops
 * when the client has gone (cancel.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "cancel.h"
#include "handle.h"
#include "handlers.h"
#include "hash.h"
#include "log.h"
#include "parse.h"
#include "readahead.h"
#include "reply.h"
#include "server.h"
#include "sftp.h"
#include "status.h"

/* Bytes read and hashed per step: long enough that a step's overhead (a
 * completion, a loop turn) is lost in the hashing, short enough (well under
 * a millisecond of md5) that requests beside it are not held up, and small
 * enough to be hashed while the read left it in the CPU's cache (256 KiB
 * and 128 KiB steps were a little faster than 1 MiB ones on a warm file,
 * within the noise of a shared machine). */
#define HASH_STEP (256 * 1024)
/* The draft's smallest block size. */
#define HASH_MIN_BLOCK 256
/* The digests must fit one reply the clients accept (OpenSSH's and ours
 * take packets of up to 256 KiB): room for the reply's other fields. */
#define HASH_REPLY_OVERHEAD 64

enum reply_form {
	REPLY_DRAFT,   /* string "check-file", string algorithm, digests */
	REPLY_NO_NAME, /* string algorithm, digests (ProFTPD, for WinSCP) */
};

struct hash_job {
	const char *fn; /* the handler, for error lines */
	const char *op; /* the request's name, for debug lines */
	char *name;     /* the file, for log lines */
	int fd, own_fd; /* own_fd: opened by check-file-name */
	struct hash_ctx ctx;
	uint64_t pos;      /* the next byte to read */
	uint64_t end;      /* end of the range; UINT64_MAX: end of file */
	uint32_t block;    /* 0: one digest for the whole range */
	uint64_t in_block; /* bytes of the current block hashed so far */
	uint8_t *digests;  /* max_digests of them: 1, or a reply's worth */
	size_t ndigests, max_digests;
	enum reply_form form;
	uint64_t next_read, ahead_until; /* read-ahead state */
	struct residency residency;      /* how its cache is asked */
	uint8_t buf[];
};

static void job_free(struct request *req)
{
	struct hash_job *job = req->job;

	if (job == NULL)
		return;
	if (job->own_fd)
		close(job->fd);
	hash_free(&job->ctx);
	free(job->digests);
	free(job->name);
	free(job);
}

/* The next read: up to HASH_STEP bytes from pos, not past the range. */
static void next_read(struct request *req, struct hash_job *job)
{
	void (*done)(struct io_op *) = req->io.done; /* the queue's */
	uint64_t len = HASH_STEP;

	if (job->end != UINT64_MAX && job->end - job->pos < len)
		len = job->end - job->pos;
	memset(&req->io, 0, sizeof(req->io));
	req->io.opcode = IO_READ;
	req->io.fd = job->fd;
	req->io.offset = job->pos;
	req->io.buf = job->buf;
	req->io.len = (size_t)len;
	req->io.owner = req;
	req->io.done = done;
	readahead_advance(job->fd, &job->next_read, &job->ahead_until,
	                  &job->residency, job->pos, len);
}

static int add_digest(struct hash_job *job)
{
	size_t len = hash_algo_len(job->ctx.algo);

	if (hash_final(&job->ctx, job->digests + job->ndigests * len) != 0)
		return -1;
	job->ndigests++;
	return 0;
}

/* Hash n bytes of the buffer, closing blocks as they fill.  Returns 1 when
 * no further digest fits the reply, 0 to go on, -1 on a libcrypto error. */
static int hash_data(struct hash_job *job, size_t n)
{
	const uint8_t *p = job->buf;
	uint64_t take;

	while (n > 0) {
		take = n;
		if (job->block != 0 && take > job->block - job->in_block)
			take = job->block - job->in_block;
		if (hash_update(&job->ctx, p, (size_t)take) != 0)
			return -1;
		p += take;
		n -= (size_t)take;
		job->in_block += take;
		if (job->block != 0 && job->in_block == job->block) {
			job->in_block = 0;
			if (add_digest(job) != 0)
				return -1;
			if (job->ndigests == job->max_digests)
				return 1;
		}
	}
	return 0;
}

static void send_digests(struct request *req, struct hash_job *job)
{
	const char *alg = hash_algo_name(job->ctx.algo);
	size_t len = job->ndigests * hash_algo_len(job->ctx.algo);

	debug("request %u: %s \"%s\": %zu %s digest%s", req->id, job->op,
	      job->name, job->ndigests, alg, job->ndigests == 1 ? "" : "s");
	reply_begin(req, SSH2_FXP_EXTENDED_REPLY);
	if ((job->form == REPLY_DRAFT &&
	     wbuf_put_cstring(&req->reply, "check-file") != BUF_OK) ||
	    wbuf_put_cstring(&req->reply, alg) != BUF_OK ||
	    wbuf_put(&req->reply, job->digests, len) != BUF_OK)
		fatal_exit(255, "%s: encode failed", job->fn);
	reply_end(req);
}

/* The last data is in: the digest of the range (one even when it is
 * empty), or of the last partial block. */
static void finish(struct request *req, struct hash_job *job)
{
	int rc = 0;

	if ((job->block == 0 || job->in_block > 0) &&
	    job->ndigests < job->max_digests)
		rc = add_digest(job);
	if (rc != 0) {
		error("%s: hash failed", job->fn);
		send_status(req, SSH2_FX_FAILURE);
		return;
	}
	send_digests(req, job);
}

/* One read finished (req->io.result): hash it, then read on or reply. */
static int hash_step(struct request *req)
{
	struct hash_job *job = req->job;
	ssize_t n = req->io.result;
	const char *why;
	int rc;

	if (n == -EINTR || n == -EAGAIN) {
		next_read(req, job);
		return 1;
	}
	if (n < 0) {
		error("%s: read \"%.100s\": %s", job->fn, job->name,
		      errno_text((int)-n));
		send_status(req, errno_to_status((int)-n));
		return 0;
	}
	if (n > 0 && (rc = hash_data(job, (size_t)n)) != 0) {
		if (rc < 0) {
			error("%s: hash failed", job->fn);
			send_status(req, SSH2_FX_FAILURE);
		} else {
			send_digests(req, job);
		}
		return 0;
	}
	job->pos += (uint64_t)n;
	if (n == 0 || job->pos >= job->end) {
		finish(req, job);
		return 0;
	}
	if (work_cancelled(&why)) {
		logit("%s \"%.100s\" cancelled at byte %llu: %s", job->op,
		      job->name, (unsigned long long)job->pos, why);
		send_cancelled(req, why);
		return 0;
	}
	next_read(req, job);
	return 1;
}

struct check_args {
	const uint8_t *algs;
	size_t algs_len;
	uint64_t start, length;
	uint32_t block;
};

static int parse_args(struct request *req, const char *fn, struct check_args *a)
{
	struct rbuf *r = &req->body;
	int rc, is_string = 1;

	rc = rbuf_get_string(r, &a->algs, &a->algs_len);
	if (rc == BUF_OK) {
		is_string = 0;
		rc = rbuf_get_u64(r, &a->start);
	}
	if (rc == BUF_OK)
		rc = rbuf_get_u64(r, &a->length);
	if (rc == BUF_OK)
		rc = rbuf_get_u32(r, &a->block);
	if (rc != BUF_OK)
		return parse_fail(req, fn, field_error(r, rc, is_string));
	return 0;
}

/* The client's algorithm list for a log line: printable, bounded. */
static void algs_text(const struct check_args *a, char *out, size_t size)
{
	size_t i, n = a->algs_len < size - 1 ? a->algs_len : size - 1;

	for (i = 0; i < n; i++)
		out[i] = a->algs[i] >= 0x20 && a->algs[i] < 0x7f
		             ? (char)a->algs[i]
		             : '?';
	out[n] = '\0';
}

/* What does not depend on the file: a status to send, or 0 to go on. */
static uint32_t check_args(const char *fn, const struct check_args *a,
                           const struct hash_algo **algo)
{
	if (a->block != 0 && a->block < HASH_MIN_BLOCK) {
		verbose("%s: block size %u is below %u", fn, a->block,
		        HASH_MIN_BLOCK);
		return SSH2_FX_FAILURE;
	}
	*algo = hash_pick((const char *)a->algs, a->algs_len);
	if (*algo == NULL) {
		verbose("%s: no supported hash algorithm", fn);
		return SSH2_FX_FAILURE;
	}
	/* An offset that does not fit off_t fails as a seek would. */
	if (a->start > (uint64_t)INT64_MAX)
		return errno_to_status(EINVAL);
	return SSH2_FX_OK;
}

/* Set up the job on fd and its first read.  Takes fd when own_fd. */
static int start_job(struct request *req, const char *fn, const char *op,
                     const char *name, int fd, int own_fd,
                     const struct stat *st, const struct hash_algo *algo,
                     const struct check_args *a, enum reply_form form)
{
	size_t dlen = hash_algo_len(algo);
	struct hash_job *job;

	/* The buffer needs no zeroing: only what a read filled is hashed. */
	job = malloc(sizeof(*job) + HASH_STEP);
	if (job != NULL) {
		memset(job, 0, sizeof(*job));
		job->max_digests =
		    a->block == 0
		        ? 1
		        : (SFTP_MAX_MSG_LENGTH - HASH_REPLY_OVERHEAD) / dlen;
		job->digests = malloc(job->max_digests * dlen);
		job->name = strdup(name);
	}
	if (job == NULL || job->digests == NULL || job->name == NULL ||
	    hash_init(&job->ctx, algo) != 0) {
		if (job != NULL) {
			free(job->digests);
			free(job->name);
			free(job);
		}
		if (own_fd)
			close(fd);
		error("%s: out of memory or hash unavailable", fn);
		send_status(req, SSH2_FX_FAILURE);
		return HANDLER_DONE;
	}
	job->fn = fn;
	job->op = op;
	job->fd = fd;
	job->own_fd = own_fd;
	job->pos = a->start;
	job->end = a->length == 0 || a->length > UINT64_MAX - a->start
	               ? UINT64_MAX
	               : a->start + a->length;
	job->block = a->block;
	job->form = form;
	job->next_read = a->start;
	job->residency = RESIDENCY_INIT;
	req->job = job;
	req->job_free = job_free;
	req->io_step = hash_step;
	/* The queue's overlap rule sees a read of the range. */
	req->handle = -1;
	req->dev = st->st_dev;
	req->ino = st->st_ino;
	req->start = a->start;
	req->end = job->end;
	req->is_write = 0;
	next_read(req, job);
	return HANDLER_IO;
}

/* check-file-name: string path, then the common fields.  A name is opened
 * read-only and must be a regular file: a FIFO or a device could block
 * the open or never end. */
int process_extended_check_file_name(struct request *req)
{
	static const char fn[] = "process_extended_check_file_name";
	const struct hash_algo *algo = NULL;
	struct check_args a;
	struct stat st;
	char *path, algs[64];
	uint32_t status;
	int fd, flags, rc;

	if (get_string(req, fn, &path) != 0)
		return HANDLER_PARSE_ERROR;
	if (parse_args(req, fn, &a) != 0) {
		free(path);
		return HANDLER_PARSE_ERROR;
	}
	if ((rc = confine_path(req, fn, path_use_of(req, 0), &path)) != 0)
		return rc;
	algs_text(&a, algs, sizeof(algs));
	verbose("check-file-name \"%s\" %s offset %llu length %llu block %u",
	        path, algs, (unsigned long long)a.start,
	        (unsigned long long)a.length, a.block);
	if ((status = check_args(fn, &a, &algo)) != SSH2_FX_OK) {
		send_status(req, status);
		free(path);
		return HANDLER_DONE;
	}
	flags = O_RDONLY | O_NONBLOCK | O_NOCTTY;
	fd = open_file(path, &flags, 0);
	if (fd == -1 || fstat(fd, &st) == -1) {
		send_errno(req);
		if (fd != -1)
			close(fd);
		free(path);
		return HANDLER_DONE;
	}
	if (!S_ISREG(st.st_mode)) {
		verbose("%s: \"%s\" is not a regular file", fn, path);
		close(fd);
		send_status(req, SSH2_FX_FAILURE);
		free(path);
		return HANDLER_DONE;
	}
	/* io_uring would answer EAGAIN instead of waiting for the disk on
	 * a non-blocking descriptor; O_NONBLOCK was only for the open. */
	(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	rc = start_job(req, fn, "check-file-name", path, fd, 1, &st, algo, &a,
	               srv.client_reads_no_name ? REPLY_NO_NAME : REPLY_DRAFT);
	free(path);
	return rc;
}

/* check-file-handle and check-file: string handle, then the common
 * fields.  The handle must be an open regular file (read access is checked
 * by the reads themselves). */
static int check_handle(struct request *req, const char *fn, const char *op,
                        enum reply_form form)
{
	const struct hash_algo *algo = NULL;
	struct check_args a;
	struct handle *h;
	struct stat st;
	char algs[64];
	uint32_t status;
	int idx;

	if (get_handle(req, fn, &idx) != 0 || parse_args(req, fn, &a) != 0)
		return HANDLER_PARSE_ERROR;
	algs_text(&a, algs, sizeof(algs));
	debug("request %u: %s \"%s\" (handle %d) %s offset %llu length %llu "
	      "block %u",
	      req->id, op, handle_name(idx),
	      handle_get(idx, HANDLE_UNUSED) != NULL ? idx : -1, algs,
	      (unsigned long long)a.start, (unsigned long long)a.length,
	      a.block);
	if ((status = check_args(fn, &a, &algo)) != SSH2_FX_OK) {
		send_status(req, status);
		return HANDLER_DONE;
	}
	h = handle_get(idx, HANDLE_FILE);
	if (h == NULL || !h->is_regular || fstat(h->fd, &st) == -1) {
		send_status(req, SSH2_FX_FAILURE);
		return HANDLER_DONE;
	}
	return start_job(req, fn, op, h->name, h->fd, 0, &st, algo, &a, form);
}

int process_extended_check_file_handle(struct request *req)
{
	return check_handle(
	    req, "process_extended_check_file_handle", "check-file-handle",
	    srv.client_reads_no_name ? REPLY_NO_NAME : REPLY_DRAFT);
}

/* paramiko's SFTPFile.check() sends this name with the handle form and
 * reads the draft's reply. */
int process_extended_check_file(struct request *req)
{
	return check_handle(req, "process_extended_check_file", "check-file",
	                    REPLY_DRAFT);
}
