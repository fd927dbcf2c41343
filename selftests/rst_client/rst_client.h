/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of rst_client.c: the system calls, the reporting of checks, a
 * mapped ring with the protocols of Documentation/userspace-api/ringbuffer.rst
 * (producing, consuming, side locks) and a few process helpers.
 */
#ifndef RST_CLIENT_H
#define RST_CLIENT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <linux/ringbuffer.h>
#include <linux/time_types.h>

/* The numbers of the generic system call table, x86-64 included. */
#ifndef __NR_ringbuffer
#define __NR_ringbuffer		463
#define __NR_ringbuffer_wait	464
#define __NR_ringbuffer_wakeup	465
#endif

#define PAGE_SIZE_BYTES		4096u

typedef _Atomic uint32_t atomic_u32;

/* The C library does not wrap the calls yet. */
static inline long sys_ringbuffer(unsigned int fd, unsigned int side, uint32_t size,
				  uint64_t *addr, unsigned int flags)
{
	return syscall(__NR_ringbuffer, fd, side, size, addr, flags);
}

static inline long sys_ringbuffer_wait(unsigned int fd, unsigned int side, uint32_t min,
				       const struct __kernel_timespec *timeout,
				       unsigned int flags)
{
	return syscall(__NR_ringbuffer_wait, fd, side, min, timeout, flags);
}

static inline long sys_ringbuffer_wakeup(unsigned int fd, unsigned int side,
					 unsigned int flags)
{
	return syscall(__NR_ringbuffer_wakeup, fd, side, flags);
}

static inline uint32_t my_tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

static const struct __kernel_timespec zero_timeout = { 0, 0 };

/* ---------------------------------------------------------------------- */
/* Reporting                                                               */
/* ---------------------------------------------------------------------- */

/*
 * Every test runs in a process of its own and forks helpers that check
 * things too, so the numbering and the counts live in shared memory.
 */
struct report {
	atomic_int last_number;
	atomic_int passed;
	atomic_int failed;
};

extern struct report *report;
extern const char *current_test;
extern bool forced_ring_mode;

static inline const char *errno_name(int err)
{
	const char *name = strerrorname_np(err);

	return name ? name : "?";
}

/* A "# ..." line: information that is not a check. */
__attribute__((format(printf, 1, 2)))
static inline void note(const char *fmt, ...)
{
	char text[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	printf("# %s: %s\n", current_test, text);
	fflush(stdout);
}

/*
 * One check: "ok N - test: what", or "not ok N - test: what (detail)".
 * The detail says what was seen; it is printed only on failure.
 */
__attribute__((format(printf, 3, 4)))
static inline bool check(bool ok, const char *what, const char *detail_fmt, ...)
{
	char detail[600];
	va_list ap;
	int number;

	va_start(ap, detail_fmt);
	vsnprintf(detail, sizeof(detail), detail_fmt, ap);
	va_end(ap);
	number = atomic_fetch_add(&report->last_number, 1) + 1;
	atomic_fetch_add(ok ? &report->passed : &report->failed, 1);
	if (ok)
		printf("ok %d - %s: %s\n", number, current_test, what);
	else
		printf("not ok %d - %s: %s (%s)\n", number, current_test, what, detail);
	fflush(stdout);
	return ok;
}

/* A description with values in it, for check() and skip(). */
__attribute__((format(printf, 1, 2)))
static inline const char *text(const char *fmt, ...)
{
	static char buffers[4][300];
	static unsigned int next;
	char *buf = buffers[next++ % 4];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buffers[0]), fmt, ap);
	va_end(ap);
	return buf;
}

/* A check that cannot be made here; counted as passed, as TAP does. */
static inline void skip(const char *what, const char *reason)
{
	int number = atomic_fetch_add(&report->last_number, 1) + 1;

	atomic_fetch_add(&report->passed, 1);
	printf("ok %d - %s: %s # SKIP %s\n", number, current_test, what, reason);
	fflush(stdout);
}

/*
 * With fs.pipe-ring-force every new pipe starts in ring mode, so checks
 * about a pipe that is not in ring mode cannot hold: they skip instead.
 */
static inline bool skipped_in_forced_mode(const char *what)
{
	if (!forced_ring_mode)
		return false;
	skip(what, "forced ring mode");
	return true;
}

/* The call must fail with one of the listed errors (a 0-terminated list). */
static inline bool expect_failure_result(long rc, int err, const char *what,
					 const int *allowed)
{
	char wanted[200] = "";
	bool ok = false;

	for (const int *e = allowed; *e; e++) {
		size_t len = strlen(wanted);

		snprintf(wanted + len, sizeof(wanted) - len, "%s%s",
			 e == allowed ? "" : " or ", errno_name(*e));
		if (rc == -1 && err == *e)
			ok = true;
	}
	return check(ok, what, "got %ld %s, want -1 %s", rc, rc == -1 ? errno_name(err) : "",
		     wanted);
}

#define EXPECT_FAILURE(call, what, ...) ({					\
	errno = 0;								\
	long rc_ = (long)(call);						\
	int err_ = errno;							\
	expect_failure_result(rc_, err_, what, (const int[]){ __VA_ARGS__, 0 }); \
})

#define EXPECT_VALUE(call, want, what) ({					\
	errno = 0;								\
	long rc_ = (long)(call);						\
	int err_ = errno;							\
	check(rc_ == (long)(want), what, "got %ld %s, want %ld", rc_,		\
	      rc_ == -1 ? errno_name(err_) : "", (long)(want));			\
})

/* The exit status of a test process that died in its setup, already reported. */
#define EXIT_SETUP_FAILED	3

/* Failure of the test's own setup: not a statement about the kernel. */
static inline void die(const char *what)
{
	check(false, "setup", "%s: %s", what, strerror(errno));
	_exit(EXIT_SETUP_FAILED);
}

/* ---------------------------------------------------------------------- */
/* Time and processes                                                      */
/* ---------------------------------------------------------------------- */

static inline int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/*
 * Polls state that another task changes, yielding the CPU in between;
 * true if the condition became true within ms.  Never used to wait for
 * time to pass: ms only bounds a wait that should end much sooner.
 */
#define WAIT_UNTIL(cond, ms) ({							\
	int64_t deadline_ = now_ms() + (ms);					\
	bool met_;								\
	while (!(met_ = !!(cond)) && now_ms() < deadline_)			\
		sched_yield();							\
	met_;									\
})

static inline void make_pipe(int fds[2])
{
	if (pipe(fds))
		die("pipe");
}

/* fork(2) for a helper that must not outlive the test nor hang. */
static inline pid_t fork_helper(void)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(60);
	}
	return pid;
}

/* The exit status of a child, or 1000 + the signal that killed it. */
static inline int wait_child(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFSIGNALED(status))
		return 1000 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

static inline bool child_still_running(pid_t pid)
{
	return waitpid(pid, NULL, WNOHANG) == 0;
}

/* A one-way channel of single bytes between processes, for ordering steps. */
struct channel {
	int read_fd, write_fd;
};

static inline void channel_init(struct channel *c)
{
	int fds[2];

	make_pipe(fds);
	c->read_fd = fds[0];
	c->write_fd = fds[1];
}

static inline void channel_send(struct channel *c, int byte)
{
	char b = (char)byte;

	if (write(c->write_fd, &b, 1) != 1)
		die("channel_send");
}

/* The byte received, or -1 if none came within ms. */
static inline int channel_receive(struct channel *c, int ms)
{
	struct pollfd pfd = { .fd = c->read_fd, .events = POLLIN };
	unsigned char b;
	int rc;

	do
		rc = poll(&pfd, 1, ms);
	while (rc < 0 && errno == EINTR);
	if (rc <= 0 || read(c->read_fd, &b, 1) != 1)
		return -1;
	return b;
}

/* The scheduler state letter of a task (R, S, D, T, ...) from /proc. */
static inline char task_state(pid_t tid)
{
	char path[64], buf[512], *paren;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return '?';
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return '?';
	buf[len] = 0;
	paren = strrchr(buf, ')');
	return paren && paren[1] && paren[2] ? paren[2] : '?';
}

static inline ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, (char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += n;
	}
	return done;
}

static inline ssize_t write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += n;
	}
	return done;
}

/* ---------------------------------------------------------------------- */
/* A mapping of one side of a ring                                         */
/* ---------------------------------------------------------------------- */

struct ring {
	int fd;
	unsigned int side;		/* RINGBUFFER_READ or RINGBUFFER_WRITE */
	char *base;
	uint64_t map_size;
	uint32_t size, mask;
	const struct ringbuffer_header *header;
	/* Words the header points to; NULL where the offset is 0. */
	atomic_u32 *head, *tail, *producer_lock, *consumer_lock, *flags;
	atomic_u32 *read_waiters, *write_waiters;
	atomic_u32 *producer_lock_waiters, *consumer_lock_waiters;
	atomic_u32 *producer_keeper, *consumer_keeper;
	atomic_u32 *producer_busy, *consumer_busy;
	atomic_u32 *read_wait_min, *write_wait_min;
	atomic_u32 *producer_held, *consumer_held;
	atomic_u32 *read_futex, *write_futex;
	/* The same words for the side this mapping is for. */
	atomic_u32 *lock, *lock_waiters, *keeper, *busy, *held;
	char *data;
};

#define load_relaxed(p)	atomic_load_explicit((p), memory_order_relaxed)
#define load_acquire(p)	atomic_load_explicit((p), memory_order_acquire)

static inline atomic_u32 *ring_word(char *base, uint32_t offset)
{
	return offset ? (atomic_u32 *)(base + offset) : NULL;
}

/*
 * ringbuffer(2) and the header checks the document asks for first.
 * Returns 0, -errno, or -EPROTO for a magic or version this client does
 * not know (the mapping is then unmapped again).
 */
static inline int ring_map(struct ring *r, int fd, unsigned int side, uint32_t size)
{
	const struct ringbuffer_offsets *o;
	uint64_t addr = 0;

	memset(r, 0, sizeof(*r));
	if (sys_ringbuffer(fd, side, size, &addr, 0))
		return -errno;
	r->fd = fd;
	r->side = side;
	r->base = (char *)(uintptr_t)addr;
	r->header = (const struct ringbuffer_header *)r->base;
	if (r->header->magic != RINGBUFFER_MAGIC || r->header->version != RINGBUFFER_VERSION) {
		munmap(r->base, r->header->map_size);
		r->base = NULL;
		return -EPROTO;
	}
	o = &r->header->offsets;
	r->map_size = r->header->map_size;
	r->size = r->header->size;
	r->mask = r->header->mask;
	/*
	 * 32-bit positions, the low halves, as the document allows any
	 * client: the library keeps 64-bit ones, so between them both
	 * widths are tried on the same rings.
	 */
	r->head = ring_word(r->base, o->head);
	r->tail = ring_word(r->base, o->tail);
	r->producer_lock = ring_word(r->base, o->producer_lock);
	r->consumer_lock = ring_word(r->base, o->consumer_lock);
	r->flags = ring_word(r->base, o->flags);
	r->read_waiters = ring_word(r->base, o->read_waiters);
	r->write_waiters = ring_word(r->base, o->write_waiters);
	r->producer_lock_waiters = ring_word(r->base, o->producer_lock_waiters);
	r->consumer_lock_waiters = ring_word(r->base, o->consumer_lock_waiters);
	r->producer_keeper = ring_word(r->base, o->producer_keeper);
	r->consumer_keeper = ring_word(r->base, o->consumer_keeper);
	r->producer_busy = ring_word(r->base, o->producer_busy);
	r->consumer_busy = ring_word(r->base, o->consumer_busy);
	r->read_wait_min = ring_word(r->base, o->read_wait_min);
	r->write_wait_min = ring_word(r->base, o->write_wait_min);
	r->producer_held = ring_word(r->base, o->producer_held);
	r->consumer_held = ring_word(r->base, o->consumer_held);
	r->read_futex = ring_word(r->base, o->read_futex);
	r->write_futex = ring_word(r->base, o->write_futex);
	r->data = r->base + o->data;
	if (side == RINGBUFFER_WRITE) {
		r->lock = r->producer_lock;
		r->lock_waiters = r->producer_lock_waiters;
		r->keeper = r->producer_keeper;
		r->busy = r->producer_busy;
		r->held = r->producer_held;
	} else {
		r->lock = r->consumer_lock;
		r->lock_waiters = r->consumer_lock_waiters;
		r->keeper = r->consumer_keeper;
		r->busy = r->consumer_busy;
		r->held = r->consumer_held;
	}
	return 0;
}

static inline void ring_unmap(struct ring *r)
{
	if (r->base)
		munmap(r->base, r->map_size);
	r->base = NULL;
}

/*
 * Side locks: take the word with a compare-and-swap of our thread id, (4),
 * say so in the held word of our own page, (10), and check that the word
 * is still ours, (11).
 */
static inline int side_lock_take(struct ring *r)
{
	uint32_t me = my_tid();

	for (int attempts = 0;; attempts++) {
		uint32_t expected = 0;

		if (atomic_compare_exchange_weak_explicit(r->lock, &expected, me,
							  memory_order_acquire,
							  memory_order_relaxed)) {
			atomic_store_explicit(r->held, me, memory_order_relaxed);
			atomic_signal_fence(memory_order_seq_cst);
			if (load_relaxed(r->lock) == me)
				return 0;
			/* The kernel freed it meanwhile: not ours. */
			expected = me;
			atomic_compare_exchange_strong_explicit(r->held, &expected, 0,
								memory_order_relaxed,
								memory_order_relaxed);
			continue;
		}
		/* Spin a little before sleeping, as the document suggests. */
		if (attempts < 100) {
			sched_yield();
			continue;
		}
		if (sys_ringbuffer_wait(r->fd, r->side, 0, NULL, RINGBUFFER_WAIT_LOCK) < 0 &&
		    errno != EINTR)
			return -errno;
	}
}

/*
 * Release, (12), (5) then the full fence (3), and wake the lock waiters if
 * there are any.  Returns whether it made the RINGBUFFER_WAKE_LOCK call.
 */
static inline bool side_lock_release(struct ring *r)
{
	atomic_store_explicit(r->held, 0, memory_order_relaxed);
	atomic_store_explicit(r->lock, 0, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	if (load_relaxed(r->lock_waiters)) {
		sys_ringbuffer_wakeup(r->fd, r->side, RINGBUFFER_WAKE_LOCK);
		return true;
	}
	return false;
}

/*
 * The sleeper checks after a position store: call ringbuffer_wakeup() if
 * the other side has sleepers and the ring holds at least their minimum
 * (any amount where the kernel has no minimum words).  Return whether the
 * call was made.
 */
static inline bool wake_consumers_if_needed(struct ring *r, uint32_t new_head)
{
	uint32_t min = r->read_wait_min ? load_relaxed(r->read_wait_min) : 0;

	if (load_relaxed(r->read_waiters) && new_head - load_relaxed(r->tail) >= min) {
		sys_ringbuffer_wakeup(r->fd, RINGBUFFER_WRITE, 0);
		return true;
	}
	return false;
}

static inline bool wake_producers_if_needed(struct ring *r, uint32_t new_tail)
{
	uint32_t min = r->write_wait_min ? load_relaxed(r->write_wait_min) : 0;

	if (load_relaxed(r->write_waiters) &&
	    r->size - (load_relaxed(r->head) - new_tail) >= min) {
		sys_ringbuffer_wakeup(r->fd, RINGBUFFER_READ, 0);
		return true;
	}
	return false;
}

/* Whether the last ring_produce()/ring_consume() made the wake-up call. */
extern bool last_copy_woke_other_side;

/*
 * The producer of "Producing and consuming", with the producer lock if
 * @locked: publishes between @min_len and @max_len bytes and waits,
 * without the lock, until @min_len bytes of space are free, so that a
 * message of up to PIPE_BUF bytes is never split.  Returns the bytes
 * published or -errno (-EPIPE once no consumer is left).
 */
static inline long ring_produce(struct ring *r, const void *buf, uint32_t min_len,
				uint32_t max_len, bool locked)
{
	for (;;) {
		uint32_t head, tail, space, len;

		if (load_acquire(r->flags) & RINGBUFFER_BROKEN)
			return -EPIPE;
		if (locked) {
			int err = side_lock_take(r);

			if (err)
				return err;
		}
		head = load_relaxed(r->head);
		tail = load_acquire(r->tail);					/* (1) */
		if (head - tail > r->size) {
			if (locked)
				side_lock_release(r);
			return -EIO;
		}
		space = r->size - (head - tail);
		if (space < min_len) {
			if (locked)
				side_lock_release(r);
			if (sys_ringbuffer_wait(r->fd, RINGBUFFER_WRITE, min_len, NULL, 0) < 0 &&
			    errno != EINTR)
				return -errno;
			continue;
		}
		len = space < max_len ? space : max_len;
		memcpy(r->data + (head & r->mask), buf, len);
		atomic_store_explicit(r->head, head + len, memory_order_release);	/* (2) */
		if (locked)
			side_lock_release(r);	/* its fence serves as (3) too */
		else
			atomic_thread_fence(memory_order_seq_cst);			/* (3) */
		last_copy_woke_other_side = wake_consumers_if_needed(r, head + len);
		return len;
	}
}

/* The consumer: takes up to @max_len bytes; 0 at end of file; -errno. */
static inline long ring_consume(struct ring *r, void *buf, uint32_t max_len, bool locked)
{
	for (;;) {
		uint32_t head, tail, len;

		if (locked) {
			int err = side_lock_take(r);

			if (err)
				return err;
		}
		tail = load_relaxed(r->tail);
		head = load_acquire(r->head);					/* (1) */
		if (head - tail > r->size) {
			if (locked)
				side_lock_release(r);
			return -EIO;
		}
		if (head == tail) {
			/* After seeing EOF, load head again: data may have come just before. */
			uint32_t flags = load_acquire(r->flags);

			head = load_acquire(r->head);
			if (locked)
				side_lock_release(r);
			if (head != tail)
				continue;
			if (flags & RINGBUFFER_EOF)
				return 0;
			if (sys_ringbuffer_wait(r->fd, RINGBUFFER_READ, 1, NULL, 0) < 0 &&
			    errno != EINTR)
				return -errno;
			continue;
		}
		len = head - tail < max_len ? head - tail : max_len;
		memcpy(buf, r->data + (tail & r->mask), len);
		atomic_store_explicit(r->tail, tail + len, memory_order_release);	/* (2) */
		if (locked)
			side_lock_release(r);
		else
			atomic_thread_fence(memory_order_seq_cst);			/* (3) */
		last_copy_woke_other_side = wake_producers_if_needed(r, tail + len);
		return len;
	}
}

#endif /* RST_CLIENT_H */
