/* Requests that name a path: STAT, LSTAT, SETSTAT, REMOVE, MKDIR, RMDIR,
 * REALPATH, RENAME, READLINK and SYMLINK.  They run synchronously as
 * barriers, one system call (or a short fixed sequence) each, and must log
 * and answer exactly as OpenSSH's sftp-server does. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "attrib.h"
#include "buf.h"
#include "handlers.h"
#include "log.h"
#include "realpath.h"
#include "reply.h"
#include "request.h"
#include "sftp.h"
#include "status.h"

/* The status for a system call that just failed. */
static void send_errno(struct request *req)
{
	send_status(req, errno_to_status(errno));
}

/* A system call result (0 or -1 with errno) as a status reply. */
static void send_result(struct request *req, int rc)
{
	if (rc == -1)
		send_errno(req);
	else
		send_status(req, SSH2_FX_OK);
}

/* sshbuf refuses a string whose length word passes its 128 MiB cap before
 * it looks at what is left, and says so differently. */
#define SSHBUF_STRING_MAX (0x8000000 - 4)

/* OpenSSH's ssh_err() text for a string field that could not be read. */
static const char *string_error(const struct rbuf *r, int rc)
{
	if (rc == BUF_ERR_FORMAT)
		return "invalid format";
	if (rc == BUF_ERR_NOMEM)
		return "memory allocation failed";
	if (rbuf_left(r) >= 4 && peek_u32(r->data + r->off) > SSHBUF_STRING_MAX)
		return "string is too large";
	return "incomplete message";
}

/* A malformed body is fatal; record the line OpenSSH logs for it, which
 * names its function (fn) rather than the request. */
static int parse_fail(struct request *req, const char *fn, const char *why)
{
	snprintf(req->fatal, sizeof(req->fatal), "%s: parse: %s", fn, why);
	return -1;
}

static int get_path(struct request *req, const char *fn, char **path)
{
	int rc = rbuf_get_cstring(&req->body, path);

	if (rc != BUF_OK)
		return parse_fail(req, fn, string_error(&req->body, rc));
	return 0;
}

/* OpenSSH 9.2's text for attributes that failed to decode; saved is the
 * reader as it was before.  Our decoder refuses more than 0x100000
 * extended pairs up front, as 9.4 does; 9.2 simply runs out of packet
 * there, so it says "incomplete message". */
static const char *attrib_error(struct rbuf saved, int rc)
{
	uint32_t flags, count;
	size_t fixed = 0;

	if (rc != BUF_ERR_FORMAT)
		return "incomplete message";
	if (rbuf_get_u32(&saved, &flags) != BUF_OK)
		return "invalid format";
	if (flags & SSH2_FILEXFER_ATTR_SIZE)
		fixed += 8;
	if (flags & SSH2_FILEXFER_ATTR_UIDGID)
		fixed += 8;
	if (flags & SSH2_FILEXFER_ATTR_PERMISSIONS)
		fixed += 4;
	if (flags & SSH2_FILEXFER_ATTR_ACMODTIME)
		fixed += 8;
	if (rbuf_skip(&saved, fixed) == BUF_OK &&
	    rbuf_get_u32(&saved, &count) == BUF_OK && count > 0x100000)
		return "incomplete message";
	return "invalid format";
}

/* A path followed by attributes (SETSTAT, MKDIR). */
static int get_path_attrib(struct request *req, const char *fn, char **path,
                           struct attrib *a)
{
	struct rbuf saved;
	int rc;

	if (get_path(req, fn, path) != 0)
		return -1;
	saved = req->body;
	rc = attrib_decode(&req->body, a);
	if (rc != BUF_OK) {
		free(*path);
		return parse_fail(req, fn, attrib_error(saved, rc));
	}
	return 0;
}

/* Two path strings (old, new), as RENAME and SYMLINK carry them. */
static int get_two_paths(struct request *req, const char *fn, char **a,
                         char **b)
{
	if (get_path(req, fn, a) != 0)
		return -1;
	if (get_path(req, fn, b) != 0) {
		free(*a);
		return -1;
	}
	return 0;
}

static int do_stat(struct request *req, int follow)
{
	const char *op = follow ? "stat" : "lstat";
	struct attrib a;
	struct stat st;
	char *name;
	int rc;

	/* STAT and LSTAT share one function in OpenSSH, and its name. */
	if (get_path(req, "process_do_stat", &name) != 0)
		return HANDLER_PARSE_ERROR;
	debug3("request %u: %s", req->id, op);
	verbose("%s name \"%s\"", op, name);
	rc = follow ? stat(name, &st) : lstat(name, &st);
	if (rc == -1) {
		send_errno(req);
	} else {
		attrib_from_stat(&st, &a);
		send_attrib(req, &a);
	}
	free(name);
	return HANDLER_DONE;
}

int process_lstat(struct request *req)
{
	return do_stat(req, 0);
}

int process_stat(struct request *req)
{
	return do_stat(req, 1);
}

/* SETSTAT's modtime log line shows the new mtime in local time. */
static void log_modtime(const char *name, uint32_t mtime)
{
	time_t t = mtime;
	struct tm *tm = localtime(&t);
	char when[64] = "";

	if (tm != NULL)
		strftime(when, sizeof(when), "%Y%m%d-%H:%M:%S", tm);
	logit("set \"%s\" modtime %s", name, when);
}

/* Each step runs even when an earlier one failed; the last failure decides
 * the status, as in OpenSSH, so clients see the same code. */
static uint32_t setstat_path(const char *name, const struct attrib *a)
{
	uint32_t status = SSH2_FX_OK;

	if (a->flags & SSH2_FILEXFER_ATTR_SIZE) {
		logit("set \"%s\" size %llu", name,
		      (unsigned long long)a->size);
		if (truncate(name, (off_t)a->size) == -1)
			status = errno_to_status(errno);
	}
	if (a->flags & SSH2_FILEXFER_ATTR_PERMISSIONS) {
		logit("set \"%s\" mode %04o", name, a->perm);
		if (chmod(name, a->perm & 07777) == -1)
			status = errno_to_status(errno);
	}
	if (a->flags & SSH2_FILEXFER_ATTR_ACMODTIME) {
		struct timeval tv[2] = {
		    {.tv_sec = a->atime, .tv_usec = 0},
		    {.tv_sec = a->mtime, .tv_usec = 0},
		};

		log_modtime(name, a->mtime);
		if (utimes(name, tv) == -1)
			status = errno_to_status(errno);
	}
	if (a->flags & SSH2_FILEXFER_ATTR_UIDGID) {
		logit("set \"%s\" owner %lu group %lu", name,
		      (unsigned long)a->uid, (unsigned long)a->gid);
		if (chown(name, a->uid, a->gid) == -1)
			status = errno_to_status(errno);
	}
	return status;
}

int process_setstat(struct request *req)
{
	struct attrib a;
	char *name;

	if (get_path_attrib(req, "process_setstat", &name, &a) != 0)
		return HANDLER_PARSE_ERROR;
	debug("request %u: setstat name \"%s\"", req->id, name);
	send_status(req, setstat_path(name, &a));
	free(name);
	return HANDLER_DONE;
}

int process_remove(struct request *req)
{
	char *name;

	if (get_path(req, "process_remove", &name) != 0)
		return HANDLER_PARSE_ERROR;
	debug3("request %u: remove", req->id);
	logit("remove name \"%s\"", name);
	send_result(req, unlink(name));
	free(name);
	return HANDLER_DONE;
}

int process_mkdir(struct request *req)
{
	struct attrib a;
	mode_t mode;
	char *name;

	if (get_path_attrib(req, "process_mkdir", &name, &a) != 0)
		return HANDLER_PARSE_ERROR;
	/* Only the permissions matter; the umask still applies. */
	mode =
	    (a.flags & SSH2_FILEXFER_ATTR_PERMISSIONS) ? a.perm & 07777 : 0777;
	debug3("request %u: mkdir", req->id);
	logit("mkdir name \"%s\" mode 0%o", name, (unsigned)mode);
	send_result(req, mkdir(name, mode));
	free(name);
	return HANDLER_DONE;
}

int process_rmdir(struct request *req)
{
	char *name;

	if (get_path(req, "process_rmdir", &name) != 0)
		return HANDLER_PARSE_ERROR;
	debug3("request %u: rmdir", req->id);
	logit("rmdir name \"%s\"", name);
	send_result(req, rmdir(name));
	free(name);
	return HANDLER_DONE;
}

int process_realpath(struct request *req)
{
	char resolved[PATH_MAX];
	char *path;

	if (get_path(req, "process_realpath", &path) != 0)
		return HANDLER_PARSE_ERROR;
	debug3("request %u: realpath", req->id);
	/* Clients send "" to ask where they are. */
	verbose("realpath \"%s\"", path[0] == '\0' ? "." : path);
	if (sftp_realpath(path[0] == '\0' ? "." : path, resolved) == NULL)
		send_errno(req);
	else
		send_one_name(req, resolved);
	free(path);
	return HANDLER_DONE;
}

/* link() errors that mean "this file system has no hard links" rather than
 * "you may not": Linux says EPERM for vfat and friends. */
static int link_unsupported(int err)
{
	return err == EOPNOTSUPP || err == ENOSYS || err == EXDEV ||
	       err == EPERM;
}

/* rename() only if nothing is at newpath yet.  This is racy, but it is the
 * best a plain rename can do to avoid overwriting. */
static uint32_t rename_if_absent(const char *oldpath, const char *newpath)
{
	struct stat st;

	if (stat(newpath, &st) == 0)
		return SSH2_FX_FAILURE;
	if (rename(oldpath, newpath) == -1)
		return errno_to_status(errno);
	return SSH2_FX_OK;
}

/* Regular files move by link+unlink, so that an existing newpath is never
 * replaced: link() fails with EEXIST instead. */
static uint32_t rename_regular(const char *oldpath, const char *newpath)
{
	uint32_t status;

	if (link(oldpath, newpath) == -1) {
		if (link_unsupported(errno))
			return rename_if_absent(oldpath, newpath);
		return errno_to_status(errno);
	}
	if (unlink(oldpath) == -1) {
		status = errno_to_status(errno);
		/* Do not leave the file under both names. */
		unlink(newpath);
		return status;
	}
	return SSH2_FX_OK;
}

int process_rename(struct request *req)
{
	char *oldpath, *newpath;
	struct stat st;
	uint32_t status;

	if (get_two_paths(req, "process_rename", &oldpath, &newpath) != 0)
		return HANDLER_PARSE_ERROR;
	debug3("request %u: rename", req->id);
	logit("rename old \"%s\" new \"%s\"", oldpath, newpath);
	if (lstat(oldpath, &st) == -1)
		status = errno_to_status(errno);
	else if (S_ISREG(st.st_mode))
		status = rename_regular(oldpath, newpath);
	else
		status = rename_if_absent(oldpath, newpath);
	send_status(req, status);
	free(oldpath);
	free(newpath);
	return HANDLER_DONE;
}

int process_readlink(struct request *req)
{
	char target[PATH_MAX];
	ssize_t len;
	char *path;

	if (get_path(req, "process_readlink", &path) != 0)
		return HANDLER_PARSE_ERROR;
	debug3("request %u: readlink", req->id);
	verbose("readlink \"%s\"", path);
	len = readlink(path, target, sizeof(target) - 1);
	if (len == -1) {
		send_errno(req);
	} else {
		target[len] = '\0';
		send_one_name(req, target);
	}
	free(path);
	return HANDLER_DONE;
}

/* The first string is the link's target and the second the new link, the
 * reverse of draft-02's order: OpenSSH's server and client both do it this
 * way and clients depend on it. */
int process_symlink(struct request *req)
{
	char *target, *linkpath;

	if (get_two_paths(req, "process_symlink", &target, &linkpath) != 0)
		return HANDLER_PARSE_ERROR;
	debug3("request %u: symlink", req->id);
	logit("symlink old \"%s\" new \"%s\"", target, linkpath);
	send_result(req, symlink(target, linkpath));
	free(target);
	free(linkpath);
	return HANDLER_DONE;
}
