/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The ordering rule: see order.h.  A pure function of what requests
 * name. */
#include "config.h"

#include "order.h"

static int io_ranges_conflict(const struct order_scope *a,
                              const struct order_scope *b)
{
	const struct order_scope *rd, *wr;

	if (a->range_unknown || b->range_unknown || a->dev != b->dev ||
	    a->ino != b->ino)
		return 0;
	if (a->in_order || b->in_order)
		return 1;
	/* Two WRITEs of one file run in arrival order even apart: a disk
	 * that fills up fails the same ones as OpenSSH's would. */
	if (a->writes && b->writes)
		return 1;
	if (!a->writes && !b->writes)
		return 0;
	rd = a->writes ? b : a;
	wr = a->writes ? a : b;
	return wr->end > rd->start;
}

/* Looks at or changes only a handle's own file.  A survey looks beyond
 * it, so it is ordered against changes as a request on paths is. */
static int is_handle(enum order_class c)
{
	return c == ORDER_HANDLE_READ || c == ORDER_HANDLE_WRITE;
}

static int same_file(const struct order_scope *a, const struct order_scope *b)
{
	return a->has_file && b->has_file && a->dev == b->dev &&
	       a->ino == b->ino;
}

/* A READ or WRITE (io) and a request that is not one (r). */
static int io_conflict_with(const struct order_scope *io,
                            const struct order_scope *r)
{
	switch (r->cls) {
	case ORDER_PATH_READ:
	case ORDER_HANDLE_SURVEY:
		return io->writes;
	case ORDER_PATH_WRITE:
		return 1;
	default: /* on a handle */
		return same_file(io, r);
	}
}

int order_conflict(const struct order_scope *a, const struct order_scope *b)
{
	if (a->cls == ORDER_BARRIER || b->cls == ORDER_BARRIER)
		return 1;
	if ((a->counts_space && b->closes) || (b->counts_space && a->closes))
		return 1;
	if ((a->opens_handle && b->handle_unknown) ||
	    (b->opens_handle && a->handle_unknown))
		return 1;
	if (a->cls == ORDER_IO && b->cls == ORDER_IO)
		return io_ranges_conflict(a, b);
	if (a->cls == ORDER_IO)
		return io_conflict_with(a, b);
	if (b->cls == ORDER_IO)
		return io_conflict_with(b, a);
	if (a->handle >= 0 && a->handle == b->handle)
		return 1;
	if (a->cls == ORDER_PATH_WRITE || b->cls == ORDER_PATH_WRITE)
		return 1;
	if (a->cls == ORDER_HANDLE_WRITE || b->cls == ORDER_HANDLE_WRITE)
		return !is_handle(a->cls) || !is_handle(b->cls) ||
		       same_file(a, b);
	return 0; /* both only look */
}
