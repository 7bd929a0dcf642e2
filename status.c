/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The errno to SFTP status table and the fixed status texts.  Clients and
 * admins see exactly what OpenSSH's sftp-server would tell them. */
#include "config.h"

#include <errno.h>

#include "sftp.h"
#include "status.h"

uint32_t errno_to_status(int err)
{
	switch (err) {
	case 0:
		return SSH2_FX_OK;
	case ENOENT:
	case ENOTDIR:
	case EBADF:
	case ELOOP:
		return SSH2_FX_NO_SUCH_FILE;
	case EPERM:
	case EACCES:
	case EFAULT:
		return SSH2_FX_PERMISSION_DENIED;
	case ENAMETOOLONG:
	case EINVAL:
		return SSH2_FX_BAD_MESSAGE;
	case ENOSYS:
		return SSH2_FX_OP_UNSUPPORTED;
	default:
		/* EEXIST, ENOSPC, EISDIR, EXDEV, ... have no v3 code. */
		return SSH2_FX_FAILURE;
	}
}

static const char *const status_messages[] = {
    [SSH2_FX_OK] = "Success",
    [SSH2_FX_EOF] = "End of file",
    [SSH2_FX_NO_SUCH_FILE] = "No such file",
    [SSH2_FX_PERMISSION_DENIED] = "Permission denied",
    [SSH2_FX_FAILURE] = "Failure",
    [SSH2_FX_BAD_MESSAGE] = "Bad message",
    [SSH2_FX_NO_CONNECTION] = "No connection",
    [SSH2_FX_CONNECTION_LOST] = "Connection lost",
    [SSH2_FX_OP_UNSUPPORTED] = "Operation unsupported",
};

const char *status_message(uint32_t code)
{
	if (code > SSH2_FX_MAX)
		return "Unknown error";
	return status_messages[code];
}
