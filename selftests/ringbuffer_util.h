/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the ring buffer selftests: system call wrappers, a
 * mapped view of one side of a ring, and the test device's byte sequence.
 */
#ifndef RINGBUFFER_UTIL_H
#define RINGBUFFER_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/ringbuffer.h>
#include <linux/ringbuffer_test.h>

#define RBTEST_DEV "/dev/ringbuffer-test"

static inline long sys_ringbuffer(int fd, unsigned int rw, uint32_t size,
				  uint64_t *addr, unsigned int flags)
{
	return syscall(__NR_ringbuffer, fd, rw, size, addr, flags);
}

static inline long sys_ringbuffer_wait(int fd, unsigned int rw, uint32_t min,
				       const struct timespec *timeout,
				       unsigned int flags)
{
	return syscall(__NR_ringbuffer_wait, fd, rw, min, timeout, flags);
}

static inline long sys_ringbuffer_wakeup(int fd, unsigned int rw,
					 unsigned int flags)
{
	return syscall(__NR_ringbuffer_wakeup, fd, rw, flags);
}

/* The result of a call that must fail: its errno, or 0 if it succeeded. */
#define FAILS_WITH(call) ((call) == -1 ? errno : 0)

/* One ringbuffer(2) mapping, with the words resolved through the offsets. */
struct rb_view {
	int fd;
	unsigned int rw;
	void *base;
	const struct ringbuffer_header *hdr;
	_Atomic uint32_t *head;
	_Atomic uint32_t *tail;
	_Atomic uint32_t *producer_lock;
	_Atomic uint32_t *consumer_lock;
	_Atomic uint32_t *flags;
	_Atomic uint32_t *read_waiters;
	_Atomic uint32_t *write_waiters;
	_Atomic uint32_t *producer_lock_waiters;
	_Atomic uint32_t *consumer_lock_waiters;
	/* Kept locks; NULL on a kernel without them. */
	_Atomic uint32_t *producer_keeper;
	_Atomic uint32_t *consumer_keeper;
	_Atomic uint32_t *producer_busy;
	_Atomic uint32_t *consumer_busy;
	uint8_t *data;
	uint32_t size;
	uint32_t mask;
	size_t map_size;
};

static inline int rb_view_map(struct rb_view *v, int fd, unsigned int rw,
			      uint32_t size)
{
	uint64_t addr = 0;
	const struct ringbuffer_offsets *off;
	char *base;

	if (sys_ringbuffer(fd, rw, size, &addr, 0))
		return -errno;
	base = (char *)(uintptr_t)addr;
	v->fd = fd;
	v->rw = rw;
	v->base = base;
	v->hdr = (const struct ringbuffer_header *)base;
	off = &v->hdr->offsets;
	v->head = (_Atomic uint32_t *)(base + off->head);
	v->tail = (_Atomic uint32_t *)(base + off->tail);
	v->producer_lock = (_Atomic uint32_t *)(base + off->producer_lock);
	v->consumer_lock = (_Atomic uint32_t *)(base + off->consumer_lock);
	v->flags = (_Atomic uint32_t *)(base + off->flags);
	v->read_waiters = (_Atomic uint32_t *)(base + off->read_waiters);
	v->write_waiters = (_Atomic uint32_t *)(base + off->write_waiters);
	v->producer_lock_waiters =
		(_Atomic uint32_t *)(base + off->producer_lock_waiters);
	v->consumer_lock_waiters =
		(_Atomic uint32_t *)(base + off->consumer_lock_waiters);
	v->producer_keeper = v->consumer_keeper = NULL;
	v->producer_busy = v->consumer_busy = NULL;
	if (off->producer_keeper) {
		v->producer_keeper = (_Atomic uint32_t *)(base + off->producer_keeper);
		v->consumer_keeper = (_Atomic uint32_t *)(base + off->consumer_keeper);
		v->producer_busy = (_Atomic uint32_t *)(base + off->producer_busy);
		v->consumer_busy = (_Atomic uint32_t *)(base + off->consumer_busy);
	}
	v->data = (uint8_t *)base + off->data;
	v->size = v->hdr->size;
	v->mask = v->hdr->mask;
	v->map_size = v->hdr->map_size;
	return 0;
}

static inline int rb_view_unmap(struct rb_view *v)
{
	return munmap(v->base, v->map_size);
}

/* Whether every new pipe is created in ring mode (fs.pipe-ring-force). */
static inline bool forced_ring_mode(void)
{
	FILE *f = fopen("/proc/sys/fs/pipe-ring-force", "r");
	int v = 0;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v == 1;
}

/* Whether the pipe of @fd has a ring (ring mode), as seen from side @rw. */
static inline bool in_ring_mode(int fd, unsigned int rw)
{
	struct timespec zero = { 0, 0 };

	return sys_ringbuffer_wait(fd, rw, 0, &zero, 0) >= 0 || errno != EINVAL;
}

/* Put the pipe of @fd in ring mode without keeping a mapping. */
static inline int convert_pipe(int fd, unsigned int rw, uint32_t size)
{
	struct rb_view v = { 0 };
	int ret = rb_view_map(&v, fd, rw, size);

	if (!ret)
		rb_view_unmap(&v);
	return ret;
}

/* Byte @pos of the test device's sequence. */
static inline uint8_t rbtest_byte(uint64_t pos)
{
	return (uint8_t)((uint32_t)(pos >> 2) >> ((pos & 3) * 8));
}

static inline void rbtest_fill(uint8_t *buf, uint64_t pos, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = rbtest_byte(pos + i);
}

/* Index of the first byte of @buf that is not the sequence, or -1. */
static inline long rbtest_check(const uint8_t *buf, uint64_t pos, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != rbtest_byte(pos + i))
			return (long)i;
	return -1;
}

/*
 * Consumer side: take up to @max bytes from the ring, waiting while it is
 * empty.  Returns the bytes taken and checked (0 at EOF), or -errno.
 */
static inline long rb_consume_seq(struct rb_view *v, uint64_t *pos,
				  size_t max)
{
	for (;;) {
		/* Our own position: nobody else moves it. */
		uint32_t tail = atomic_load_explicit(v->tail, memory_order_relaxed);
		/* Acquire: the data below head is visible once head is. */
		uint32_t head = atomic_load_explicit(v->head, memory_order_acquire);
		uint32_t used = head - tail;
		long n, bad;

		if (used > v->size)
			return -EIO;
		if (!used) {
			long ret = sys_ringbuffer_wait(v->fd, RINGBUFFER_READ, 1,
						       NULL, 0);
			if (ret < 0)
				return -errno;
			if (ret == 0)
				return 0;
			continue;
		}
		n = used < max ? used : max;
		bad = rbtest_check(v->data + (tail & v->mask), *pos, n);
		if (bad >= 0)
			return -EBADMSG;
		*pos += n;
		/* Release: we are done reading the bytes we give back. */
		atomic_store_explicit(v->tail, tail + n, memory_order_release);
		/* Full fence between our store and the load of the sleeper count. */
		atomic_thread_fence(memory_order_seq_cst);
		if (atomic_load_explicit(v->write_waiters, memory_order_relaxed))
			sys_ringbuffer_wakeup(v->fd, RINGBUFFER_READ, 0);
		return n;
	}
}

/*
 * Producer side: put @len bytes of the sequence into the ring, at most
 * @chunk at a time, waiting for space.  Returns 0 or -errno.
 */
static inline int rb_produce_seq(struct rb_view *v, uint64_t *pos, size_t len,
				 size_t chunk)
{
	while (len) {
		uint32_t head = atomic_load_explicit(v->head, memory_order_relaxed);
		/* Acquire: the consumer is done with the space below tail. */
		uint32_t tail = atomic_load_explicit(v->tail, memory_order_acquire);
		uint32_t space = v->size - (head - tail);
		size_t n;

		if (head - tail > v->size)
			return -EIO;
		if (!space) {
			if (sys_ringbuffer_wait(v->fd, RINGBUFFER_WRITE, 1, NULL, 0) < 0)
				return -errno;
			continue;
		}
		n = space < chunk ? space : chunk;
		n = n < len ? n : len;
		rbtest_fill(v->data + (head & v->mask), *pos, n);
		*pos += n;
		len -= n;
		/* Release: the data is written before head says so. */
		atomic_store_explicit(v->head, head + n, memory_order_release);
		/* Full fence between our store and the load of the sleeper count. */
		atomic_thread_fence(memory_order_seq_cst);
		if (atomic_load_explicit(v->read_waiters, memory_order_relaxed))
			sys_ringbuffer_wakeup(v->fd, RINGBUFFER_WRITE, 0);
	}
	return 0;
}

/*
 * The side lock, for rings with several producers or consumers (pipes):
 * compare-and-swap from 0 to our thread id, sleep in the kernel when it
 * is held, never sleep for data or space while holding it.
 */
static inline _Atomic uint32_t *rb_lock_word(struct rb_view *v)
{
	return v->rw == RINGBUFFER_READ ? v->consumer_lock : v->producer_lock;
}

static inline int rb_side_lock(struct rb_view *v)
{
	uint32_t tid = (uint32_t)syscall(SYS_gettid);

	for (int spins = 0;; spins++) {
		uint32_t free_word = 0;

		/* Acquire: what the last holder did is visible to us. */
		if (atomic_compare_exchange_weak_explicit(rb_lock_word(v),
				&free_word, tid, memory_order_acquire,
				memory_order_relaxed))
			return 0;
		if (spins < 64)
			continue;
		if (sys_ringbuffer_wait(v->fd, v->rw, 0, NULL,
					RINGBUFFER_WAIT_LOCK) && errno != EINTR)
			return -errno;
	}
}

static inline void rb_side_unlock(struct rb_view *v)
{
	_Atomic uint32_t *waiters = v->rw == RINGBUFFER_READ ?
		v->consumer_lock_waiters : v->producer_lock_waiters;

	/* Release: our position store is visible before the lock is free. */
	atomic_store_explicit(rb_lock_word(v), 0, memory_order_release);
	/* Full fence between the stores and the loads of the sleeper counts. */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(waiters, memory_order_relaxed))
		sys_ringbuffer_wakeup(v->fd, v->rw, RINGBUFFER_WAKE_LOCK);
	if (v->rw == RINGBUFFER_WRITE) {
		if (atomic_load_explicit(v->read_waiters, memory_order_relaxed))
			sys_ringbuffer_wakeup(v->fd, RINGBUFFER_WRITE, 0);
	} else if (atomic_load_explicit(v->write_waiters, memory_order_relaxed)) {
		sys_ringbuffer_wakeup(v->fd, RINGBUFFER_READ, 0);
	}
}

/*
 * write(2) on a ring-mode pipe, in user space: up to PIPE_BUF bytes go in
 * whole.  Returns @len or -errno (-EPIPE without a reader).
 */
static inline long rb_pipe_write(struct rb_view *v, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		size_t want = len <= 4096 ? len : 1, n;
		uint32_t head, tail, space;
		long ret;

		if (atomic_load_explicit(v->flags, memory_order_acquire) &
		    RINGBUFFER_BROKEN)
			return -EPIPE;
		ret = rb_side_lock(v);
		if (ret)
			return ret;
		head = atomic_load_explicit(v->head, memory_order_relaxed);
		tail = atomic_load_explicit(v->tail, memory_order_acquire);
		space = v->size - (head - tail);
		if (head - tail > v->size) {
			rb_side_unlock(v);
			return -EIO;
		}
		if (space < want) {
			rb_side_unlock(v);
			if (sys_ringbuffer_wait(v->fd, RINGBUFFER_WRITE, want,
						NULL, 0) < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		n = len - done < space ? len - done : space;
		memcpy(v->data + (head & v->mask), (const char *)buf + done, n);
		atomic_store_explicit(v->head, head + n, memory_order_release);
		rb_side_unlock(v);
		done += n;
	}
	return len;
}

/* read(2) on a ring-mode pipe, in user space: bytes read, 0 at EOF, -errno. */
static inline long rb_pipe_read(struct rb_view *v, void *buf, size_t len)
{
	for (;;) {
		uint32_t head, tail, used;
		long ret = rb_side_lock(v);

		if (ret)
			return ret;
		tail = atomic_load_explicit(v->tail, memory_order_relaxed);
		head = atomic_load_explicit(v->head, memory_order_acquire);
		used = head - tail;
		if (used > v->size) {
			rb_side_unlock(v);
			return -EIO;
		}
		if (used) {
			size_t n = used < len ? used : len;

			memcpy(buf, v->data + (tail & v->mask), n);
			atomic_store_explicit(v->tail, tail + n, memory_order_release);
			rb_side_unlock(v);
			return n;
		}
		rb_side_unlock(v);
		ret = sys_ringbuffer_wait(v->fd, RINGBUFFER_READ, 1, NULL, 0);
		if (ret == 0)
			return 0;
		if (ret < 0 && errno != EINTR)
			return -errno;
	}
}

static inline int rbtest_stats(int fd, struct ringbuffer_test_stats *st)
{
	return ioctl(fd, RINGBUFFER_TEST_STATS, st);
}

/* How many rings exist in the kernel (debugfs), or -1. */
static inline long rb_live_rings(void)
{
	FILE *f = fopen("/sys/kernel/debug/ringbuffer/live", "r");
	long n = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &n) != 1)
		n = -1;
	fclose(f);
	return n;
}

/* Run @fn(@arg) in a child; return the signal that killed it, or 0. */
static inline int rb_child_signal(void (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		fn(arg);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

static inline void rb_poke(void *addr)
{
	*(volatile uint32_t *)addr = 0x5a5a5a5a;
}

static inline double rb_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif /* RINGBUFFER_UTIL_H */
