/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The worker threads: see workers.h.  One lock guards the queue of jobs,
 * the list of finished ones and the thread counts; the event loop is the
 * only thread that submits ops and reaps them. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "workers.h"

/* Handlers keep PATH_MAX buffers and little else on the stack. */
#define WORKER_STACK (256 * 1024)
/* A thread with nothing to do for this long ends (the session may never
 * need it again; a new one starts in well under a millisecond). */
#define WORKER_IDLE_SECONDS 2

struct job {
	struct io_op *op;      /* an IO_CALL to reap, or NULL for help */
	void (*fn)(void *arg); /* help */
	void *arg;
	struct job *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static struct job *pending_head, *pending_tail, *spare_jobs;
static unsigned num_pending, threads, idle;
static struct io_done_list finished;
static unsigned in_flight; /* the loop's own count: submitted, not reaped */
static int wake_signal;    /* sent to the loop's thread when a job ends */
static pid_t loop_tid;
static int run_inline;

static void run_job(struct job *j)
{
	if (j->op != NULL)
		j->op->call(j->op);
	else
		j->fn(j->arg);
}

/* Wait for a job: 0, or ETIMEDOUT after WORKER_IDLE_SECONDS without
 * one (lock held either way). */
static int wait_for_job(void)
{
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WORKER_IDLE_SECONDS;
	idle++;
	while (pending_head == NULL && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&wake, &lock, &until);
	idle--;
	return pending_head != NULL ? 0 : ETIMEDOUT;
}

static void *worker_main(void *unused)
{
	struct io_op *op;
	struct job *j;

	(void)unused;
	pthread_mutex_lock(&lock);
	for (;;) {
		if (wait_for_job() != 0)
			break;
		j = pending_head;
		pending_head = j->next;
		if (pending_head == NULL)
			pending_tail = NULL;
		num_pending--;
		pthread_mutex_unlock(&lock);
		run_job(j);
		op = j->op;
		pthread_mutex_lock(&lock);
		if (op != NULL)
			io_done_push(&finished, op);
		j->next = spare_jobs;
		spare_jobs = j;
		/* The loop sleeps in ppoll with the signal let through:
		 * it wakes; outside ppoll it is blocked and stays pending
		 * until then, so none is lost. */
		if (op != NULL)
			(void)syscall(SYS_tgkill, getpid(), loop_tid,
			              wake_signal);
	}
	threads--;
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* One more thread, all signals blocked in it: they are the loop's. */
static int start_thread(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;
	int rc;

	if (pthread_attr_init(&attr) != 0)
		return -ENOMEM;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, WORKER_STACK);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&t, &attr, worker_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc != 0)
		return -rc;
	threads++;
	return 0;
}

static int enqueue(struct io_op *op, void (*fn)(void *), void *arg)
{
	struct job *j;
	int rc = 0;

	if (wake_signal == 0)
		return -ENOSYS; /* workers_init was not called */
	pthread_mutex_lock(&lock);
	/* A thread more while the queued jobs would outnumber the idle
	 * threads; with none at all and none to be had, the job cannot
	 * run. */
	if (num_pending + 1 > idle && threads < WORKERS_MAX)
		rc = start_thread();
	if (rc != 0 && threads == 0)
		goto out;
	rc = 0;
	if ((j = spare_jobs) != NULL) {
		spare_jobs = j->next;
	} else if ((j = malloc(sizeof(*j))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	j->op = op;
	j->fn = fn;
	j->arg = arg;
	j->next = NULL;
	if (pending_tail != NULL)
		pending_tail->next = j;
	else
		pending_head = j;
	pending_tail = j;
	num_pending++;
	pthread_cond_signal(&wake);
out:
	pthread_mutex_unlock(&lock);
	return rc;
}

int workers_submit(struct io_op *op)
{
	int rc;

	if (run_inline) {
		op->call(op);
		io_done_push(&finished, op);
		in_flight++;
		return 0;
	}
	if ((rc = enqueue(op, NULL, NULL)) == 0)
		in_flight++;
	return rc;
}

int workers_help(void (*fn)(void *arg), void *arg)
{
	if (run_inline)
		return -EAGAIN; /* the caller does the work itself */
	return enqueue(NULL, fn, arg);
}

unsigned workers_idle(void)
{
	unsigned n;

	pthread_mutex_lock(&lock);
	n = idle > num_pending ? idle - num_pending : 0;
	if (threads < WORKERS_MAX)
		n += WORKERS_MAX - threads;
	pthread_mutex_unlock(&lock);
	return run_inline ? 0 : n;
}

int workers_init(int signo)
{
	wake_signal = signo;
	loop_tid = (pid_t)syscall(SYS_gettid);
	return 0;
}

int workers_ready(void)
{
	int ready;

	pthread_mutex_lock(&lock);
	ready = finished.count > 0;
	pthread_mutex_unlock(&lock);
	return ready;
}

int workers_reap(struct io_op **done, int max)
{
	int got;

	if (in_flight == 0)
		return 0;
	pthread_mutex_lock(&lock);
	got = io_done_pop(&finished, done, max);
	pthread_mutex_unlock(&lock);
	in_flight -= (unsigned)got;
	return got;
}

unsigned workers_in_flight(void)
{
	return in_flight;
}

void workers_run_inline(int on)
{
	run_inline = on;
}
