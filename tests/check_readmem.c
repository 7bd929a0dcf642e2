/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of readmem.c's ring: where pieces of READ memory go. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "readmem.h"

/* The ring under READ memory: pieces taken in order, wrapping, given back
 * in or out of order, never overlapping, never more than the region. */
START_TEST(test_read_memory_ring)
{
	struct readmem_ring r;
	size_t off[4];
	int slot[4];

	ck_assert_int_eq(readmem_ring_init(&r, 100, 4), 0);
	ck_assert_int_eq(readmem_ring_take(&r, 101, &off[0]), -1);
	ck_assert_int_eq(readmem_ring_take(&r, 0, &off[0]), -1);
	slot[0] = readmem_ring_take(&r, 40, &off[0]);
	slot[1] = readmem_ring_take(&r, 40, &off[1]);
	ck_assert_int_ge(slot[0], 0);
	ck_assert_int_ge(slot[1], 0);
	ck_assert_uint_eq(off[0], 0);
	ck_assert_uint_eq(off[1], 40);
	/* 20 left at the end, none at the start. */
	ck_assert_int_eq(readmem_ring_take(&r, 30, &off[2]), -1);
	ck_assert_uint_eq(readmem_ring_held(&r), 80);
	/* The second given back first: the first still holds 0-40. */
	readmem_ring_give(&r, slot[1]);
	ck_assert_uint_eq(readmem_ring_held(&r), 40);
	slot[1] = readmem_ring_take(&r, 60, &off[1]);
	ck_assert_int_ge(slot[1], 0);
	ck_assert_uint_eq(off[1], 40);
	readmem_ring_give(&r, slot[0]);
	/* Wraps to the start, below the oldest (40). */
	slot[2] = readmem_ring_take(&r, 30, &off[2]);
	ck_assert_int_ge(slot[2], 0);
	ck_assert_uint_eq(off[2], 0);
	ck_assert_int_eq(readmem_ring_take(&r, 11, &off[3]), -1);
	slot[3] = readmem_ring_take(&r, 10, &off[3]);
	ck_assert_uint_eq(off[3], 30);
	ck_assert_uint_eq(readmem_ring_held(&r), 100);
	ck_assert_int_eq(readmem_ring_take(&r, 1, &off[0]), -1);
	readmem_ring_give(&r, slot[1]);
	readmem_ring_give(&r, slot[2]);
	readmem_ring_give(&r, slot[3]);
	ck_assert_uint_eq(readmem_ring_held(&r), 0);
	ck_assert_int_ge(readmem_ring_take(&r, 100, &off[0]), 0);
	ck_assert_uint_eq(off[0], 0);
	readmem_ring_free(&r);
}
END_TEST

/* Every slot in use: no more pieces, whatever room is left. */
START_TEST(test_read_memory_ring_slots)
{
	struct readmem_ring r;
	size_t off;
	int i, slot[3];

	ck_assert_int_eq(readmem_ring_init(&r, 1000, 3), 0);
	for (i = 0; i < 3; i++)
		ck_assert_int_ge(slot[i] = readmem_ring_take(&r, 10, &off), 0);
	ck_assert_int_eq(readmem_ring_take(&r, 10, &off), -1);
	readmem_ring_give(&r, slot[0]);
	ck_assert_int_ge(readmem_ring_take(&r, 10, &off), 0);
	ck_assert_uint_eq(off, 30);
	readmem_ring_free(&r);
}
END_TEST

/* A window: new pieces end within it, so a session cycles only its first
 * bytes; a piece alone may pass it (a READ larger than a small window
 * still runs); pieces beyond a narrowed window stay until given back. */
START_TEST(test_read_memory_window)
{
	struct readmem_ring r;
	size_t off[4];
	int slot[4];

	ck_assert_int_eq(readmem_ring_init(&r, 1000, 8), 0);
	readmem_ring_limit(&r, 100);
	/* Alone: as large as the region, never larger. */
	ck_assert_int_eq(readmem_ring_take(&r, 1001, &off[0]), -1);
	slot[0] = readmem_ring_take(&r, 300, &off[0]);
	ck_assert_int_ge(slot[0], 0);
	ck_assert_uint_eq(off[0], 0);
	ck_assert_uint_eq(readmem_ring_reach(&r), 300);
	/* Not beside it: the window is passed already. */
	ck_assert_int_eq(readmem_ring_take(&r, 10, &off[1]), -1);
	readmem_ring_give(&r, slot[0]);
	ck_assert_uint_eq(readmem_ring_reach(&r), 0);
	/* Within the window, pieces cycle through its 100 bytes only. */
	slot[0] = readmem_ring_take(&r, 40, &off[0]);
	slot[1] = readmem_ring_take(&r, 40, &off[1]);
	ck_assert_uint_eq(off[1], 40);
	ck_assert_int_eq(readmem_ring_take(&r, 40, &off[2]), -1);
	readmem_ring_give(&r, slot[0]);
	slot[2] = readmem_ring_take(&r, 40, &off[2]);
	ck_assert_int_ge(slot[2], 0);
	ck_assert_uint_eq(off[2], 0); /* wrapped at 80, not at 1000 */
	ck_assert_uint_eq(readmem_ring_held(&r), 80);
	/* Wrapped: between the newest and the oldest, within the window. */
	ck_assert_int_eq(readmem_ring_take(&r, 1, &off[3]), -1);
	readmem_ring_give(&r, slot[1]);
	readmem_ring_give(&r, slot[2]);
	/* Wider: the pieces go on past the old window... */
	readmem_ring_limit(&r, 500);
	slot[0] = readmem_ring_take(&r, 200, &off[0]);
	slot[1] = readmem_ring_take(&r, 200, &off[1]);
	ck_assert_uint_eq(off[1], 200);
	/* ...narrowed again while they are held: nothing new past 100, the
	 * held pieces stay where they are. */
	readmem_ring_limit(&r, 100);
	ck_assert_uint_eq(readmem_ring_reach(&r), 400);
	ck_assert_int_eq(readmem_ring_take(&r, 50, &off[2]), -1);
	readmem_ring_give(&r, slot[0]);
	ck_assert_uint_eq(readmem_ring_reach(&r), 400);
	slot[2] = readmem_ring_take(&r, 50, &off[2]);
	ck_assert_int_ge(slot[2], 0);
	ck_assert_uint_eq(off[2], 0);
	ck_assert_int_eq(readmem_ring_take(&r, 60, &off[3]), -1);
	readmem_ring_give(&r, slot[1]);
	ck_assert_uint_eq(readmem_ring_reach(&r), 50);
	ck_assert_uint_eq(readmem_ring_held(&r), 50);
	/* Never wider than the region. */
	readmem_ring_limit(&r, 5000);
	ck_assert_uint_eq(r.limit, 1000);
	readmem_ring_free(&r);
}
END_TEST

/* Which pages a piece is the first to use: whole pages from where the
 * pages in use end, up to the piece's end. */
START_TEST(test_read_memory_new_pages)
{
	size_t from = 7, to = 7;

	/* The first piece: its pages, the last one partly used. */
	ck_assert_int_eq(readmem_new_pages(0, 0, 261133, &from, &to), 1);
	ck_assert_uint_eq(from, 0);
	ck_assert_uint_eq(to, 64 * 4096);
	/* The next: from the page after the last one used. */
	ck_assert_int_eq(readmem_new_pages(261133, 261133, 261133, &from, &to),
	                 1);
	ck_assert_uint_eq(from, 64 * 4096);
	ck_assert_uint_eq(to, 128 * 4096);
	/* Within the pages used (a wrap to the start): none. */
	from = to = 7;
	ck_assert_int_eq(readmem_new_pages(522266, 0, 261133, &from, &to), 0);
	ck_assert_int_eq(readmem_new_pages(522266, 500000, 22266, &from, &to),
	                 0);
	ck_assert_int_eq(readmem_new_pages(4096, 100, 0, &from, &to), 0);
	ck_assert_uint_eq(from, 7);
	ck_assert_uint_eq(to, 7);
	/* Past a gap: its own pages only. */
	ck_assert_int_eq(
	    readmem_new_pages(4096, 5 * 4096 + 10, 100, &from, &to), 1);
	ck_assert_uint_eq(from, 5 * 4096);
	ck_assert_uint_eq(to, 6 * 4096);
	/* Given back (touched lowered to 0): used anew. */
	ck_assert_int_eq(readmem_new_pages(0, 0, 13, &from, &to), 1);
	ck_assert_uint_eq(from, 0);
	ck_assert_uint_eq(to, 4096);
}
END_TEST

/* A piece's pages are in memory when it is taken, before the read is
 * submitted into it: not faulted in one by one by the copy. */
START_TEST(test_read_memory_populated)
{
	unsigned char vec[128];
	uint8_t *p, *q;
	size_t i, n;
	int slot, slot2;
	void *probe = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
	                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ck_assert_ptr_ne(probe, MAP_FAILED);
	if (madvise(probe, 4096, 23 /* MADV_POPULATE_WRITE */) != 0 &&
	    errno == EINVAL) {
		munmap(probe, 4096);
		return; /* before Linux 5.14: nothing to check */
	}
	munmap(probe, 4096);
	ck_assert_int_eq(readmem_init(64), 0);
	readmem_set_window(READMEM_BYTES, READMEM_BYTES);
	p = readmem_take(261133, &slot);
	ck_assert_ptr_nonnull(p);
	q = readmem_take(100000, &slot2);
	ck_assert_ptr_nonnull(q);
	ck_assert_ptr_eq(q, p + 261133);
	n = (261133 + 100000 + 4095) / 4096;
	ck_assert_uint_le(n, sizeof(vec));
	/* The region is page-aligned (mmap), so p is too. */
	ck_assert_int_eq(mincore(p, n * 4096, vec), 0);
	for (i = 0; i < n; i++)
		ck_assert_msg(vec[i] & 1, "page %zu of the pieces not resident",
		              i);
	readmem_give(slot);
	readmem_give(slot2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("readmem");
	TCase *tc = tcase_create("ring");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_read_memory_ring);
	tcase_add_test(tc, test_read_memory_ring_slots);
	tcase_add_test(tc, test_read_memory_window);
	tcase_add_test(tc, test_read_memory_new_pages);
	tcase_add_test(tc, test_read_memory_populated);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
