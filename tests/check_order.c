/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of the ordering rule (order.c) and of the decisions that put
 * work on worker threads: how slow storage is judged (latency.c), how
 * many threads help a READDIR (listing.c), and where a request runs and
 * what an io_uring metadata call's answer is (route.c). */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "latency.h"
#include "listing.h"
#include "order.h"
#include "route.h"

static struct order_scope scope(enum order_class cls, int handle)
{
	struct order_scope s;

	memset(&s, 0, sizeof(s));
	s.cls = cls;
	s.handle = handle;
	return s;
}

static struct order_scope on_file(enum order_class cls, int handle, ino_t ino)
{
	struct order_scope s = scope(cls, handle);

	s.has_file = 1;
	s.dev = 1;
	s.ino = ino;
	return s;
}

static struct order_scope io(int writes, uint64_t start, uint64_t end)
{
	struct order_scope s = on_file(ORDER_IO, -1, 7);

	s.writes = writes;
	s.start = start;
	s.end = end;
	return s;
}

START_TEST(test_barriers)
{
	struct order_scope bar = scope(ORDER_BARRIER, -1),
	                   st = scope(ORDER_PATH_READ, -1), rd = io(0, 0, 100);

	ck_assert(order_conflict(&bar, &st));
	ck_assert(order_conflict(&rd, &bar));
	ck_assert(order_conflict(&bar, &bar));
}
END_TEST

/* Requests that only look run together, and beside READs. */
START_TEST(test_looks_run_together)
{
	struct order_scope st = scope(ORDER_PATH_READ, -1),
	                   st2 = scope(ORDER_PATH_READ, -1),
	                   fstat = on_file(ORDER_HANDLE_READ, 3, 7),
	                   close = on_file(ORDER_HANDLE_READ, 4, 8),
	                   rd = io(0, 0, 100);

	ck_assert(!order_conflict(&st, &st2));
	ck_assert(!order_conflict(&st, &fstat));
	ck_assert(!order_conflict(&fstat, &close));
	ck_assert(!order_conflict(&st, &rd));
	ck_assert(!order_conflict(&close, &rd)); /* another file */
}
END_TEST

/* A path that changes: alone among requests on paths and handles, and
 * beside no READ or WRITE. */
START_TEST(test_path_changes_run_alone)
{
	struct order_scope mk = scope(ORDER_PATH_WRITE, -1),
	                   mk2 = scope(ORDER_PATH_WRITE, -1),
	                   st = scope(ORDER_PATH_READ, -1),
	                   rdd = on_file(ORDER_HANDLE_READ, 3, 9),
	                   rd = io(0, 0, 100);

	ck_assert(order_conflict(&mk, &mk2));
	ck_assert(order_conflict(&mk, &st));
	ck_assert(order_conflict(&rdd, &mk));
	ck_assert(order_conflict(&mk, &rd));
}
END_TEST

START_TEST(test_handles_and_io)
{
	struct order_scope wr = io(1, 0, 150), wr_far = io(1, 1000, 2000),
	                   rd = io(0, 100, 200), rd_high = io(0, 200, 300),
	                   fstat = on_file(ORDER_HANDLE_READ, 3, 7),
	                   fstat_other = on_file(ORDER_HANDLE_READ, 5, 8),
	                   fset = on_file(ORDER_HANDLE_WRITE, 3, 7),
	                   fset_other = on_file(ORDER_HANDLE_WRITE, 5, 8),
	                   close = on_file(ORDER_HANDLE_READ, 3, 7),
	                   st = scope(ORDER_PATH_READ, -1),
	                   open = scope(ORDER_PATH_READ, -1),
	                   unknown = io(0, 0, 0);

	/* Byte ranges: a write that ends past a read's start. */
	ck_assert(order_conflict(&wr, &rd));
	ck_assert(!order_conflict(&rd_high, &wr));
	ck_assert(!order_conflict(&rd, &rd_high));
	/* Two WRITEs of one file: in arrival order, even apart. */
	ck_assert(order_conflict(&wr, &wr_far));
	/* A range not yet known is judged once it is. */
	unknown.range_unknown = 1;
	ck_assert(!order_conflict(&unknown, &wr));
	/* A handle request and I/O of its file; one handle, in order. */
	ck_assert(order_conflict(&rd, &fstat));
	ck_assert(!order_conflict(&rd, &fstat_other));
	ck_assert(order_conflict(&fstat, &close));
	ck_assert(!order_conflict(&fstat, &fstat_other));
	/* A WRITE and whatever looks at paths (any may name its file). */
	ck_assert(order_conflict(&wr, &st));
	ck_assert(!order_conflict(&rd, &st));
	/* FSETSTAT: alone among path requests, in order on its file. */
	ck_assert(order_conflict(&fset, &st));
	ck_assert(order_conflict(&fset, &fstat));
	ck_assert(!order_conflict(&fset, &fstat_other));
	ck_assert(order_conflict(&fset, &fset_other) == 0);
	/* A handle not open now and an OPEN under way. */
	open.opens_handle = 1;
	unknown.handle_unknown = 1;
	unknown.has_file = 0;
	ck_assert(order_conflict(&open, &unknown));
	ck_assert(!order_conflict(&open, &rd));
}
END_TEST

/* READDIR and fstatvfs report on more than their handle's file: like a
 * request on paths they wait for every WRITE and FSETSTAT, of any file,
 * and for changes of paths; beside READs of any file and other looks. */
START_TEST(test_surveys_see_changes)
{
	struct order_scope rdd = on_file(ORDER_HANDLE_SURVEY, 3, 9),
	                   rdd2 = on_file(ORDER_HANDLE_SURVEY, 4, 10),
	                   wr = io(1, 0, 4096), rd = io(0, 0, 4096),
	                   fset = on_file(ORDER_HANDLE_WRITE, 5, 8),
	                   fstat = on_file(ORDER_HANDLE_READ, 6, 8),
	                   st = scope(ORDER_PATH_READ, -1),
	                   mk = scope(ORDER_PATH_WRITE, -1),
	                   same = on_file(ORDER_HANDLE_READ, 3, 9);

	rdd.has_file = rdd2.has_file = 0; /* directory handles */
	ck_assert(order_conflict(&wr, &rdd));
	ck_assert(order_conflict(&rdd, &wr));
	ck_assert(order_conflict(&fset, &rdd));
	ck_assert(order_conflict(&rdd, &fset));
	ck_assert(order_conflict(&rdd, &mk));
	ck_assert(order_conflict(&rdd, &same)); /* one handle: in order */
	ck_assert(!order_conflict(&rdd, &rd));
	ck_assert(!order_conflict(&rdd, &rdd2));
	ck_assert(!order_conflict(&rdd, &fstat));
	ck_assert(!order_conflict(&rdd, &st));
}
END_TEST

/* statvfs and fstatvfs report free space, which closing a removed file
 * gives back: they wait for every CLOSE before them.  Nothing else waits
 * for a CLOSE of another handle. */
START_TEST(test_space_waits_for_closes)
{
	struct order_scope svfs = scope(ORDER_PATH_READ, -1),
	                   fsvfs = on_file(ORDER_HANDLE_SURVEY, 3, 9),
	                   close = on_file(ORDER_HANDLE_READ, 4, 8),
	                   st = scope(ORDER_PATH_READ, -1),
	                   rdd = scope(ORDER_HANDLE_SURVEY, 5);

	svfs.counts_space = fsvfs.counts_space = 1;
	close.closes = 1;
	ck_assert(order_conflict(&close, &svfs));
	ck_assert(order_conflict(&fsvfs, &close));
	ck_assert(!order_conflict(&close, &st));
	ck_assert(!order_conflict(&close, &rdd));
	ck_assert(!order_conflict(&svfs, &fsvfs));
}
END_TEST

START_TEST(test_latency_decision)
{
	int64_t avg = 0;
	int i;

	/* Round trips of 1 ms: slow within four calls. */
	for (i = 0; i < 3; i++)
		avg = latency_average(avg, 1000000);
	ck_assert_int_le(avg, LATENCY_SLOW_NS);
	avg = latency_average(avg, 1000000);
	ck_assert_int_gt(avg, LATENCY_SLOW_NS);
	/* A local disk: one call held up 2 ms among fast ones is not. */
	avg = 0;
	for (i = 0; i < 20; i++)
		avg = latency_average(avg, 5000);
	avg = latency_average(avg, 2000000);
	ck_assert_int_le(avg, LATENCY_SLOW_NS);
	/* Fast again: the average falls back below. */
	avg = 1000000;
	for (i = 0; i < 12; i++)
		avg = latency_average(avg, 5000);
	ck_assert_int_le(avg, LATENCY_SLOW_NS);
}
END_TEST

START_TEST(test_listing_helpers)
{
	/* Cached lookups: no help. */
	ck_assert_uint_eq(listing_helpers(1000, LISTING_SLOW_NS - 1, 0, 16), 0);
	/* A round trip: as many as are idle, two lookups each at least. */
	ck_assert_uint_eq(listing_helpers(1000, 1000000, 0, 16), 16);
	ck_assert_uint_eq(listing_helpers(9, 1000000, 0, 16), 4);
	ck_assert_uint_eq(listing_helpers(1, 1000000, 0, 16), 0);
	ck_assert_uint_eq(listing_helpers(1000, 1000000, 0, 0), 0);
	/* A cached name on storage already seen slow (the others of the
	 * directory may each need a round trip): help all the same. */
	ck_assert_uint_eq(listing_helpers(1000, 1000, 1, 16), 16);
	ck_assert_uint_eq(listing_helpers(1, 1000, 1, 16), 0);
}
END_TEST

static size_t probe_of(const char *const *names, size_t n)
{
	struct listing_entry e[4];
	struct listing l = {e, n, 4};
	size_t i;

	for (i = 0; i < n; i++)
		e[i].name = (char *)names[i];
	return listing_probe(&l);
}

START_TEST(test_listing_probe)
{
	static const char *const dots_first[] = {".", "..", "a", "b"};
	static const char *const dots_later[] = {"a", ".", "..", "b"};
	static const char *const dots_only[] = {"..", "."};
	static const char *const dotted[] = {"..", ".a", "...", "b"};

	/* A directory's first batch on ext4 and over FUSE starts with "."
	 * and "..", which are cached whatever the storage: the first other
	 * name is timed. */
	ck_assert_uint_eq(probe_of(dots_first, 4), 2);
	ck_assert_uint_eq(probe_of(dots_later, 4), 0);
	ck_assert_uint_eq(probe_of(dots_only, 2), 0);
	ck_assert_uint_eq(probe_of(dotted, 4), 1);
}
END_TEST

/* A NAME reply keeps entries while it stays within its bound, whatever
 * the estimate said; the first entry always goes. */
START_TEST(test_listing_fits)
{
	ck_assert(listing_fits(70000, 65536, 0));
	ck_assert(listing_fits(65536, 65536, 548));
	ck_assert(!listing_fits(65537, 65536, 548));
	ck_assert(!listing_fits(71353, 65536, 1));
}
END_TEST

START_TEST(test_route)
{
	int off, ring;

	/* Fast storage: the loop, whatever else holds. */
	for (off = 0; off < 2; off++)
		for (ring = 0; ring < 2; ring++)
			ck_assert_int_eq(route_request(off, 0, ring),
			                 ROUTE_LOOP);
	/* A handler no worker may run (a field malformed, before INIT)
	 * runs in the loop, ring or not. */
	ck_assert_int_eq(route_request(0, 1, 1), ROUTE_LOOP);
	ck_assert_int_eq(route_request(1, 1, 0), ROUTE_WORKER);
	ck_assert_int_eq(route_request(1, 1, 1), ROUTE_RING);
}
END_TEST

START_TEST(test_ring_answer)
{
	/* Answers. */
	ck_assert_int_eq(ring_answer(0, 0), RING_FINAL);
	ck_assert_int_eq(ring_answer(0, 7), RING_FINAL);
	ck_assert_int_eq(ring_answer(0, -ENOENT), RING_FINAL);
	ck_assert_int_eq(ring_answer(0, -EACCES), RING_FINAL);
	ck_assert_int_eq(ring_answer(0, -EEXIST), RING_FINAL);
	/* Not answers: made again in a worker. */
	ck_assert_int_eq(ring_answer(0, -EAGAIN), RING_AGAIN);
	ck_assert_int_eq(ring_answer(0, -EINTR), RING_AGAIN);
	ck_assert_int_eq(ring_answer(0, -ECANCELED), RING_AGAIN);
	/* Maybe io_uring's refusal: made again and compared. */
	ck_assert_int_eq(ring_answer(0, -EINVAL), RING_CHECK);
	ck_assert_int_eq(ring_answer(0, -EOPNOTSUPP), RING_CHECK);
	/* A close that ran is never made twice; one cancelled before it
	 * ran left the descriptor open. */
	ck_assert_int_eq(ring_answer(1, -EINTR), RING_FINAL);
	ck_assert_int_eq(ring_answer(1, -EINVAL), RING_FINAL);
	ck_assert_int_eq(ring_answer(1, -EBADF), RING_FINAL);
	ck_assert_int_eq(ring_answer(1, 0), RING_FINAL);
	ck_assert_int_eq(ring_answer(1, -ECANCELED), RING_AGAIN);
	/* The plain call agrees: the call's own EINVAL (a rename into
	 * itself); it does not: io_uring refused the operation. */
	ck_assert_int_eq(ring_refused(-EINVAL, -EINVAL), 0);
	ck_assert_int_eq(ring_refused(-EINVAL, 0), 1);
	ck_assert_int_eq(ring_refused(-EOPNOTSUPP, -ENOENT), 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("order");
	TCase *tc = tcase_create("rule");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_barriers);
	tcase_add_test(tc, test_looks_run_together);
	tcase_add_test(tc, test_path_changes_run_alone);
	tcase_add_test(tc, test_handles_and_io);
	tcase_add_test(tc, test_surveys_see_changes);
	tcase_add_test(tc, test_space_waits_for_closes);
	tcase_add_test(tc, test_latency_decision);
	tcase_add_test(tc, test_listing_helpers);
	tcase_add_test(tc, test_listing_fits);
	tcase_add_test(tc, test_route);
	tcase_add_test(tc, test_ring_answer);
	tcase_add_test(tc, test_listing_probe);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
