/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/* What the library's own tests see of it; not installed. */
#ifndef LIBRINGBUFFER_INTERNAL_H
#define LIBRINGBUFFER_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ringbuffer-syscalls.h"

/*
 * Aligned to a cache line pair, so that the producer's and the consumer's
 * structs, which each side writes (peer_pos, uncontended), never share one.
 */
#define RB_RING_ALIGN	128

/*
 * A position as this process keeps it: as wide as unsigned long, so the
 * whole 64-bit word on a 64-bit system and its low half on a 32-bit one.
 * Only the low 32 bits of a difference count (rb_used()).
 */
typedef unsigned long rb_pos;

struct __attribute__((aligned(RB_RING_ALIGN))) rb_ring {
	int fd;
	int rw;
	int mapped;
	void *base;
	size_t map_size;
	uint32_t size;
	uint32_t mask;
	_Atomic rb_pos *head;
	_Atomic rb_pos *tail;
	_Atomic uint32_t *flags;
	_Atomic uint32_t *lock;		/* our side's */
	/* In our mapping's own page: we vouch for the lock word there. */
	_Atomic uint32_t *lock_held;
	_Atomic uint32_t *lock_waiters;	/* our side's */
	_Atomic uint32_t *peer_waiters;	/* the other side's sleepers */
	/* Both counts as one 64-bit word, on a side we may keep (keeper). */
	_Atomic uint64_t *both_waiters;
	/* The least they wait for; NULL if the kernel does not say. */
	_Atomic uint32_t *peer_wait_min;
	_Atomic uint32_t *peer_lock;	/* the other side's lock word */
	/*
	 * Kept locks (RINGBUFFER_KEEP_LOCK); NULL if the kernel has none, or
	 * if lock_waiters and peer_waiters are not the two halves of one
	 * aligned 64-bit word, which a kept copy reads in one load as it
	 * leaves (rb_kept_waiters()).
	 */
	_Atomic uint32_t *keeper;	/* our side's, in the read-only header */
	_Atomic uint32_t *busy;		/* in our mapping's own page */
	_Atomic uint32_t *peer_keeper;
	/* The thread that keeps our side, as far as we know; 0 if none. */
	_Atomic uint32_t kept_by;
	/*
	 * Acquisitions of our side's word in a row that found it free and
	 * nobody waiting (negative after the side was taken back from us:
	 * not asked for again soon); changed by the holder only.
	 */
	int uncontended;
	/*
	 * The other side's position as last loaded.  It only moves forward
	 * (more data for a consumer, more space for a producer), so a stale
	 * copy can only understate what is there: it is reloaded when it
	 * does not show enough, saving a load of the peer's cache line per
	 * message.  That holds while nobody else moves our side: other
	 * holders may move both positions by whole laps of 2^32 bytes while
	 * we wait, after which the copy would overstate.  So when we take
	 * the word without keeping the side and find our position elsewhere
	 * than @own_left, where we left it, we set @peer_stale and reload.
	 * With 64-bit positions no move goes unseen; with 32-bit ones (or a
	 * 32-bit holder that stores only the low half) a move of exactly a
	 * multiple of 2^32 bytes would.
	 * Kept copies do not update @own_left, to keep their path short;
	 * the first acquisition after a keeping ends then reloads once.
	 * Nor do they test @peer_stale: keeping starts with a fresh copy.
	 */
	rb_pos peer_pos;
	int peer_stale;
	rb_pos own_left;
	uint8_t *data;
	/* Between rb_reserve/rb_peek and rb_commit/rb_consume (lock held): */
	rb_pos pos;
	size_t held;
	int holding;
};

/* Fill @r from a mapping at @base laid out as ringbuffer(2) does. */
int rb_init_mapping(struct rb_ring *r, int fd, int rw, void *base);

/*
 * Shared with the ringpipe shim, which carries its own copy of the
 * library: release the side lock after a change (waking lock waiters and
 * the peer's sleepers) or after none (lock waiters only), and publish our
 * position.  Not part of the library's ABI.
 */
#define RB_HIDDEN __attribute__((visibility("hidden")))
RB_HIDDEN int rb_kernel_has_rings(void);
/*
 * Take our side's lock: kept (no atomic operation), or from a free word
 * in at most @spins polls.  RB_LOCKED, RB_LOCK_BUSY (held by another),
 * or RB_LOCK_OWN_THREAD (this thread holds it already: a reserve without
 * commit, or a signal handler that interrupted a copy).
 */
enum rb_lock_result { RB_LOCKED, RB_LOCK_BUSY, RB_LOCK_OWN_THREAD };
RB_HIDDEN enum rb_lock_result rb_trylock(struct rb_ring *r, unsigned int spins);
/* Whether our side ended: no reader left (producer), no writer (consumer). */
RB_HIDDEN int rb_side_ended(const struct rb_ring *r);
/*
 * Uncontended acquisitions before a side is kept, and how many more after
 * it was taken back; changed only by tests that want many take-backs.
 */
RB_HIDDEN extern int rb_keep_after;
RB_HIDDEN extern int rb_keep_backoff;
/* Before the ring is unmapped: a side this thread keeps is let go. */
RB_HIDDEN void rb_let_go(struct rb_ring *r);
/*
 * The fast path of a side this thread keeps: enter a copy when @want
 * bytes of data or space are there (1; our position in *@own, the bytes
 * there in *@avail), else 0 and the general path; leave it having moved
 * @n bytes.  No system call, atomic read-modify-write or fence.
 */
RB_HIDDEN int rb_fast_enter(struct rb_ring *r, size_t want, rb_pos *own,
			    size_t *avail);
RB_HIDDEN void rb_fast_exit(struct rb_ring *r, rb_pos own, size_t n);
/*
 * The same for one buffer, whole, in one call: the bytes moved from @buf
 * (at most @len, none unless @want fit) or to it (at most @len), or 0
 * when the fast path cannot serve it.
 */
RB_HIDDEN size_t rb_fast_write(struct rb_ring *r, const void *buf, size_t len,
			       size_t want);
RB_HIDDEN size_t rb_fast_read(struct rb_ring *r, void *buf, size_t len);
RB_HIDDEN void rb_unlock(struct rb_ring *r);
RB_HIDDEN void rb_unlock_unchanged(struct rb_ring *r);
RB_HIDDEN void rb_publish(struct rb_ring *r, rb_pos own, size_t n);
/*
 * With the lock held: data (consumer) or space (producer), our position
 * in *@own; the peer's position is reloaded unless the cached one shows
 * @want.  -1 with EIO when the positions are more than the size apart.
 */
RB_HIDDEN long rb_avail_locked(struct rb_ring *r, rb_pos *own, size_t want);
/*
 * Poll, without the lock, until @want bytes of data or space may be
 * there or our side has ended (1), or until it is time to sleep in the
 * kernel instead (0); @awaited is how much the caller waits for in all.
 */
RB_HIDDEN int rb_spin_ready(struct rb_ring *r, size_t want, size_t awaited);

static inline void rb_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

#endif /* LIBRINGBUFFER_INTERNAL_H */
