/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Requests that name a path: STAT, LSTAT, SETSTAT, REMOVE, MKDIR, RMDIR,
 * REALPATH, RENAME, READLINK and SYMLINK.  They run synchronously as
 * barriers, one system call (or a short fixed sequence) each, and must log
 * and answer exactly as OpenSSH's sftp-server does. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attrib.h"
#include "buf.h"
#include "confine.h"
#include "handlers.h"
#include "log.h"
#include "parse.h"
#include "realpath.h"
#include "reply.h"
#include "ring-call.h"
#include "setstat.h"
#include "request.h"
#include "sftp.h"
#include "status.h"
#include "upload.h"

/* ---- the handlers ------------------------------------------------------ */

static int do_stat(struct request *req, int follow)
{
	const char *op = follow ? "stat" : "lstat";
	struct attrib a;
	struct stat st;
	char *name;
	int rc;

	/* STAT and LSTAT share one function in OpenSSH, and its name. */
	if ((rc = get_path(req, "process_do_stat", &name)) != 0)
		return rc;
	debug3("request %u: %s", req->id, op);
	verbose("%s name \"%s\"", op, name);
	if (req->via_ring)
		return ring_call(req, IO_STATX, AT_FDCWD, name, NULL,
		                 follow ? 0 : AT_SYMLINK_NOFOLLOW, 0);
	if (confine_active())
		rc = confine_lstat(name, &st); /* any final link followed */
	else
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

/* SETSTAT and lsetstat (SETSTAT_NOFOLLOW) differ only in following a final
 * symlink and in lsetstat's refusal of a size: a symlink has none, and
 * OpenSSH refuses the request before applying (or logging) anything else. */
int setstat_request(struct request *req, const char *fn, enum setstat_target t)
{
	int nofollow = t == SETSTAT_NOFOLLOW;
	struct attrib a;
	char *name;
	int rc;

	if ((rc = get_path_attrib(req, fn, &name, &a)) != 0)
		return rc;
	debug("request %u: %s name \"%s\"", req->id,
	      nofollow ? "lsetstat" : "setstat", name);
	if (nofollow && (a.flags & SSH2_FILEXFER_ATTR_SIZE))
		send_status(req, SSH2_FX_BAD_MESSAGE);
	else
		send_status(req, apply_attrib(name, -1, &a, t));
	free(name);
	return HANDLER_DONE;
}

int process_setstat(struct request *req)
{
	return setstat_request(req, "process_setstat", SETSTAT_PATH);
}

/* REMOVE and RMDIR: one path, logged as "<op> name ...", answered with one
 * call's result. */
static int path_request(struct request *req, const char *fn, const char *op,
                        int (*call)(const char *), int at_flags)
{
	char *name;
	int rc;

	if ((rc = get_path(req, fn, &name)) != 0)
		return rc;
	debug3("request %u: %s", req->id, op);
	logit("%s name \"%s\"", op, name);
	if (req->via_ring)
		return ring_call(req, IO_UNLINKAT, AT_FDCWD, name, NULL,
		                 at_flags, 0);
	send_result(req, call(name));
	free(name);
	return HANDLER_DONE;
}

int process_remove(struct request *req)
{
	return path_request(req, "process_remove", "remove", confine_unlink, 0);
}

int process_mkdir(struct request *req)
{
	struct attrib a;
	mode_t mode;
	char *name;
	int rc;

	if ((rc = get_path_attrib(req, "process_mkdir", &name, &a)) != 0)
		return rc;
	/* Only the permissions matter; the umask still applies (-M's mode
	 * replaces both). */
	mode =
	    (a.flags & SSH2_FILEXFER_ATTR_PERMISSIONS) ? a.perm & 07777 : 0777;
	debug3("request %u: mkdir", req->id);
	logit("mkdir name \"%s\" mode 0%o", name, (unsigned)mode);
	if (req->via_ring) /* no -M: one mkdir (request_ring_op) */
		return ring_call(req, IO_MKDIRAT, AT_FDCWD, name, NULL, 0,
		                 mode);
	send_result(req, upload_mkdir(name, mode));
	free(name);
	return HANDLER_DONE;
}

int process_rmdir(struct request *req)
{
	return path_request(req, "process_rmdir", "rmdir", confine_rmdir,
	                    AT_REMOVEDIR);
}

int process_realpath(struct request *req)
{
	char resolved[PATH_MAX];
	char *path;
	int rc;

	if ((rc = get_path(req, "process_realpath", &path)) != 0)
		return rc;
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
	/* Under --confine, a symlink at newpath is not followed out of the
	 * directory, even to learn whether something exists there. */
	int rc =
	    confine_active() ? confine_lstat(newpath, &st) : stat(newpath, &st);

	if (rc == 0)
		return SSH2_FX_FAILURE;
	if (confine_rename(oldpath, newpath) == -1)
		return errno_to_status(errno);
	return SSH2_FX_OK;
}

/* Regular files move by link+unlink, so that an existing newpath is never
 * replaced: link() fails with EEXIST instead. */
static uint32_t rename_regular(const char *oldpath, const char *newpath)
{
	uint32_t status;

	if (confine_link(oldpath, newpath) == -1) {
		if (link_unsupported(errno))
			return rename_if_absent(oldpath, newpath);
		return errno_to_status(errno);
	}
	if (confine_unlink(oldpath) == -1) {
		status = errno_to_status(errno);
		/* Do not leave the file under both names. */
		confine_unlink(newpath);
		return status;
	}
	return SSH2_FX_OK;
}

int process_rename(struct request *req)
{
	char *oldpath, *newpath;
	struct stat st;
	uint32_t status;
	int rc;

	if ((rc = get_two_paths(req, "process_rename", &oldpath, &newpath)) !=
	    0)
		return rc;
	debug3("request %u: rename", req->id);
	logit("rename old \"%s\" new \"%s\"", oldpath, newpath);
	if ((confine_active() ? confine_lstat(oldpath, &st)
	                      : lstat(oldpath, &st)) == -1)
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
	int rc;

	if ((rc = get_path(req, "process_readlink", &path)) != 0)
		return rc;
	debug3("request %u: readlink", req->id);
	verbose("readlink \"%s\"", path);
	len = confine_active()
	          ? confine_readlink(path, target, sizeof(target) - 1)
	          : readlink(path, target, sizeof(target) - 1);
	if (len == -1) {
		send_errno(req);
	} else {
		target[len] = '\0';
		send_one_name(req, target);
	}
	free(path);
	return HANDLER_DONE;
}

int path_pair_request(struct request *req, const char *fn, const char *op,
                      int (*call)(const char *, const char *), int ring_op)
{
	char *oldpath, *newpath;
	int rc;

	if ((rc = get_two_paths(req, fn, &oldpath, &newpath)) != 0)
		return rc;
	debug3("request %u: %s", req->id, op);
	logit("%s old \"%s\" new \"%s\"", op, oldpath, newpath);
	if (req->via_ring) /* symlinkat's fd is its second name's */
		return ring_call(req, ring_op, AT_FDCWD, oldpath, newpath, 0,
		                 0);
	send_result(req, call(oldpath, newpath));
	free(oldpath);
	free(newpath);
	return HANDLER_DONE;
}

/* The first string is the link's target and the second the new link, the
 * reverse of draft-02's order: OpenSSH's server and client both do it this
 * way and clients depend on it. */
int process_symlink(struct request *req)
{
	return path_pair_request(req, "process_symlink", "symlink",
	                         confine_symlink, IO_SYMLINKAT);
}
