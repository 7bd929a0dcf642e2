/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of write merging (coalesce.c) through the queue, with a fake
 * back end that records what it is asked to write and can refuse bytes
 * past a point, as a full file system does. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "coalesce.h"
#include "handle.h"
#include "log.h"
#include "queue.h"
#include "readmem.h"
#include "server.h"
#include "sftp.h"

#define MAX_OPS 256

/* ---- a recording back end that completes in submission order ---- */

struct recorded {
	enum io_opcode opcode;
	uint64_t offset;
	int iovcnt;
	size_t len;
};

static struct recorded ops[MAX_OPS];
static int num_ops;
static struct io_op *queued[MAX_OPS];
static int num_queued;
static size_t accept_bytes = (size_t)-1; /* then the file system is full */
static int full_errno = EACCES;

static size_t op_len(const struct io_op *op)
{
	size_t n = 0;
	int i;

	if (op->opcode != IO_WRITEV)
		return op->len;
	for (i = 0; i < op->iovcnt; i++)
		n += op->iov[i].iov_len;
	return n;
}

static int rec_init(unsigned depth)
{
	(void)depth;
	return 0;
}

static int rec_submit(struct io_op *op)
{
	ck_assert_int_lt(num_ops, MAX_OPS);
	ops[num_ops].opcode = op->opcode;
	ops[num_ops].offset = op->offset;
	ops[num_ops].iovcnt = op->opcode == IO_WRITEV ? op->iovcnt : 1;
	ops[num_ops].len = op_len(op);
	num_ops++;
	queued[num_queued++] = op;
	return 0;
}

static int rec_flush(void)
{
	return 0;
}

static int rec_completion_fd(void)
{
	return -1;
}

/* Write what the "disk" still accepts: a short write, then the error.
 * IO_NO_OFFSET writes at the descriptor's position, as the back ends do. */
static ssize_t rec_write(struct io_op *op)
{
	int pos = op->offset != IO_NO_OFFSET;
	size_t len = op_len(op), n = 0;
	struct iovec iov[64];
	int cnt = 0;

	if (accept_bytes == 0)
		return -full_errno;
	if (len > accept_bytes)
		len = accept_bytes;
	accept_bytes -= len;
	if (op->opcode == IO_WRITE)
		return pos ? pwrite(op->fd, op->buf, len, (off_t)op->offset)
		           : write(op->fd, op->buf, len);
	while (n < len) {
		iov[cnt] = op->iov[cnt];
		if (iov[cnt].iov_len > len - n)
			iov[cnt].iov_len = len - n;
		n += iov[cnt].iov_len;
		cnt++;
	}
	return pos ? pwritev(op->fd, iov, cnt, (off_t)op->offset)
	           : writev(op->fd, iov, cnt);
}

static int rec_reap(struct io_op **done, int max, int wait)
{
	struct io_op *op;

	(void)wait;
	if (num_queued == 0 || max < 1)
		return 0;
	op = queued[0];
	memmove(queued, queued + 1, --num_queued * sizeof(queued[0]));
	if (op->opcode == IO_READ)
		op->result = pread(op->fd, op->buf, op->len, (off_t)op->offset);
	else if (op->opcode == IO_FSYNC)
		op->result = 0;
	else
		op->result = rec_write(op);
	if (op->result < 0 && op->result != -full_errno)
		op->result = -errno;
	done[0] = op;
	return 1;
}

static unsigned rec_in_flight(void)
{
	return (unsigned)num_queued;
}

static void rec_shutdown(void)
{
}

static const struct io_backend rec_backend = {
    "recording", rec_init,      rec_submit, rec_flush, rec_completion_fd,
    rec_reap,    rec_in_flight, NULL,       NULL,      rec_shutdown,
};

/* ---- requests ---- */

static int handle_idx;
static int append_idx;
static char path[] = "/tmp/check_coalesce.XXXXXX";
static uint32_t next_id;

static void admit(const uint8_t *packet, size_t len)
{
	struct request *req = request_new(packet, len, 65536, NULL);

	ck_assert_ptr_nonnull(req);
	ck_assert(queue_has_room());
	queue_admit(req);
}

static size_t header(uint8_t *p, uint8_t type, int handle)
{
	p[0] = type;
	poke_u32(p + 1, next_id++);
	poke_u32(p + 5, 4);
	poke_u32(p + 9, (uint32_t)handle);
	return 13;
}

/* A WRITE of len bytes, each byte (offset + i) & 0xff. */
static void write_req(int handle, uint64_t off, uint32_t len)
{
	uint8_t *p = malloc(32 + len);
	size_t n = header(p, SSH2_FXP_WRITE, handle);
	uint32_t i;

	poke_u64(p + n, off);
	poke_u32(p + n + 8, len);
	for (i = 0; i < len; i++)
		p[n + 12 + i] = (uint8_t)(off + i);
	admit(p, n + 12 + len);
	free(p);
}

static void simple_req(uint8_t type, int handle)
{
	uint8_t p[16];

	admit(p, header(p, type, handle));
}

static void read_req(int handle, uint64_t off, uint32_t len)
{
	uint8_t p[32];
	size_t n = header(p, SSH2_FXP_READ, handle);

	poke_u64(p + n, off);
	poke_u32(p + n + 8, len);
	admit(p, n + 12);
}

/* Run everything; return the status codes (-type for other replies). */
static int run_all(int more_input, int *status, int max)
{
	struct iovec iov[64];
	struct io_op *done[1];
	int i, n, got = 0;

	queue_dispatch(more_input);
	for (;;) {
		n = queue_output_iov(iov, 64);
		for (i = 0; i < n && got < max; i++) {
			const uint8_t *p = iov[i].iov_base;

			status[got++] = p[4] == SSH2_FXP_STATUS
			                    ? (int)peek_u32(p + 9)
			                    : -(int)p[4];
			queue_output_consumed(iov[i].iov_len);
		}
		if (queue_idle())
			return got;
		if (backend->reap(done, 1, 0) == 1)
			done[0]->done(done[0]);
		queue_dispatch(0);
	}
}

static void setup(void)
{
	struct queue_limits lim = {128, 1 << 24};
	int fd;

	memset(&srv, 0, sizeof(srv));
	srv.init_done = 1;
	srv.client_version = 3;
	log_init("check_coalesce", LOG_LEVEL_QUIET, 0, 1);
	backend = &rec_backend;
	queue_init(&lim);
	coalesce_init(256 * 1024);
	strcpy(path, "/tmp/check_coalesce.XXXXXX");
	ck_assert_int_ge(fd = mkstemp(path), 0);
	handle_idx = handle_new(HANDLE_FILE, path, fd, NULL, O_RDWR);
	fd = open(path, O_WRONLY | O_APPEND);
	append_idx =
	    handle_new(HANDLE_FILE, path, fd, NULL, O_WRONLY | O_APPEND);
	num_ops = 0;
	accept_bytes = (size_t)-1;
}

static void teardown(void)
{
	handle_close(handle_idx);
	handle_close(append_idx);
	unlink(path);
}

/* The file holds byte (i & 0xff) at every offset i in [0, len). */
static void assert_file_pattern(size_t len)
{
	uint8_t *buf = malloc(len + 1);
	int fd = open(path, O_RDONLY);
	size_t i;

	ck_assert_int_eq(pread(fd, buf, len + 1, 0), (ssize_t)len);
	for (i = 0; i < len; i++)
		ck_assert_uint_eq(buf[i], (uint8_t)i);
	close(fd);
	free(buf);
}

START_TEST(test_contiguous_writes_merge)
{
	int st[16], i;

	for (i = 0; i < 8; i++)
		write_req(handle_idx, (uint64_t)i * 32768, 32768);
	ck_assert_int_eq(run_all(0, st, 16), 8);
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(st[i], SSH2_FX_OK);
	ck_assert_int_eq(num_ops, 1);
	ck_assert_int_eq(ops[0].opcode, IO_WRITEV);
	ck_assert_int_eq(ops[0].iovcnt, 8);
	ck_assert_uint_eq(ops[0].len, 8 * 32768);
	assert_file_pattern(8 * 32768);
	ck_assert_uint_eq(handle_get(handle_idx, HANDLE_FILE)->bytes_written,
	                  8 * 32768);
}
END_TEST

START_TEST(test_byte_limit)
{
	int st[16], i;

	coalesce_init(65536);
	for (i = 0; i < 10; i++)
		write_req(handle_idx, (uint64_t)i * 32768, 32768);
	ck_assert_int_eq(run_all(0, st, 16), 10);
	ck_assert_int_eq(num_ops, 5);
	for (i = 0; i < 5; i++) {
		ck_assert_int_eq(ops[i].iovcnt, 2);
		ck_assert_uint_eq(ops[i].offset, (uint64_t)i * 65536);
	}
	assert_file_pattern(10 * 32768);
}
END_TEST

START_TEST(test_iovec_limit)
{
	int st[80], i;

	for (i = 0; i < 70; i++)
		write_req(handle_idx, (uint64_t)i, 1);
	ck_assert_int_eq(run_all(0, st, 80), 70);
	ck_assert_int_eq(num_ops, 2);
	ck_assert_int_eq(ops[0].iovcnt, 64);
	ck_assert_int_eq(ops[1].iovcnt, 6);
	assert_file_pattern(70);
}
END_TEST

START_TEST(test_gap_ends_a_run)
{
	int st[8];

	write_req(handle_idx, 0, 1000);
	write_req(handle_idx, 1000, 1000);
	write_req(handle_idx, 5000, 1000);
	write_req(handle_idx, 6000, 1000);
	ck_assert_int_eq(run_all(0, st, 8), 4);
	ck_assert_int_eq(num_ops, 2);
	ck_assert_uint_eq(ops[0].offset, 0);
	ck_assert_uint_eq(ops[0].len, 2000);
	ck_assert_uint_eq(ops[1].offset, 5000);
	ck_assert_uint_eq(ops[1].len, 2000);
}
END_TEST

START_TEST(test_waits_for_more_input_only_when_told)
{
	int st[8];

	write_req(handle_idx, 0, 100);
	write_req(handle_idx, 100, 100);
	queue_dispatch(1);
	/* More requests are coming: the run stays open, nothing written. */
	ck_assert(coalesce_pending());
	ck_assert_int_eq(num_ops, 0);
	write_req(handle_idx, 200, 100);
	ck_assert_int_eq(run_all(0, st, 8), 3);
	ck_assert(!coalesce_pending());
	ck_assert_int_eq(num_ops, 1);
	ck_assert_int_eq(ops[0].iovcnt, 3);
}
END_TEST

START_TEST(test_barrier_flushes)
{
	int st[8];

	write_req(handle_idx, 0, 100);
	write_req(handle_idx, 100, 100);
	simple_req(SSH2_FXP_FSTAT, handle_idx);
	queue_dispatch(1);
	/* The FSTAT waits for the writes, so they went out at once. */
	ck_assert(!coalesce_pending());
	ck_assert_int_eq(num_ops, 1);
	ck_assert_int_eq(run_all(1, st, 8), 3);
	ck_assert_int_eq(st[2], -SSH2_FXP_ATTRS);
}
END_TEST

START_TEST(test_overlapping_read_flushes)
{
	int st[8];

	write_req(handle_idx, 0, 100);
	write_req(handle_idx, 100, 100);
	read_req(handle_idx, 150, 10);
	queue_dispatch(1);
	ck_assert(!coalesce_pending());
	ck_assert_int_eq(run_all(1, st, 8), 3);
	ck_assert_int_eq(st[2], -SSH2_FXP_DATA);
	ck_assert_int_eq(num_ops, 2);
	ck_assert_int_eq(ops[1].opcode, IO_READ);
}
END_TEST

START_TEST(test_append_handles_merge_in_order)
{
	int st[8], i;

	/* Offsets are ignored on append handles, even one that does not
	 * fit off_t: the data follows in request order. */
	write_req(append_idx, UINT64_MAX, 100);
	write_req(append_idx, 0, 100);
	write_req(append_idx, 5, 56);
	ck_assert_int_eq(run_all(0, st, 8), 3);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(st[i], SSH2_FX_OK);
	ck_assert_int_eq(num_ops, 1);
	ck_assert_int_eq(ops[0].iovcnt, 3);
	ck_assert_uint_eq(ops[0].len, 256);
	ck_assert_uint_eq(ops[0].offset, IO_NO_OFFSET);
	/* The bytes follow each other in request order. */
	{
		uint8_t buf[300];
		int fd = open(path, O_RDONLY);

		ck_assert_int_eq(pread(fd, buf, sizeof(buf), 0), 256);
		close(fd);
		ck_assert_uint_eq(buf[0], (uint8_t)UINT64_MAX);
		ck_assert_uint_eq(buf[99], (uint8_t)(UINT64_MAX + 99));
		ck_assert_uint_eq(buf[100], 0);
		ck_assert_uint_eq(buf[199], 99);
		ck_assert_uint_eq(buf[200], 5);
		ck_assert_uint_eq(buf[255], 60);
	}
}
END_TEST

/* One WRITE of a sequence: on the append handle or the plain one. */
struct wspec {
	int append;
	uint64_t off;
	uint32_t len;
};

#define MAX_SEQ 8

/* Run a sequence of pipelined WRITEs with merging limited to merge bytes
 * (0: off) and the "disk" taking accept bytes; the statuses in st, the
 * file's bytes in content (returns its length). */
static size_t run_sequence(const struct wspec *seq, int n, size_t merge,
                           size_t accept, int *st, uint8_t *content, size_t max)
{
	ssize_t got;
	int fd, i;

	ck_assert_int_eq(truncate(path, 0), 0);
	coalesce_init(merge);
	accept_bytes = accept;
	num_ops = 0;
	for (i = 0; i < n; i++)
		write_req(seq[i].append ? append_idx : handle_idx, seq[i].off,
		          seq[i].len);
	ck_assert_int_eq(run_all(0, st, MAX_SEQ), n);
	fd = open(path, O_RDONLY);
	got = pread(fd, content, max, 0);
	close(fd);
	ck_assert_int_ge(got, 0);
	return (size_t)got;
}

/* Merging must never change any request's outcome.  Each
 * sequence runs merged and one by one, with a disk that takes everything
 * and with one that fills up part-way: same statuses, same file. */
START_TEST(test_merging_never_changes_outcomes)
{
	static const struct wspec seqs[][MAX_SEQ] = {
	    {{1, UINT64_MAX, 100}, {1, 0, 100}, {1, 0, 100}},
	    {{1, 0, 10}, {1, UINT64_MAX, 10}, {1, 5, 10}, {1, 1ULL << 63, 10}},
	    {{0, UINT64_MAX, 100}, {0, 0, 100}, {0, 100, 100}},
	    {{0, 0, 100}, {0, 100, 100}, {0, 1ULL << 63, 100}, {0, 200, 100}},
	    {{0, 0, 30000}, {0, 30000, 30000}, {0, 60000, 30000}},
	    {{0, 0, 100}, {1, UINT64_MAX, 100}, {0, 100, 100}, {1, 7, 50}},
	    {{0, (uint64_t)INT64_MAX, 1}, {0, 0, 10}, {0, 10, 10}},
	};
	static const size_t accepts[] = {(size_t)-1, 150, 45000, 0};
	uint8_t a[200000], b[200000];
	int sa[MAX_SEQ], sb[MAX_SEQ], n, i, k;
	size_t s, la, lb;

	for (s = 0; s < sizeof(seqs) / sizeof(seqs[0]); s++) {
		for (n = 0; n < MAX_SEQ && seqs[s][n].len > 0; n++)
			;
		for (k = 0; k < (int)(sizeof(accepts) / sizeof(accepts[0]));
		     k++) {
			la = run_sequence(seqs[s], n, 256 * 1024, accepts[k],
			                  sa, a, sizeof(a));
			lb = run_sequence(seqs[s], n, 0, accepts[k], sb, b,
			                  sizeof(b));
			for (i = 0; i < n; i++)
				ck_assert_msg(
				    sa[i] == sb[i],
				    "sequence %zu, disk %d, write %d: "
				    "merged %d, alone %d",
				    s, k, i, sa[i], sb[i]);
			ck_assert_msg(la == lb && memcmp(a, b, la) == 0,
			              "sequence %zu, disk %d: files differ", s,
			              k);
		}
	}
}
END_TEST

START_TEST(test_partial_failure_answers_each_request)
{
	int st[8];

	accept_bytes = 40000; /* the disk fills inside the second request */
	write_req(handle_idx, 0, 32768);
	write_req(handle_idx, 32768, 32768);
	write_req(handle_idx, 65536, 32768);
	ck_assert_int_eq(run_all(0, st, 8), 3);
	ck_assert_int_eq(st[0], SSH2_FX_OK);
	/* The retry of the remainder gave the precise errno. */
	ck_assert_int_eq(st[1], SSH2_FX_PERMISSION_DENIED);
	ck_assert_int_eq(st[2], SSH2_FX_PERMISSION_DENIED);
	ck_assert_int_eq(num_ops, 2);
	ck_assert_uint_eq(ops[1].offset, 40000);
	/* Acknowledged bytes only, as OpenSSH counts them. */
	ck_assert_uint_eq(handle_get(handle_idx, HANDLE_FILE)->bytes_written,
	                  32768);
	assert_file_pattern(40000);
}
END_TEST

START_TEST(test_merging_off)
{
	int st[8], i;

	coalesce_init(0);
	for (i = 0; i < 4; i++)
		write_req(handle_idx, (uint64_t)i * 100, 100);
	ck_assert_int_eq(run_all(1, st, 8), 4);
	ck_assert_int_eq(num_ops, 4);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(ops[i].opcode, IO_WRITE);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("coalesce");
	TCase *tc = tcase_create("merge");
	SRunner *sr;
	int failed;

	/* READs take their memory from here (readmem.h). */
	if (readmem_init(64) != 0)
		return 1;
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_contiguous_writes_merge);
	tcase_add_test(tc, test_byte_limit);
	tcase_add_test(tc, test_iovec_limit);
	tcase_add_test(tc, test_gap_ends_a_run);
	tcase_add_test(tc, test_waits_for_more_input_only_when_told);
	tcase_add_test(tc, test_barrier_flushes);
	tcase_add_test(tc, test_overlapping_read_flushes);
	tcase_add_test(tc, test_append_handles_merge_in_order);
	tcase_add_test(tc, test_merging_never_changes_outcomes);
	tcase_add_test(tc, test_partial_failure_answers_each_request);
	tcase_add_test(tc, test_merging_off);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
