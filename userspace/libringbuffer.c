// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libringbuffer: see libringbuffer.h and Documentation/userspace-api/
 * ringbuffer.rst of the kernel series for the protocol implemented here.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/ringbuffer.h>
#include <linux/time_types.h>

#include "libringbuffer.h"
#include "libringbuffer-internal.h"

/* How often a contended lock is polled before the kernel is asked, and
 * how many times a call goes back to the lock after a poll said go. */
#define RB_SPINS	64

/*
 * Uncontended acquisitions in a row after which the side is kept
 * (RINGBUFFER_KEEP_LOCK), and how many more wait for the next try once
 * the side was taken back or the kernel said no: taking a side back costs
 * the contender an IPI to the keeper's CPU, which should stay rare.
 */
int rb_keep_after = 64;
int rb_keep_backoff = 4096;

/*
 * How long an empty or full ring is polled before the caller sleeps in
 * the kernel (see rb_spin_ready()): a base, plus the time the peer needs
 * to produce or consume the bytes awaited at about 4 GB/s, restarted
 * whenever the peer is seen running, and never more than RB_SPIN_MAX_NS
 * in all.
 */
#define RB_SPIN_BASE_NS		2000
#define RB_SPIN_PS_PER_BYTE	250
#define RB_SPIN_MAX_NS		500000
/* Far longer than 16 polls take, even emulated: we were not running. */
#define RB_SPIN_PREEMPTED_NS	200000

static int kernel_has_rings;

static long sys_ringbuffer(int fd, unsigned int rw, uint32_t size,
			   uint64_t *addr, unsigned int flags)
{
#ifdef __NR_ringbuffer
	return syscall(__NR_ringbuffer, fd, rw, size, addr, flags);
#else
	(void)fd; (void)rw; (void)size; (void)addr; (void)flags;
	errno = ENOSYS;
	return -1;
#endif
}

static long sys_ringbuffer_wait(int fd, unsigned int rw, uint32_t min,
				const struct __kernel_timespec *timeout,
				unsigned int flags)
{
#ifdef __NR_ringbuffer_wait
	if (!kernel_has_rings) {
		errno = ENOSYS;
		return -1;
	}
	return syscall(__NR_ringbuffer_wait, fd, rw, min, timeout, flags);
#else
	(void)fd; (void)rw; (void)min; (void)timeout; (void)flags;
	errno = ENOSYS;
	return -1;
#endif
}

static long sys_ringbuffer_wakeup(int fd, unsigned int rw, unsigned int flags)
{
#ifdef __NR_ringbuffer_wakeup
	if (!kernel_has_rings) {
		errno = ENOSYS;
		return -1;
	}
	return syscall(__NR_ringbuffer_wakeup, fd, rw, flags);
#else
	(void)fd; (void)rw; (void)flags;
	errno = ENOSYS;
	return -1;
#endif
}

/*
 * The system call numbers are those of an unmerged series, and newer
 * kernels give them to other calls: only use them on a kernel that has the
 * series, which its fs.pipe-ring-force sysctl shows.
 */
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

static void probe_kernel(void)
{
	kernel_has_rings = access("/proc/sys/fs/pipe-ring-force", F_OK) == 0;
}

int rb_kernel_has_rings(void)
{
	pthread_once(&probe_once, probe_kernel);
	return kernel_has_rings;
}

/*
 * The lock word holds the thread id.  It is cached per thread, without a
 * system call, and forgotten in a fork child, whose thread has another.
 * Until then it is TID_UNKNOWN, which no kept_by holds, so that the fast
 * path needs one comparison to know whether this thread keeps a side.
 * initial-exec: the fast path reads it at a fixed offset from the thread
 * pointer, not through __tls_get_addr(); four bytes of the static TLS
 * that glibc keeps spare for libraries loaded later.
 */
#define TID_UNKNOWN	UINT32_MAX	/* not a thread id, nor 0 ("not kept") */
static _Thread_local uint32_t cached_tid __attribute__((tls_model("initial-exec"))) =
	TID_UNKNOWN;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void forget_tid(void)
{
	cached_tid = TID_UNKNOWN;
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, forget_tid);
}

static uint32_t my_tid(void)
{
	if (cached_tid == TID_UNKNOWN) {
		pthread_once(&atfork_once, register_atfork);
		cached_tid = (uint32_t)syscall(SYS_gettid);
	}
	return cached_tid;
}

/*
 * The naturally aligned 64-bit word whose halves are the words at offsets
 * @a and @b, as ringbuffer(2) lays out the counts a kept copy looks at
 * when it leaves; NULL if they are not.
 */
static _Atomic uint64_t *rb_paired(char *base, uint32_t a, uint32_t b)
{
	uint32_t low = a < b ? a : b;

	if (low % 8 || (a > b ? a : b) != low + 4)
		return NULL;
	return (_Atomic uint64_t *)(base + low);
}

int rb_init_mapping(struct rb_ring *r, int fd, int rw, void *base)
{
	const struct ringbuffer_header *hdr = base;
	const struct ringbuffer_offsets *off = &hdr->offsets;
	char *b = base;

	/* The header is read-only for us; still, check what we rely on. */
	if (hdr->magic != RINGBUFFER_MAGIC || hdr->version != RINGBUFFER_VERSION ||
	    !hdr->size || (hdr->size & (hdr->size - 1)) ||
	    hdr->mask != hdr->size - 1 ||
	    (uint64_t)off->data + 2ULL * hdr->size > hdr->map_size ||
	    off->producer_held >= hdr->map_size || off->consumer_held >= hdr->map_size ||
	    /* A 64-bit process needs 64-bit positions; without, read and write. */
	    (sizeof(rb_pos) == sizeof(uint64_t) && (!off->head64 || !off->tail64)))
		return -EPROTO;
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->rw = rw;
	r->mapped = 1;
	/* Nothing cached yet. */
	r->peer_stale = 1;
	r->base = base;
	r->map_size = hdr->map_size;
	r->size = hdr->size;
	r->mask = hdr->mask;
	/*
	 * Positions as wide as ours: the 64-bit words on a 64-bit system,
	 * which a kernel that has them names; else their low halves.
	 */
	if (sizeof(rb_pos) == sizeof(uint64_t)) {
		r->head = (_Atomic rb_pos *)(b + off->head64);
		r->tail = (_Atomic rb_pos *)(b + off->tail64);
	} else {
		r->head = (_Atomic rb_pos *)(b + off->head);
		r->tail = (_Atomic rb_pos *)(b + off->tail);
	}
	r->flags = (_Atomic uint32_t *)(b + off->flags);
	r->data = (uint8_t *)b + off->data;
	if (rw == RB_WRITE) {
		r->lock = (_Atomic uint32_t *)(b + off->producer_lock);
		r->lock_held = (_Atomic uint32_t *)(b + off->producer_held);
		r->lock_waiters = (_Atomic uint32_t *)(b + off->producer_lock_waiters);
		r->peer_waiters = (_Atomic uint32_t *)(b + off->read_waiters);
		if (off->read_wait_min)
			r->peer_wait_min = (_Atomic uint32_t *)(b + off->read_wait_min);
		r->peer_lock = (_Atomic uint32_t *)(b + off->consumer_lock);
		r->both_waiters = rb_paired(b, off->producer_lock_waiters, off->read_waiters);
		if (off->producer_keeper && r->both_waiters) {
			r->keeper = (_Atomic uint32_t *)(b + off->producer_keeper);
			r->busy = (_Atomic uint32_t *)(b + off->producer_busy);
			r->peer_keeper = (_Atomic uint32_t *)(b + off->consumer_keeper);
		}
	} else {
		r->lock = (_Atomic uint32_t *)(b + off->consumer_lock);
		r->lock_held = (_Atomic uint32_t *)(b + off->consumer_held);
		r->lock_waiters = (_Atomic uint32_t *)(b + off->consumer_lock_waiters);
		r->peer_waiters = (_Atomic uint32_t *)(b + off->write_waiters);
		if (off->write_wait_min)
			r->peer_wait_min = (_Atomic uint32_t *)(b + off->write_wait_min);
		r->peer_lock = (_Atomic uint32_t *)(b + off->producer_lock);
		r->both_waiters = rb_paired(b, off->consumer_lock_waiters, off->write_waiters);
		if (off->consumer_keeper && r->both_waiters) {
			r->keeper = (_Atomic uint32_t *)(b + off->consumer_keeper);
			r->busy = (_Atomic uint32_t *)(b + off->consumer_busy);
			r->peer_keeper = (_Atomic uint32_t *)(b + off->producer_keeper);
		}
	}
	return 0;
}

struct rb_ring *rb_open(int fd, int rw, uint32_t size)
{
	struct rb_ring *r;
	uint64_t addr = 0;

	if (fd < 0 || (rw != RB_READ && rw != RB_WRITE) || !size ||
	    (size & (size - 1)) || size > RINGBUFFER_MAX_SIZE) {
		errno = EINVAL;
		return NULL;
	}
	/* sizeof is a multiple of the alignment, as aligned_alloc() wants. */
	r = aligned_alloc(RB_RING_ALIGN, sizeof(*r));
	if (!r)
		return NULL;
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->rw = rw;
	if (!rb_kernel_has_rings() || sys_ringbuffer(fd, rw, size, &addr, 0))
		return r;	/* fallback mode: read(2) and write(2) */
	if (rb_init_mapping(r, fd, rw, (void *)(uintptr_t)addr)) {
		munmap((void *)(uintptr_t)addr,
		       ((const struct ringbuffer_header *)(uintptr_t)addr)->map_size);
		r->mapped = 0;
	}
	return r;
}

void rb_close(struct rb_ring *r)
{
	if (!r)
		return;
	if (r->mapped) {
		rb_let_go(r);
		munmap(r->base, r->map_size);
	}
	free(r);
}

int rb_is_mapped(const struct rb_ring *r)
{
	return r->mapped;
}

int rb_fd(const struct rb_ring *r)
{
	return r->fd;
}

uint32_t rb_size(const struct rb_ring *r)
{
	return r->mapped ? r->size : 0;
}

/*
 * Whether @r is side @rw; else EBADF, as read(2) and write(2) say on the
 * wrong end of a pipe.  A copy the other way would move our position.
 */
static int rb_is_side(const struct rb_ring *r, int rw)
{
	if (r->rw == rw)
		return 1;
	errno = EBADF;
	return 0;
}

/*
 * Whether this thread keeps our side.  A relaxed load: kept_by changes
 * only in the thread it names (or in a fork child, which has another id).
 */
static int rb_keeping(struct rb_ring *r)
{
	uint32_t kept_by = atomic_load_explicit(&r->kept_by, memory_order_relaxed);

	return kept_by && kept_by == my_tid();
}

/*
 * We kept our side and are out of any copy: stop keeping it.  The
 * RINGBUFFER_WAKE_LOCK call frees the word (or ends the kernel's taking it
 * back) and wakes whoever waits for it.
 */
static __attribute__((noinline, cold)) void rb_stop_keeping(struct rb_ring *r)
{
	atomic_store_explicit(&r->kept_by, 0, memory_order_relaxed);
	r->uncontended = -rb_keep_backoff;
	sys_ringbuffer_wakeup(r->fd, r->rw, RINGBUFFER_WAKE_LOCK);
}

void rb_let_go(struct rb_ring *r)
{
	if (r->keeper && rb_keeping(r))
		rb_stop_keeping(r);
}

/*
 * The fast path of a kept side: no atomic read-modify-write and no fence.
 * We say that we copy, then check that the kernel still names us keeper;
 * a compiler barrier between the store and the load suffices, because
 * whoever takes the side back clears the keeper word, then makes every
 * CPU execute a full barrier, then loads our busy word: either we see the
 * word cleared, or it sees us busy and waits (ringbuffer.rst, "Kept
 * locks").
 */
static enum rb_lock_result rb_lock_kept(struct rb_ring *r, uint32_t tid)
{
	/*
	 * The busy word is the side's: once taken back, never touch it
	 * again (the kernel makes nobody else keeper until we said so).
	 */
	if (atomic_load_explicit(r->keeper, memory_order_relaxed) != tid) {
		rb_stop_keeping(r);
		return RB_LOCK_BUSY;
	}
	/* Busy already: this thread is in a copy (reserve without commit). */
	if (atomic_load_explicit(r->busy, memory_order_relaxed))
		return RB_LOCK_OWN_THREAD;
	atomic_store_explicit(r->busy, 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	/* Acquire: our copy does not start before the check. */
	if (atomic_load_explicit(r->keeper, memory_order_acquire) == tid)
		return RB_LOCKED;
	/* Taken back: the word is still ours until the kernel frees it. */
	atomic_store_explicit(r->busy, 0, memory_order_release);
	rb_stop_keeping(r);
	return RB_LOCK_BUSY;
}

/*
 * Just after taking the lock word: say so in our own page, where nobody
 * else can store, then look at the word again.  The kernel frees a word
 * that nobody vouches for only after it replaced the word and made our
 * CPU execute a full barrier, and then reads our held word: either it
 * sees our store or we see its change, so a compiler barrier is enough
 * (ringbuffer.rst, "Side locks", (10) and (11)).  0 if the word is no
 * longer ours: we clear what we said, unless another thread of ours took
 * the word meanwhile and said so itself.
 */
static int rb_vouch(struct rb_ring *r, uint32_t tid)
{
	uint32_t mine = tid;

	/* Relaxed: only the kernel reads it, after a barrier on our CPU. */
	atomic_store_explicit(r->lock_held, tid, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	if (atomic_load_explicit(r->lock, memory_order_relaxed) == tid)
		return 1;
	atomic_compare_exchange_strong_explicit(r->lock_held, &mine, 0,
			memory_order_relaxed, memory_order_relaxed);
	return 0;
}

/*
 * Release the word (not kept).  Our held word first: the release store
 * orders it before the word, so that the next holder of our process
 * stores its own after ours.
 */
static inline void rb_release_word(struct rb_ring *r)
{
	atomic_store_explicit(r->lock_held, 0, memory_order_relaxed);
	/* Release: our position store is visible to the next holder. */
	atomic_store_explicit(r->lock, 0, memory_order_release);
}

/*
 * Just after taking the word without keeping the side: whether another
 * holder moved our side since we let it go, in which case the cached
 * peer position may be laps old (see peer_stale).  Relaxed: the acquire
 * of the word made the last holder's position store visible.
 */
static void rb_check_own(struct rb_ring *r)
{
	rb_pos own = atomic_load_explicit(r->rw == RB_WRITE ? r->head : r->tail,
					  memory_order_relaxed);

	if (own != r->own_left) {
		r->peer_stale = 1;
		r->own_left = own;
	}
}

enum rb_lock_result rb_trylock(struct rb_ring *r, unsigned int spins)
{
	uint32_t tid = my_tid();

	if (r->keeper && rb_keeping(r)) {
		enum rb_lock_result res = rb_lock_kept(r, tid);

		if (res != RB_LOCK_BUSY)
			return res;
	}
	for (unsigned int i = 0, contended = 0;; i++) {
		uint32_t expected = 0;

		/* Acquire: we see what the previous holder stored. */
		if (atomic_compare_exchange_weak_explicit(r->lock, &expected, tid,
				memory_order_acquire, memory_order_relaxed)) {
			if (!rb_vouch(r, tid))
				continue;
			rb_check_own(r);
			/* Counted by the holder only, so under the lock. */
			if (contended && r->uncontended > 0)
				r->uncontended = 0;
			else if (!contended && r->uncontended < rb_keep_after)
				r->uncontended++;
			return RB_LOCKED;
		}
		if (expected == tid) {
			/* A reserve without a commit, in this thread. */
			if (r->holding)
				return RB_LOCK_OWN_THREAD;
			/*
			 * The word names us though we hold nothing: the kernel
			 * gave back a word we had just lost (rb_vouch()), or a
			 * thread with our id died holding it.  Release it and
			 * take it again (ringbuffer.rst, "Side locks"); release
			 * ordering as in rb_release_word(), and a waiter that
			 * sleeps meanwhile looks again by itself.
			 */
			atomic_compare_exchange_strong_explicit(r->lock, &expected, 0,
					memory_order_release, memory_order_relaxed);
			continue;
		}
		/* A weak exchange may fail spuriously: that is no contention. */
		if (expected)
			contended = 1;
		if (i >= spins)
			return RB_LOCK_BUSY;
		rb_cpu_relax();
	}
}

static int rb_lock(struct rb_ring *r)
{
	for (;;) {
		switch (rb_trylock(r, RB_SPINS)) {
		case RB_LOCKED:
			return 0;
		case RB_LOCK_OWN_THREAD:
			/* Our own thread holds it: a reserve without commit. */
			errno = EDEADLK;
			return -1;
		case RB_LOCK_BUSY:
			break;
		}
		/* The kernel sleeps until it changes, or frees a dead holder's. */
		if (sys_ringbuffer_wait(r->fd, r->rw, 0, NULL, RINGBUFFER_WAIT_LOCK) &&
		    errno != EINTR)
			return -1;
	}
}

/*
 * After our position store and a barrier (see the callers): whether the
 * other side's sleepers need the wake-up call.  Only if somebody sleeps
 * there, and what the ring now holds for them (data for a consumer,
 * space for a producer) reaches the least amount one of them waits for:
 * a producer that sleeps until PIPE_BUF bytes are free is not woken by
 * every byte a reader takes.  The kernel stores that minimum before it
 * counts the sleeper, and makes our CPU execute a barrier before the
 * sleeper looks at the positions a last time, so once we see the count
 * we see that minimum or a lower one, or the sleeper sees our position.
 * Relaxed loads: a stale peer position can only overstate what the
 * sleepers have, which wakes them for nothing at worst.
 */
static int rb_peer_wake_needed(struct rb_ring *r)
{
	uint32_t used, avail;

	if (!atomic_load_explicit(r->peer_waiters, memory_order_relaxed))
		return 0;
	if (!r->peer_wait_min)
		return 1;
	used = (uint32_t)(atomic_load_explicit(r->head, memory_order_relaxed) -
			  atomic_load_explicit(r->tail, memory_order_relaxed));
	/* Nonsense stored by a peer: let the sleepers find out (EIO). */
	if (used > r->size)
		return 1;
	avail = r->rw == RB_WRITE ? used : r->size - used;
	return avail >= atomic_load_explicit(r->peer_wait_min, memory_order_relaxed);
}

/*
 * Somebody waits for our side, or (after a change) for what we did: the
 * rare end of rb_unlock_kept(), out of line so that the fast path makes
 * no call.
 */
static __attribute__((noinline, cold)) void
rb_unlock_kept_wake(struct rb_ring *r, int changed)
{
	if (atomic_load_explicit(r->lock_waiters, memory_order_relaxed))
		rb_stop_keeping(r);
	if (changed && rb_peer_wake_needed(r))
		sys_ringbuffer_wakeup(r->fd, r->rw, 0);
}

/*
 * Leave a copy of a kept side (rb_unlock_kept()).  Release: what we copied
 * and our position are visible to whoever takes the side back.  Then, with
 * only a compiler barrier (see rb_lock_kept()), look whether anybody waits
 * for the side and, after a change, for what we did (rb_kept_waiters()).
 */
static inline __attribute__((always_inline)) void
rb_release_busy(_Atomic uint32_t *busy)
{
	atomic_store_explicit(busy, 0, memory_order_release);
	atomic_signal_fence(memory_order_seq_cst);
}

static inline __attribute__((always_inline)) void
rb_release_kept(struct rb_ring *r)
{
	rb_release_busy(r->busy);
}

/*
 * After rb_release_kept(): whether rb_unlock_kept_wake() has work.  On a
 * kept side the two counts share a 64-bit word (rb_init_mapping()): on a
 * 64-bit system one load reads both, each half as a load of it would.
 */
static inline __attribute__((always_inline)) int
rb_kept_waiters(struct rb_ring *r, int changed)
{
	if (!changed)
		return __builtin_expect(atomic_load_explicit(r->lock_waiters,
							     memory_order_relaxed), 0);
#if UINTPTR_MAX > 0xffffffffu
	return __builtin_expect(atomic_load_explicit(r->both_waiters,
						     memory_order_relaxed) != 0, 0);
#else
	return __builtin_expect(atomic_load_explicit(r->lock_waiters, memory_order_relaxed) ||
				atomic_load_explicit(r->peer_waiters, memory_order_relaxed), 0);
#endif
}

static inline __attribute__((always_inline)) void
rb_unlock_kept(struct rb_ring *r, int changed)
{
	rb_release_kept(r);
	if (rb_kept_waiters(r, changed))
		rb_unlock_kept_wake(r, changed);
}

/*
 * rb_unlock_kept_wake() after a change, returning @ret: the entry points
 * tail-call it, so that their fast path needs no stack frame.
 */
static __attribute__((noinline, cold)) ssize_t
rb_kept_wake_return(struct rb_ring *r, ssize_t ret)
{
	rb_unlock_kept_wake(r, 1);
	return ret;
}

/*
 * The data in the ring, head - tail, for our position @own and the peer's
 * @peer on the producer side if @writer, else the consumer's.  Only the
 * low 32 bits count: a 32-bit user of the ring carries nothing into the
 * high half of the positions it stores.
 */
static inline uint32_t rb_used_as(int writer, rb_pos own, rb_pos peer)
{
	return (uint32_t)(writer ? own - peer : peer - own);
}

static inline uint32_t rb_used(const struct rb_ring *r, rb_pos own, rb_pos peer)
{
	return rb_used_as(r->rw == RB_WRITE, own, peer);
}

/* Acquire: the peer's data (or freed space) below its position is ours. */
static inline rb_pos rb_load_peer_as(struct rb_ring *r, int writer)
{
	r->peer_pos = atomic_load_explicit(writer ? r->tail : r->head,
					   memory_order_acquire);
	r->peer_stale = 0;
	return r->peer_pos;
}

static inline rb_pos rb_load_peer(struct rb_ring *r)
{
	return rb_load_peer_as(r, r->rw == RB_WRITE);
}

/*
 * The whole of a copy on a side this thread keeps, when the ring is
 * neither full nor empty: what rb_trylock(), rb_avail_locked() and
 * rb_unlock() do for it, without their calls and checks.  Per copy: a
 * store to our busy word, a load of the keeper word (both ordered as in
 * rb_lock_kept()), a load of our position, the cached peer position
 * (reloaded only when it falls short), a release store of our position,
 * a release store to the busy word and the waiter counts of
 * rb_unlock_kept() (one load on a 64-bit system, see rb_kept_waiters()).
 * No read-modify-write, no fence.
 *
 * fast_try() enters the copy when at least @want bytes of data (consumer)
 * or space (producer) are there: FAST_IN, with our position in *@own and
 * the bytes there in *@avail.  Otherwise the general path must do it:
 * FAST_NOT_KEPT (not kept by this thread, nested in a copy, or, producer,
 * no reader left), FAST_TAKEN_BACK (the kernel took the side back) or
 * FAST_SHORT (short of @want, or positions out of line).  It makes no
 * call, so that rb_write() and rb_read() need no stack frame.  After
 * FAST_TAKEN_BACK the caller must stop keeping (rb_stop_keeping()) before
 * anything else: the busy word is not ours to store to any more.  After
 * FAST_SHORT the general path, which enters again through fast_enter(),
 * finds the same and looks for lock waiters.
 *
 * The cached peer position needs no peer_stale test here: rb_try_keep()
 * reloads it before keeping starts, and only we move our side until
 * keeping ends.
 *
 * The _as() variants are told which side @r is (@writer), so that
 * rb_write() and rb_read(), which know it, test it once.
 */
enum { FAST_SHORT = -2, FAST_TAKEN_BACK = -1, FAST_NOT_KEPT = 0, FAST_IN = 1 };

/*
 * Whether @used bytes of data, no more than the size, leave at least @want
 * bytes of data (consumer) or space (producer); the out-of-line test is
 * folded into the other.
 */
static inline __attribute__((always_inline)) int
fast_fits(const struct rb_ring *r, const int writer, uint32_t used, size_t want)
{
	if (writer)
		return (uint64_t)used + want <= r->size;
	/* used - 1 wraps when used is 0: not below the size either. */
	return (uint32_t)(used - 1) < r->size && used >= want;
}

static inline __attribute__((always_inline)) int
fast_try_as(struct rb_ring *r, const int writer, size_t want, rb_pos *own,
	    size_t *avail)
{
	/* Relaxed: kept_by changes only in the thread it names. */
	uint32_t tid = atomic_load_explicit(&r->kept_by, memory_order_relaxed);
	/* Before the compiler barrier below, which would have them reloaded. */
	_Atomic rb_pos *own_pos = writer ? r->head : r->tail;
	uint32_t used;

	if (tid != cached_tid || atomic_load_explicit(r->busy, memory_order_relaxed))
		return FAST_NOT_KEPT;
	/* No reader: the general path lets the kernel say EPIPE. */
	if (writer && (atomic_load_explicit(r->flags, memory_order_relaxed) &
		       RINGBUFFER_BROKEN))
		return FAST_NOT_KEPT;
	if (!want)
		want = 1;
	atomic_store_explicit(r->busy, 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	/* Acquire: our copy does not start before the check (rb_lock_kept()). */
	if (atomic_load_explicit(r->keeper, memory_order_acquire) != tid) {
		/* Taken back: the word stays ours until we say so. */
		atomic_store_explicit(r->busy, 0, memory_order_release);
		return FAST_TAKEN_BACK;
	}
	/* Relaxed: only the keeper moves our position while the side is kept. */
	*own = atomic_load_explicit(own_pos, memory_order_relaxed);
	used = rb_used_as(writer, *own, r->peer_pos);
	if (!fast_fits(r, writer, used, want)) {
		used = rb_used_as(writer, *own, rb_load_peer_as(r, writer));
		if (!fast_fits(r, writer, used, want)) {
			rb_release_kept(r);
			return FAST_SHORT;
		}
	}
	*avail = writer ? r->size - used : used;
	return FAST_IN;
}

/* fast_try_as(), then what the general path does when it fails: 1 if in. */
static inline __attribute__((always_inline)) int
fast_enter_as(struct rb_ring *r, const int writer, size_t want, rb_pos *own,
	      size_t *avail)
{
	int in = fast_try_as(r, writer, want, own, avail);

	if (in == FAST_TAKEN_BACK)
		rb_stop_keeping(r);
	else if (in == FAST_SHORT && rb_kept_waiters(r, 0))
		rb_unlock_kept_wake(r, 0);
	return in == FAST_IN;
}

/*
 * Publish the @n bytes (n > 0) moved at @own in a copy fast_try() entered:
 * our position is @own_pos, our busy word @busy.  The caller then looks
 * for waiters.
 */
static inline __attribute__((always_inline)) void
fast_publish_at(_Atomic rb_pos *own_pos, _Atomic uint32_t *busy, rb_pos own,
		size_t n)
{
	/* Release: the bytes are written (or read) before the position says so. */
	atomic_store_explicit(own_pos, own + n, memory_order_release);
	rb_release_busy(busy);
}

static inline __attribute__((always_inline)) void
fast_publish_as(struct rb_ring *r, const int writer, rb_pos own, size_t n)
{
	fast_publish_at(writer ? r->head : r->tail, r->busy, own, n);
}

/* Leave a copy fast_enter() entered, after moving @n bytes at @own. */
static inline __attribute__((always_inline)) void
fast_exit_as(struct rb_ring *r, const int writer, rb_pos own, size_t n)
{
	if (n)
		fast_publish_as(r, writer, own, n);
	else
		rb_release_kept(r);
	if (rb_kept_waiters(r, n != 0))
		rb_unlock_kept_wake(r, n != 0);
}

static inline __attribute__((always_inline)) int
fast_enter(struct rb_ring *r, size_t want, rb_pos *own, size_t *avail)
{
	return fast_enter_as(r, r->rw == RB_WRITE, want, own, avail);
}

static inline __attribute__((always_inline)) void
fast_exit(struct rb_ring *r, rb_pos own, size_t n)
{
	fast_exit_as(r, r->rw == RB_WRITE, own, n);
}

/*
 * Copies of up to RB_INLINE_COPY bytes are made in line, as a few
 * overlapping fixed-size moves.  A call to memcpy() would make the fast
 * path save registers and push a return address: stores that wait in the
 * store buffer behind our position store, which misses whenever the
 * consumer polls that cache line.  Per small message the producer then
 * stores only the busy word twice, the data and its position.
 */
#define RB_INLINE_COPY	64

static inline __attribute__((always_inline)) void
copy_small(uint8_t *dst, const uint8_t *src, size_t n)
{
	if (n >= 16) {
		for (size_t i = 0; i + 16 < n; i += 16)
			memcpy(dst + i, src + i, 16);
		memcpy(dst + n - 16, src + n - 16, 16);
	} else if (n >= 8) {
		memcpy(dst, src, 8);
		memcpy(dst + n - 8, src + n - 8, 8);
	} else if (n >= 4) {
		memcpy(dst, src, 4);
		memcpy(dst + n - 4, src + n - 4, 4);
	} else if (n) {
		dst[0] = src[0];
		dst[n / 2] = src[n / 2];
		dst[n - 1] = src[n - 1];
	}
}

/*
 * One copy of up to @len bytes by the fast path on side @writer: bytes
 * moved, 0 if it cannot.
 */
static inline __attribute__((always_inline)) size_t
fast_copy_as(struct rb_ring *r, const int writer, void *buf, size_t len,
	     size_t want)
{
	size_t avail, n;
	rb_pos own;

	if (!fast_enter_as(r, writer, want, &own, &avail))
		return 0;
	n = len < avail ? len : avail;
	if (n <= RB_INLINE_COPY)
		copy_small(writer ? r->data + (own & r->mask) : buf,
			   writer ? buf : r->data + (own & r->mask), n);
	else if (writer)
		memcpy(r->data + (own & r->mask), buf, n);
	else
		memcpy(buf, r->data + (own & r->mask), n);
	fast_exit_as(r, writer, own, n);
	return n;
}

static inline __attribute__((always_inline)) size_t
fast_copy(struct rb_ring *r, void *buf, size_t len, size_t want)
{
	return fast_copy_as(r, r->rw == RB_WRITE, buf, len, want);
}

/* For the shim, which copies from and to iovecs. */
int rb_fast_enter(struct rb_ring *r, size_t want, rb_pos *own, size_t *avail)
{
	return fast_enter(r, want, own, avail);
}

void rb_fast_exit(struct rb_ring *r, rb_pos own, size_t n)
{
	fast_exit(r, own, n);
}

/* One buffer in one call on a kept side, for the shim's read() and write(). */
size_t rb_fast_write(struct rb_ring *r, const void *buf, size_t len,
		     size_t want)
{
	return r->rw == RB_WRITE ? fast_copy_as(r, 1, (void *)buf, len, want) : 0;
}

size_t rb_fast_read(struct rb_ring *r, void *buf, size_t len)
{
	return r->rw == RB_READ ? fast_copy_as(r, 0, buf, len, 1) : 0;
}

/*
 * Instead of releasing the word: after rb_keep_after uncontended
 * acquisitions, ask the kernel to let us keep it.  1 if it did.
 */
static int rb_try_keep(struct rb_ring *r)
{
	if (!r->keeper || r->uncontended < rb_keep_after)
		return 0;
	r->uncontended = 0;
	if (sys_ringbuffer_wakeup(r->fd, r->rw, RINGBUFFER_KEEP_LOCK)) {
		/* Somebody waits (EBUSY); otherwise, never again (EPERM...). */
		r->uncontended = errno == EBUSY ? -rb_keep_backoff : INT_MIN;
		return 0;
	}
	/* The kept path does not test peer_stale (fast_try_as()). */
	if (r->peer_stale)
		rb_load_peer(r);
	atomic_store_explicit(&r->kept_by, my_tid(), memory_order_relaxed);
	return 1;
}

/* No sleeper waits for what we did not do: release, wake lock waiters. */
void rb_unlock_unchanged(struct rb_ring *r)
{
	if (r->keeper && rb_keeping(r)) {
		rb_unlock_kept(r, 0);
		return;
	}
	if (rb_try_keep(r))
		return;
	rb_release_word(r);
	/* Lock word store before the waiter count load, as in rb_unlock(). */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(r->lock_waiters, memory_order_relaxed))
		sys_ringbuffer_wakeup(r->fd, r->rw, RINGBUFFER_WAKE_LOCK);
}

void rb_unlock(struct rb_ring *r)
{
	if (r->keeper && rb_keeping(r)) {
		rb_unlock_kept(r, 1);
		return;
	}
	if (rb_try_keep(r)) {
		/* The system call was a full barrier after our position store. */
		if (rb_peer_wake_needed(r))
			sys_ringbuffer_wakeup(r->fd, r->rw, 0);
		return;
	}
	rb_release_word(r);
	/*
	 * Full fence between our stores (position, lock) and the loads of
	 * the sleeper counts: a sleeper counts itself, fences, then checks
	 * again, so one of us sees the other.
	 */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(r->lock_waiters, memory_order_relaxed))
		sys_ringbuffer_wakeup(r->fd, r->rw, RINGBUFFER_WAKE_LOCK);
	if (rb_peer_wake_needed(r))
		sys_ringbuffer_wakeup(r->fd, r->rw, 0);
}

/* Whether positions @own and @peer show at least @want bytes (or are bad). */
static int rb_shows(const struct rb_ring *r, rb_pos own, rb_pos peer,
		    size_t want)
{
	uint32_t used = rb_used(r, own, peer);

	/* Inconsistent positions: let the locked path report EIO. */
	return used > r->size ||
	       (r->rw == RB_WRITE ? r->size - used : used) >= (want ? want : 1);
}

/*
 * The peer's position for a side at @own that wants @want bytes: the
 * cached one while it shows that much, else loaded again.  A stale value
 * understates what there is; another holder of our side may even have
 * moved past it (the positions look too far apart): reload then too, and
 * once after taking the word when another holder moved our side (see
 * peer_stale), since the copy may then be whole laps old and look right.
 */
static rb_pos rb_peer_for(struct rb_ring *r, rb_pos own, size_t want)
{
	if (!r->peer_stale && rb_used(r, own, r->peer_pos) <= r->size &&
	    rb_shows(r, own, r->peer_pos, want))
		return r->peer_pos;
	return rb_load_peer(r);
}

/*
 * Under the lock: data (consumer) or space (producer), and our position,
 * with the peer's position reloaded unless the cached one shows @want.
 * -1 with EIO when the positions are more than the size apart.
 */
long rb_avail_locked(struct rb_ring *r, rb_pos *own, size_t want)
{
	uint32_t used;

	/* Our own position: only lock holders move it. */
	*own = atomic_load_explicit(r->rw == RB_WRITE ? r->head : r->tail,
				    memory_order_relaxed);
	used = rb_used(r, *own, rb_peer_for(r, *own, want));
	if (used > r->size) {
		errno = EIO;
		return -1;
	}
	return r->rw == RB_WRITE ? (long)(r->size - used) : (long)used;
}

/*
 * Without the lock: whether there may be @want bytes of data or space, by
 * plain loads (the peer's position only when the cached one falls short),
 * to poll a full or empty ring without taking the lock.
 */
static int rb_may_go(struct rb_ring *r, size_t want)
{
	rb_pos own = atomic_load_explicit(r->rw == RB_WRITE ? r->head : r->tail,
					  memory_order_relaxed);

	return rb_shows(r, own, rb_peer_for(r, own, want), want);
}

void rb_publish(struct rb_ring *r, rb_pos own, size_t n)
{
	/* Release: the bytes are written (or read) before the position says so. */
	atomic_store_explicit(r->rw == RB_WRITE ? r->head : r->tail,
			      own + n, memory_order_release);
	r->own_left = own + n;
}

static uint32_t rb_end_flag(const struct rb_ring *r)
{
	return r->rw == RB_WRITE ? RINGBUFFER_BROKEN : RINGBUFFER_EOF;
}

int rb_side_ended(const struct rb_ring *r)
{
	return (atomic_load_explicit(r->flags, memory_order_acquire) &
		rb_end_flag(r)) != 0;
}

/* Counted once at load, so that rb_spin_ready() is async-signal-safe. */
static int online_cpus = 1;

/* The spin's base budget: see measure_spin_base(). */
static uint64_t spin_base_ns = RB_SPIN_BASE_NS;

static uint64_t rb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Going to sleep and being woken costs both sides system calls and two
 * context switches: on hardware a few microseconds, under emulation or in
 * a guest with costly exits a hundred times that.  The spin's base budget
 * is what eight system calls cost here, measured once, and at least
 * RB_SPIN_BASE_NS: where sleeping costs more, spinning longer pays.
 */
static void measure_spin_base(void)
{
	uint64_t t0 = rb_now_ns(), per_call;

	for (int i = 0; i < 16; i++)
		syscall(SYS_getppid);
	per_call = (rb_now_ns() - t0) / 16;
	if (8 * per_call > spin_base_ns)
		spin_base_ns = 8 * per_call < RB_SPIN_MAX_NS / 4 ? 8 * per_call :
								RB_SPIN_MAX_NS / 4;
}

__attribute__((constructor)) static void count_online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	online_cpus = n > 0 ? (int)n : 1;
	if (online_cpus > 1)
		measure_spin_base();
}

/*
 * Poll, without the lock, until @want bytes of data or space may be there
 * or our side has ended: 1 then, 0 when it is time to sleep in the kernel.
 *
 * Spinning pays only while the peer runs on another CPU and will soon
 * give us what we wait for; otherwise both sides end up asleep, and each
 * sleep costs a wake-up call and two context switches.  Hence:
 * - with one CPU online the peer cannot run while we spin: no spin;
 * - the budget grows with @awaited, the bytes we wait for (at most the
 *   ring's size): a peer copying a 64 KiB message publishes nothing for
 *   many microseconds, and a fixed microsecond would put the reader to
 *   sleep every time, then the writer when the ring fills;
 * - it restarts whenever the peer is seen running: its position moved,
 *   or, when the budget ran out, it holds its side lock, not kept (it is
 *   copying, in user space or in the kernel);
 * - RB_SPIN_MAX_NS bounds the whole, so that a peer that holds its lock
 *   for ever or stores garbage cannot keep us spinning;
 * - a spin that was off its CPU ends: two looks at the clock further
 *   apart than RB_SPIN_PREEMPTED_NS mean another task needed this CPU
 *   (more runnable tasks than CPUs, as in a three-stage pipeline on two
 *   CPUs), and spinning on takes the CPU from the peer or whoever would
 *   move the data along.
 * The clock is read once every 16 polls.
 */
/*
 * Whether the peer seems to be in a copy: its lock held.  A kept side's
 * word stays held, and its busy word is in the keeper's own page, out of
 * our sight: then only its position tells.
 */
static int rb_peer_copying(struct rb_ring *r)
{
	/* Relaxed: signs of life only. */
	if (r->peer_keeper &&
	    atomic_load_explicit(r->peer_keeper, memory_order_relaxed))
		return 0;
	return atomic_load_explicit(r->peer_lock, memory_order_relaxed) != 0;
}

int rb_spin_ready(struct rb_ring *r, size_t want, size_t awaited)
{
	_Atomic rb_pos *peer_pos = r->rw == RB_WRITE ? r->tail : r->head;
	uint64_t budget, start = 0, last = 0, prev = 0;
	rb_pos seen = 0;

	if (online_cpus < 2)
		return rb_may_go(r, want) || rb_side_ended(r);
	if (awaited > r->size)
		awaited = r->size;
	budget = spin_base_ns + (uint64_t)awaited * RB_SPIN_PS_PER_BYTE / 1000;
	for (unsigned int i = 1;; i++) {
		rb_pos pos;
		uint64_t now;

		if (rb_may_go(r, want) || rb_side_ended(r))
			return 1;
		rb_cpu_relax();
		if (i % 16)
			continue;
		now = rb_now_ns();
		/* Relaxed: signs of life only; rb_may_go() does the ordering. */
		pos = atomic_load_explicit(peer_pos, memory_order_relaxed);
		if (!start) {
			/* Not before: a ready ring costs no look at the peer's line. */
			start = last = prev = now;
			seen = pos;
			continue;
		}
		if (now - prev > RB_SPIN_PREEMPTED_NS)
			return 0;
		prev = now;
		/*
		 * The peer's lock word only when the budget ran out:
		 * each look takes its cache line from the peer, which then
		 * misses on its next store there.
		 */
		if (pos != seen || (now - last > budget && rb_peer_copying(r))) {
			seen = pos;
			last = now;
		}
		if (now - last > budget || now - start > RB_SPIN_MAX_NS)
			return 0;
	}
}

/*
 * One copy under the lock: up to @len bytes, none unless @want fit.
 * Returns bytes moved, 0 if it cannot go ahead now, -1 on error.
 */
static ssize_t rb_copy_once(struct rb_ring *r, void *buf, size_t len,
			    size_t want)
{
	rb_pos own;
	long avail;
	size_t n;

	/* After a spin on a full or empty ring: a kept side still goes fast. */
	n = fast_copy(r, buf, len, want);
	if (n)
		return n;
	if (rb_lock(r))
		return -1;
	/* Reload the peer's position unless the cached one covers @len. */
	avail = rb_avail_locked(r, &own, len);
	if (avail < 0 || (size_t)avail < want) {
		int err = errno;

		rb_unlock_unchanged(r);
		errno = err;
		return avail < 0 ? -1 : 0;
	}
	n = len < (size_t)avail ? len : (size_t)avail;
	if (r->rw == RB_WRITE)
		memcpy(r->data + (own & r->mask), buf, n);
	else
		memcpy(buf, r->data + (own & r->mask), n);
	rb_publish(r, own, n);
	rb_unlock(r);
	return n;
}

/* rb_write() unless a side this thread keeps takes it whole at once. */
static __attribute__((noinline)) ssize_t
rb_write_general(struct rb_ring *r, const void *buf, size_t len)
{
	/* Up to PIPE_BUF bytes go in whole: wait for all the space. */
	size_t want = len <= PIPE_BUF ? len : 1;
	size_t done;

	if (!rb_is_side(r, RB_WRITE))
		return -1;
	if (!r->mapped || !len)
		return write(r->fd, buf, len);
	done = fast_copy(r, (void *)buf, len, want);
	while (done < len) {
		ssize_t n = 0;

		/*
		 * A full ring is watched without taking the lock; bounded,
		 * since other producers may keep taking what the poll saw.
		 */
		for (int tries = 0; tries < RB_SPINS && !n; tries++) {
			if (!rb_spin_ready(r, want, len - done) || rb_side_ended(r))
				break;
			n = rb_copy_once(r, (char *)buf + done, len - done, want);
			if (n < 0)
				return done ? (ssize_t)done : -1;
		}
		if (!n) {
			/*
			 * Full, or no reader: the kernel's write(2) waits (or
			 * says EAGAIN, or EPIPE with SIGPIPE) exactly as for
			 * any pipe, and takes the same lock.
			 */
			n = write(r->fd, (const char *)buf + done, len - done);
			if (n < 0)
				return done ? (ssize_t)done : -1;
		}
		done += n;
	}
	return done;
}

/*
 * Under the lock: copy as many whole records from the front of @rec as
 * @space allows; returns how many, with their bytes in *@bytes.
 */
static int rb_copy_records(struct rb_ring *r, rb_pos own, long space,
			   const struct iovec *rec, int n, size_t *bytes)
{
	size_t at = 0;
	int i;

	for (i = 0; i < n && rec[i].iov_len <= (size_t)space - at; i++) {
		memcpy(r->data + ((own + at) & r->mask), rec[i].iov_base,
		       rec[i].iov_len);
		at += rec[i].iov_len;
	}
	*bytes = at;
	return i;
}

ssize_t rb_write_records(struct rb_ring *r, const struct iovec *rec, int n)
{
	size_t total = 0;

	if (!rb_is_side(r, RB_WRITE))
		return -1;
	if (n < 1) {
		errno = EINVAL;
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (rec[i].iov_len > PIPE_BUF) {
			errno = EMSGSIZE;
			return -1;
		}
		total += rec[i].iov_len;
	}
	if (r->mapped) {
		size_t avail, bytes;
		rb_pos own;

		if (fast_enter(r, total, &own, &avail)) {
			int done = rb_copy_records(r, own, (long)avail, rec, n, &bytes);

			fast_exit(r, own, bytes);
			return done;
		}
		for (int tries = 0; tries < RB_SPINS; tries++) {
			size_t bytes;
			rb_pos own;
			long space;
			int done;

			if (!rb_spin_ready(r, rec[0].iov_len, total) ||
			    rb_side_ended(r))
				break;
			if (rb_lock(r))
				return -1;
			/* Reload the peer's position unless the cache covers all. */
			space = rb_avail_locked(r, &own, total);
			if (space < 0) {
				rb_unlock_unchanged(r);
				errno = EIO;
				return -1;
			}
			done = rb_copy_records(r, own, space, rec, n, &bytes);
			if (!done) {
				rb_unlock_unchanged(r);
				continue;
			}
			rb_publish(r, own, bytes);
			rb_unlock(r);
			return done;
		}
	}
	/*
	 * No ring, full or no reader: the first record through write(2),
	 * which waits, says EAGAIN, or EPIPE with SIGPIPE, as for any pipe.
	 * At most PIPE_BUF bytes, so it goes in whole.
	 */
	return write(r->fd, rec[0].iov_base, rec[0].iov_len) < 0 ? -1 : 1;
}

/* rb_read() when the fast path cannot serve it. */
static __attribute__((noinline)) ssize_t
rb_read_general(struct rb_ring *r, void *buf, size_t len)
{
	size_t moved;

	if (!rb_is_side(r, RB_READ))
		return -1;
	if (!r->mapped || !len)
		return read(r->fd, buf, len);
	moved = fast_copy(r, buf, len, 1);
	if (moved)
		return moved;
	for (int tries = 0; tries < RB_SPINS; tries++) {
		ssize_t n;

		/* An empty ring is watched without taking the lock. */
		if (!rb_spin_ready(r, 1, len))
			break;
		n = rb_copy_once(r, buf, len, 1);
		if (n)
			return n;
		/* At the end, read(2) says so once the data is taken. */
		if (rb_side_ended(r))
			break;
	}
	/* Empty: read(2) waits, or reports EOF or EAGAIN. */
	return read(r->fd, buf, len);
}

/* A write on a kept side of more than RB_INLINE_COPY bytes, all of which fit. */
static __attribute__((noinline)) ssize_t
rb_write_kept(struct rb_ring *r, const void *buf, size_t len, rb_pos own)
{
	memcpy(r->data + (own & r->mask), buf, len);
	fast_exit_as(r, 1, own, len);
	return len;
}

/* The kernel took our kept side back: acknowledge it, then write as usual. */
static __attribute__((noinline, cold)) ssize_t
rb_write_taken_back(struct rb_ring *r, const void *buf, size_t len)
{
	rb_stop_keeping(r);
	return rb_write_general(r, buf, len);
}

/*
 * The entry points keep the fast path of a kept side in a function that
 * makes no call but tail calls, so that it needs no stack frame: a small
 * message is copied in line, everything else is out of line.
 */
ssize_t rb_write(struct rb_ring *r, const void *buf, size_t len)
{
	/* Kept in registers: the copy could alias them in *r, for all we know. */
	_Atomic rb_pos *head = r->head;
	_Atomic uint32_t *busy = r->busy;
	size_t avail;
	rb_pos own;
	int in;

	/* Up to PIPE_BUF bytes go in whole: only all of it at once will do. */
	if (!len || len > PIPE_BUF || r->rw != RB_WRITE)
		return rb_write_general(r, buf, len);
	in = fast_try_as(r, 1, len, &own, &avail);
	if (in == FAST_TAKEN_BACK)
		return rb_write_taken_back(r, buf, len);
	if (in != FAST_IN)
		return rb_write_general(r, buf, len);
	if (len > RB_INLINE_COPY)
		return rb_write_kept(r, buf, len, own);
	copy_small(r->data + (own & r->mask), buf, len);
	fast_publish_at(head, busy, own, len);
	if (rb_kept_waiters(r, 1))
		return rb_kept_wake_return(r, len);
	return len;
}

/* A read on a kept side that moves more than RB_INLINE_COPY bytes. */
static __attribute__((noinline)) ssize_t
rb_read_kept(struct rb_ring *r, void *buf, size_t n, rb_pos own)
{
	memcpy(buf, r->data + (own & r->mask), n);
	fast_exit_as(r, 0, own, n);
	return n;
}

/* The kernel took our kept side back: acknowledge it, then read as usual. */
static __attribute__((noinline, cold)) ssize_t
rb_read_taken_back(struct rb_ring *r, void *buf, size_t len)
{
	rb_stop_keeping(r);
	return rb_read_general(r, buf, len);
}

ssize_t rb_read(struct rb_ring *r, void *buf, size_t len)
{
	_Atomic rb_pos *tail = r->tail;
	_Atomic uint32_t *busy = r->busy;
	size_t avail, n;
	rb_pos own;
	int in;

	if (!len || r->rw != RB_READ)
		return rb_read_general(r, buf, len);
	in = fast_try_as(r, 0, 1, &own, &avail);
	if (in == FAST_TAKEN_BACK)
		return rb_read_taken_back(r, buf, len);
	if (in != FAST_IN)
		return rb_read_general(r, buf, len);
	n = len < avail ? len : avail;
	if (n > RB_INLINE_COPY)
		return rb_read_kept(r, buf, n, own);
	copy_small(buf, r->data + (own & r->mask), n);
	fast_publish_at(tail, busy, own, n);
	if (rb_kept_waiters(r, 1))
		return rb_kept_wake_return(r, n);
	return n;
}

void *rb_reserve(struct rb_ring *r, size_t len)
{
	size_t avail;
	rb_pos own;
	long space;

	if (!rb_is_side(r, RB_WRITE))
		return NULL;
	if (!r->mapped) {
		errno = ENOTSUP;
		return NULL;
	}
	if (len > r->size) {
		errno = EMSGSIZE;
		return NULL;
	}
	if (atomic_load_explicit(r->flags, memory_order_acquire) & RINGBUFFER_BROKEN) {
		errno = EPIPE;
		return NULL;
	}
	if (fast_enter(r, len, &own, &avail))
		goto hold;
	if (rb_lock(r))
		return NULL;
	space = rb_avail_locked(r, &own, len);
	if (space < 0 || (size_t)space < len) {
		int err = space < 0 ? EIO : EAGAIN;

		rb_unlock(r);
		errno = err;
		return NULL;
	}
hold:
	r->pos = own;
	r->held = len;
	r->holding = 1;
	return r->data + (own & r->mask);
}

int rb_commit(struct rb_ring *r, size_t len)
{
	/* Without a span held, there is no position to publish nor lock to drop. */
	if (!r->mapped || !r->holding || len > r->held) {
		errno = EINVAL;
		return -1;
	}
	rb_publish(r, r->pos, len);
	r->held = 0;
	r->holding = 0;
	rb_unlock(r);
	return 0;
}

const void *rb_peek(struct rb_ring *r, size_t max, size_t *len)
{
	size_t fast_avail;
	rb_pos own;
	long avail;
	int eof;

	*len = 0;
	if (!rb_is_side(r, RB_READ))
		return NULL;
	if (!r->mapped) {
		errno = ENOTSUP;
		return NULL;
	}
	if (fast_enter(r, 1, &own, &fast_avail)) {
		avail = (long)fast_avail;
		goto hold;
	}
	if (rb_lock(r))
		return NULL;
	avail = rb_avail_locked(r, &own, max);
	/*
	 * The producer may have published, then left: after the flag (an
	 * acquire load, ordered after its last head store), look again.
	 */
	eof = !avail && (atomic_load_explicit(r->flags, memory_order_acquire) &
			 RINGBUFFER_EOF);
	if (eof)
		avail = rb_avail_locked(r, &own, max);
	if (avail <= 0) {
		int err = avail < 0 ? EIO : eof ? 0 : EAGAIN;

		rb_unlock(r);
		errno = err;
		return NULL;
	}
hold:
	r->pos = own;
	r->held = (size_t)avail < max ? (size_t)avail : max;
	r->holding = 1;
	*len = r->held;
	return r->data + (own & r->mask);
}

int rb_consume(struct rb_ring *r, size_t len)
{
	return rb_commit(r, len);
}

const uint32_t *rb_futex_word(struct rb_ring *r)
{
	const struct ringbuffer_offsets *off;
	uint32_t at;

	if (!r->mapped) {
		errno = ENOTSUP;
		return NULL;
	}
	off = &((const struct ringbuffer_header *)r->base)->offsets;
	at = r->rw == RB_READ ? off->read_futex : off->write_futex;
	if (!at || at >= off->data || at % sizeof(uint32_t)) {
		errno = ENOTSUP;
		return NULL;
	}
	if (sys_ringbuffer_wait(r->fd, r->rw, 0, NULL, RINGBUFFER_WAIT_FUTEX))
		return NULL;
	return (const uint32_t *)((const char *)r->base + at);
}

long rb_wait(struct rb_ring *r, uint32_t min, int64_t timeout_ns)
{
	/* The kernel's 64-bit timespec, whatever time_t is here. */
	struct __kernel_timespec ts, *tsp = NULL;
	rb_pos head, tail;
	uint32_t used, have;

	if (!r->mapped) {
		errno = ENOTSUP;
		return -1;
	}
	if (!min)
		min = 1;
	/* A zero timeout only checks; the check below decides either way. */
	if (timeout_ns)
		rb_spin_ready(r, min, min);
	head = atomic_load_explicit(r->head, memory_order_acquire);
	tail = atomic_load_explicit(r->tail, memory_order_acquire);
	used = (uint32_t)(head - tail);
	have = r->rw == RB_WRITE ? r->size - used : used;
	if (used <= r->size && have >= min)
		return have;
	if (timeout_ns >= 0) {
		ts.tv_sec = timeout_ns / 1000000000;
		ts.tv_nsec = timeout_ns % 1000000000;
		tsp = &ts;
	}
	return sys_ringbuffer_wait(r->fd, r->rw, min, tsp, 0);
}
