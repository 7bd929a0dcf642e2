/* Pacing writes into a pipe stdout; see outpace.h for why. */
#include "config.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sched.h>
#include <time.h>

#include "outpace.h"

int64_t outpace_wait(struct outpace *p, uint64_t written, uint64_t unread,
                     int64_t now_ns)
{
	uint64_t consumed = unread < written ? written - unread : 0,
	         low = p->capacity / 4;
	int64_t gap = now_ns - p->last_ns;
	double sample, wait;

	if (p->capacity == 0)
		return 0;
	/* Woken early (a completion, input): the pause goes on, it does not
	 * start over, or steady completions would postpone it for ever. */
	if (p->pause_until != 0 && now_ns < p->pause_until)
		return p->pause_until - now_ns;
	p->pause_until = 0;
	if (p->last_ns == 0 || gap <= 0 || gap > OUTPACE_STALE_NS ||
	    consumed < p->last_consumed) {
		p->rate = 0;
	} else {
		sample = (double)(consumed - p->last_consumed) / (double)gap;
		/* Smoothed, so that one burst or pause of the reader does not
		 * set the pace alone. */
		p->rate = p->rate == 0 ? sample : (p->rate + sample) / 2;
	}
	p->last_consumed = consumed;
	p->last_ns = now_ns;
	if (p->rate == 0 || unread <= low)
		return 0;
	wait = (double)(unread - low) / p->rate;
	if (wait < 1 || wait > OUTPACE_MAX_WAIT_NS)
		return 0;
	p->pause_until = now_ns + (int64_t)wait;
	return (int64_t)wait;
}

int outpace_woke(struct outpace *p, uint64_t unread, int64_t now_ns)
{
	if (p->pause_until != 0 && now_ns < p->pause_until)
		return 0;
	p->pause_until = 0;
	/* The next pauses are shorter; samples set the rate right again. */
	if (unread < p->capacity / 8)
		p->rate *= 2;
	return 1;
}

static struct outpace stdout_pace;
static int stdout_fd = -1;

/* May this process run on more than one CPU?  If not, stdout's reader
 * most likely shares ours and runs only while we sleep: a longer sleep
 * only leaves the CPU idle once the reader has drained the pipe. */
static int several_cpus(void)
{
	cpu_set_t set;

	return sched_getaffinity(0, sizeof(set), &set) == 0 &&
	       CPU_COUNT(&set) > 1;
}

void stdout_pace_init(int fd)
{
	struct stat st;
	int size;

	stdout_fd = fd;
	if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) && several_cpus() &&
	    (size = fcntl(fd, F_GETPIPE_SZ)) > 0)
		stdout_pace.capacity = (size_t)size;
}

static int stdout_sample(uint64_t *unread, int64_t *now_ns)
{
	struct timespec now;
	int n = 0;

	if (stdout_pace.capacity == 0 || ioctl(stdout_fd, FIONREAD, &n) == -1 ||
	    n < 0 || clock_gettime(CLOCK_MONOTONIC, &now) == -1)
		return -1;
	*unread = (uint64_t)n;
	*now_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	return 0;
}

int64_t stdout_pace_wait(uint64_t written)
{
	uint64_t unread;
	int64_t now;

	if (stdout_sample(&unread, &now) == -1)
		return 0;
	return outpace_wait(&stdout_pace, written, unread, now);
}

int stdout_pace_woke(void)
{
	uint64_t unread;
	int64_t now;

	return stdout_sample(&unread, &now) == -1 ||
	       outpace_woke(&stdout_pace, unread, now);
}
