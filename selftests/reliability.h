/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the reliability selftests (fuzzing, hostile shared memory,
 * privilege separation, fault injection, limits, death in the middle):
 * seeded random numbers, sysctls, dropping privileges, bounded waits for
 * children and for tasks to fall asleep, and record framing.
 *
 * Every wait here has a deadline, so that a hang fails the test instead
 * of stalling it; none of them is a sleep used as synchronisation.
 */
#ifndef RELIABILITY_H
#define RELIABILITY_H

#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/time.h>

#include "ringbuffer_util.h"
#include "../userspace/tests/shim_util.h"

#define NOBODY_UID	65534
#define NOBODY_GID	65534

#define SYSCTL_FORCE		"/proc/sys/fs/pipe-ring-force"
#define SYSCTL_MAX_SIZE		"/proc/sys/fs/pipe-max-size"
#define SYSCTL_PAGES_SOFT	"/proc/sys/fs/pipe-user-pages-soft"
#define SYSCTL_PAGES_HARD	"/proc/sys/fs/pipe-user-pages-hard"

/*
 * splitmix64: small, fast and good enough to drive a fuzzer; the same
 * seed gives the same sequence on every machine.
 */
struct rng {
	uint64_t state;
};

static inline uint64_t rng_next(struct rng *r)
{
	uint64_t z = (r->state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A number in [0, n), n > 0. */
static inline uint64_t rng_below(struct rng *r, uint64_t n)
{
	return rng_next(r) % n;
}

static inline bool rng_chance(struct rng *r, unsigned int percent)
{
	return rng_below(r, 100) < percent;
}

/*
 * The seed of a test: @fallback, unless RB_SEED is set (the soak varies
 * it); iteration counts scale with RB_SCALE (default 1).
 */
static inline uint64_t rel_seed(uint64_t fallback)
{
	const char *s = getenv("RB_SEED");

	return s && *s ? strtoull(s, NULL, 0) ^ fallback : fallback;
}

static inline unsigned long rel_scale(unsigned long count)
{
	const char *s = getenv("RB_SCALE");
	unsigned long k = s && *s ? strtoul(s, NULL, 0) : 1;

	return count * (k ? k : 1);
}

static inline long sysctl_read(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static inline int sysctl_write(const char *path, long v)
{
	FILE *f = fopen(path, "w");
	int bad;

	if (!f)
		return -1;
	bad = fprintf(f, "%ld\n", v) < 0;
	return fclose(f) || bad ? -1 : 0;
}

/* A file of debugfs or /proc that takes a string (fault injection knobs). */
static inline int knob_write(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, value, strlen(value));
	close(fd);
	return n == (ssize_t)strlen(value) ? 0 : -1;
}

static inline int knob_read(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = 0;
	return 0;
}

/*
 * Become the unprivileged user, for good.  Dumpable again afterwards so
 * that our own /proc files (fail-nth, make-it-fail) stay ours.
 */
static inline int become_nobody(void)
{
	if (setgroups(0, NULL) || setgid(NOBODY_GID) || setuid(NOBODY_UID))
		return -1;
	return prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}

static void rel_ignore_signal(int sig)
{
	(void)sig;
}

/*
 * SIGALRM interrupts a blocking call after @ms milliseconds (EINTR: the
 * handler has no SA_RESTART).  Bounds calls that may legitimately block.
 */
static inline void interrupt_after_ms(unsigned int ms)
{
	struct sigaction sa = { .sa_handler = rel_ignore_signal };
	struct itimerval it = { { 0, 0 }, { ms / 1000, (ms % 1000) * 1000 } };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
}

static inline void interrupt_cancel(void)
{
	struct itimerval it = { { 0, 0 }, { 0, 0 } };

	setitimer(ITIMER_REAL, &it, NULL);
}

/*
 * waitpid() with a deadline: a child that has not exited after @secs is
 * killed and -ETIMEDOUT returned.  0 and *@status otherwise.
 */
static inline int wait_child(pid_t pid, unsigned int secs, int *status)
{
	int st = 0;
	pid_t got;

	interrupt_after_ms(secs * 1000);
	got = waitpid(pid, &st, 0);
	interrupt_cancel();
	if (got == pid) {
		if (status)
			*status = st;
		return 0;
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	if (status)
		*status = st;
	return -ETIMEDOUT;
}

/* The exit code of a child that exited, or 1000 + signal, or -1. */
static inline int child_result(pid_t pid, unsigned int secs)
{
	int st;

	if (wait_child(pid, secs, &st))
		return -1;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return WIFSIGNALED(st) ? 1000 + WTERMSIG(st) : -1;
}

/* One line of /proc/PID/...; "" if it cannot be read. */
static inline void proc_read(pid_t pid, const char *what, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, what);
	buf[0] = 0;
	f = fopen(path, "r");
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = 0;
	fclose(f);
}

/* The scheduler state letter of @pid (R, S, D, T, Z, ...), or 0. */
static inline char task_state(pid_t pid)
{
	char buf[512], *p;

	proc_read(pid, "stat", buf, sizeof(buf));
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/*
 * Wait (at most @secs) until @pid sleeps in the kernel, in a function
 * whose name contains @wchan (any function if NULL), and in system call
 * @nr (any if < 0).  The wchan is set only once the task is off the run
 * queue, so this does not return while it is still on its way to sleep.
 */
static inline bool task_asleep_in(pid_t pid, const char *wchan, long nr,
				  double secs)
{
	double end = rb_now() + secs;
	char buf[256];

	while (rb_now() < end) {
		char state = task_state(pid);

		if (state == 'S' || state == 'D') {
			proc_read(pid, "wchan", buf, sizeof(buf));
			if (buf[0] && strcmp(buf, "0") &&
			    (!wchan || strstr(buf, wchan))) {
				proc_read(pid, "syscall", buf, sizeof(buf));
				if (nr < 0 || strtol(buf, NULL, 10) == nr)
					return true;
			}
		}
		if (!state)
			return false;
		sched_yield();
	}
	return false;
}

/*
 * Whether the number of live rings (debugfs) is back to @n within @secs,
 * as it must be once a test's rings are unmapped and their files closed.
 * The count is global: under the soak (RB_SOAK set) other processes make
 * and free rings meanwhile, and it says nothing.
 */
static inline bool rings_back_to(long n, double secs)
{
	double end = rb_now() + secs;

	if (getenv("RB_SOAK"))
		return true;
	while (rb_live_rings() != n)
		if (rb_now() > end)
			return false;
	return true;
}

/* Fixed-size records framed as in userspace/tests/shim_util.h. */
#define REC_MIN		16

/*
 * Read records of @size bytes from @buf (@len bytes, a multiple of @size)
 * and check each one; the count of good ones, or -1 at the first bad one.
 */
static inline long records_check(const uint8_t *buf, size_t len, size_t size,
				 struct record_hdr *last)
{
	long n = 0;

	for (size_t off = 0; off + size <= len; off += size, n++)
		if (!record_ok(buf + off, size, last))
			return -1;
	return n;
}

#endif /* RELIABILITY_H */
