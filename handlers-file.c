/* Requests on open handles: OPEN, CLOSE, READ, WRITE, FSTAT, FSETSTAT,
 * OPENDIR, READDIR.  READ and WRITE only parse and set up req->io; the
 * queue runs the I/O through the back end and calls io_finish. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "handle.h"
#include "handlers.h"
#include "log.h"
#include "pipes.h"
#include "readahead.h"
#include "reply.h"
#include "server.h"
#include "sftp.h"
#include "status.h"

/* READDIR sends at most this many names per reply, as OpenSSH does. */
#define READDIR_BATCH 100
/* DATA reply header: length, type, id, data length. */
#define DATA_HEADER_LEN 13
/* READs at least this long are spliced; shorter ones are cheaper to copy. */
#define SPLICE_MIN_LEN (16 * 1024)

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

/* Spare splice pipes hold descriptors: give them up before telling the
 * client it has too many files open. */
static int open_file(const char *name, int flags, int mode)
{
	int fd = open(name, flags, mode);

	if (fd == -1 && errno == EMFILE) {
		pipes_release_spares();
		fd = open(name, flags, mode);
	}
	return fd;
}

static DIR *open_dir(const char *path)
{
	DIR *dirp = opendir(path);

	if (dirp == NULL && errno == EMFILE) {
		pipes_release_spares();
		dirp = opendir(path);
	}
	return dirp;
}

int process_open(struct request *req)
{
	struct attrib a;
	char *name, flagstr[64];
	uint32_t pflags, status = SSH2_FX_FAILURE;
	int flags, mode, fd, idx;

	if (rbuf_get_cstring(&req->body, &name) != BUF_OK)
		return HANDLER_PARSE_ERROR;
	if (rbuf_get_u32(&req->body, &pflags) != BUF_OK ||
	    attrib_decode(&req->body, &a) != BUF_OK) {
		free(name);
		return HANDLER_PARSE_ERROR;
	}
	debug3("request %u: open flags %d", req->id, pflags);
	flags = flags_from_portable(pflags);
	mode = (a.flags & SSH2_FILEXFER_ATTR_PERMISSIONS) ? (int)a.perm : 0666;
	string_from_portable(pflags, flagstr, sizeof(flagstr));
	logit("open \"%s\" flags %s mode 0%o", name, flagstr, mode);
	if (srv.opt.readonly && ((flags & O_ACCMODE) != O_RDONLY ||
	                         (flags & (O_CREAT | O_TRUNC)) != 0)) {
		verbose("Refusing open request in read-only mode");
		status = SSH2_FX_PERMISSION_DENIED;
	} else if ((fd = open_file(name, flags, mode)) == -1) {
		status = errno_to_status(errno);
	} else if ((idx = handle_new(HANDLE_FILE, name, fd, NULL, flags)) ==
	           -1) {
		close(fd);
	} else {
		if ((flags & O_ACCMODE) != O_WRONLY)
			readahead_on_open(handle_get(idx, HANDLE_FILE));
		send_handle(req, idx);
		status = SSH2_FX_OK;
	}
	if (status != SSH2_FX_OK)
		send_status(req, status);
	free(name);
	return HANDLER_DONE;
}

static void log_close(int idx)
{
	struct handle *h = handle_get(idx, HANDLE_FILE);

	if (h != NULL)
		logit("close \"%s\" bytes read %llu written %llu", h->name,
		      (unsigned long long)h->bytes_read,
		      (unsigned long long)h->bytes_written);
	else
		logit("closedir \"%s\"", handle_name(idx));
}

int process_close(struct request *req)
{
	int idx;

	if (handle_parse(&req->body, &idx) != BUF_OK)
		return HANDLER_PARSE_ERROR;
	debug3("request %u: close handle %u", req->id, idx);
	log_close(idx);
	send_result(req, handle_close(idx));
	return HANDLER_DONE;
}

/* An offset past INT64_MAX is EINVAL for lseek/pread, as in OpenSSH. */
static int offset_valid(uint64_t off)
{
	return off <= (uint64_t)INT64_MAX;
}

/* OpenSSH seeks, then reads or writes, and names the failing step in its
 * log line.  We use one positioned call; EINVAL from it means the offset
 * was out of the file system's range, which is where lseek fails. */
static const char *io_step(ssize_t err, const char *verb)
{
	return err == -EINVAL ? "seek" : verb;
}

static void read_finish(struct request *req)
{
	struct handle *h = handle_get(req->handle, HANDLE_FILE);
	ssize_t last = req->io.result;
	size_t n = req->io_done;

	if (n == 0 && req->has_pipe) {
		pipe_put(&req->pipe, 0);
		req->has_pipe = 0;
	}
	if (n == 0 && last < 0) {
		error("process_read: %s \"%.100s\": %s", io_step(last, "read"),
		      handle_name(req->handle), strerror((int)-last));
		send_status(req, errno_to_status((int)-last));
		return;
	}
	if (n == 0) {
		debug("read eof");
		send_status(req, SSH2_FX_EOF);
		return;
	}
	/* The header was written before the read; now the length is exact:
	 * the bytes are in our buffer or in our pipe, whatever happens to
	 * the file. */
	poke_u32(req->reply.data, (uint32_t)(DATA_HEADER_LEN - 4 + n));
	poke_u32(req->reply.data + 9, (uint32_t)n);
	if (req->has_pipe) {
		req->reply.len = DATA_HEADER_LEN;
		req->pipe_left = n;
	} else {
		req->reply.len = DATA_HEADER_LEN + n;
	}
	if (h != NULL)
		h->bytes_read += n;
	debug("request %u: sent data len %d", req->id, (int)n);
}

/* A file system that cannot splice, or no pipe to be had: read into the
 * reply buffer instead. */
static int read_without_splice(struct request *req)
{
	uint8_t *p;

	if (req->has_pipe)
		pipe_put(&req->pipe, 0);
	req->has_pipe = 0;
	req->io_fallback = NULL;
	if (wbuf_reserve(&req->reply, req->io.len, &p) != BUF_OK)
		return 0;
	req->io.opcode = IO_READ;
	req->io.buf = p;
	return 1;
}

/* Right before the splice is submitted (so that pipes are lent only to
 * READs about to run): a pipe from the pool; or 0, to wait until one of
 * the session's pipes comes back; or a plain read when none will. */
static int take_pipe(struct request *req)
{
	switch (pipe_get(&req->pipe, req->io.len)) {
	case PIPE_OK:
		req->has_pipe = 1;
		req->io.fd_out = req->pipe.wr;
		break;
	case PIPE_WAIT:
		return 0;
	default:
		req->has_copy_slot = 1;
		if (!read_without_splice(req))
			fatal_exit(255, "process_read: no memory for %zu bytes",
			           req->io.len);
	}
	req->io_prepare = NULL;
	return 1;
}

static void setup_io(struct request *req, struct handle *h, int idx,
                     enum io_opcode op, uint64_t off, void *buf, size_t len)
{
	req->handle = idx;
	req->dev = h->dev;
	req->ino = h->ino;
	req->is_write = op == IO_WRITE;
	req->start = off;
	req->end = off + len;
	if (req->is_write && (h->flags & O_APPEND)) {
		/* The kernel picks the offset: it may touch any byte. */
		req->start = 0;
		req->end = UINT64_MAX;
	}
	req->io.opcode = op;
	req->io.fd = h->fd;
	req->io.offset = off;
	req->io.buf = buf;
	req->io.len = len;
	req->io.owner = req;
	req->io_want = len;
	req->io_done = 0;
}

int process_read(struct request *req)
{
	struct handle *h;
	uint64_t off;
	uint32_t len;
	uint8_t *p;
	int idx;

	if (handle_parse(&req->body, &idx) != BUF_OK ||
	    rbuf_get_u64(&req->body, &off) != BUF_OK ||
	    rbuf_get_u32(&req->body, &len) != BUF_OK)
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
	if (!offset_valid(off)) {
		error("process_read: seek \"%.100s\": %s", h->name,
		      strerror(EINVAL));
		send_status(req, errno_to_status(EINVAL));
		return HANDLER_DONE;
	}
	/* DATA header now, the bytes straight after it (or in a pipe): no
	 * copy later. */
	reply_begin(req, SSH2_FXP_DATA);
	if (wbuf_put_u32(&req->reply, len) != BUF_OK)
		fatal_exit(255, "process_read: encode failed");
	if (len == 0) {
		reply_end(req);
		debug("request %u: sent data len %d", req->id, 0);
		return HANDLER_DONE;
	}
	if (h->is_regular)
		readahead_on_read(h, off, len);
	req->io_finish = read_finish;
	if (h->is_regular && len >= SPLICE_MIN_LEN) {
		setup_io(req, h, idx, IO_SPLICE_IN, off, NULL, len);
		req->io_prepare = take_pipe;
		req->io_fallback = read_without_splice;
		return HANDLER_IO;
	}
	if (wbuf_reserve(&req->reply, len, &p) != BUF_OK)
		fatal_exit(255, "process_read: no memory for %u bytes", len);
	setup_io(req, h, idx, IO_READ, off, p, len);
	return HANDLER_IO;
}

static void write_finish(struct request *req)
{
	struct handle *h = handle_get(req->handle, HANDLE_FILE);
	ssize_t last = req->io.result;

	if (req->io_done == req->io_want) {
		/* Only acknowledged bytes count, as in OpenSSH's close line. */
		if (h != NULL)
			h->bytes_written += req->io_done;
		send_status(req, SSH2_FX_OK);
	} else if (req->io_done > 0 || last >= 0) {
		/* A short write: OpenSSH says FAILURE here; the retry of the
		 * remainder may have told us more precisely why. */
		debug2("nothing at all written");
		send_status(req, last < 0 ? errno_to_status((int)-last)
		                          : SSH2_FX_FAILURE);
	} else {
		error("process_write: %s \"%.100s\": %s",
		      io_step(last, "write"), handle_name(req->handle),
		      strerror((int)-last));
		send_status(req, errno_to_status((int)-last));
	}
}

int process_write(struct request *req)
{
	struct handle *h;
	const uint8_t *data;
	uint64_t off;
	size_t len;
	int idx;

	if (handle_parse(&req->body, &idx) != BUF_OK ||
	    rbuf_get_u64(&req->body, &off) != BUF_OK ||
	    rbuf_get_string(&req->body, &data, &len) != BUF_OK)
		return HANDLER_PARSE_ERROR;
	debug("request %u: write \"%s\" (handle %d) off %llu len %zu", req->id,
	      handle_name(idx), idx, (unsigned long long)off, len);
	if ((h = handle_get(idx, HANDLE_FILE)) == NULL) {
		send_status(req, SSH2_FX_FAILURE);
		return HANDLER_DONE;
	}
	if (!(h->flags & O_APPEND) && !offset_valid(off)) {
		error("process_write: seek \"%.100s\": %s", h->name,
		      strerror(EINVAL));
		send_status(req, errno_to_status(EINVAL));
		return HANDLER_DONE;
	}
	if (len == 0) {
		send_status(req, SSH2_FX_OK);
		return HANDLER_DONE;
	}
	/* The data stays in the request's packet until the write is done. */
	setup_io(req, h, idx, IO_WRITE, off, (void *)data, len);
	req->io_finish = write_finish;
	return HANDLER_IO;
}

int process_fstat(struct request *req)
{
	struct handle *h;
	struct attrib a;
	struct stat st;
	int idx;

	if (handle_parse(&req->body, &idx) != BUF_OK)
		return HANDLER_PARSE_ERROR;
	debug("request %u: fstat \"%s\" (handle %u)", req->id, handle_name(idx),
	      idx);
	if ((h = handle_get(idx, HANDLE_FILE)) == NULL) {
		send_status(req, SSH2_FX_FAILURE);
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

	if (handle_parse(&req->body, &idx) != BUF_OK ||
	    attrib_decode(&req->body, &a) != BUF_OK)
		return HANDLER_PARSE_ERROR;
	debug("request %u: fsetstat handle %d", req->id, idx);
	if ((h = handle_get(idx, HANDLE_FILE)) == NULL) {
		send_status(req, SSH2_FX_FAILURE);
		return HANDLER_DONE;
	}
	send_status(req, apply_attrib(h->name, h->fd, &a, SETSTAT_FD));
	return HANDLER_DONE;
}

int process_opendir(struct request *req)
{
	char *path;
	DIR *dirp;
	int idx;

	if (rbuf_get_cstring(&req->body, &path) != BUF_OK)
		return HANDLER_PARSE_ERROR;
	debug3("request %u: opendir", req->id);
	logit("opendir \"%s\"", path);
	if ((dirp = open_dir(path)) == NULL) {
		send_errno(req);
	} else if ((idx = handle_new(HANDLE_DIR, path, -1, dirp, 0)) == -1) {
		closedir(dirp);
		send_status(req, SSH2_FX_FAILURE);
	} else {
		send_handle(req, idx);
	}
	free(path);
	return HANDLER_DONE;
}

/* Append one NAME entry: file name, long name, lstat attributes. */
static int put_dir_entry(struct request *req, const char *dir, const char *name,
                         time_t now)
{
	char path[PATH_MAX], *longname;
	struct attrib a;
	struct stat st;
	int rc;

	if ((size_t)snprintf(path, sizeof(path), "%s%s%s", dir,
	                     strcmp(dir, "/") ? "/" : "",
	                     name) >= sizeof(path) ||
	    lstat(path, &st) == -1)
		return 0; /* skipped, as OpenSSH skips entries it cannot stat */
	if ((longname = ls_longname(name, &st, now)) == NULL)
		return 0;
	attrib_from_stat(&st, &a);
	rc = wbuf_put_cstring(&req->reply, name) == BUF_OK &&
	     wbuf_put_cstring(&req->reply, longname) == BUF_OK &&
	     attrib_encode(&req->reply, &a) == BUF_OK;
	free(longname);
	if (!rc)
		fatal_exit(255, "process_readdir: encode failed");
	return 1;
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
	struct dirent *dp;
	struct handle *h;
	uint32_t count = 0;
	time_t now = wall_clock_now();
	int idx;

	if (handle_parse(&req->body, &idx) != BUF_OK)
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
	while (count < READDIR_BATCH && (dp = readdir(h->dirp)) != NULL)
		count += put_dir_entry(req, h->name, dp->d_name, now);
	if (count == 0) {
		send_status(req, SSH2_FX_EOF);
		return HANDLER_DONE;
	}
	poke_u32(req->reply.data + 9, count);
	reply_end(req);
	debug("request %u: sent names count %d", req->id, (int)count);
	return HANDLER_DONE;
}

static int set_size(const char *name, int fd, uint64_t size,
                    enum setstat_target t)
{
	return t == SETSTAT_FD ? ftruncate(fd, (off_t)size)
	                       : truncate(name, (off_t)size);
}

static int set_mode(const char *name, int fd, mode_t mode,
                    enum setstat_target t)
{
	if (t == SETSTAT_FD)
		return fchmod(fd, mode);
	if (t == SETSTAT_NOFOLLOW)
		return fchmodat(AT_FDCWD, name, mode, AT_SYMLINK_NOFOLLOW);
	return chmod(name, mode);
}

static int set_times(const char *name, int fd, const struct attrib *a,
                     enum setstat_target t)
{
	struct timespec ts[2] = {{.tv_sec = a->atime}, {.tv_sec = a->mtime}};

	if (t == SETSTAT_FD)
		return futimens(fd, ts);
	return utimensat(AT_FDCWD, name, ts,
	                 t == SETSTAT_NOFOLLOW ? AT_SYMLINK_NOFOLLOW : 0);
}

static int set_owner(const char *name, int fd, const struct attrib *a,
                     enum setstat_target t)
{
	if (t == SETSTAT_FD)
		return fchown(fd, a->uid, a->gid);
	return fchownat(AT_FDCWD, name, a->uid, a->gid,
	                t == SETSTAT_NOFOLLOW ? AT_SYMLINK_NOFOLLOW : 0);
}

/* The modtime log line shows the new mtime in local time, as OpenSSH's
 * does. */
static void log_modtime(const char *name, uint32_t mtime)
{
	time_t t = mtime;
	struct tm *tm = localtime(&t);
	char when[64];

	if (tm == NULL ||
	    strftime(when, sizeof(when), "%Y%m%d-%H:%M:%S", tm) == 0)
		snprintf(when, sizeof(when), "%lld", (long long)t);
	logit("set \"%s\" modtime %s", name, when);
}

uint32_t apply_attrib(const char *name, int fd, const struct attrib *a,
                      enum setstat_target t)
{
	uint32_t status = SSH2_FX_OK;

	/* Every step runs even after a failure; the last failure wins. */
	if (a->flags & SSH2_FILEXFER_ATTR_SIZE) {
		logit("set \"%s\" size %llu", name,
		      (unsigned long long)a->size);
		if (set_size(name, fd, a->size, t) == -1)
			status = errno_to_status(errno);
	}
	if (a->flags & SSH2_FILEXFER_ATTR_PERMISSIONS) {
		logit("set \"%s\" mode %04o", name, a->perm);
		if (set_mode(name, fd, a->perm & 07777, t) == -1)
			status = errno_to_status(errno);
	}
	if (a->flags & SSH2_FILEXFER_ATTR_ACMODTIME) {
		log_modtime(name, a->mtime);
		if (set_times(name, fd, a, t) == -1)
			status = errno_to_status(errno);
	}
	if (a->flags & SSH2_FILEXFER_ATTR_UIDGID) {
		logit("set \"%s\" owner %lu group %lu", name,
		      (unsigned long)a->uid, (unsigned long)a->gid);
		if (set_owner(name, fd, a, t) == -1)
			status = errno_to_status(errno);
	}
	return status;
}
