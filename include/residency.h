/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* A reader's page-cache residency state, kept by readahead.c for each
 * handle and check-file job.  A header of its own: handle.h holds one,
 * and readahead.c includes handle.h, so handle.h cannot include
 * readahead.h (tests/include-cycles.sh). */
#ifndef RESIDENCY_H
#define RESIDENCY_H

/* How a file's page-cache residency is asked before a hint (per handle,
 * starting at RESIDENCY_CACHESTAT; readahead_residency_after moves it):
 * cachestat(2), where the kernel answers it (Linux 6.5, and since 6.x
 * only for files the caller may write); one byte of sampled pages read
 * with RWF_NOWAIT, for any file the user may read; neither (the file
 * system refuses RWF_NOWAIT): every range is hinted. */
enum residency_way {
	RESIDENCY_CACHESTAT = 0,
	RESIDENCY_NOWAIT,
	RESIDENCY_UNKNOWN
};

/* A reader's residency state: how its file is asked, and, in
 * RESIDENCY_NOWAIT's way after a range was found not cached, how many
 * ranges that follow are still to be hinted without asking
 * (readahead_nowait_skip).  RESIDENCY_INIT at first (a handle's way
 * by its file system: readahead_first_way). */
struct residency {
	enum residency_way way;
	unsigned unasked;
};
#define RESIDENCY_INIT ((struct residency){RESIDENCY_CACHESTAT, 0})

#endif
