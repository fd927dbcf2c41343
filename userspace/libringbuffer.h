/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libringbuffer: user space for ringbuffer(2) rings, pipes first.
 *
 * A struct rb_ring is one mapping of one side of the ring of a file
 * descriptor.  The copy API (rb_read, rb_write) has the semantics of
 * read(2) and write(2) on a pipe; the zero-copy API (rb_reserve/rb_commit
 * for producers, rb_peek/rb_consume for consumers) hands out spans of the
 * ring itself, always contiguous.  When the kernel has no ring support,
 * or the file type refuses a ring, a ring opens in fallback mode and the
 * copy API calls read(2) and write(2).
 *
 * Threads: one struct rb_ring may be used by several threads, and rings
 * of one pipe by several processes; the side lock orders them.  Do not
 * use one from a signal handler that may interrupt it on the same thread.
 */
#ifndef LIBRINGBUFFER_H
#define LIBRINGBUFFER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header; the library's soname is libringbuffer.so.0. */
#define LIBRINGBUFFER_VERSION_MAJOR	0
#define LIBRINGBUFFER_VERSION_MINOR	3
#define LIBRINGBUFFER_VERSION_PATCH	0

#define RB_READ		0	/* the consumer side */
#define RB_WRITE	1	/* the producer side */

struct rb_ring;

/*
 * Map side @rw of the ring of @fd, asking for at least @size bytes (a
 * power of two) if the file has no ring yet.  Returns NULL with errno set
 * on failure (ENOMEM, or EINVAL for a bad @fd number, @rw or @size: not
 * a power of two, or above RINGBUFFER_MAX_SIZE); a kernel or file
 * without rings gives a ring in fallback mode (rb_is_mapped() is 0).
 */
struct rb_ring *rb_open(int fd, int rw, uint32_t size);
/* Unmap; the fd stays open. */
void rb_close(struct rb_ring *r);

int rb_is_mapped(const struct rb_ring *r);
int rb_fd(const struct rb_ring *r);
/* Size of the data area, 0 in fallback mode. */
uint32_t rb_size(const struct rb_ring *r);

/*
 * read(2)/write(2) with pipe semantics: blocking unless the fd is
 * O_NONBLOCK, end of file, EPIPE and SIGPIPE, writes of up to PIPE_BUF
 * bytes whole.  Whenever the ring cannot serve a call at once, the real
 * system call does, so the kernel's semantics hold exactly.
 */
ssize_t rb_read(struct rb_ring *r, void *buf, size_t len);
ssize_t rb_write(struct rb_ring *r, const void *buf, size_t len);

/*
 * Several records at once: of the @n records in @rec (each at most
 * PIPE_BUF bytes), as many as there is space for go in, each whole and in
 * order, under one lock with one publish and one wake-up check.  Waits as
 * rb_write() does until the first one fits.  Returns the number of records
 * written (at least 1), or -1 with errno: EMSGSIZE for a record above
 * PIPE_BUF, EINVAL for @n < 1, or those of write(2).
 */
ssize_t rb_write_records(struct rb_ring *r, const struct iovec *rec, int n);

/*
 * Zero copy, producer: rb_reserve() returns a contiguous span of @len
 * bytes of free ring space, or NULL with errno EAGAIN (not enough space:
 * rb_wait() then), EPIPE (no reader), EMSGSIZE (@len above the size),
 * ENOTSUP (fallback mode), EIO (a peer broke the ring).  The side lock is
 * held until rb_commit() publishes @len bytes of it (at most what was
 * reserved; 0 publishes nothing).
 */
void *rb_reserve(struct rb_ring *r, size_t len);
int rb_commit(struct rb_ring *r, size_t len);

/*
 * Zero copy, consumer: rb_peek() returns the data in the ring and its
 * length (contiguous, at most @max), or NULL with errno EAGAIN (empty),
 * 0 (end of file), ENOTSUP or EIO.  The side lock is held until
 * rb_consume() gives back @len bytes of it.
 */
const void *rb_peek(struct rb_ring *r, size_t max, size_t *len);
int rb_consume(struct rb_ring *r, size_t len);

/*
 * Wait until @min bytes of data (consumer) or space (producer) are there,
 * or the other side is gone; spins briefly while the peer is running,
 * then sleeps in the kernel.  Returns the amount, 0 at end of file, or -1
 * with errno (EPIPE, EINTR, ETIMEDOUT with @timeout_ns >= 0).
 */
long rb_wait(struct rb_ring *r, uint32_t min, int64_t timeout_ns);

/*
 * Waiting next to other events, with futex_waitv(2) or io_uring's futex
 * operations: rb_futex_word() arms the side for futex waiters (once for
 * the ring, see RINGBUFFER_WAIT_FUTEX in ringbuffer_wait(2)) and returns
 * its futex word, which the kernel changes whenever it wakes the side.
 * Load the word with acquire semantics, then check with rb_wait(r, min,
 * 0), and while that fails with ETIMEDOUT, wait (a shared futex, 32-bit)
 * on the value loaded.  Returns NULL with errno ENOTSUP in fallback mode
 * or on a kernel without futex words, or an error of ringbuffer_wait(2).
 */
const uint32_t *rb_futex_word(struct rb_ring *r);

#ifdef __cplusplus
}
#endif

#endif /* LIBRINGBUFFER_H */
