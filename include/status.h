/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The errno to SFTP status table and the fixed status messages. */
#ifndef STATUS_H
#define STATUS_H

#include <stdint.h>

uint32_t errno_to_status(int err);
const char *status_message(uint32_t code);

#endif
