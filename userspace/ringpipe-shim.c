// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * ringpipe-shim.so: LD_PRELOAD this (or run `ringpipe CMD`) and the pipe
 * ends a program reads and writes with read(2), write(2), readv(2) and
 * writev(2) are served from the pipe's shared ring, without system calls
 * while data or space is there.
 *
 * The fast path never blocks and never decides anything the kernel would
 * decide differently: when it cannot go ahead at once (ring empty or full,
 * the other end gone, the side lock held by another thread for long, a
 * peer that broke the ring), the real system call runs on the same pipe,
 * which the kernel serves from the same ring, with blocking, O_NONBLOCK,
 * EOF, EPIPE and SIGPIPE exactly as for any pipe.  So fcntl(F_SETFL) needs
 * no handling here.
 *
 * What must be tracked is which fd numbers are mapped rings: every entry
 * point that closes or replaces an fd forgets the number before the real
 * call returns, so a number reused for another file never reaches a ring.
 * The table is per process and lock-free, because close(2) and write(2)
 * may be called from signal handlers.
 *
 * glibc's stdio reads and writes with libc-internal functions that no
 * interposed read() or write() sees; stdin and stdout on selected pipes
 * get streams whose I/O goes through ours (see take_over_stdio()).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <wchar.h>

#include <linux/ringbuffer.h>

#include "libringbuffer.h"
#include "libringbuffer-internal.h"

#define SHIM_API __attribute__((visibility("default")))
/*
 * The shim is loaded with the program (LD_PRELOAD), so its thread-local
 * words can live in the initial TLS block: each access is then one load
 * off the thread pointer instead of a call to __tls_get_addr(), which
 * every write of a line-buffered stream would otherwise make several of.
 */
#define SHIM_TLS __attribute__((tls_model("initial-exec")))

/* fds at or above this are left to the kernel. */
#define MAX_FDS		4096
/* Tries of a contended lock, and copies after a poll said go, before the
 * real call; how long a full or empty ring is polled is rb_spin_ready()'s. */
#define SPINS		128
/* Rings closed while in use, unmapped once the user is done. */
#define GRAVEYARD	64
/* Per-thread buffer for writes from a signal handler that interrupted a
 * ring write on the same side; only touched pages cost memory. */
#define PENDING_MAX	(1UL << 20)

/*
 * A slot word: 0 = not looked at yet, NOT_RING = looked at, leave it to
 * the kernel, otherwise the address of a struct shim_ring >> 12 (its page)
 * in the low SLOT_PAGE_BITS bits.  The high bits count closes of the
 * number, so that a lookup that raced with a close cannot install a ring
 * for the file that was closed (the compare-and-swap sees the count move).
 */
#define SLOT_PAGE_BITS	36
#define SLOT_PAGE_MASK	((1ULL << SLOT_PAGE_BITS) - 1)
#define NOT_RING	1ULL
/* The graveyard packs an fd number into the low bits of a page address. */
_Static_assert(MAX_FDS <= 4096, "fd numbers must fit below a page");

struct shim_ring {
	struct rb_ring rb;
	int selected_rw;	/* RB_READ or RB_WRITE */
};

struct slot {
	_Atomic uint64_t word;
	/* Fast-path users of this number right now. */
	_Atomic unsigned int busy;
};

static struct slot slots[MAX_FDS];
/* Each entry: a struct shim_ring's address (a page) | its fd number. */
static _Atomic uintptr_t graveyard[GRAVEYARD];

static int shim_enabled;
static int select_all;
static unsigned char selected_fd[MAX_FDS];

static ssize_t (*real_read)(int, void *, size_t);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_readv)(int, const struct iovec *, int);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static int (*real_close)(int);
static int (*real_dup)(int);
static int (*real_dup2)(int, int);
static int (*real_dup3)(int, int, int);
static int (*real_fcntl)(int, int, ...);
static int (*real_fcntl64)(int, int, ...);
static int (*real_close_range)(unsigned int, unsigned int, int);
static void (*real_closefrom)(int);
static int (*real_fclose)(FILE *);
static int (*real_pclose)(FILE *);
static FILE *(*real_freopen)(const char *, const char *, FILE *);
static FILE *(*real_freopen64)(const char *, const char *, FILE *);
static int (*real_daemon)(int, int);
static int (*real_pipe)(int[2]);
static int (*real_pipe2)(int[2], int);
static pid_t (*real_fork)(void);

/*
 * Per thread: the ring whose side lock this thread holds in the fast path
 * (a signal handler writing to it must not wait for it), and the writes
 * such a handler handed over.  Only the thread itself and its handlers
 * touch these; signal fences order them against a handler.
 */
static _Thread_local struct shim_ring *in_fast_path SHIM_TLS;
static _Thread_local char *pending SHIM_TLS;
static _Thread_local volatile size_t pending_len SHIM_TLS;
static _Thread_local struct shim_ring *pending_ring SHIM_TLS;
static _Thread_local volatile int flushing SHIM_TLS;

static void *resolve(const char *name)
{
	void *sym = dlsym(RTLD_NEXT, name);

	if (!sym) {
		static const char msg[] = "ringpipe-shim: missing libc symbol\n";

		syscall(SYS_write, 2, msg, sizeof(msg) - 1);
		abort();
	}
	return sym;
}

/* The next definition of @name; resolved once, normally by shim_init(). */
static void *real_sym(void **slot, const char *name)
{
	if (!*slot)
		*slot = resolve(name);
	return *slot;
}

#define REAL(name) ((__typeof__(real_##name))real_sym((void **)&real_##name, #name))

static void parse_selection(const char *spec)
{
	if (!spec || !*spec) {
		selected_fd[0] = selected_fd[1] = selected_fd[2] = 1;
		return;
	}
	if (!strcmp(spec, "none"))
		return;
	if (!strcmp(spec, "all")) {
		select_all = 1;
		return;
	}
	while (*spec) {
		char *end;
		long fd = strtol(spec, &end, 10);

		if (end == spec || fd < 0 || fd >= MAX_FDS || (*end && *end != ',')) {
			fprintf(stderr, "ringpipe: bad RINGPIPE_FDS \"%s\": want "
				"fd numbers separated by commas, \"all\" or \"none\"\n",
				getenv("RINGPIPE_FDS"));
			memset(selected_fd, 0, sizeof(selected_fd));
			return;
		}
		selected_fd[fd] = 1;
		spec = *end ? end + 1 : end;
	}
}

static void take_over_stdio(FILE **std, int fd, const char *mode);

__attribute__((constructor))
static void shim_init(void)
{
	/* Every real function up front: dlsym is not async-signal-safe. */
	REAL(read); REAL(write); REAL(readv); REAL(writev);
	REAL(close); REAL(dup); REAL(dup2); REAL(dup3);
	REAL(fcntl); REAL(fcntl64);
	/* Optional: a libc without them gets the system call instead. */
	real_close_range = (__typeof__(real_close_range))dlsym(RTLD_NEXT, "close_range");
	real_closefrom = (__typeof__(real_closefrom))dlsym(RTLD_NEXT, "closefrom");
	REAL(fclose); REAL(pclose); REAL(freopen); REAL(freopen64);
	REAL(daemon); REAL(pipe); REAL(pipe2); REAL(fork);
	/* Also lets the library's wake-ups through, which rb_unlock() makes. */
	if (!rb_kernel_has_rings())
		return;
	parse_selection(getenv("RINGPIPE_FDS"));
	shim_enabled = 1;
	if (!getenv("RINGPIPE_STDIO") || strcmp(getenv("RINGPIPE_STDIO"), "0")) {
		take_over_stdio(&stdin, 0, "r");
		take_over_stdio(&stdout, 1, "w");
	}
}

/* --- the fd table --------------------------------------------------- */

static struct shim_ring *slot_ring(uint64_t word)
{
	uint64_t page = word & SLOT_PAGE_MASK;

	return page > NOT_RING ? (struct shim_ring *)(uintptr_t)(page << 12) : NULL;
}

static void ring_free(struct shim_ring *sr)
{
	rb_let_go(&sr->rb);
	munmap(sr->rb.base, sr->rb.map_size);
	munmap(sr, sizeof(*sr));
}

static void graveyard_reap(void)
{
	for (int i = 0; i < GRAVEYARD; i++) {
		uintptr_t p = atomic_load(&graveyard[i]);

		if (!p || atomic_load(&slots[p & (MAX_FDS - 1)].busy))
			continue;
		if (atomic_compare_exchange_strong(&graveyard[i], &p, 0))
			ring_free((struct shim_ring *)(p & ~(uintptr_t)(MAX_FDS - 1)));
	}
}

/* Forget what fd number @fd was.  Async-signal-safe. */
static void slot_forget(int fd)
{
	struct slot *s;
	uint64_t old, new;
	struct shim_ring *sr;

	if (fd < 0 || fd >= MAX_FDS)
		return;
	s = &slots[fd];
	old = atomic_load(&s->word);
	do {
		new = ((old >> SLOT_PAGE_BITS) + 1) << SLOT_PAGE_BITS;
	} while (!atomic_compare_exchange_weak(&s->word, &old, new));
	sr = slot_ring(old);
	if (!sr)
		return;
	/*
	 * seq_cst on both sides: a fast path counts itself in busy before it
	 * loads the word, we swap the word before we load busy, so either it
	 * saw the new word or we see it busy.
	 */
	if (!atomic_load(&s->busy)) {
		ring_free(sr);
	} else {
		for (int i = 0; i < GRAVEYARD; i++) {
			uintptr_t empty = 0;

			if (atomic_compare_exchange_strong(&graveyard[i], &empty,
							   (uintptr_t)sr | fd))
				return;
		}
		/* Full: leave it mapped rather than pull it from under a user. */
	}
	graveyard_reap();
}

/* Map @fd's ring if it is a selected pipe end; the slot word to use. */
static uint64_t slot_lookup(int fd, uint64_t word)
{
	struct slot *s = &slots[fd];
	struct shim_ring *sr;
	struct stat st;
	uint64_t addr = 0, new;
	int fl, rw;

	new = (word & ~SLOT_PAGE_MASK) | NOT_RING;
	if ((!select_all && !selected_fd[fd]) || fstat(fd, &st) ||
	    !S_ISFIFO(st.st_mode))
		goto install;
	/* Packet-mode (O_DIRECT) pipes keep their packets in the kernel. */
	fl = REAL(fcntl)(fd, F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) == O_RDWR || (fl & O_DIRECT))
		goto install;
	rw = (fl & O_ACCMODE) == O_WRONLY ? RB_WRITE : RB_READ;
	/* The pipe's own size decides: the kernel takes the larger. */
	if (syscall(__NR_ringbuffer, fd, rw, 4096, &addr, 0))
		goto install;
	sr = mmap(NULL, sizeof(*sr), PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sr == MAP_FAILED) {
		munmap((void *)(uintptr_t)addr,
		       ((struct ringbuffer_header *)(uintptr_t)addr)->map_size);
		goto install;
	}
	if (rb_init_mapping(&sr->rb, fd, rw, (void *)(uintptr_t)addr)) {
		munmap((void *)(uintptr_t)addr,
		       ((struct ringbuffer_header *)(uintptr_t)addr)->map_size);
		munmap(sr, sizeof(*sr));
		goto install;
	}
	sr->selected_rw = rw;
	new = (word & ~SLOT_PAGE_MASK) | ((uintptr_t)sr >> 12);
install:
	if (atomic_compare_exchange_strong(&s->word, &word, new))
		return new;
	/* Closed or looked up meanwhile: theirs wins. */
	sr = slot_ring(new);
	if (sr)
		ring_free(sr);
	return word;
}

/*
 * Count a fast-path user of slot @s in or out.  With other threads, an
 * atomic read-modify-write, ordered (seq_cst) as slot_forget() expects.
 * A process with one thread races only with its own signal handlers,
 * whose own count in and out leave the count as they found it, even
 * between our load and store: a plain load and store suffice there, and
 * the fast path of a single-threaded program (most filters in a pipeline)
 * has no atomic read-modify-write at all.  __libc_single_threaded turns
 * false before a second thread exists, in the thread that creates it,
 * which is then not in here.
 */
static inline void slot_count(struct slot *s, int delta)
{
	if (__libc_single_threaded) {
		unsigned int n = atomic_load_explicit(&s->busy, memory_order_relaxed);

		atomic_store_explicit(&s->busy, n + delta, memory_order_relaxed);
		/* A handler's slot_forget() sees it, in program order. */
		atomic_signal_fence(memory_order_seq_cst);
	} else {
		atomic_fetch_add(&s->busy, delta);
	}
}

/*
 * Enter the fast path for side @rw of @fd: the ring, counted busy, or
 * NULL.  Leave it with fast_path_exit().
 */
static inline __attribute__((always_inline)) struct shim_ring *
fast_path_enter(int fd, int rw)
{
	struct slot *s;
	struct shim_ring *sr;
	uint64_t word;

	if (!shim_enabled || fd < 0 || fd >= MAX_FDS)
		return NULL;
	s = &slots[fd];
	slot_count(s, 1);
	word = atomic_load(&s->word);
	if (!(word & SLOT_PAGE_MASK))
		word = slot_lookup(fd, word);
	sr = slot_ring(word);
	if (sr && sr->selected_rw == rw)
		return sr;
	slot_count(s, -1);
	return NULL;
}

static inline void fast_path_exit(int fd)
{
	slot_count(&slots[fd], -1);
}

/* --- the ring ------------------------------------------------------- */

/* Copy @n bytes between ring position @pos and @iov, from byte @skip on. */
static void copy_iov(struct rb_ring *r, rb_pos pos, const struct iovec *iov,
		     size_t skip, size_t n)
{
	/* The data area is mapped twice: n <= size bytes are contiguous. */
	uint8_t *ring = r->data + (pos & r->mask);

	for (; n; iov++) {
		size_t len = iov->iov_len;
		size_t chunk;

		if (skip >= len) {
			skip -= len;
			continue;
		}
		chunk = len - skip < n ? len - skip : n;
		if (r->rw == RB_WRITE)
			memcpy(ring, (const char *)iov->iov_base + skip, chunk);
		else
			memcpy((char *)iov->iov_base + skip, ring, chunk);
		ring += chunk;
		n -= chunk;
		skip = 0;
	}
}

/*
 * One copy of up to @len bytes of @iov (from @skip on) through the ring,
 * none unless @want fit.  Returns bytes moved, 0 when it cannot go ahead
 * now, -1 when this thread holds the lock already (a signal handler
 * interrupted it).
 */
static ssize_t ring_copy(struct shim_ring *sr, const struct iovec *iov,
			 size_t skip, size_t len, size_t want)
{
	struct rb_ring *r = &sr->rb;
	size_t avail, n;
	long space;
	rb_pos own;

	/* Held for long (or by a dead task): the kernel waits properly. */
	switch (rb_trylock(r, SPINS)) {
	case RB_LOCKED:
		break;
	case RB_LOCK_OWN_THREAD:
		return -1;
	case RB_LOCK_BUSY:
		return 0;
	}
	space = rb_avail_locked(r, &own, want);
	/* A peer stored nonsense (space -1): leave it to the kernel, which says EIO. */
	if (space <= 0 || (size_t)space < want) {
		rb_unlock_unchanged(r);
		return 0;
	}
	avail = (size_t)space;
	n = len < avail ? len : avail;
	copy_iov(r, own, iov, skip, n);
	rb_publish(r, own, n);
	rb_unlock(r);
	return n;
}

/*
 * Move as much of @iov as the ring takes now; writes of up to PIPE_BUF
 * bytes go whole or not at all.  Returns bytes moved, or -1 if this thread
 * holds the side lock already (a signal handler interrupted it).
 */
static ssize_t ring_transfer(struct shim_ring *sr, const struct iovec *iov,
			     size_t total)
{
	int writer = sr->rb.rw == RB_WRITE;
	size_t want = !writer || total > PIPE_BUF ? 1 : total;
	size_t done = 0, avail;
	rb_pos own;

	/* A side this thread keeps, neither full nor empty: the library's fast path. */
	if (rb_fast_enter(&sr->rb, want, &own, &avail)) {
		done = total < avail ? total : avail;
		copy_iov(&sr->rb, own, iov, 0, done);
		rb_fast_exit(&sr->rb, own, done);
		if (done == total || !writer)
			return done;
	}
	for (int tries = 0; tries < SPINS && done < total; tries++) {
		ssize_t n;

		/* A full or empty ring is polled without the lock. */
		if (!rb_spin_ready(&sr->rb, want, total - done))
			break;
		/* No reader: the kernel says EPIPE and raises SIGPIPE. */
		if (writer && rb_side_ended(&sr->rb))
			break;
		n = ring_copy(sr, iov, done, total - done, want);
		if (n < 0)
			return done ? (ssize_t)done : -1;
		if (n > 0) {
			done += n;
			/* A reader returns what there is, like read(2). */
			if (!writer)
				break;
			tries = 0;
			continue;
		}
		/* Empty after the end: the kernel says 0. */
		if (!writer && rb_side_ended(&sr->rb))
			break;
	}
	return done;
}

/* --- writes from signal handlers ------------------------------------ */

/*
 * A handler that writes to the side this thread holds locked cannot wait
 * for the lock (the holder is the code it interrupted), nor can the
 * kernel.  Its bytes are kept here, whole, and sent before the interrupted
 * write returns: after what that write put in the ring, before what it
 * leaves to the kernel.  Async-signal-safe: mmap is a system call.
 */
static int defer_write(struct shim_ring *sr, const struct iovec *iov,
		       int iovcnt, size_t total)
{
	if (!pending) {
		void *p = mmap(NULL, PENDING_MAX, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (p == MAP_FAILED)
			return -1;
		pending = p;
	}
	if ((pending_len && pending_ring != sr) || total > PENDING_MAX - pending_len) {
		errno = EAGAIN;
		return -1;
	}
	for (int i = 0; i < iovcnt; i++) {
		memcpy(pending + pending_len, iov[i].iov_base, iov[i].iov_len);
		pending_len += iov[i].iov_len;
	}
	pending_ring = sr;
	return 0;
}

/*
 * Mark the thread inside a copy on @sr until copy_end(): a signal handler
 * that calls on @sr meanwhile defers its write or fails, rather than wait
 * for the side the interrupted code may hold.  The handler must see the
 * mark before we can hold the side, and until we no longer do.
 */
static inline __attribute__((always_inline)) void copy_begin(struct shim_ring *sr)
{
	in_fast_path = sr;
	atomic_signal_fence(memory_order_seq_cst);
}

static inline __attribute__((always_inline)) void copy_end(struct shim_ring *outer)
{
	atomic_signal_fence(memory_order_seq_cst);
	in_fast_path = outer;
}

static inline __attribute__((always_inline)) int has_deferred(struct shim_ring *sr)
{
	return pending_len && pending_ring == sr;
}

/* Send what handlers deferred; called with the slot busy, lock not held. */
static void flush_deferred(struct shim_ring *sr)
{
	struct shim_ring *outer = in_fast_path;

	flushing = 1;
	atomic_signal_fence(memory_order_seq_cst);
	while (pending_len) {
		size_t total = pending_len;
		struct iovec iov = { pending, total };
		uint32_t want = total < sr->rb.size ? (uint32_t)total : 1;
		ssize_t n;

		if (rb_side_ended(&sr->rb))
			break;	/* no reader: nobody can receive them any more */
		/* Handlers interrupting the copy see us inside and append. */
		copy_begin(sr);
		n = ring_copy(sr, &iov, 0, total, want);
		copy_end(outer);
		if (n > 0) {
			memmove(pending, pending + n, pending_len - n);
			pending_len -= n;
			continue;
		}
		/* Wait for the space, O_NONBLOCK or not: they were accepted. */
		if (syscall(__NR_ringbuffer_wait, sr->rb.fd, RB_WRITE, want, NULL, 0) < 0 &&
		    errno != EINTR)
			break;
	}
	pending_len = 0;
	pending_ring = NULL;
	atomic_signal_fence(memory_order_seq_cst);
	flushing = 0;
}

/* Before a call on @sr returns: send what handlers deferred during it. */
static inline __attribute__((always_inline)) void flush_if_deferred(struct shim_ring *sr)
{
	if (has_deferred(sr) && !flushing)
		flush_deferred(sr);
}

/* --- read and write ------------------------------------------------- */

static size_t iov_total(const struct iovec *iov, int iovcnt)
{
	size_t total = 0;

	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > SSIZE_MAX - total)
			return SIZE_MAX;
		total += iov[i].iov_len;
	}
	return total;
}

/* @iov with the first @skip bytes dropped, into @out; the new count. */
static int iov_advance(const struct iovec *iov, int iovcnt, size_t skip,
		       struct iovec *out)
{
	int n = 0;

	for (int i = 0; i < iovcnt; i++) {
		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		out[n].iov_base = (char *)iov[i].iov_base + skip;
		out[n].iov_len = iov[i].iov_len - skip;
		skip = 0;
		n++;
	}
	return n;
}

/* The rest of a write the ring took part of, by the kernel. */
static __attribute__((noinline)) ssize_t
write_rest(int fd, const struct iovec *iov, int iovcnt, size_t done)
{
	struct iovec rest[IOV_MAX];
	int saved_errno = errno;
	ssize_t more;

	more = REAL(writev)(fd, rest, iov_advance(iov, iovcnt, done, rest));
	if (more < 0) {
		/* Like the kernel: what was written counts, the error waits. */
		errno = saved_errno;
		return done;
	}
	return done + more;
}

static ssize_t real_io(int fd, const struct iovec *iov, int iovcnt, int rw)
{
	if (rw == RB_WRITE)
		return iovcnt == 1 ? REAL(write)(fd, iov->iov_base, iov->iov_len) :
				     REAL(writev)(fd, iov, iovcnt);
	return iovcnt == 1 ? REAL(read)(fd, iov->iov_base, iov->iov_len) :
			     REAL(readv)(fd, iov, iovcnt);
}

/*
 * A signal handler's call on a side whose lock this thread holds, in the
 * code it interrupted (@outer): writes are deferred to it, reads fail.
 */
static ssize_t nested_io(struct shim_ring *outer, const struct iovec *iov,
			 int iovcnt, size_t total, int rw)
{
	if (rw == RB_READ) {
		/* The data it would get is in the hands of the interrupted code. */
		errno = EINTR;
		return -1;
	}
	if (!outer || outer->rb.rw != RB_WRITE) {
		errno = EDEADLK;
		return -1;
	}
	return defer_write(outer, iov, iovcnt, total) ? -1 : (ssize_t)total;
}

static ssize_t shim_io(int fd, const struct iovec *iov, int iovcnt, int rw)
{
	struct shim_ring *sr, *outer = in_fast_path;
	size_t total;
	ssize_t done;

	if (iovcnt <= 0 || iovcnt > IOV_MAX)
		return real_io(fd, iov, iovcnt, rw);
	total = iov_total(iov, iovcnt);
	if (!total || total == SIZE_MAX)
		return real_io(fd, iov, iovcnt, rw);
	sr = fast_path_enter(fd, rw);
	if (!sr)
		return real_io(fd, iov, iovcnt, rw);
	if (outer == sr) {
		/* A signal handler, and the code it interrupted is in here. */
		done = nested_io(outer, iov, iovcnt, total, rw);
		fast_path_exit(fd);
		return done;
	}
	copy_begin(sr);
	done = ring_transfer(sr, iov, total);
	copy_end(outer);
	if (done < 0) {
		/* Another fd number of the ring the interrupted code is in. */
		done = nested_io(outer, iov, iovcnt, total, rw);
		fast_path_exit(fd);
		return done;
	}
	flush_if_deferred(sr);
	fast_path_exit(fd);
	if ((size_t)done == total || (done && rw == RB_READ))
		return done;
	if (!done)
		return real_io(fd, iov, iovcnt, rw);
	/* Part went in; the kernel waits for space for the rest. */
	return write_rest(fd, iov, iovcnt, done);
}

/*
 * One buffer (read(), write() and the stdio streams): a side this thread
 * keeps, with the data or space there, is served by the library's fast
 * path in one call; everything else by shim_io().  Under emulation and
 * for small messages, shim_io()'s iovec walk, frame and calls would cost
 * more than the copy.  A write of more than PIPE_BUF bytes, which may go
 * in parts, and a call nested in one on the same ring (a signal handler)
 * go to shim_io() directly.
 */
static inline __attribute__((always_inline)) ssize_t
shim_rw(int fd, void *buf, size_t len, int rw)
{
	struct shim_ring *sr, *outer = in_fast_path;
	struct iovec iov = { buf, len };
	size_t n;

	if (!len || (rw == RB_WRITE && len > PIPE_BUF))
		return shim_io(fd, &iov, 1, rw);
	sr = fast_path_enter(fd, rw);
	if (!sr)
		return real_io(fd, &iov, 1, rw);
	if (outer == sr || has_deferred(sr)) {
		fast_path_exit(fd);
		return shim_io(fd, &iov, 1, rw);
	}
	copy_begin(sr);
	n = rw == RB_WRITE ? rb_fast_write(&sr->rb, buf, len, len) :
			     rb_fast_read(&sr->rb, buf, len);
	copy_end(outer);
	if (n)
		flush_if_deferred(sr);
	fast_path_exit(fd);
	return n ? (ssize_t)n : shim_io(fd, &iov, 1, rw);
}

SHIM_API ssize_t read(int fd, void *buf, size_t len)
{
	return shim_rw(fd, buf, len, RB_READ);
}

SHIM_API ssize_t write(int fd, const void *buf, size_t len)
{
	return shim_rw(fd, (void *)buf, len, RB_WRITE);
}

SHIM_API ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	return shim_io(fd, iov, iovcnt, RB_READ);
}

SHIM_API ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	return shim_io(fd, iov, iovcnt, RB_WRITE);
}

/* --- stdio ------------------------------------------------------------ */

/*
 * The I/O functions of the streams that stand in for stdin and stdout:
 * those of glibc's file streams, on the shim's read() and write(), called
 * directly rather than through the PLT.  A write goes on after a partial
 * one and stops at an error, which the stream then shows (ferror), as
 * glibc's own does.
 */
static ssize_t stdio_read(void *cookie, char *buf, size_t len)
{
	return shim_rw((int)(intptr_t)cookie, buf, len, RB_READ);
}

static ssize_t stdio_write(void *cookie, const char *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = shim_rw((int)(intptr_t)cookie, (char *)buf + done,
				    len - done, RB_WRITE);

		if (n < 0)
			return done ? (ssize_t)done : -1;
		done += n;
	}
	return done;
}

static int stdio_seek(void *cookie, off64_t *offset, int whence)
{
	off64_t pos = lseek64((int)(intptr_t)cookie, *offset, whence);

	if (pos < 0)
		return -1;
	*offset = pos;
	return 0;
}

static int stdio_close(void *cookie)
{
	return close((int)(intptr_t)cookie);
}

/*
 * Put a stream of our own in place of *@std (stdin or stdout) if it is
 * still unused and @fd is a selected pipe end.  It keeps what glibc would
 * have chosen: the fd (fileno() works, and freopen() reuses it), full
 * buffering with a buffer of st_blksize bytes up to BUFSIZ (so a write of
 * a full buffer stays within PIPE_BUF and is not interleaved with other
 * writers'), and glibc's own flushing at exit, at fflush(NULL) and
 * before a read of a line-buffered stream; fork() copies unflushed data
 * as it does for any stream.  A buffering mode set before (stdbuf(1)
 * sets one before main()) is kept: unbuffered, line buffered, or full
 * with the size given; one set after applies to our stream.  Not done for
 * a stream already used or oriented, nor with RINGPIPE_STDIO=0.  The
 * streams cannot turn wide (fwide(), wprintf()): glibc gives cookie
 * streams no wide buffers.
 */
/* glibc's FILE flags (libio.h) for a buffering mode set by setvbuf(). */
#define GLIBC_IO_UNBUFFERED	0x0002
#define GLIBC_IO_LINE_BUF	0x0200

static void take_over_stdio(FILE **std, int fd, const char *mode)
{
	static const cookie_io_functions_t io = {
		stdio_read, stdio_write, stdio_seek, stdio_close,
	};
	int buffering = _IOFBF;
	char *buf = NULL;
	struct stat st;
	size_t size;
	FILE *f;

	if (!*std || fileno(*std) != fd || fwide(*std, 0) ||
	    __fpending(*std) || (*std)->_IO_read_ptr < (*std)->_IO_read_end ||
	    (!select_all && !selected_fd[fd]) || fstat(fd, &st) ||
	    !S_ISFIFO(st.st_mode))
		return;
	size = st.st_blksize > 0 && st.st_blksize < BUFSIZ ? st.st_blksize : BUFSIZ;
	if ((*std)->_flags & GLIBC_IO_UNBUFFERED)
		buffering = _IONBF;
	else if ((*std)->_flags & GLIBC_IO_LINE_BUF)
		buffering = _IOLBF;
	else if ((*std)->_IO_buf_base)
		size = __fbufsize(*std);	/* setvbuf() gave it this size */
	if (buffering != _IONBF && !(buf = malloc(size)))
		return;
	f = fopencookie((void *)(intptr_t)fd, mode, io);
	if (!f || setvbuf(f, buf, buffering, buffering == _IONBF ? 0 : size)) {
		if (f)
			REAL(fclose)(f);
		free(buf);
		return;
	}
	f->_fileno = fd;
	*std = f;
}

/* --- calls that close or replace fds -------------------------------- */

SHIM_API int close(int fd)
{
	slot_forget(fd);
	return REAL(close)(fd);
}

SHIM_API int dup(int fd)
{
	int new = REAL(dup)(fd);

	slot_forget(new);
	return new;
}

SHIM_API int dup2(int fd, int new)
{
	int ret;

	if (fd != new)
		slot_forget(new);
	ret = REAL(dup2)(fd, new);
	if (ret >= 0 && fd != new)
		slot_forget(new);
	return ret;
}

SHIM_API int dup3(int fd, int new, int flags)
{
	int ret;

	slot_forget(new);
	ret = REAL(dup3)(fd, new, flags);
	slot_forget(new);
	return ret;
}

static int do_fcntl(int (*fn)(int, int, ...), int fd, int cmd, void *arg)
{
	int ret = fn(fd, cmd, arg);

	if (ret >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))
		slot_forget(ret);
	return ret;
}

SHIM_API int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	/* As glibc does: one argument, passed on untouched, whatever it is. */
	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return do_fcntl(REAL(fcntl), fd, cmd, arg);
}

SHIM_API int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return do_fcntl(REAL(fcntl64), fd, cmd, arg);
}

static void forget_range(unsigned int first, unsigned int last)
{
	for (unsigned int fd = first; fd <= last && fd < MAX_FDS; fd++)
		if (atomic_load(&slots[fd].word) & SLOT_PAGE_MASK)
			slot_forget(fd);
}

#ifndef SYS_close_range
#define SYS_close_range 436	/* the same number on every architecture */
#endif

/*
 * close_range() and closefrom() came with glibc 2.34: on an older libc
 * they are not looked up (shim_init()), and done with the system call.
 */
SHIM_API int close_range(unsigned int first, unsigned int last, int flags)
{
	/* With CLOSE_RANGE_CLOEXEC nothing closes before execve(). */
	if (!(flags & CLOSE_RANGE_CLOEXEC) && first <= last)
		forget_range(first, last);
	if (!real_close_range)
		return syscall(SYS_close_range, first, last, flags);
	return real_close_range(first, last, flags);
}

SHIM_API void closefrom(int first)
{
	if (first >= 0)
		forget_range(first, MAX_FDS - 1);
	if (real_closefrom) {
		real_closefrom(first);
	} else if (first >= 0 && syscall(SYS_close_range, first, ~0U, 0)) {
		/* A kernel before 5.9: close what the limit allows. */
		for (long fd = first; fd < sysconf(_SC_OPEN_MAX); fd++)
			REAL(close)((int)fd);
	}
}

/* stdio closes and replaces fds with libc-internal calls. */
SHIM_API int fclose(FILE *f)
{
	int fd = f ? fileno(f) : -1;

	slot_forget(fd);
	return REAL(fclose)(f);
}

SHIM_API int pclose(FILE *f)
{
	slot_forget(f ? fileno(f) : -1);
	return REAL(pclose)(f);
}

SHIM_API FILE *freopen(const char *path, const char *mode, FILE *f)
{
	FILE *ret;

	slot_forget(f ? fileno(f) : -1);
	ret = REAL(freopen)(path, mode, f);
	if (ret)
		slot_forget(fileno(ret));
	return ret;
}

SHIM_API FILE *freopen64(const char *path, const char *mode, FILE *f)
{
	FILE *ret;

	slot_forget(f ? fileno(f) : -1);
	ret = REAL(freopen64)(path, mode, f);
	if (ret)
		slot_forget(fileno(ret));
	return ret;
}

SHIM_API int daemon(int nochdir, int noclose)
{
	int ret = REAL(daemon)(nochdir, noclose);

	if (!noclose)
		forget_range(0, 2);
	return ret;
}

/* New pipes: their numbers may have been closed behind our back. */
SHIM_API int pipe(int fds[2])
{
	int ret = REAL(pipe)(fds);

	if (!ret) {
		slot_forget(fds[0]);
		slot_forget(fds[1]);
	}
	return ret;
}

SHIM_API int pipe2(int fds[2], int flags)
{
	int ret = REAL(pipe2)(fds, flags);

	if (!ret) {
		slot_forget(fds[0]);
		slot_forget(fds[1]);
	}
	return ret;
}

/*
 * A vfork() child shares our memory, fd table slots included, but not our
 * fd table: its dup2() before execve() would make the parent forget, or
 * worse, remember wrongly.  Give it its own memory.
 */
SHIM_API pid_t vfork(void)
{
	return REAL(fork)();
}
