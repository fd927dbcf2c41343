/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * A ring laid out as ringbuffer(2) lays it out (see ringbuffer.rst), in a
 * memfd with the data pages mapped twice, and the library's two sides on
 * it: the library's real code with no kernel behind it.  For the host
 * tests and benchmarks/hostbench.c.
 */
#ifndef FAKE_RING_H
#define FAKE_RING_H

#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/ringbuffer.h>

#include "../libringbuffer.h"
#include "../libringbuffer-internal.h"

struct fake_ring {
	void *base;
	size_t len;
	struct rb_ring prod, cons;
};

static inline int fake_ring_init(struct fake_ring *f, uint32_t size)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t ctl = 3 * page;
	struct ringbuffer_header *h;
	int fd = memfd_create("fake-ring", 0);
	char *b;

	if (fd < 0 || ftruncate(fd, ctl + size))
		return -1;
	f->len = ctl + 2 * (size_t)size;
	b = mmap(NULL, f->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (b == MAP_FAILED)
		return -1;
	/* The data pages once more, right after the first copy. */
	if (mmap(b + ctl + size, size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, fd, ctl) == MAP_FAILED)
		return -1;
	close(fd);
	h = (struct ringbuffer_header *)b;
	h->magic = RINGBUFFER_MAGIC;
	h->version = RINGBUFFER_VERSION;
	h->size = size;
	h->mask = size - 1;
	h->map_size = f->len;
	h->offsets.flags = 256;
	/* Each side's lock waiters beside the peer's sleepers, as in the kernel. */
	h->offsets.read_waiters = 384;
	h->offsets.producer_lock_waiters = 388;
	h->offsets.write_waiters = 512;
	h->offsets.consumer_lock_waiters = 516;
	/* 64-bit positions, with their low halves for 32-bit users. */
	h->offsets.tail64 = page + 256;
	h->offsets.head64 = 2 * page + 256;
	h->offsets.tail = page + 256 + (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? 4 : 0);
	h->offsets.head = 2 * page + 256 + (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? 4 : 0);
	h->offsets.consumer_lock = page + 128;
	h->offsets.producer_lock = 2 * page + 128;
	h->offsets.consumer_keeper = 896;
	h->offsets.producer_keeper = 1024;
	h->offsets.consumer_busy = page + 384;
	h->offsets.producer_busy = 2 * page + 384;
	/*
	 * The kernel puts the busy and held words in each mapping's own
	 * page; one mapping serves both sides here, so each gets its own.
	 */
	h->offsets.consumer_held = page + 512;
	h->offsets.producer_held = 2 * page + 512;
	h->offsets.data = ctl;
	f->base = b;
	/* fd -1: no kernel behind it; the tests never make it sleep. */
	return rb_init_mapping(&f->prod, -1, RB_WRITE, b) ||
	       rb_init_mapping(&f->cons, -1, RB_READ, b);
}

/*
 * What the kernel does for RINGBUFFER_KEEP_LOCK, for the calling thread:
 * it holds the word and the header names it as the side's keeper.
 */
static inline void fake_ring_keep(struct rb_ring *r)
{
	uint32_t tid = (uint32_t)syscall(SYS_gettid);

	atomic_store(r->lock, tid);
	atomic_store(r->keeper, tid);
	atomic_store(&r->kept_by, tid);
}

/*
 * What the kernel does to take a kept side back: the header no longer
 * names the keeper; once the keeper is out of its copy (returns 0 while
 * it is still in it), the word is freed.
 */
static inline int fake_ring_take_back(struct rb_ring *r)
{
	atomic_store(r->keeper, 0);
	if (atomic_load(r->busy))
		return 0;
	atomic_store(r->lock, 0);
	return 1;
}

#endif /* FAKE_RING_H */
