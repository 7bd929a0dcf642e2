/* Requests that name a path: STAT, LSTAT, SETSTAT, REMOVE, MKDIR, RMDIR,
 * REALPATH, RENAME, READLINK and SYMLINK.  They run synchronously as
 * barriers, one system call (or a short fixed sequence) each, and must log
 * and answer exactly as OpenSSH's sftp-server does. */
#include "config.h"

#include <errno.h>
#include <limits.h>
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

/* Two path strings (old, new), as RENAME and SYMLINK carry them. */
static int get_two_paths(struct request *req, char **a, char **b)
{
	*a = NULL;
	*b = NULL;
	if (rbuf_get_cstring(&req->body, a) != BUF_OK)
		return -1;
	if (rbuf_get_cstring(&req->body, b) != BUF_OK) {
		free(*a);
		*a = NULL;
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

	if (rbuf_get_cstring(&req->body, &name) != BUF_OK)
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

	if (rbuf_get_cstring(&req->body, &name) != BUF_OK)
		return HANDLER_PARSE_ERROR;
	if (attrib_decode(&req->body, &a) != BUF_OK) {
		free(name);
		return HANDLER_PARSE_ERROR;
	}
	debug("request %u: setstat name \"%s\"", req->id, name);
	send_status(req, setstat_path(name, &a));
	free(name);
	return HANDLER_DONE;
}

int process_remove(struct request *req)
{
	char *name;

	if (rbuf_get_cstring(&req->body, &name) != BUF_OK)
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

	if (rbuf_get_cstring(&req->body, &name) != BUF_OK)
		return HANDLER_PARSE_ERROR;
	if (attrib_decode(&req->body, &a) != BUF_OK) {
		free(name);
		return HANDLER_PARSE_ERROR;
	}
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

	if (rbuf_get_cstring(&req->body, &name) != BUF_OK)
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

	if (rbuf_get_cstring(&req->body, &path) != BUF_OK)
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

	if (get_two_paths(req, &oldpath, &newpath) != 0)
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

	if (rbuf_get_cstring(&req->body, &path) != BUF_OK)
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

	if (get_two_paths(req, &target, &linkpath) != 0)
		return HANDLER_PARSE_ERROR;
	debug3("request %u: symlink", req->id);
	logit("symlink old \"%s\" new \"%s\"", target, linkpath);
	send_result(req, symlink(target, linkpath));
	free(target);
	free(linkpath);
	return HANDLER_DONE;
}
