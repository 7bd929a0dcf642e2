/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of the chunked input buffer. */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "input.h"

#define CHUNK 4096

/* Put n bytes into the input as read() would, from pattern position *pos. */
static size_t feed(size_t n, size_t need, unsigned *pos)
{
	size_t room, i;
	uint8_t *p = input_space(&room, need);

	if (p == NULL)
		return 0;
	ck_assert_uint_gt(room, 0);
	if (n > room)
		n = room;
	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(*pos)++;
	input_added(n);
	return n;
}

START_TEST(test_full_buffer_gives_no_room)
{
	struct input_chunk *held;
	unsigned pos = 0;
	size_t len, room;

	ck_assert_int_eq(input_init(CHUNK, 2), 0);
	ck_assert_uint_eq(feed(CHUNK, 1, &pos), CHUNK);
	/* Full, and the front is complete (need 0): no zero-byte read. */
	ck_assert_ptr_null(input_space(&room, 0));
	input_data(&len);
	ck_assert_uint_eq(len, CHUNK);
	/* Half taken and held by a request: the rest moves on. */
	input_take(CHUNK / 2, &held);
	ck_assert_ptr_nonnull(input_space(&room, 100));
	ck_assert_uint_eq(room, CHUNK / 2);
	input_chunk_put(held);
}
END_TEST

/* The held bytes of a request: where they are, and the pattern position
 * of their first byte. */
struct held {
	struct input_chunk *ref;
	const uint8_t *p;
	size_t len;
	unsigned first;
};

/* Every held range still holds its bytes. */
static void check_held(const struct held *h, unsigned n)
{
	unsigned k;
	size_t i;

	for (k = 0; k < n; k++) {
		for (i = 0; i < h[k].len; i++)
			if (h[k].p[i] != (uint8_t)(h[k].first + i))
				break;
		ck_assert_msg(i == h[k].len,
		              "held range %u was overwritten at byte %zu", k,
		              i);
	}
}

START_TEST(test_bytes_survive_chunk_switches)
{
	struct held held[3];
	unsigned pos = 0, expect = 0, nheld = 0, checked = 0;
	const uint8_t *p;
	size_t len, take, i;
	int round;

	srand(7);
	ck_assert_int_eq(input_init(CHUNK, 4), 0);
	for (round = 0; round < 2000; round++) {
		feed(1 + (size_t)rand() % CHUNK, 1 + (size_t)rand() % 512,
		     &pos);
		/* The held bytes stay put while others arrive. */
		check_held(held, nheld);
		checked += nheld;
		p = input_data(&len);
		take = len ? (size_t)rand() % (len + 1) : 0;
		for (i = 0; i < take && p[i] == (uint8_t)(expect + i); i++)
			;
		ck_assert_uint_eq(i, take);
		if (take > 0 && nheld < 3 && rand() % 2) {
			held[nheld].p = p;
			held[nheld].len = take;
			held[nheld].first = expect;
			input_take(take, &held[nheld++].ref);
		} else {
			input_take(take, NULL);
		}
		expect += (unsigned)take;
		if (nheld > 0 && rand() % 3 == 0)
			input_chunk_put(held[--nheld].ref);
	}
	ck_assert_uint_gt(checked, 1000);
	while (nheld > 0)
		input_chunk_put(held[--nheld].ref);
}
END_TEST

START_TEST(test_held_chunks_bound_memory)
{
	struct input_chunk *a, *b;
	unsigned pos = 0;
	size_t room;

	ck_assert_int_eq(input_init(CHUNK, 2), 0);
	feed(CHUNK, 1, &pos);
	input_take(CHUNK, &a);                      /* chunk 1 held */
	ck_assert_uint_gt(feed(CHUNK, 4, &pos), 0); /* chunk 2 */
	input_take(CHUNK, &b);                      /* chunk 2 held */
	/* Both chunks held, nothing free: no room until one is released. */
	ck_assert_ptr_null(input_space(&room, 4));
	input_chunk_put(a);
	ck_assert_ptr_nonnull(input_space(&room, 4));
	input_chunk_put(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("input");
	TCase *tc = tcase_create("chunks");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_full_buffer_gives_no_room);
	tcase_add_test(tc, test_bytes_survive_chunk_switches);
	tcase_add_test(tc, test_held_chunks_bound_memory);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
