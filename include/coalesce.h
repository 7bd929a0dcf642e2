/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Merging contiguous WRITEs on one handle into one positioned vectored
 * write.  Members of a run count as in flight from the moment they join;
 * each gets its own reply once the run's bytes are written. */
#ifndef COALESCE_H
#define COALESCE_H

#include <stddef.h>

#include "request.h"

struct write_run;

/* max_bytes: the largest run; 0 turns merging off. */
void coalesce_init(size_t max_bytes);
/* The pending run a parsed WRITE would join, or NULL.  Its members never
 * conflict with the WRITE (they end where it starts, or they all append). */
struct write_run *coalesce_run_for(const struct request *req);
/* Put a parsed WRITE into a run: 1 if taken, 0 if the caller should submit
 * it alone.  joining is what coalesce_run_for gave for it just before
 * (nothing may submit runs in between); when NULL, a pending run on the
 * same handle is submitted first and a new run started.  Once the run is
 * written, done is called for each member with req->io.result and
 * req->io_done set for its own bytes, as io_op.done is for an I/O. */
int coalesce_add(struct request *req, struct write_run *joining,
                 void (*done)(struct request *req));
/* Submit every pending run (those the back end has room for). */
void coalesce_flush(void);
/* Runs built and not yet submitted. */
int coalesce_pending(void);

#endif
