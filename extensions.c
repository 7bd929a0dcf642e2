/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* OpenSSH's extended requests: posix-rename, statvfs, fstatvfs, hardlink,
 * fsync, lsetstat, limits, expand-path, copy-data, home-directory and
 * users-groups-by-id.  They behave, answer and log as in OpenSSH 9.2, the
 * server we are measured against; later upstream changes are noted where
 * they apply.  copy-file (draft-ietf-secsh-filexfer-extensions-00) shares
 * copy-data's copy loop. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "attrib.h"
#include "backend.h"
#include "buf.h"
#include "cancel.h"
#include "confine.h"
#include "handle.h"
#include "handlers.h"
#include "kernelrules.h"
#include "log.h"
#include "monotonic.h"
#include "options.h"
#include "parse.h"
#include "realpath.h"
#include "reply.h"
#include "request.h"
#include "server.h"
#include "sftp.h"
#include "status.h"
#include "upload.h"
#include "xferlog.h"

/* copy-data moves data in chunks of this size, as OpenSSH does. */
#define COPY_CHUNK (64 * 1024)
/* The most one copy_file_range call is asked to copy.  Between calls the
 * loop looks whether its client has gone (cancel.h), so a call should take
 * well under half a second even where the kernel copies the bytes
 * themselves on a busy machine (16 MiB: a few milliseconds from the page
 * cache, a 64 MiB call once took over 0.5 s writing out holes on a loaded
 * 2-CPU VM; a reflink is far quicker).  Below that, each call is sized by
 * the time the one before took (cancel_step_size), from KERNEL_COPY_FIRST:
 * on slow storage 16 MiB is a second or more. */
#define KERNEL_COPY_MAX (16 * 1024 * 1024)
#define KERNEL_COPY_FIRST (1024 * 1024)

/* A reply we build by parts that does not fit is our bug, not the
 * client's: stop rather than send a broken packet (as reply.c does). */
static void put_check(int rc)
{
	if (rc != BUF_OK)
		fatal_exit(255, "extensions: encode failed (%d)", rc);
}

/* OpenSSH logs and compares handles by slot number, -1 for anything that
 * is not an open handle, and prints a missing name as "(null)". */
static int handle_number(int idx)
{
	return handle_get(idx, HANDLE_UNUSED) != NULL ? idx : -1;
}

/* ---- posix-rename, hardlink ---------------------------------------- */

/* Unlike RENAME, this one may replace an existing newpath. */
int process_extended_posix_rename(struct request *req)
{
	return path_pair_request(req, "process_extended_posix_rename",
	                         "posix-rename", confine_rename, IO_RENAMEAT);
}

int process_extended_hardlink(struct request *req)
{
	return path_pair_request(req, "process_extended_hardlink", "hardlink",
	                         confine_link, IO_LINKAT);
}

/* ---- statvfs, fstatvfs --------------------------------------------- */

static void send_statvfs(struct request *req, const struct statvfs *st)
{
	struct wbuf *w = &req->reply;
	uint64_t flag = 0;

	/* Only these two flags have a wire value. */
	if (st->f_flag & ST_RDONLY)
		flag |= SSH2_FXE_STATVFS_ST_RDONLY;
	if (st->f_flag & ST_NOSUID)
		flag |= SSH2_FXE_STATVFS_ST_NOSUID;

	reply_begin(req, SSH2_FXP_EXTENDED_REPLY);
	put_check(wbuf_put_u64(w, st->f_bsize));
	put_check(wbuf_put_u64(w, st->f_frsize));
	put_check(wbuf_put_u64(w, st->f_blocks));
	put_check(wbuf_put_u64(w, st->f_bfree));
	put_check(wbuf_put_u64(w, st->f_bavail));
	put_check(wbuf_put_u64(w, st->f_files));
	put_check(wbuf_put_u64(w, st->f_ffree));
	put_check(wbuf_put_u64(w, st->f_favail));
	put_check(wbuf_put_u64(w, st->f_fsid));
	put_check(wbuf_put_u64(w, flag));
	put_check(wbuf_put_u64(w, st->f_namemax));
	reply_end(req);
}

int process_extended_statvfs(struct request *req)
{
	struct statvfs st;
	char *path;
	int rc;

	if ((rc = get_path(req, "process_extended_statvfs", &path)) != 0)
		return rc;
	debug3("request %u: statvfs", req->id);
	logit("statvfs \"%s\"", path);
	if ((confine_active() ? confine_statvfs(path, &st)
	                      : statvfs(path, &st)) != 0)
		send_errno(req);
	else
		send_statvfs(req, &st);
	free(path);
	return HANDLER_DONE;
}

int process_extended_fstatvfs(struct request *req)
{
	struct statvfs st;
	struct handle *h;
	int idx;

	if (get_handle(req, "process_extended_fstatvfs", &idx) != 0)
		return HANDLER_PARSE_ERROR;
	debug("request %u: fstatvfs \"%s\" (handle %u)", req->id,
	      handle_name(idx), (unsigned)handle_number(idx));
	h = handle_get(idx, HANDLE_FILE);
	if (h == NULL)
		send_status(req, SSH2_FX_FAILURE);
	else if (fstatvfs(h->fd, &st) != 0)
		send_errno(req);
	else
		send_statvfs(req, &st);
	return HANDLER_DONE;
}

/* ---- fsync --------------------------------------------------------- */

/* -R refuses this one (the dispatcher checks): OpenSSH counts it as a
 * write.  A directory handle has no descriptor, hence NO_SUCH_FILE. */
int process_extended_fsync(struct request *req)
{
	struct io_op op;
	struct handle *h;
	ssize_t rc;
	int idx;

	if (get_handle(req, "process_extended_fsync", &idx) != 0)
		return HANDLER_PARSE_ERROR;
	debug3("request %u: fsync (handle %u)", req->id,
	       (unsigned)handle_number(idx));
	verbose("fsync \"%s\"", handle_name(idx));
	h = handle_get(idx, HANDLE_FILE);
	if (h == NULL) {
		send_status(req, SSH2_FX_NO_SUCH_FILE);
		return HANDLER_DONE;
	}
	memset(&op, 0, sizeof(op));
	op.opcode = IO_FSYNC;
	op.fd = h->fd;
	rc = io_sync(&op);
	send_status(req, rc < 0 ? errno_to_status((int)-rc) : SSH2_FX_OK);
	return HANDLER_DONE;
}

/* ---- lsetstat ------------------------------------------------------ */

int process_extended_lsetstat(struct request *req)
{
	return setstat_request(req, "process_extended_lsetstat",
	                       SETSTAT_NOFOLLOW);
}

/* ---- limits -------------------------------------------------------- */

/* Descriptors kept for stdin, stdout, stderr, the ring (or the log
 * socket) and a spare, as OpenSSH reckons it. */
#define RESERVED_DESCRIPTORS 5

/* Handles are bounded by the descriptor limit: what is left of it after
 * ours (and the sysctls kernelrules.c keeps open), over what each handle
 * may hold (two for an upload). */
static uint64_t max_open_handles(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return 0;
	return handle_limit_for((uint64_t)rl.rlim_cur,
	                        RESERVED_DESCRIPTORS +
	                            kernelrules_descriptors(),
	                        upload_descriptors_per_handle());
}

int process_extended_limits(struct request *req)
{
	struct wbuf *w = &req->reply;

	debug("request %u: limits", req->id);
	reply_begin(req, SSH2_FXP_EXTENDED_REPLY);
	put_check(wbuf_put_u64(w, SFTP_MAX_MSG_LENGTH));
	put_check(wbuf_put_u64(w, SFTP_MAX_READ_LENGTH));
	put_check(wbuf_put_u64(w, SFTP_MAX_WRITE_LENGTH));
	put_check(wbuf_put_u64(w, max_open_handles()));
	reply_end(req);
	return HANDLER_DONE;
}

/* ---- expand-path --------------------------------------------------- */

/* The path expand-path resolves: "" is ".", "~" and "~/" mean the current
 * directory (the start directory, so -d counts as home), "~user" that
 * user's home, and relative paths are taken from the current directory.
 * Sets *no_user when a "~user" lookup failed. */
static char *expand_path(const char *path, const char *cwd, int *no_user)
{
	char *out = NULL;

	*no_user = 0;
	if (path[0] == '\0')
		return strdup(".");
	if (strcmp(path, "~") == 0)
		return strdup(cwd);
	if (strncmp(path, "~/", 2) == 0) {
		if (asprintf(&out, "%s/%s", cwd, path + 2) < 0)
			return NULL;
		return out;
	}
	if (path[0] == '~') {
		/* "~user...": "~" and "~/" are the start directory. */
		out = expand_tilde(path, NULL, 0);
		*no_user = out == NULL;
		return out;
	}
	if (path[0] != '/') {
		if (asprintf(&out, "%s/%s", cwd, path) < 0)
			return NULL;
		return out;
	}
	return strdup(path);
}

int process_extended_expand(struct request *req)
{
	char cwd[PATH_MAX], resolved[PATH_MAX];
	char *path, *full;
	int no_user, rc;

	if ((rc = get_path(req, "process_extended_expand", &path)) != 0)
		return rc;
	if (getcwd(cwd, sizeof(cwd)) == NULL) {
		send_errno(req);
		free(path);
		return HANDLER_DONE;
	}
	debug3("request %u: expand, original \"%s\"", req->id, path);
	full = expand_path(path, cwd, &no_user);
	free(path);
	if (full == NULL) {
		/* Out of memory has no status of its own: say "no such user"
		 * only when that is what happened. */
		if (no_user)
			send_status_msg(req, SSH2_FX_NO_SUCH_FILE,
			                "no such user");
		else
			send_status(req, SSH2_FX_FAILURE);
		return HANDLER_DONE;
	}
	verbose("expand \"%s\"", full);
	if (sftp_realpath(full, resolved) == NULL)
		send_errno(req);
	else
		send_one_name(req, resolved);
	free(full);
	return HANDLER_DONE;
}

/* ---- copy-data ----------------------------------------------------- */

struct copy_job {
	const char *fn; /* the request's function, for log lines */
	struct handle *from, *to;
	uint64_t read_off, read_len, write_off;
	uint64_t read_pos, write_pos; /* where the seeks put them */
	int to_eof;
	const char *cancelled; /* why the copy stopped early, or NULL */
};

/* Has the client gone?  Asked before each chunk: then the copy stops, with
 * job->cancelled saying why. */
static int copy_cancelled(struct copy_job *job, uint64_t copied)
{
	if (!work_cancelled(&job->cancelled))
		return 0;
	logit("%s: cancelled after %llu bytes: %s", job->fn,
	      (unsigned long long)copied, job->cancelled);
	return 1;
}

/* A position n bytes on; IO_NO_OFFSET (an append handle) stays so. */
static uint64_t advance(uint64_t pos, uint64_t n)
{
	return pos == IO_NO_OFFSET ? pos : pos + n;
}

/* One synchronous operation through the back end, retried on EINTR as
 * atomicio() would.  Not on EAGAIN: only a FIFO or device (which we use
 * without waiting) gives it, and retrying would spin; it fails the copy.
 * Returns bytes moved or -errno. */
static ssize_t copy_io(enum io_opcode opcode, int fd, uint64_t off, void *buf,
                       size_t len)
{
	struct io_op op;
	ssize_t rc;

	do {
		memset(&op, 0, sizeof(op));
		op.opcode = opcode;
		op.fd = fd;
		op.offset = off;
		op.buf = buf;
		op.len = len;
		rc = io_sync(&op);
	} while (rc == -EINTR);
	return rc;
}

/* Fill buf unless end of file comes first.  Returns the bytes read (0 only
 * at end of file) or -errno; an error loses a partial chunk, as it does in
 * OpenSSH. */
static ssize_t read_chunk(int fd, uint64_t off, uint8_t *buf, size_t len)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = copy_io(IO_READ, fd, off + done, buf + done, len - done);
		if (n < 0)
			return n;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* Write all of buf; short writes are resumed.  Returns 0 or -errno, with
 * *done the bytes written before a write made no progress. */
static int write_chunk(int fd, uint64_t off, const uint8_t *buf, size_t len,
                       size_t *done)
{
	ssize_t n;

	*done = 0;
	while (*done < len) {
		n = copy_io(IO_WRITE, fd, advance(off, *done),
		            (void *)(buf + *done), len - *done);
		if (n < 0) {
			/* atomicio() reports nothing written on an error. */
			*done = 0;
			return (int)n;
		}
		if (n == 0)
			return -EPIPE;
		*done += (size_t)n;
	}
	return 0;
}

/* OpenSSH positions both descriptors with lseek() first (not an append
 * destination: the kernel picks where its bytes go); an offset that does
 * not fit off_t fails there with EINVAL, a FIFO with ESPIPE. */
static int copy_seek(struct copy_job *job, uint32_t *status)
{
	int err;

	if ((err = -handle_seek(job->from, job->read_off, &job->read_pos))) {
		*status = errno_to_status(err);
		error("%s: read_seek failed", job->fn);
		return -1;
	}
	job->write_pos = IO_NO_OFFSET;
	if (!(job->to->flags & O_APPEND) &&
	    (err = -handle_seek(job->to, job->write_off, &job->write_pos))) {
		*status = errno_to_status(err);
		error("%s: write_seek failed", job->fn);
		return -1;
	}
	return 0;
}

/* copy-data onto its own source (two handles, or two names, of one file:
 * "a" and "./a", or a hard link) reads back what it has just written: to
 * end of file it grows the file until the disk or a quota is full.
 * OpenSSH 10.4 refuses it by device and inode, before anything is copied;
 * so do we (9.2 copies).  Returns SSH2_FX_OK, or the status to answer. */
static uint32_t copy_onto_itself(const struct handle *from,
                                 const struct handle *to)
{
	struct stat a, b;

	if (fstat(from->fd, &a) == -1 || fstat(to->fd, &b) == -1)
		return errno_to_status(errno);
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return SSH2_FX_OK;
	error("process_extended_copy_data: \"%.100s\" and \"%.100s\" are the "
	      "same file",
	      from->name, to->name);
	return SSH2_FX_FAILURE;
}

/* Copy one chunk of up to len bytes and advance the positions.  Returns 1
 * when bytes were copied, 0 at end of file, or -1 after a logged error with
 * *status set from its errno. */
static int copy_chunk(struct copy_job *job, uint8_t *buf, size_t len,
                      uint64_t *rpos, uint64_t *wpos, uint32_t *status)
{
	size_t written;
	ssize_t n;
	int rc;

	n = read_chunk(job->from->fd, *rpos, buf, len);
	if (n == 0)
		return 0;
	if (n < 0) {
		error("%s: read failed: %s", job->fn, errno_text((int)-n));
		*status = errno_to_status((int)-n);
		return -1;
	}
	*rpos += (uint64_t)n;
	job->from->bytes_read += (uint64_t)n;
	rc = write_chunk(job->to->fd, *wpos, buf, (size_t)n, &written);
	if (rc < 0) {
		job->to->writes_failed = 1; /* --atomic-uploads discards it */
		error("%s: write failed: %llu != %llu: %s", job->fn,
		      (unsigned long long)written, (unsigned long long)n,
		      errno_text(-rc));
		*status = errno_to_status(-rc);
		return -1;
	}
	*wpos = advance(*wpos, (uint64_t)n);
	job->to->bytes_written += (uint64_t)n;
	return 1;
}

/* The status the copy loop below gives when the source ends `copied`
 * bytes into the range: see copy_run. */
static uint32_t eof_status(const struct copy_job *job, uint64_t copied)
{
	uint64_t chunks =
	    job->read_len / COPY_CHUNK + (job->read_len % COPY_CHUNK != 0);
	uint64_t at = copied / COPY_CHUNK + (copied % COPY_CHUNK != 0);

	return job->to_eof || at + 1 >= chunks ? SSH2_FX_OK : SSH2_FX_EOF;
}

/* Copy inside the kernel, through the back end's copy_file_range: a
 * reflink on btrfs and XFS, an in-kernel copy on ext4, a server-side copy
 * on NFS 4.2.  Returns 1 when the copy is over (*status set), 0 to let the
 * read/write loop carry on from the positions reached: when the kernel
 * cannot copy between these descriptors (another file system, an append
 * descriptor, a pipe), or failed (the loop then meets the error itself,
 * and logs and answers it as it always has).  A first call that finds
 * nothing is confirmed by the loop too: some pseudo-files report no data
 * to copy_file_range. */
static int copy_in_kernel(struct copy_job *job, uint64_t *rpos, uint64_t *wpos,
                          uint64_t *left, uint32_t *status)
{
	struct io_op op;
	size_t step = KERNEL_COPY_FIRST;
	int64_t t0;
	ssize_t n;

	if (job->to->flags & O_APPEND)
		return 0;
	while (*left > 0) {
		if (copy_cancelled(job, *rpos - job->read_pos)) {
			*status = SSH2_FX_FAILURE;
			return 1;
		}
		memset(&op, 0, sizeof(op));
		op.opcode = IO_COPY_RANGE;
		op.fd = job->from->fd;
		op.fd_out = job->to->fd;
		op.offset = *rpos;
		op.offset_out = *wpos;
		op.len = *left < step ? (size_t)*left : step;
		t0 = monotonic_ns();
		n = io_sync(&op);
		step = cancel_step_size(op.len, n > 0 ? (size_t)n : 0,
		                        monotonic_ns() - t0, COPY_CHUNK,
		                        KERNEL_COPY_MAX);
		if (n == -EINTR || n == -EAGAIN)
			continue;
		if (n < 0 || (n == 0 && *rpos == job->read_off))
			return 0;
		if (n == 0) {
			*status = eof_status(job, *rpos - job->read_off);
			return 1;
		}
		*rpos += (uint64_t)n;
		*wpos += (uint64_t)n;
		*left -= (uint64_t)n;
		job->from->bytes_read += (uint64_t)n;
		job->to->bytes_written += (uint64_t)n;
	}
	*status = SSH2_FX_OK;
	return 1;
}

/* The copy loop.  The length is taken off before each chunk is read, so end
 * of file inside the last chunk still counts as success, and only an end
 * of file before it gives EOF; in to-EOF mode end of file is success.
 * The kernel copies first where it can; the loop does what it left. */
static uint32_t copy_run(struct copy_job *job)
{
	static uint8_t buf[COPY_CHUNK];
	uint64_t rpos = job->read_pos, wpos = job->write_pos;
	uint64_t left = job->read_len;
	uint32_t status = SSH2_FX_OK;
	size_t len;
	int rc = 0;

	if (copy_in_kernel(job, &rpos, &wpos, &left, &status))
		return status;
	while (left > 0 || job->to_eof) {
		if (copy_cancelled(job, rpos - job->read_pos))
			return SSH2_FX_FAILURE;
		len = left < COPY_CHUNK ? (size_t)left : COPY_CHUNK;
		left -= len;
		rc = copy_chunk(job, buf, len, &rpos, &wpos, &status);
		if (rc == 0)
			status = job->to_eof ? SSH2_FX_OK : SSH2_FX_EOF;
		if (rc <= 0)
			break;
	}
	/* End of file inside the last chunk is success, as in OpenSSH.  A
	 * failed last chunk is not: OpenSSH 9.2 answers OK there (it only
	 * logs the error), which tells the client bytes were copied that
	 * were not.  We send the error.  After the kernel copied part, the
	 * chunks here no longer start at read_off: the status of an end of
	 * file is reckoned as if they did. */
	if (rc == 0 && status == SSH2_FX_EOF)
		status = eof_status(job, rpos - job->read_off);
	else if (left == 0 && rc == 0)
		status = SSH2_FX_OK;
	return status;
}

/* The fields in order; OpenSSH names this step "buffer error". */
static int copy_parse(struct request *req, int *rh, int *wh,
                      struct copy_job *job)
{
	struct rbuf *r = &req->body;
	int rc, is_string = 1;

	rc = handle_parse(r, rh);
	if (rc == BUF_OK) {
		is_string = 0;
		rc = rbuf_get_u64(r, &job->read_off);
	}
	if (rc == BUF_OK)
		rc = rbuf_get_u64(r, &job->read_len);
	if (rc == BUF_OK) {
		is_string = 1;
		rc = handle_parse(r, wh);
	}
	if (rc == BUF_OK) {
		is_string = 0;
		rc = rbuf_get_u64(r, &job->write_off);
	}
	if (rc != BUF_OK)
		return parse_fail_step(req, "process_extended_copy_data",
		                       "buffer error",
		                       field_error(r, rc, is_string));
	return 0;
}

int process_extended_copy_data(struct request *req)
{
	struct copy_job job;
	uint32_t status;
	int rh, wh;

	memset(&job, 0, sizeof(job));
	job.fn = "process_extended_copy_data";
	if (copy_parse(req, &rh, &wh, &job) != 0)
		return HANDLER_PARSE_ERROR;
	debug("request %u: copy-data from \"%s\" (handle %d) off %llu len %llu "
	      "to \"%s\" (handle %d) off %llu",
	      req->id, handle_name(rh), handle_number(rh),
	      (unsigned long long)job.read_off,
	      (unsigned long long)job.read_len, handle_name(wh),
	      handle_number(wh), (unsigned long long)job.write_off);

	/* A length of 0 means "up to end of file". */
	if (job.read_len == 0) {
		job.read_len = UINT64_MAX - job.read_off;
		job.to_eof = 1;
	}
	job.from = handle_get(rh, HANDLE_FILE);
	job.to = handle_get(wh, HANDLE_FILE);
	/* No copying onto the source through the same handle or name (as
	 * 9.2 checks, without a log line), nor the same file. */
	if (handle_number(rh) == handle_number(wh) || job.from == NULL ||
	    job.to == NULL || strcmp(job.from->name, job.to->name) == 0)
		status = SSH2_FX_FAILURE;
	else if ((status = copy_onto_itself(job.from, job.to)) == SSH2_FX_OK &&
	         copy_seek(&job, &status) == 0)
		status = copy_run(&job);
	if (job.cancelled != NULL)
		send_cancelled(req, job.cancelled);
	else
		send_status(req, status);
	return HANDLER_DONE;
}

/* ---- copy-file ----------------------------------------------------- */

/* Open both files for copy-file: the source must be a regular file, and so
 * must the destination, which must not be the source itself (through
 * another name or a hard link).  An existing destination is truncated only
 * after that check, and only when the client allows overwriting (with
 * --atomic-uploads it is replaced at the end instead: *up).  Returns
 * SSH2_FX_OK with both descriptors open, or the status to send. */
static uint32_t copy_file_open(const char *src, const char *dst, int overwrite,
                               int *sfd, int *dfd, struct upload **up)
{
	struct stat ss, ds;
	int flags = O_WRONLY | O_CREAT | O_NOCTTY | O_NONBLOCK;
	int sflags = O_RDONLY | O_NOCTTY | O_NONBLOCK;

	if (!overwrite)
		flags |= O_EXCL;
	*sfd = open_file(src, &sflags, 0);
	if (*sfd == -1 || fstat(*sfd, &ss) == -1) {
		uint32_t status = errno_to_status(errno);

		if (*sfd != -1)
			close(*sfd);
		return status;
	}
	if (!S_ISREG(ss.st_mode)) {
		verbose("copy-file: \"%s\" is not a regular file", src);
		close(*sfd);
		return SSH2_FX_FAILURE;
	}
	*dfd =
	    upload_open(dst, &flags, (int)(ss.st_mode & 0777), overwrite, up);
	if (*dfd == -1 || fstat(*dfd, &ds) == -1) {
		uint32_t status = errno_to_status(errno);

		if (*dfd != -1) {
			upload_discard(*up);
			close(*dfd);
		}
		close(*sfd);
		return status;
	}
	if (upload_replaces(*up) != NULL)
		ds = *upload_replaces(*up); /* the file to be replaced */
	if (!S_ISREG(ds.st_mode) ||
	    (ds.st_dev == ss.st_dev && ds.st_ino == ss.st_ino)) {
		error("process_extended_copy_file: \"%s\" is %s", dst,
		      S_ISREG(ds.st_mode) ? "the source file"
		                          : "not a regular file");
		upload_discard(*up);
		close(*dfd);
		close(*sfd);
		return SSH2_FX_FAILURE;
	}
	/* O_NONBLOCK was for the opens only (a FIFO must not block them). */
	(void)fcntl(*sfd, F_SETFL, fcntl(*sfd, F_GETFL) & ~O_NONBLOCK);
	(void)fcntl(*dfd, F_SETFL, fcntl(*dfd, F_GETFL) & ~O_NONBLOCK);
	if (overwrite && ftruncate(*dfd, 0) == -1) {
		uint32_t status = errno_to_status(errno);

		upload_discard(*up);
		close(*dfd);
		close(*sfd);
		return status;
	}
	return SSH2_FX_OK;
}

/* source path, destination path, overwrite flag: the whole source into a
 * destination created with the source's permission bits (less the umask),
 * with copy-data's loop. */
int process_extended_copy_file(struct request *req)
{
	static const char fn[] = "process_extended_copy_file";
	struct handle from, to;
	struct copy_job job;
	struct timespec start;
	struct upload *up = NULL;
	char *src, *dst;
	uint32_t status;
	uint8_t overwrite;
	int sfd = -1, dfd = -1, rc;

	memset(&job, 0, sizeof(job));
	if ((rc = get_two_paths(req, fn, &src, &dst)) != 0)
		return rc;
	if ((rc = rbuf_get_u8(&req->body, &overwrite)) != BUF_OK) {
		free(src);
		free(dst);
		return parse_fail(req, fn, field_error(&req->body, rc, 0));
	}
	logit("copy-file \"%s\" to \"%s\"%s", src, dst,
	      overwrite ? " overwrite" : "");
	xferlog_now(&start);
	status = copy_file_open(src, dst, overwrite, &sfd, &dfd, &up);
	if (status == SSH2_FX_OK) {
		/* The loop works on handles; these two are not in the table
		 * (the client never sees them). */
		memset(&from, 0, sizeof(from));
		memset(&to, 0, sizeof(to));
		from.kind = to.kind = HANDLE_FILE;
		from.fd = sfd;
		from.name = src;
		from.flags = O_RDONLY;
		to.fd = dfd;
		to.name = dst;
		to.flags = O_WRONLY;
		job.fn = fn;
		job.from = &from;
		job.to = &to;
		job.read_len = UINT64_MAX;
		job.to_eof = 1;
		status = copy_run(&job);
		close(sfd);
		rc = upload_finish(up, dst, dfd, 1, status != SSH2_FX_OK);
		if (rc < 0 && status == SSH2_FX_OK)
			status = errno_to_status(-rc);
		if (close(dfd) == -1 && status == SSH2_FX_OK)
			status = errno_to_status(errno);
		/* As ProFTPD logs it: an upload of the copy. */
		xferlog_write(dst, to.bytes_written, &start, 'i',
		              status == SSH2_FX_OK);
	}
	if (status == SSH2_FX_FAILURE && job.cancelled != NULL)
		send_cancelled(req, job.cancelled);
	else
		send_status(req, status);
	free(src);
	free(dst);
	return HANDLER_DONE;
}

/* ---- home-directory ------------------------------------------------ */

/* A confined session cannot read the user database (it is outside), but
 * knows its own user. */
static int user_known(const char *user)
{
	if (confine_active() && strcmp(user, srv.user) == 0)
		return 1;
	return getpwnam(user) != NULL;
}

/* OpenSSH 9.2 checks that the named user exists but answers with the
 * caller's own home (and "" is FAILURE); 9.8 answers "" with the caller's
 * home and a named user with that user's.  We keep 9.2's answers. */
int process_extended_home_directory(struct request *req)
{
	const char *home;
	char *user;
	int rc;

	if ((rc = get_path(req, "process_extended_home_directory", &user)) != 0)
		return rc;
	debug3("request %u: home-directory \"%s\"", req->id, user);
	if (!user_known(user)) {
		send_status(req, SSH2_FX_FAILURE);
	} else {
		/* A confined session's home is where it starts, as for "~"
		 * in expand-path. */
		home = confine_active() ? confine_start_dir() : srv.home;
		verbose("home-directory \"%s\"", home);
		send_one_name(req, home);
	}
	free(user);
	return HANDLER_DONE;
}

/* ---- users-groups-by-id -------------------------------------------- */

#define UGID_FN "process_extended_get_users_groups_by_id"

/* A confined session cannot read the user database, but the names it
 * looked up before confining itself (its own) are cached by libbsd. */
static const char *confined_user(uint32_t id)
{
	const char *name = NULL;

	if (confine_active())
		name = user_from_uid((uid_t)id, 1);
	return name != NULL ? name : "";
}

static const char *confined_group(uint32_t id)
{
	const char *name = NULL;

	if (confine_active())
		name = group_from_gid((gid_t)id, 1);
	return name != NULL ? name : "";
}

/* Append one name string per id in ids (a packed uint32 list) to out;
 * unknown ids get "".  A trailing part of an id is malformed, noticed (as
 * in OpenSSH) only after the whole ids before it were looked up. */
static int put_names(struct request *req, struct wbuf *out, const uint8_t *ids,
                     size_t len, int groups, unsigned *count)
{
	const char *kind = groups ? "gid" : "uid";
	const char *name;
	uint32_t id;
	size_t i;

	for (i = 0; i + 4 <= len; i += 4) {
		id = peek_u32(ids + i);
		if (groups) {
			struct group *gr = getgrgid((gid_t)id);

			name = gr != NULL ? gr->gr_name : confined_group(id);
		} else {
			struct passwd *pw = getpwuid((uid_t)id);

			name = pw != NULL ? pw->pw_name : confined_user(id);
		}
		debug3(UGID_FN ": %s %u => \"%s\"", kind, id, name);
		put_check(wbuf_put_cstring(out, name));
		(*count)++;
	}
	if (i != len)
		return parse_fail_step(req, UGID_FN,
		                       groups ? "parse inner gid"
		                              : "parse inner uid",
		                       "incomplete message");
	return 0;
}

int process_extended_get_users_groups_by_id(struct request *req)
{
	const uint8_t *uids, *gids;
	size_t nuids, ngids;
	struct wbuf users, groups;
	unsigned nusers = 0, ngroups = 0;
	int rc;

	rc = rbuf_get_string(&req->body, &uids, &nuids);
	if (rc == BUF_OK)
		rc = rbuf_get_string(&req->body, &gids, &ngids);
	if (rc != BUF_OK)
		return parse_fail(req, UGID_FN, field_error(&req->body, rc, 1));
	debug(UGID_FN ": uids len = %zu, gids len = %zu", nuids, ngids);

	/* Each list is bounded by the request (at most 256 KiB of ids); the
	 * reply buffer's own limit decides whether the answer fits. */
	wbuf_init(&users, (size_t)UINT32_MAX);
	wbuf_init(&groups, (size_t)UINT32_MAX);
	/* 9.2 counts the groups into the users in the verbose line (fixed in
	 * 10.3); we log what 9.2 logs. */
	if (put_names(req, &users, uids, nuids, 0, &nusers) != 0 ||
	    put_names(req, &groups, gids, ngids, 1, &nusers) != 0) {
		wbuf_free(&users);
		wbuf_free(&groups);
		return HANDLER_PARSE_ERROR;
	}
	verbose("users-groups-by-id: %u users, %u groups", nusers, ngroups);

	reply_begin(req, SSH2_FXP_EXTENDED_REPLY);
	rc = wbuf_put_string(&req->reply, users.data, users.len);
	if (rc == BUF_OK)
		rc = wbuf_put_string(&req->reply, groups.data, groups.len);
	if (rc == BUF_OK)
		reply_end(req);
	else
		send_status(req, SSH2_FX_FAILURE); /* too big to send */
	wbuf_free(&users);
	wbuf_free(&groups);
	return HANDLER_DONE;
}
