/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of queue.c with a fake back end that completes operations in
 * a seeded random order and often short.  Every reply is checked against a
 * model that applies the requests one at a time in arrival order: that is
 * what the draft's §6.1 promises a client.  The requests are READ, WRITE,
 * FSTAT and check-file-handle, which runs in steps beside the others. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <openssl/evp.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "coalesce.h"
#include "handle.h"
#include "log.h"
#include "queue.h"
#include "readmem.h"
#include "server.h"
#include "sftp.h"

#define FAKE_DEPTH 8
#define MAX_REQUESTS 16
#define FILE_SPAN 65536
#define NUM_REQUESTS 400
/* The largest reply: DATA of the longest READ (make_read). */
#define MAX_REPLY (13 + 16384)

/* ---- the fake back end ---- */

static struct io_op *pending[FAKE_DEPTH];
static unsigned num_pending;
static unsigned merged_writes; /* vectored writes of 2 or more requests */

/* Bytes an operation covers (a vectored write: all its iovecs). */
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

static int op_writes(const struct io_op *op)
{
	return op->opcode == IO_WRITE || op->opcode == IO_WRITEV;
}

/* The same rule as queue.c states, checked independently: two writes
 * must not overlap; a read must not run with a write that ends past the
 * read's start (it could grow the file under the read). */
static int must_not_run_together(const struct io_op *a, const struct io_op *b)
{
	const struct io_op *rd, *wr;

	/* A read-ahead hint moves no data to or from the client. */
	if (a->opcode == IO_READAHEAD || b->opcode == IO_READAHEAD)
		return 0;
	if (op_writes(a) && op_writes(b))
		return a->offset < b->offset + op_len(b) &&
		       b->offset < a->offset + op_len(a);
	if (!op_writes(a) && !op_writes(b))
		return 0;
	rd = op_writes(a) ? b : a;
	wr = op_writes(a) ? a : b;
	return wr->offset + op_len(wr) > rd->offset;
}

static int fake_init(unsigned depth)
{
	(void)depth;
	num_pending = 0;
	return 0;
}

static int fake_submit(struct io_op *op)
{
	unsigned i;

	if (num_pending >= FAKE_DEPTH)
		return -EBUSY;
	/* Rule 2: overlapping operations with a write never run together
	 * (both handles are one file). */
	for (i = 0; i < num_pending; i++)
		ck_assert_msg(!must_not_run_together(op, pending[i]),
		              "conflicting operations in flight: %d@%llu+%zu "
		              "vs %d@%llu+%zu",
		              op->opcode, (unsigned long long)op->offset,
		              op_len(op), pending[i]->opcode,
		              (unsigned long long)pending[i]->offset,
		              op_len(pending[i]));
	pending[num_pending++] = op;
	return 0;
}

static int fake_flush(void)
{
	return 0;
}

static int fake_completion_fd(void)
{
	return -1;
}

/* A vectored write of only the first len bytes. */
static ssize_t pwritev_prefix(const struct io_op *op, size_t len)
{
	struct iovec iov[64];
	int n = 0;

	while (len > 0 && n < op->iovcnt) {
		iov[n] = op->iov[n];
		if (iov[n].iov_len > len)
			iov[n].iov_len = len;
		len -= iov[n].iov_len;
		n++;
	}
	return pwritev(op->fd, iov, n, (off_t)op->offset);
}

/* Finish one random operation, moving a random prefix of it. */
static int fake_reap(struct io_op **done, int max, int wait)
{
	struct io_op *op;
	size_t len;
	unsigned i;

	(void)wait;
	if (num_pending == 0 || max < 1)
		return 0;
	i = (unsigned)rand() % num_pending;
	op = pending[i];
	pending[i] = pending[--num_pending];
	len = op_len(op);
	if (len > 1 && rand() % 3 == 0)
		len = 1 + (size_t)rand() % (len - 1);
	if (op->opcode == IO_READ)
		op->result = pread(op->fd, op->buf, len, (off_t)op->offset);
	else if (op->opcode == IO_WRITE)
		op->result = pwrite(op->fd, op->buf, len, (off_t)op->offset);
	else if (op->opcode == IO_WRITEV)
		op->result = pwritev_prefix(op, len);
	else
		op->result = 0;
	if (op->opcode == IO_WRITEV && op->iovcnt > 1)
		merged_writes++;
	if (op->result < 0)
		op->result = -errno;
	done[0] = op;
	return 1;
}

static unsigned fake_in_flight(void)
{
	return num_pending;
}

static void fake_shutdown(void)
{
}

static const struct io_backend fake_backend = {
    "fake",    fake_init,      fake_submit, fake_flush, fake_completion_fd,
    fake_reap, fake_in_flight, NULL,        NULL,       fake_shutdown,
};

/* ---- requests and the model ---- */

struct expected {
	uint8_t type;    /* reply type */
	uint32_t status; /* for STATUS */
	uint64_t size;   /* for ATTRS */
	size_t len;      /* for DATA */
	uint8_t *data;
};

static uint8_t model[FILE_SPAN * 2];
static uint64_t last_write_end[2];
static uint64_t model_size;
static int handles[2];
static unsigned check_files; /* check-file replies checked */

static size_t put_header(uint8_t *p, uint8_t type, uint32_t id, int handle)
{
	p[0] = type;
	poke_u32(p + 1, id);
	poke_u32(p + 5, 4);
	poke_u32(p + 9, (uint32_t)handle);
	return 13;
}

static size_t make_write(uint8_t *p, uint32_t id, struct expected *e)
{
	int which = rand() % 2;
	uint64_t off = (uint64_t)rand() % FILE_SPAN;
	uint32_t len = 1 + (uint32_t)rand() % 8192;
	size_t n = put_header(p, SSH2_FXP_WRITE, id, handles[which]);
	uint32_t i;

	/* Half the writes continue the handle's last one: mergeable. */
	if (rand() % 2 && last_write_end[which] < FILE_SPAN)
		off = last_write_end[which];
	last_write_end[which] = off + len;

	poke_u64(p + n, off);
	poke_u32(p + n + 8, len);
	for (i = 0; i < len; i++)
		p[n + 12 + i] = (uint8_t)rand();
	memcpy(model + off, p + n + 12, len);
	if (off + len > model_size)
		model_size = off + len;
	e->type = SSH2_FXP_STATUS;
	e->status = SSH2_FX_OK;
	return n + 12 + len;
}

static size_t make_read(uint8_t *p, uint32_t id, struct expected *e)
{
	uint64_t off = (uint64_t)rand() % (FILE_SPAN + 4096);
	uint32_t len = 1 + (uint32_t)rand() % 16384;
	size_t n = put_header(p, SSH2_FXP_READ, id, handles[rand() % 2]);

	poke_u64(p + n, off);
	poke_u32(p + n + 8, len);
	if (off >= model_size) {
		e->type = SSH2_FXP_STATUS;
		e->status = SSH2_FX_EOF;
	} else {
		e->type = SSH2_FXP_DATA;
		e->len = off + len > model_size ? model_size - off : len;
		e->data = malloc(e->len);
		memcpy(e->data, model + off, e->len);
	}
	return n + 12;
}

static size_t make_fstat(uint8_t *p, uint32_t id, struct expected *e)
{
	e->type = SSH2_FXP_ATTRS;
	e->size = model_size;
	return put_header(p, SSH2_FXP_FSTAT, id, handles[rand() % 2]);
}

/* check-file-handle, sha256 of a random range of handle 0 (the file both
 * handles share): the digest of what the model holds there when the
 * request arrives. */
static size_t make_check_file(uint8_t *p, uint32_t id, struct expected *e)
{
	static const char name[] = "check-file-handle", alg[] = "sha256";
	uint64_t off = (uint64_t)rand() % (FILE_SPAN + 4096);
	uint64_t len = rand() % 4 == 0 ? 0 : 1 + (uint64_t)rand() % FILE_SPAN;
	uint64_t end =
	    len == 0 || off + len > model_size ? model_size : off + len;
	uint8_t digest[EVP_MAX_MD_SIZE];
	unsigned dlen = 0;
	size_t n = 0;

	p[n++] = SSH2_FXP_EXTENDED;
	poke_u32(p + n, id);
	poke_u32(p + n + 4, sizeof(name) - 1);
	memcpy(p + n + 8, name, sizeof(name) - 1);
	n += 8 + sizeof(name) - 1;
	poke_u32(p + n, 4);
	poke_u32(p + n + 4, (uint32_t)handles[0]);
	poke_u32(p + n + 8, sizeof(alg) - 1);
	memcpy(p + n + 12, alg, sizeof(alg) - 1);
	n += 12 + sizeof(alg) - 1;
	poke_u64(p + n, off);
	poke_u64(p + n + 8, len);
	poke_u32(p + n + 16, 0);
	n += 20;
	ck_assert(EVP_Digest(model + off, off < end ? end - off : 0, digest,
	                     &dlen, EVP_sha256(), NULL) == 1);
	/* The reply after its id: "check-file", the algorithm, the digest. */
	e->type = SSH2_FXP_EXTENDED_REPLY;
	e->len = 4 + 10 + 4 + 6 + dlen;
	e->data = malloc(e->len);
	poke_u32(e->data, 10);
	memcpy(e->data + 4, "check-file", 10);
	poke_u32(e->data + 14, 6);
	memcpy(e->data + 18, alg, 6);
	memcpy(e->data + 24, digest, dlen);
	return n;
}

static void check_reply(const uint8_t *p, size_t len, uint32_t id,
                        const struct expected *e)
{
	ck_assert_uint_ge(len, 9);
	ck_assert_uint_eq(peek_u32(p), len - 4);
	ck_assert_uint_eq(p[4], e->type);
	ck_assert_uint_eq(peek_u32(p + 5), id); /* arrival order */
	if (e->type == SSH2_FXP_STATUS) {
		ck_assert_uint_eq(peek_u32(p + 9), e->status);
	} else if (e->type == SSH2_FXP_DATA) {
		ck_assert_uint_eq(peek_u32(p + 9), e->len);
		ck_assert_uint_eq(len, 13 + e->len);
		ck_assert(memcmp(p + 13, e->data, e->len) == 0);
	} else if (e->type == SSH2_FXP_EXTENDED_REPLY) {
		ck_assert_uint_eq(len, 9 + e->len);
		ck_assert(memcmp(p + 9, e->data, e->len) == 0);
		check_files++;
	} else {
		/* flags, then the size comes first */
		ck_assert_uint_eq(peek_u32(p + 9) & SSH2_FILEXFER_ATTR_SIZE, 1);
		ck_assert_uint_eq((uint64_t)peek_u32(p + 13) << 32 |
		                      peek_u32(p + 17),
		                  e->size);
	}
}

/* Collect every reply the queue has ready and check it. */
static void drain_output(uint32_t *next_id, struct expected *exp)
{
	struct iovec iov[64];
	size_t total = 0;
	int i, n;

	queue_output_consumed(0);
	n = queue_output_iov(iov, 64);
	for (i = 0; i < n; i++) {
		check_reply(iov[i].iov_base, iov[i].iov_len, *next_id,
		            &exp[*next_id]);
		free(exp[*next_id].data);
		(*next_id)++;
		total += iov[i].iov_len;
	}
	if (total > 0)
		queue_output_consumed(total);
}

/* The queue's limits for run_seed, and how often it drains the output
 * (every turn, or one turn in drain_every, so replies pile up). */
static struct queue_limits limits;
static unsigned drain_every = 1;
static unsigned byte_bound_reached; /* turns with no room for that reason */

static void run_seed(unsigned seed)
{
	static uint8_t packets[NUM_REQUESTS][8192 + 64];
	static size_t lengths[NUM_REQUESTS];
	static struct expected exp[NUM_REQUESTS];
	struct io_op *done[1];
	uint32_t admitted = 0, replied = 0;
	unsigned turns = 0;
	int kind, i;

	srand(seed);
	memset(model, 0, sizeof(model));
	memset(exp, 0, sizeof(exp));
	model_size = 0;
	ck_assert_int_eq(ftruncate(handle_get(handles[0], HANDLE_FILE)->fd, 0),
	                 0);
	for (i = 0; i < NUM_REQUESTS; i++) {
		kind = rand() % 10;
		if (kind < 5)
			lengths[i] = make_write(packets[i], i, &exp[i]);
		else if (kind < 9)
			lengths[i] = make_read(packets[i], i, &exp[i]);
		else if (rand() % 2)
			lengths[i] = make_fstat(packets[i], i, &exp[i]);
		else
			lengths[i] = make_check_file(packets[i], i, &exp[i]);
	}
	while (replied < NUM_REQUESTS) {
		while (admitted < NUM_REQUESTS && queue_has_room()) {
			queue_admit(request_new(
			    packets[admitted], lengths[admitted], 65536, NULL));
			admitted++;
		}
		ck_assert_uint_le(queue_count(), MAX_REQUESTS);
		/* Replies waiting: admission stops at the byte bound, so it is
		 * passed by at most the requests already admitted. */
		ck_assert_uint_le(queue_output_bytes(),
		                  limits.max_reply_bytes +
		                      (size_t)MAX_REQUESTS * MAX_REPLY);
		if (queue_output_bytes() >= limits.max_reply_bytes) {
			ck_assert(!queue_has_room());
			byte_bound_reached++;
		}
		queue_dispatch(rand() % 2);
		if ((unsigned)rand() % drain_every == 0)
			drain_output(&replied, exp);
		if (backend->reap(done, 1, 0) == 1)
			done[0]->done(done[0]);
		/* No request waits forever: a bound on the turns. */
		ck_assert_uint_lt(++turns, NUM_REQUESTS * 100);
	}
	ck_assert(queue_idle());
	ck_assert(!queue_steps_pending());
}

START_TEST(test_random_completion_order)
{
	char path[] = "/tmp/check_queue.XXXXXX";
	int fd1, fd2;
	unsigned seed;

	memset(&srv, 0, sizeof(srv));
	srv.init_done = 1;
	srv.client_version = 3;
	log_init("check_queue", LOG_LEVEL_QUIET, 0, 1);
	backend = &fake_backend;
	backend->init(FAKE_DEPTH);
	limits.max_requests = MAX_REQUESTS;
	limits.max_reply_bytes = 1 << 20;
	queue_init(&limits);
	ck_assert_int_ge(fd1 = mkstemp(path), 0);
	ck_assert_int_ge(fd2 = open(path, O_RDWR), 0);
	unlink(path);
	handles[0] = handle_new(HANDLE_FILE, "one", fd1, NULL, O_RDWR);
	handles[1] = handle_new(HANDLE_FILE, "two", fd2, NULL, O_RDWR);
	ck_assert_int_ge(handles[0], 0);
	ck_assert_int_ge(handles[1], 0);
	for (seed = 1; seed <= 200; seed++)
		run_seed(seed);
	ck_assert_uint_eq(merged_writes, 0);
	/* Again with write merging, limits from tiny to large. */
	for (seed = 1; seed <= 200; seed++) {
		coalesce_init(seed % 4 == 0 ? 4096 : 65536 * (seed % 5));
		run_seed(1000 + seed);
		ck_assert(!coalesce_pending());
	}
	ck_assert_uint_gt(merged_writes, 200);
	ck_assert_uint_gt(check_files, 1000);
	coalesce_init(0);
	/* Again with a client that seldom reads and a small byte bound on
	 * replies waiting, which admission must then respect. */
	limits.max_reply_bytes = 3 * MAX_REPLY;
	queue_init(&limits);
	drain_every = 8;
	for (seed = 1; seed <= 100; seed++)
		run_seed(2000 + seed);
	ck_assert_uint_gt(byte_bound_reached, 100);
	drain_every = 1;
	handle_close(handles[0]);
	handle_close(handles[1]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("queue");
	TCase *tc = tcase_create("ordering");
	SRunner *sr;
	int failed;

	/* READs take their memory from here (readmem.h). */
	if (readmem_init(64) != 0)
		return 1;
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_random_completion_order);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
