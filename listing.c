/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* READDIR's names and their lstat, concurrently on slow storage: see
 * listing.h. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "confine.h"
#include "latency.h"
#include "listing.h"
#include "monotonic.h"
#include "workers.h"

/* A NAME entry costs its name twice (the name, and in the long name)
 * plus about this much: the long name's other columns and attributes. */
#define ENTRY_OVERHEAD 96

void listing_free(struct listing *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->e[i].name);
	free(l->e);
	l->e = NULL;
	l->n = l->cap = 0;
}

int listing_read(DIR *dirp, struct listing *l, size_t max_entries,
                 size_t max_bytes)
{
	struct listing_entry *grown;
	struct dirent *dp;
	size_t bytes = 0, len, i;
	long pos;

	/* The names of the batch before, if any (READDIR reads another
	 * batch when none of those could be looked up). */
	for (i = 0; i < l->n; i++)
		free(l->e[i].name);
	l->n = 0;
	while (l->n < max_entries && bytes < max_bytes &&
	       (pos = telldir(dirp), dp = readdir(dirp)) != NULL) {
		if (l->n == l->cap) {
			l->cap = l->cap ? 2 * l->cap : 64;
			grown = realloc(l->e, l->cap * sizeof(*l->e));
			if (grown == NULL)
				return -1;
			l->e = grown;
		}
		len = strlen(dp->d_name);
		l->e[l->n].pos = pos;
		if ((l->e[l->n].name = strdup(dp->d_name)) == NULL)
			return -1;
		l->e[l->n].ok = 0;
		l->n++;
		bytes += 2 * len + ENTRY_OVERHEAD;
	}
	return 0;
}

int listing_fits(size_t reply_len, size_t max, uint32_t count)
{
	return count == 0 || reply_len <= max;
}

size_t listing_probe(const struct listing *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->e[i].name, ".") != 0 &&
		    strcmp(l->e[i].name, "..") != 0)
			return i;
	return 0;
}

unsigned listing_helpers(size_t left, int64_t probe_ns, int storage_slow,
                         unsigned idle)
{
	size_t want = left / 2; /* each helper takes two lookups at least */

	if (probe_ns < LISTING_SLOW_NS && !storage_slow)
		return 0;
	return want < idle ? (unsigned)want : idle;
}

/* The lookups of one batch, shared by the thread that asked and its
 * helpers; the last one to let go frees it. */
struct lookups {
	pthread_mutex_t lock;
	pthread_cond_t all_done;
	struct listing *l; /* not to be touched once all are done */
	size_t n;          /* its entries */
	size_t probe;      /* the one looked up first, already done */
	int dir_fd;
	const char *dir;
	size_t next, done;
	unsigned refs;
};

static void lookup_one(int dir_fd, const char *dir, struct listing_entry *e)
{
	const char *look = e->name;

	/* The confinement directory's ".." is outside: show it as itself,
	 * as a chroot does. */
	if (confine_active() && strcmp(e->name, "..") == 0 &&
	    strcmp(dir, confine_root()) == 0)
		look = ".";
	e->ok = fstatat(dir_fd, look, &e->st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Take entries and look them up until none is left. */
static void lookups_run(struct lookups *k)
{
	size_t i;

	pthread_mutex_lock(&k->lock);
	while ((i = k->next) < k->n) {
		k->next++;
		if (i == k->probe)
			continue;
		pthread_mutex_unlock(&k->lock);
		lookup_one(k->dir_fd, k->dir, &k->l->e[i]);
		pthread_mutex_lock(&k->lock);
		if (++k->done == k->n)
			pthread_cond_signal(&k->all_done);
	}
	pthread_mutex_unlock(&k->lock);
}

static void lookups_put(struct lookups *k)
{
	unsigned left;

	pthread_mutex_lock(&k->lock);
	left = --k->refs;
	pthread_mutex_unlock(&k->lock);
	if (left == 0) {
		pthread_cond_destroy(&k->all_done);
		pthread_mutex_destroy(&k->lock);
		free(k);
	}
}

static void help(void *arg)
{
	struct lookups *k = arg;

	lookups_run(k);
	lookups_put(k);
}

void listing_stat(DIR *dirp, const char *dir, struct listing *l)
{
	int dir_fd = dirfd(dirp);
	struct lookups *k;
	unsigned helpers, i;
	int slow_before;
	int64_t t0;
	size_t j, probe;

	if (l->n == 0)
		return;
	/* Timed first: an entry that may need a round trip ("." and ".."
	 * are the directory just opened and its parent, always cached). */
	probe = listing_probe(l);
	slow_before = latency_storage_slow();
	t0 = monotonic_ns();
	lookup_one(dir_fd, dir, &l->e[probe]);
	t0 = monotonic_ns() - t0;
	latency_note(t0);
	helpers = listing_helpers(l->n - 1, t0, slow_before, workers_idle());
	if (helpers == 0 || (k = calloc(1, sizeof(*k))) == NULL) {
		for (j = 0; j < l->n; j++)
			if (j != probe)
				lookup_one(dir_fd, dir, &l->e[j]);
		return;
	}
	pthread_mutex_init(&k->lock, NULL);
	pthread_cond_init(&k->all_done, NULL);
	k->l = l;
	k->n = l->n;
	k->probe = probe;
	k->dir_fd = dir_fd;
	k->dir = dir;
	k->next = 0;
	k->done = 1;
	k->refs = 1;
	for (i = 0; i < helpers; i++) {
		pthread_mutex_lock(&k->lock);
		k->refs++;
		pthread_mutex_unlock(&k->lock);
		if (workers_help(help, k) != 0) {
			lookups_put(k);
			break;
		}
	}
	/* This thread works too: it never waits on helpers that have not
	 * started (all threads may be busy), only on lookups under way. */
	lookups_run(k);
	pthread_mutex_lock(&k->lock);
	while (k->done < k->n)
		pthread_cond_wait(&k->all_done, &k->lock);
	pthread_mutex_unlock(&k->lock);
	lookups_put(k);
}
