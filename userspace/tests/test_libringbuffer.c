// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libringbuffer unit tests.  On a kernel without rings (the host) they
 * check the fallback to read(2)/write(2); on one with rings (the VM) the
 * real mapping.  Either way they check the ring logic on a ring built in
 * user space: a memfd laid out like ringbuffer(2)'s mapping, data pages
 * mapped twice, driven by a producer and a consumer thread.
 * Output: TAP (the plan last), ending with "N passed, N failed".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/futex.h>
#include <linux/ringbuffer.h>

#include "../libringbuffer.h"
#include "../libringbuffer-internal.h"
#include "fake_ring.h"

static int passed, failed;

#define CHECK(cond, ...) do {						\
	if (cond) {							\
		passed++;						\
		printf("ok %d - ", passed + failed);			\
	} else {							\
		failed++;						\
		printf("not ok %d - ", passed + failed);		\
	}								\
	printf(__VA_ARGS__);						\
	printf("\n");							\
} while (0)

static uint8_t seq_byte(uint64_t pos)
{
	return (uint8_t)(pos * 131 + (pos >> 9));
}

static void test_pipe_copy_api(void)
{
	char out[64] = { 0 };
	struct rb_ring *w, *r;
	int fds[2];

	if (pipe(fds))
		abort();
	w = rb_open(fds[1], RB_WRITE, 65536);
	r = rb_open(fds[0], RB_READ, 65536);
	CHECK(w && r, "rb_open on a pipe (%s)", w && rb_is_mapped(w) ?
	      "mapped" : "fallback to read/write");
	CHECK(rb_is_mapped(w) == rb_is_mapped(r), "both ends in the same mode");
	CHECK(rb_write(w, "hello, ring", 11) == 11, "rb_write");
	CHECK(rb_read(r, out, sizeof(out)) == 11 && !memcmp(out, "hello, ring", 11),
	      "rb_read gets it back");
	/* Mixed: a plain write(2), read through the library, and back. */
	CHECK(write(fds[1], "abc", 3) == 3 && rb_read(r, out, 3) == 3 &&
	      !memcmp(out, "abc", 3), "write(2) then rb_read");
	CHECK(rb_write(w, "xyz", 3) == 3 && read(fds[0], out, 3) == 3 &&
	      !memcmp(out, "xyz", 3), "rb_write then read(2)");
	{
		struct iovec rec[3] = {
			{ "one,", 4 }, { "two,", 4 }, { "three", 5 },
		};
		ssize_t k = 0;

		for (int i = 0; i < 3; i += (int)k) {
			k = rb_write_records(w, rec + i, 3 - i);
			if (k < 1)
				break;
		}
		CHECK(k >= 1 && read(fds[0], out, 13) == 13 &&
		      !memcmp(out, "one,two,three", 13),
		      "rb_write_records then read(2): whole, in order");
	}
	if (!rb_is_mapped(w)) {
		size_t len;

		CHECK(!rb_reserve(w, 10) && errno == ENOTSUP,
		      "rb_reserve in fallback mode: ENOTSUP");
		CHECK(!rb_peek(r, 10, &len) && errno == ENOTSUP,
		      "rb_peek in fallback mode: ENOTSUP");
		CHECK(rb_wait(r, 1, 0) < 0 && errno == ENOTSUP,
		      "rb_wait in fallback mode: ENOTSUP");
	}
	rb_close(w);
	close(fds[1]);
	CHECK(rb_read(r, out, sizeof(out)) == 0, "end of file after the writer left");
	rb_close(r);
	close(fds[0]);

	if (pipe(fds))
		abort();
	signal(SIGPIPE, SIG_IGN);
	w = rb_open(fds[1], RB_WRITE, 65536);
	close(fds[0]);
	CHECK(rb_write(w, "x", 1) < 0 && errno == EPIPE, "EPIPE without a reader");
	rb_close(w);
	close(fds[1]);
}

static void test_bad_arguments(void)
{
	CHECK(!rb_open(-1, RB_READ, 4096) && errno == EINVAL, "bad fd: EINVAL");
	CHECK(!rb_open(0, 2, 4096) && errno == EINVAL, "bad side: EINVAL");
	CHECK(!rb_open(0, RB_READ, 3000) && errno == EINVAL,
	      "size not a power of two: EINVAL");
}

/* A ring laid out like ringbuffer(2)'s mapping, in a memfd. */
#define STREAM (8u << 20)
/* 2^32 bytes in a 64-bit position; 0 where positions have 32 bits. */
#define LAP ((rb_pos)(UINT64_C(1) << 32))

static void *producer(void *arg)
{
	struct fake_ring *f = arg;
	uint64_t pos = 0;
	unsigned int seed = 1;

	while (pos < STREAM) {
		size_t len = 1 + (seed = seed * 1103515245 + 12345) % 3000;
		uint8_t *p;

		if (len > STREAM - pos)
			len = STREAM - pos;
		p = rb_reserve(&f->prod, len);
		if (!p) {
			if (errno != EAGAIN)
				return (void *)1;
			continue;
		}
		for (size_t i = 0; i < len; i++)
			p[i] = seq_byte(pos + i);
		rb_commit(&f->prod, len);
		pos += len;
	}
	return NULL;
}

static void test_fake_ring_zero_copy(void)
{
	struct fake_ring f;
	pthread_t t;
	uint64_t pos = 0, bad = 0;
	void *ret;

	CHECK(!fake_ring_init(&f, 16384), "a user-space ring laid out like the kernel's");
	if (failed)
		return;
	pthread_create(&t, NULL, producer, &f);
	while (pos < STREAM) {
		size_t len;
		const uint8_t *p = rb_peek(&f.cons, 5000, &len);

		if (!p)
			continue;
		for (size_t i = 0; i < len; i++)
			bad += p[i] != seq_byte(pos + i);
		rb_consume(&f.cons, len);
		pos += len;
	}
	pthread_join(t, &ret);
	CHECK(!ret && pos == STREAM && !bad,
	      "8 MiB through reserve/commit and peek/consume, spans across the wrap");

	/* Hostile positions: the library refuses them. */
	atomic_store(f.prod.head, atomic_load(f.prod.tail) + 16384 + 5);
	CHECK(!rb_reserve(&f.prod, 1) && errno == EIO, "head too far ahead: EIO");
	{
		size_t len;

		CHECK(!rb_peek(&f.cons, 1, &len) && errno == EIO,
		      "consumer sees the same: EIO");
	}
	atomic_store(f.prod.head, atomic_load(f.prod.tail));
	CHECK(!rb_reserve(&f.prod, 16385) && errno == EMSGSIZE,
	      "reserve above the size: EMSGSIZE");
	CHECK(rb_reserve(&f.prod, 16384) != NULL, "reserve the whole ring");
	CHECK(!rb_reserve(&f.prod, 1) && errno == EDEADLK,
	      "reserve again before commit: EDEADLK");
	CHECK(rb_commit(&f.prod, 16385) < 0 && errno == EINVAL,
	      "commit more than reserved: EINVAL");
	CHECK(rb_commit(&f.prod, 0) == 0, "commit nothing");
	CHECK(rb_commit(&f.prod, 0) < 0 && errno == EINVAL &&
	      atomic_load(f.prod.lock) == 0,
	      "commit without a reserve: EINVAL, lock untouched");
	CHECK(rb_consume(&f.cons, 0) < 0 && errno == EINVAL,
	      "consume without a peek: EINVAL");
	munmap(f.base, f.len);
}

static void *copy_producer(void *arg)
{
	struct fake_ring *f = arg;
	uint8_t rec[16];

	for (uint64_t pos = 0; pos < STREAM; pos += sizeof(rec)) {
		for (size_t i = 0; i < sizeof(rec); i++)
			rec[i] = seq_byte(pos + i);
		/* fd -1: "full" comes back as EBADF from the fallback. */
		while (rb_write(&f->prod, rec, sizeof(rec)) != sizeof(rec))
			if (errno != EBADF)
				return (void *)1;
	}
	return NULL;
}

/*
 * The copy path on a ring in memory: 16-byte records (each whole, as
 * PIPE_BUF asks) against reads of every size, with both sides keeping
 * the other's position cached; then a stale cache after another producer
 * of the same side moved on, and hostile positions.
 */
static void test_fake_ring_copy(void)
{
	static uint8_t buf[20000];
	struct fake_ring f;
	struct rb_ring prod2;
	uint64_t pos = 0, bad = 0;
	uint32_t seed = 1;
	pthread_t t;
	void *ret;

	CHECK(!fake_ring_init(&f, 16384), "a second ring laid out like the kernel's");
	if (failed)
		return;
	pthread_create(&t, NULL, copy_producer, &f);
	while (pos < STREAM) {
		size_t want = 1 + (seed = seed * 1103515245 + 12345) % sizeof(buf);
		ssize_t n = rb_read(&f.cons, buf, want);

		if (n < 0) {
			if (errno != EBADF)
				break;
			continue;
		}
		for (ssize_t i = 0; i < n; i++)
			bad += buf[i] != seq_byte(pos + i);
		pos += n;
	}
	pthread_join(t, &ret);
	CHECK(!ret && pos == STREAM && !bad,
	      "8 MiB of 16-byte records through rb_write/rb_read, positions cached");

	/* Two producers: one's cached tail falls behind what the other saw. */
	CHECK(!rb_init_mapping(&prod2, -1, RB_WRITE, f.base), "a second producer");
	CHECK(rb_write(&f.prod, buf, 10000) == 10000, "producer 1 fills 10000");
	CHECK(rb_read(&f.cons, buf, 10000) == 10000, "consumer drains it");
	CHECK(rb_write(&prod2, buf, 16000) == 16000,
	      "producer 2 writes 16000, seeing the new tail");
	CHECK(rb_read(&f.cons, buf, 16000) == 16000, "consumer drains that");
	{
		void *span = rb_reserve(&f.prod, 100);

		CHECK(span && !rb_commit(&f.prod, 100),
		      "producer 1 with a stale tail: no false EIO");
	}
	CHECK(rb_read(&f.cons, buf, sizeof(buf)) == 100, "and its 100 bytes arrive");

	/*
	 * Others move a whole lap of 2^32 bytes and more while producer 1
	 * waits, and leave the ring full: its cached tail, taken modulo
	 * 2^32, then shows space that is not there.  Stored directly, as
	 * other producers and the consumer would leave the positions.
	 */
	{
		rb_pos cached = f.prod.peer_pos;
		rb_pos head = cached + LAP + 1000;	/* a lap and 1000 bytes on */

		atomic_store(f.prod.head, head);
		atomic_store(f.cons.tail, head - 16384);
		CHECK(!rb_reserve(&f.prod, 100),
		      "producer 1 whose cached tail is a lap old finds the ring full");
		atomic_store(f.cons.tail, head);
	}
	/*
	 * Exactly a lap: the low halves of the positions are where producer
	 * 1 left them, and only 64-bit positions show that they moved.
	 */
	if (sizeof(rb_pos) == sizeof(uint64_t)) {
		rb_pos head;

		CHECK(rb_write(&f.prod, buf, 100) == 100 &&
		      rb_read(&f.cons, buf, sizeof(buf)) == 100,
		      "producer 1 writes again, caching an older tail");
		head = atomic_load(f.prod.head) + LAP;
		atomic_store(f.prod.head, head);
		atomic_store(f.cons.tail, head - 16384);
		CHECK(!rb_reserve(&f.prod, 100),
		      "producer 1 after others moved exactly 2^32 bytes finds the ring full");
		atomic_store(f.cons.tail, head);
		CHECK(rb_write(&f.prod, buf, 10) == 10 &&
		      rb_read(&f.cons, buf, sizeof(buf)) == 10,
		      "and moves on from there");
	}

	/* Batches: records of 1 to 300 bytes, never split, never reordered. */
	{
		static uint8_t recs[64][300];
		struct iovec rec[64];
		uint64_t sent = 0, got = 0, badb = 0;
		int ok = 1;

		for (int round = 0; round < 200 && ok; round++) {
			int n = 1 + round % 64;
			uint64_t at = sent;

			for (int i = 0; i < n; i++) {
				size_t len = 1 + (round * 31 + i * 7) % 300;

				for (size_t b = 0; b < len; b++)
					recs[i][b] = seq_byte(at + b);
				rec[i].iov_base = recs[i];
				rec[i].iov_len = len;
				at += len;
			}
			for (int i = 0; i < n;) {
				ssize_t k = rb_write_records(&f.prod, rec + i, n - i);

				if (k < 1) {
					ok = errno == EBADF;	/* full: drain below */
				} else {
					for (ssize_t j = 0; j < k; j++)
						sent += rec[i + j].iov_len;
					i += k;
				}
				while (got < sent) {
					ssize_t m = rb_read(&f.cons, buf, sizeof(buf));

					if (m <= 0)
						break;
					for (ssize_t b = 0; b < m; b++)
						badb += buf[b] != seq_byte(got + b);
					got += m;
				}
				if (!ok)
					break;
			}
		}
		CHECK(ok && got == sent && !badb,
		      "rb_write_records: %llu bytes of 1-300 byte records, in order",
		      (unsigned long long)sent);
		rec[0].iov_len = PIPE_BUF + 1;
		CHECK(rb_write_records(&f.prod, rec, 1) < 0 && errno == EMSGSIZE,
		      "rb_write_records: a record above PIPE_BUF: EMSGSIZE");
		CHECK(rb_write_records(&f.prod, rec, 0) < 0 && errno == EINVAL,
		      "rb_write_records: no record: EINVAL");
	}

	/* Hostile positions, on the copy path too. */
	atomic_store(f.prod.tail, atomic_load(f.prod.head) + 77777);
	{
		/*
		 * Space the cached tail showed free was freed: it may still
		 * be used, but no more than a ring's worth.
		 */
		size_t accepted = 0;
		ssize_t n;

		while ((n = rb_write(&f.prod, buf, 16)) == 16 && accepted <= 16384)
			accepted += 16;
		CHECK(n < 0 && errno == EIO && accepted <= 16384,
		      "rb_write: EIO once it needs the consumer's position");
	}
	CHECK(rb_read(&f.cons, buf, 16) < 0 && errno == EIO, "rb_read: EIO");
	munmap(f.base, f.len);
}

/*
 * The spin before sleeping ends even while the peer looks busy for ever
 * (its lock word held): the library then asks the kernel, here write(2)
 * or read(2) on fd -1, which fails with EBADF.
 */
static void test_spin_is_bounded(void)
{
	static uint8_t buf[16384];
	struct fake_ring f;
	const struct ringbuffer_offsets *off;
	_Atomic uint32_t *consumer_lock, *producer_lock;

	CHECK(!fake_ring_init(&f, 16384), "a third ring laid out like the kernel's");
	if (failed)
		return;
	off = &((const struct ringbuffer_header *)f.base)->offsets;
	consumer_lock = (_Atomic uint32_t *)((char *)f.base + off->consumer_lock);
	producer_lock = (_Atomic uint32_t *)((char *)f.base + off->producer_lock);

	atomic_store(producer_lock, 4242);
	CHECK(rb_read(&f.cons, buf, 16) < 0 && errno == EBADF,
	      "rb_read: an empty ring whose writer holds its lock for ever: the spin ends");
	atomic_store(producer_lock, 0);

	CHECK(rb_write(&f.prod, buf, sizeof(buf)) == (ssize_t)sizeof(buf), "the ring filled");
	atomic_store(consumer_lock, 4242);
	CHECK(rb_write(&f.prod, buf, 16) < 0 && errno == EBADF,
	      "rb_write: a full ring whose reader holds its lock for ever: the spin ends");
	atomic_store(consumer_lock, 0);
	CHECK(rb_read(&f.cons, buf, sizeof(buf)) == (ssize_t)sizeof(buf),
	      "and what was there is intact in size");
	munmap(f.base, f.len);
}

/*
 * A kept side on the in-memory ring, the kernel's part played by
 * fake_ring_keep() and fake_ring_take_back(): copies go through with
 * the word left alone and the busy word back at 0; a side taken back
 * outside a copy is given up at the next one, which takes the word as
 * usual and releases it; one taken back inside a copy (a held span) is
 * not freed until the span is committed.
 */
static void test_kept_side(void)
{
	uint8_t buf[64];
	struct fake_ring f;
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	void *span;

	CHECK(!fake_ring_init(&f, 16384), "a fourth ring laid out like the kernel's");
	if (failed)
		return;
	fake_ring_keep(&f.prod);
	for (int i = 0; i < 100; i++)
		if (rb_write(&f.prod, "0123456789abcdef", 16) != 16)
			break;
	CHECK(atomic_load(f.prod.lock) == tid && !atomic_load(f.prod.busy) &&
	      atomic_load(&f.prod.kept_by) == tid,
	      "kept: 100 writes leave the word held, the busy word 0");
	CHECK(rb_read(&f.cons, buf, 64) == 64 && !memcmp(buf + 48, "0123456789abcdef", 16),
	      "and the data arrived");

	span = rb_reserve(&f.prod, 8);
	CHECK(span && atomic_load(f.prod.busy) == 1, "a held span is a copy: busy");
	CHECK(!rb_reserve(&f.prod, 1) && errno == EDEADLK,
	      "a second reserve while in the copy: EDEADLK");
	CHECK(!fake_ring_take_back(&f.prod) && atomic_load(f.prod.lock) == tid,
	      "taken back inside the copy: the word stays");
	if (span)
		memcpy(span, "takeback", 8);
	CHECK(!rb_commit(&f.prod, 8) && !atomic_load(f.prod.busy),
	      "the commit leaves the copy");
	CHECK(fake_ring_take_back(&f.prod) && !atomic_load(f.prod.lock),
	      "then the word is freed");
	CHECK(rb_write(&f.prod, "after", 5) == 5 && !atomic_load(f.prod.lock) &&
	      !atomic_load(&f.prod.kept_by),
	      "the next write gives the side up, takes the word and releases it");
	CHECK(rb_read(&f.cons, buf, sizeof(buf)) > 0, "drained");
	munmap(f.base, f.len);
}

typedef ssize_t write_fn(struct rb_ring *r, const void *buf, size_t len);
typedef ssize_t read_fn(struct rb_ring *r, void *buf, size_t len);

/*
 * Eight rounds of messages of every length from 1 to 130 bytes (both
 * sides of the in-line limit) through @f by @write_msg and @read_msg,
 * read back with every buffer length, across the end of a one-page data
 * area many times.  Returns the messages that did not go in whole, the
 * reads that failed and the bytes that arrived wrong; *@moved is what
 * went through.
 */
static uint64_t every_length_through(struct fake_ring *f, write_fn *write_msg,
				     read_fn *read_msg, uint64_t *moved)
{
	uint8_t msg[130], buf[131];
	uint64_t wpos = 0, rpos = 0, bad = 0;
	size_t rlen = 1;

	for (int round = 0; round < 8; round++) {
		for (size_t len = 1; len <= sizeof(msg); len++) {
			for (size_t i = 0; i < len; i++)
				msg[i] = seq_byte(wpos + i);
			if (write_msg(&f->prod, msg, len) != (ssize_t)len)
				return bad + 1;
			wpos += len;
			while (rpos < wpos) {
				ssize_t n = read_msg(&f->cons, buf, rlen);

				if (n <= 0 || (size_t)n > rlen)
					return bad + 1;
				/* The byte past the buffer is never written. */
				for (ssize_t i = 0; i < n; i++)
					bad += buf[i] != seq_byte(rpos + i);
				rpos += n;
				rlen = rlen % sizeof(msg) + 1;
			}
		}
	}
	*moved = rpos;
	return bad;
}

/*
 * The copy and zero-copy calls on the wrong side fail with EBADF, as
 * read(2) and write(2) do on the wrong end of a pipe, and move nothing:
 * on a plain side and on a kept one, whose fast path would otherwise copy
 * the other way.
 */
static void test_wrong_side(void)
{
	struct iovec rec = { .iov_base = "rec", .iov_len = 3 };
	uint8_t buf[64] = "0123456789abcdef";
	struct fake_ring f;
	size_t len = 1;

	CHECK(!fake_ring_init(&f, 16384), "a ring for the wrong-side calls");
	if (failed)
		return;
	CHECK(rb_write(&f.prod, buf, 16) == 16, "16 bytes in");
	for (int kept = 0; kept < 2; kept++) {
		if (kept) {
			fake_ring_keep(&f.prod);
			fake_ring_keep(&f.cons);
		}
		errno = 0;
		CHECK(rb_write(&f.cons, buf, 16) == -1 && errno == EBADF,
		      "%s: rb_write() on the consumer: EBADF", kept ? "kept" : "plain");
		errno = 0;
		CHECK(rb_write(&f.cons, buf, 0) == -1 && errno == EBADF,
		      "%s: rb_write() of 0 bytes on the consumer: EBADF",
		      kept ? "kept" : "plain");
		errno = 0;
		CHECK(rb_write_records(&f.cons, &rec, 1) == -1 && errno == EBADF,
		      "%s: rb_write_records() on the consumer: EBADF",
		      kept ? "kept" : "plain");
		errno = 0;
		CHECK(!rb_reserve(&f.cons, 8) && errno == EBADF,
		      "%s: rb_reserve() on the consumer: EBADF", kept ? "kept" : "plain");
		errno = 0;
		CHECK(rb_read(&f.prod, buf, sizeof(buf)) == -1 && errno == EBADF,
		      "%s: rb_read() on the producer: EBADF", kept ? "kept" : "plain");
		errno = 0;
		CHECK(!rb_peek(&f.prod, 8, &len) && !len && errno == EBADF,
		      "%s: rb_peek() on the producer: EBADF", kept ? "kept" : "plain");
		CHECK(atomic_load(f.prod.head) == 16 && atomic_load(f.cons.tail) == 0 &&
		      !atomic_load(f.prod.busy) && !atomic_load(f.cons.busy),
		      "%s: no position moved, no side left busy", kept ? "kept" : "plain");
	}
	memset(buf, 0, sizeof(buf));
	CHECK(rb_read(&f.cons, buf, sizeof(buf)) == 16 &&
	      !memcmp(buf, "0123456789abcdef", 16),
	      "the 16 bytes are still there for the consumer");
	munmap(f.base, f.len);
}

/*
 * Both sides kept by this thread, so every call takes the fast path with
 * its copies made in line: every length in and out, byte for byte.
 */
static void test_kept_side_every_length(void)
{
	uint64_t moved = 0, bad;
	struct fake_ring f;

	CHECK(!fake_ring_init(&f, 4096), "a ring of one page, both sides kept");
	if (failed)
		return;
	fake_ring_keep(&f.prod);
	fake_ring_keep(&f.cons);
	bad = every_length_through(&f, rb_write, rb_read, &moved);
	CHECK(!bad && moved == 8 * 130 * 131 / 2,
	      "kept sides: every length from 1 to 130 bytes, in and out, byte for byte");
	CHECK(atomic_load(&f.prod.kept_by) && atomic_load(&f.cons.kept_by) &&
	      !atomic_load(f.prod.busy) && !atomic_load(f.cons.busy),
	      "both sides still kept, neither left busy");
	munmap(f.base, f.len);
}

/* The shim's calls, in the shape of rb_write() and rb_read(). */
static ssize_t fast_write_whole(struct rb_ring *r, const void *buf, size_t len)
{
	return rb_fast_write(r, buf, len, len);
}

static ssize_t fast_read(struct rb_ring *r, void *buf, size_t len)
{
	return rb_fast_read(r, buf, len);
}

/*
 * rb_fast_write() and rb_fast_read(), the shim's one-call fast path:
 * nothing on a side that is not kept or is the other one; a write moves
 * all it wants or nothing, a read what is there up to its buffer; every
 * length in and out, byte for byte.
 */
static void test_fast_move_for_the_shim(void)
{
	uint64_t moved = 0, wpos, bad;
	uint8_t msg[100] = { 0 }, buf[130];
	struct fake_ring f;
	size_t n;

	CHECK(!fake_ring_init(&f, 4096), "a ring of one page for the fast moves");
	if (failed)
		return;
	CHECK(!rb_fast_write(&f.prod, "x", 1, 1) && !rb_fast_read(&f.cons, buf, 1),
	      "fast moves: nothing on sides that are not kept");
	fake_ring_keep(&f.prod);
	fake_ring_keep(&f.cons);
	CHECK(!rb_fast_read(&f.prod, buf, 1) && !rb_fast_write(&f.cons, "x", 1, 1),
	      "nothing on the other side");
	CHECK(!rb_fast_read(&f.cons, buf, 1), "nothing to read from an empty ring");
	bad = every_length_through(&f, fast_write_whole, fast_read, &moved);
	CHECK(!bad && moved == 8 * 130 * 131 / 2,
	      "every length from 1 to 130 bytes, byte for byte");
	for (wpos = 0; rb_fast_write(&f.prod, msg, 100, 100) == 100; wpos += 100)
		;
	CHECK(rb_fast_write(&f.prod, msg, 100, 100) == 0 &&
	      rb_fast_write(&f.prod, msg, 100, 1) == 4096 - wpos,
	      "a write that does not fit moves nothing; one that wants 1 byte fills the ring");
	n = rb_fast_read(&f.cons, buf, sizeof(buf));
	CHECK(n == sizeof(buf) && !atomic_load(f.prod.busy) && !atomic_load(f.cons.busy),
	      "a read takes what its buffer holds; neither side left busy");
	munmap(f.base, f.len);
}

/* Writes by one thread, reads by another, many times: long enough to keep. */
static void *keep_writing(void *arg)
{
	struct rb_ring *w = arg;
	uint32_t *kept = calloc(1, sizeof(*kept));

	for (uint32_t i = 0; i < 2000; i++) {
		if (rb_write(w, &i, sizeof(i)) != sizeof(i))
			break;
		if (i == 1000 && kept)
			*kept = atomic_load(&w->kept_by);
	}
	return kept;
}

/*
 * A pipe with a ring on each end, for the tests of kept sides: 0, or -1
 * after reporting a skip (no kernel with rings or kept sides here) with
 * the pipe and rings closed.
 */
static int open_kept_pipe(int fds[2], struct rb_ring **w, struct rb_ring **r)
{
	if (pipe(fds))
		abort();
	*w = rb_open(fds[1], RB_WRITE, 65536);
	*r = rb_open(fds[0], RB_READ, 65536);
	if (*w && *r && rb_is_mapped(*w) && (*w)->keeper)
		return 0;
	printf("ok %d - # SKIP kept sides need a kernel with rings\n",
	       passed + failed + 1);
	passed++;
	rb_close(*w);
	rb_close(*r);
	close(fds[0]);
	close(fds[1]);
	return -1;
}

/*
 * On a kernel with rings: a writer that keeps writing keeps its side
 * (the kernel names it in the header), and a write(2) from another
 * process in the middle takes the side back without losing or
 * reordering anything.
 */
static void test_pipe_keeps_the_side(void)
{
	struct rb_ring *w, *r;
	uint32_t *kept = NULL, got = 0, expect = 0;
	int fds[2], bad = 0, legacy = 0;
	pthread_t t;

	if (open_kept_pipe(fds, &w, &r))
		return;
	pthread_create(&t, NULL, keep_writing, w);
	while (expect < 2000) {
		uint32_t v;

		if (rb_read(r, &v, sizeof(v)) != sizeof(v)) {
			bad = 1;
			break;
		}
		if (v == UINT32_MAX) {	/* the legacy write, between two others */
			legacy++;
			continue;
		}
		bad |= v != expect++;
		if (expect == 1500 && !legacy) {
			pid_t pid = fork();

			if (pid == 0) {
				uint32_t m = UINT32_MAX;

				_exit(write(fds[1], &m, sizeof(m)) == sizeof(m) ? 0 : 1);
			}
			if (pid < 0 || waitpid(pid, NULL, 0) != pid)
				bad = 1;
		}
		got++;
	}
	/* The writer may have been done before the legacy write went in. */
	if (!bad && !legacy) {
		uint32_t v = 0;

		legacy = rb_read(r, &v, sizeof(v)) == sizeof(v) && v == UINT32_MAX;
	}
	pthread_join(t, (void **)&kept);
	CHECK(kept && *kept != 0, "the writer kept its side (keeper %u)", kept ? *kept : 0);
	CHECK(!bad && got == 2000 && legacy == 1,
	      "a write(2) from another process took it back; nothing lost or reordered");
	free(kept);
	rb_close(w);
	rb_close(r);
	close(fds[0]);
	close(fds[1]);
}

/*
 * A writer that keeps its side copies with no system call, yet must see
 * at its next write that the reader left: EPIPE then, not a write into a
 * ring that nobody reads.
 */
static void test_kept_writer_sees_reader_leave(void)
{
	struct rb_ring *w, *r;
	uint32_t v = 0;
	int fds[2], i;

	if (open_kept_pipe(fds, &w, &r))
		return;
	for (i = 0; i < 10000 && !atomic_load(&w->kept_by); i++)
		if (rb_write(w, &v, sizeof(v)) != sizeof(v) ||
		    rb_read(r, &v, sizeof(v)) != sizeof(v))
			break;
	CHECK(atomic_load(&w->kept_by) != 0, "the writer keeps its side after %d copies", i);
	signal(SIGPIPE, SIG_IGN);
	rb_close(r);
	close(fds[0]);
	CHECK(rb_write(w, &v, sizeof(v)) < 0 && errno == EPIPE,
	      "its first write after the reader left: EPIPE");
	rb_close(w);
	close(fds[1]);
}

/*
 * Sides taken back again and again: two processes write records through
 * the library (each keeps the producer side whenever it had it to itself
 * for a while) and a third with write(2), which takes the side back from
 * whoever keeps it, while the test reads with read(2).  A record copied
 * by a keeper that the kernel thought out of its copy would be torn, lost
 * or doubled: every record must arrive whole, and each writer's in order.
 */
struct record {
	uint32_t writer, seq, check, pad;
};

#define TAKE_BACK_RECORDS	20000

static uint32_t record_check(uint32_t writer, uint32_t seq)
{
	return (writer * 2654435761u) ^ (seq * 40503u) ^ 0x5a5a5a5au;
}

static void take_back_writer(int fd, uint32_t writer, int use_ring,
			     _Atomic unsigned int *taken_back)
{
	struct rb_ring *w = use_ring ? rb_open(fd, RB_WRITE, 65536) : NULL;

	/* Keep after a few copies, and again at once after losing it. */
	rb_keep_after = 4;
	rb_keep_backoff = 0;
	for (uint32_t seq = 0; seq < TAKE_BACK_RECORDS; seq++) {
		struct record rec = { writer, seq, record_check(writer, seq), 0 };
		int kept = w && atomic_load(&w->kept_by);
		ssize_t n = w ? rb_write(w, &rec, sizeof(rec)) : write(fd, &rec, sizeof(rec));

		if (n != sizeof(rec))
			_exit(1);
		/* Kept before this write, not after it: it was taken back. */
		if (kept && !atomic_load(&w->kept_by))
			atomic_fetch_add(taken_back, 1);
		/* The legacy writer comes in now and then, between bursts. */
		if (!w && seq % 16 == 0)
			sched_yield();
	}
	rb_close(w);
	_exit(0);
}

static void test_take_back_stress(void)
{
	uint32_t next[3] = { 0 };
	int fds[2], bad = 0, status, children_ok = 1;
	_Atomic unsigned int *taken_back;
	struct rb_ring *probe;
	pid_t pids[3];
	size_t got = 0;

	if (pipe(fds))
		return;
	probe = rb_open(fds[1], RB_WRITE, 65536);
	if (!probe || !rb_is_mapped(probe) || !probe->keeper) {
		printf("ok %d - # SKIP taking sides back needs a kernel with rings\n",
		       passed + failed + 1);
		passed++;
		rb_close(probe);
		close(fds[0]);
		close(fds[1]);
		return;
	}
	rb_close(probe);
	taken_back = mmap(NULL, sizeof(*taken_back), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (taken_back == MAP_FAILED)
		return;
	*taken_back = 0;
	for (int i = 0; i < 3; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			close(fds[0]);
			take_back_writer(fds[1], i, i < 2, taken_back);
		}
	}
	close(fds[1]);
	for (;;) {
		struct record rec;
		ssize_t n = read(fds[0], &rec, sizeof(rec));

		if (n == 0)
			break;
		if (n != sizeof(rec) || rec.writer > 2 ||
		    rec.check != record_check(rec.writer, rec.seq) ||
		    rec.seq != next[rec.writer]) {
			bad = 1;
			break;
		}
		next[rec.writer]++;
		got++;
	}
	close(fds[0]);
	for (int i = 0; i < 3; i++)
		if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			children_ok = 0;
	CHECK(!bad && children_ok && got == 3 * TAKE_BACK_RECORDS,
	      "two keepers and a write(2) writer take the side from each other: "
	      "%zu records, all whole and in order", got);
	CHECK(*taken_back > 0, "and the side was taken back from a keeper %u times",
	      *taken_back);
	munmap(taken_back, sizeof(*taken_back));
}

/*
 * The ordering argument of kept sides (ringbuffer.rst, "Kept locks"), on
 * this machine's CPUs: a keeper thread copies through the library's real
 * fast path (rb_reserve/rb_commit), and another thread takes the side
 * back as the kernel's rb_take_back() does: it clears the keeper word,
 * makes the keeper's CPU execute a full barrier (membarrier(2) stands in
 * for the kernel's IPI), and waits for the busy word to be 0.  Each then
 * enters a critical section that notices the other inside.  The keeper
 * has only a compiler barrier between its busy store and keeper load, so
 * without the barrier on its CPU both may go in (a store-buffer race).
 * TAKE_BACK_BARRIER=0 in the environment leaves the barrier out, to see
 * the test fail; it also runs without it and reports what it found.
 */
#ifndef MEMBARRIER_CMD_PRIVATE_EXPEDITED
#define MEMBARRIER_CMD_PRIVATE_EXPEDITED		(1 << 3)
#define MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED	(1 << 4)
#endif
#define BARRIER_ROUNDS	20000

struct take_back_model {
	struct fake_ring f;
	_Atomic int round, keeping, acked;
	_Atomic int inside;		/* who is in the critical section */
	_Atomic long overlaps;
	int with_barrier;
};

/* Short for the keeper, so that its loop is mostly the lock's code. */
static void critical_section(struct take_back_model *m, int who, int pauses)
{
	if (atomic_exchange(&m->inside, who))
		atomic_fetch_add(&m->overlaps, 1);
	for (int i = 0; i < pauses; i++)
		rb_cpu_relax();
	atomic_store(&m->inside, 0);
}

static void *model_keeper(void *arg)
{
	struct take_back_model *m = arg;

	for (int r = 1; r <= BARRIER_ROUNDS; r++) {
		while (atomic_load(&m->round) != r)
			rb_cpu_relax();
		fake_ring_keep(&m->f.prod);
		atomic_store(&m->keeping, r);
		/*
		 * Copies until it notices the side was taken back.  Then the
		 * library gives the word up and takes it the plain way, which
		 * the model's taker does not stand for: that copy is left out.
		 */
		for (;;) {
			if (!rb_reserve(&m->f.prod, 1))
				break;
			if (!atomic_load(&m->f.prod.kept_by)) {
				rb_commit(&m->f.prod, 0);
				break;
			}
			critical_section(m, 1, 2);
			rb_commit(&m->f.prod, 0);
		}
		atomic_store(&m->acked, r);
	}
	return NULL;
}

static long run_take_back_model(int with_barrier)
{
	struct take_back_model *m = calloc(1, sizeof(*m));
	struct rb_ring *w;
	pthread_t keeper;
	long overlaps;

	if (!m || fake_ring_init(&m->f, 4096)) {
		free(m);
		return -1;
	}
	w = &m->f.prod;
	m->with_barrier = with_barrier;
	if (pthread_create(&keeper, NULL, model_keeper, m)) {
		munmap(m->f.base, m->f.len);
		free(m);
		return -1;
	}
	for (int r = 1; r <= BARRIER_ROUNDS; r++) {
		atomic_store(&m->round, r);
		while (atomic_load(&m->keeping) != r)
			rb_cpu_relax();
		/*
		 * Somewhere in the keeper's loop.  Reading its busy word meanwhile
		 * keeps the line shared, so that the keeper's store to it waits in
		 * its store buffer for a while: that is when a missing barrier shows.
		 */
		for (int i = 0; i < (r * 7) % 61; i++)
			(void)atomic_load_explicit(w->busy, memory_order_relaxed);
		/* rb_take_back(): keeper word, barrier on the keeper's CPU, busy. */
		atomic_store_explicit(w->keeper, 0, memory_order_relaxed);
		atomic_thread_fence(memory_order_seq_cst);
		if (with_barrier)
			syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
		while (atomic_load_explicit(w->busy, memory_order_acquire))
			rb_cpu_relax();
		critical_section(m, 2, 64);
		while (atomic_load(&m->acked) != r)
			rb_cpu_relax();
		/* The keeper acknowledged: the word is free for the next round. */
		atomic_store(w->lock, 0);
	}
	pthread_join(keeper, NULL);
	overlaps = atomic_load(&m->overlaps);
	munmap(m->f.base, m->f.len);
	free(m);
	return overlaps;
}

static void test_take_back_needs_the_barrier(void)
{
	const char *env = getenv("TAKE_BACK_BARRIER");
	int with_barrier = !env || strcmp(env, "0");
	long with, without;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 ||
	    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0)) {
		printf("ok %d - # SKIP the take-back model needs two CPUs and membarrier(2)\n",
		       passed + failed + 1);
		passed++;
		return;
	}
	with = run_take_back_model(with_barrier);
	CHECK(with == 0, "a side taken back %d times as the kernel does, %s the barrier "
	      "on the keeper's CPU: %ld overlaps with the keeper's copies",
	      BARRIER_ROUNDS, with_barrier ? "with" : "WITHOUT", with);
	without = run_take_back_model(0);
	printf("# the same without the barrier: %ld overlaps (the reason for it)\n",
	       without);
}

/*
 * The same for the held word of a plain side lock (ringbuffer.rst, "Side
 * locks", (10) and (11)): a holder thread takes the word through the
 * library's real rb_trylock(), which stores its held word and loads the
 * lock word again with only a compiler barrier in between, and another
 * thread frees the word as the kernel's rbuf_free_unvouched() does: it
 * replaces the word, makes the holder's CPU execute a full barrier, and
 * reads the held word; if that does not name the holder, it counts the
 * word as nobody's and enters the critical section itself.  One attempt
 * per round on each side.  HELD_BARRIER=0 leaves the barrier out.
 */
struct unvouched_model {
	struct fake_ring f;
	_Atomic int round, attempted, judged;
	_Atomic uint32_t holder_tid;
	_Atomic int inside;
	_Atomic long overlaps, freed;
};

static void held_critical_section(struct unvouched_model *m, int who, int pauses)
{
	if (atomic_exchange(&m->inside, who))
		atomic_fetch_add(&m->overlaps, 1);
	for (int i = 0; i < pauses; i++)
		rb_cpu_relax();
	atomic_store(&m->inside, 0);
}

static void *model_holder(void *arg)
{
	struct unvouched_model *m = arg;

	atomic_store(&m->holder_tid, (uint32_t)syscall(SYS_gettid));
	for (int r = 1; r <= BARRIER_ROUNDS; r++) {
		while (atomic_load(&m->round) != r)
			rb_cpu_relax();
		if (rb_trylock(&m->f.prod, 64) == RB_LOCKED) {
			held_critical_section(m, 1, 2);
			rb_unlock_unchanged(&m->f.prod);
		}
		atomic_store(&m->attempted, r);
		while (atomic_load(&m->judged) != r)
			rb_cpu_relax();
	}
	return NULL;
}

static long run_unvouched_model(int with_barrier, long *freed)
{
	struct unvouched_model *m = calloc(1, sizeof(*m));
	struct rb_ring *w;
	pthread_t holder;
	long overlaps;
	uint32_t tid;

	if (!m || fake_ring_init(&m->f, 4096)) {
		free(m);
		return -1;
	}
	w = &m->f.prod;
	if (pthread_create(&holder, NULL, model_holder, m)) {
		munmap(m->f.base, m->f.len);
		free(m);
		return -1;
	}
	while (!(tid = atomic_load(&m->holder_tid)))
		rb_cpu_relax();
	for (int r = 1; r <= BARRIER_ROUNDS; r++) {
		uint32_t expected = tid;

		atomic_store(&m->round, r);
		/* Pounce as soon as the word names the holder. */
		while (atomic_load_explicit(w->lock, memory_order_relaxed) != tid &&
		       atomic_load(&m->attempted) != r)
			rb_cpu_relax();
		if (atomic_compare_exchange_strong(w->lock, &expected,
						   RINGBUFFER_LOCK_KERNEL)) {
			if (with_barrier)
				syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
			if (atomic_load_explicit(w->lock_held, memory_order_relaxed) == tid) {
				expected = RINGBUFFER_LOCK_KERNEL;
				atomic_compare_exchange_strong(w->lock, &expected, tid);
			} else {
				atomic_fetch_add(&m->freed, 1);
				held_critical_section(m, 2, 64);
				expected = RINGBUFFER_LOCK_KERNEL;
				atomic_compare_exchange_strong(w->lock, &expected, 0);
			}
		}
		while (atomic_load(&m->attempted) != r)
			rb_cpu_relax();
		/* Whatever the round left: a free word, nothing vouched. */
		atomic_store(w->lock, 0);
		atomic_store(w->lock_held, 0);
		atomic_store(&m->judged, r);
	}
	pthread_join(holder, NULL);
	overlaps = atomic_load(&m->overlaps);
	*freed = atomic_load(&m->freed);
	munmap(m->f.base, m->f.len);
	free(m);
	return overlaps;
}

static void test_unvouched_needs_the_barrier(void)
{
	const char *env = getenv("HELD_BARRIER");
	int with_barrier = !env || strcmp(env, "0");
	long with, without, freed_with, freed_without;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 ||
	    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0)) {
		printf("ok %d - # SKIP the held-word model needs two CPUs and membarrier(2)\n",
		       passed + failed + 1);
		passed++;
		return;
	}
	with = run_unvouched_model(with_barrier, &freed_with);
	CHECK(with == 0, "a word freed as unvouched in %ld of %d rounds, %s the barrier on "
	      "the holder's CPU: %ld overlaps with the holder's copies", freed_with,
	      BARRIER_ROUNDS, with_barrier ? "with" : "WITHOUT", with);
	without = run_unvouched_model(0, &freed_without);
	printf("# the same without the barrier: %ld overlaps in %ld frees (the reason for it)\n",
	       without, freed_without);
}

/*
 * The value of @field in /proc/self/task/@tid/status, blanks skipped,
 * into @val: 0, or -1 if there is none.
 */
static int task_status(pid_t tid, const char *field, char *val, size_t size)
{
	char path[64], line[128];
	size_t len = strlen(field);
	int ret = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, len) && line[len] == ':') {
			snprintf(val, size, "%s", line + len + 1 + strspn(line + len + 1, " \t"));
			ret = 0;
			break;
		}
	fclose(f);
	return ret;
}

/* Voluntary context switches of thread @tid so far, or -1. */
static long task_switches(pid_t tid)
{
	char val[32];

	return task_status(tid, "voluntary_ctxt_switches", val, sizeof(val)) ?
	       -1 : strtol(val, NULL, 10);
}

/* Whether thread @tid is asleep (state S). */
static int task_asleep(pid_t tid)
{
	char val[32];

	return !task_status(tid, "State", val, sizeof(val)) && val[0] == 'S';
}

struct sleeping_write {
	struct rb_ring *w;
	_Atomic pid_t tid;
	ssize_t ret;
};

static void *write_pipe_buf(void *arg)
{
	struct sleeping_write *s = arg;
	char buf[PIPE_BUF];

	memset(buf, 'z', sizeof(buf));
	atomic_store(&s->tid, (pid_t)syscall(SYS_gettid));
	s->ret = rb_write(s->w, buf, sizeof(buf));
	return NULL;
}

/*
 * A writer asleep until PIPE_BUF bytes are free is not woken by reads
 * that free less (the kernel's wait minimum, read_wait_min and
 * write_wait_min), and is woken by the one that frees enough.
 */
static void test_reader_wakes_writer_only_when_it_may_go(void)
{
	struct sleeping_write s = { 0 };
	long before = -1, after = -1;
	char buf[PIPE_BUF];
	struct rb_ring *r;
	int fds[2], still_asleep = 0, timed_out = 0;
	pthread_t t;
	time_t deadline;

	if (pipe(fds))
		abort();
	s.w = rb_open(fds[1], RB_WRITE, 65536);
	r = rb_open(fds[0], RB_READ, 65536);
	if (!s.w || !r || !rb_is_mapped(r) || !r->peer_wait_min) {
		printf("ok %d - # SKIP wait minimums need a kernel with rings\n",
		       passed + failed + 1);
		passed++;
		goto out;
	}
	/* Fill the ring, then a PIPE_BUF write sleeps for its room. */
	memset(buf, 'f', sizeof(buf));
	if (fcntl(fds[1], F_SETFL, O_NONBLOCK))
		abort();
	while (write(fds[1], buf, sizeof(buf)) == sizeof(buf))
		;
	if (fcntl(fds[1], F_SETFL, 0))
		abort();
	pthread_create(&t, NULL, write_pipe_buf, &s);
	deadline = time(NULL) + 30;
	while (!atomic_load(&s.tid) ||
	       atomic_load_explicit(r->peer_waiters, memory_order_relaxed) != 1 ||
	       !task_asleep(s.tid)) {
		if (time(NULL) > deadline) {
			timed_out = 1;
			break;
		}
		sched_yield();
	}
	if (!timed_out) {
		before = task_switches(s.tid);
		for (int i = 0; i < 10; i++)
			if (rb_read(r, buf, 100) != 100)
				abort();
		after = task_switches(s.tid);
		still_asleep = atomic_load_explicit(r->peer_waiters,
						    memory_order_relaxed) == 1;
	}
	/* Now room for the whole write. */
	if (rb_read(r, buf, PIPE_BUF - 1000) != PIPE_BUF - 1000)
		abort();
	pthread_join(t, NULL);
	CHECK(!timed_out && before > 0 && after == before && still_asleep &&
	      s.ret == PIPE_BUF,
	      "a writer asleep for PIPE_BUF bytes is woken only once they are free "
	      "(switches %ld -> %ld, wrote %zd)", before, after, s.ret);
out:
	rb_close(s.w);
	rb_close(r);
	close(fds[0]);
	close(fds[1]);
}

struct futex_waiter {
	struct rb_ring *r;
	_Atomic pid_t tid;
	long got;		/* what rb_wait() said at last */
	int timed_out;		/* FUTEX_WAIT ran out: a lost wake-up */
};

/* The loop of rb_futex_word()'s comment, for 4 bytes of data. */
static void *futex_wait_for_data(void *arg)
{
	struct futex_waiter *fw = arg;
	const uint32_t *word = rb_futex_word(fw->r);

	atomic_store(&fw->tid, (pid_t)syscall(SYS_gettid));
	if (!word) {
		fw->got = -errno;
		return NULL;
	}
	for (;;) {
		struct timespec patience = { .tv_sec = 20 };
		/* Acquire: the kernel changed the word after the state. */
		uint32_t seen = __atomic_load_n(word, __ATOMIC_ACQUIRE);

		fw->got = rb_wait(fw->r, 4, 0);
		if (fw->got >= 0 || errno != ETIMEDOUT)
			return NULL;
		if (syscall(SYS_futex, word, FUTEX_WAIT, seen, &patience, NULL, 0) &&
		    errno == ETIMEDOUT) {
			fw->timed_out = 1;
			return NULL;
		}
	}
}

static void test_futex_word(void)
{
	struct futex_waiter fw = { 0 };
	struct rb_ring *w;
	pthread_t t;
	int fds[2];

	if (pipe(fds))
		return;
	w = rb_open(fds[1], RB_WRITE, 65536);
	fw.r = rb_open(fds[0], RB_READ, 65536);
	if (!w || !fw.r)
		goto out;
	if (!rb_is_mapped(fw.r)) {
		errno = 0;
		CHECK(!rb_futex_word(fw.r) && errno == ENOTSUP,
		      "rb_futex_word() in fallback mode: ENOTSUP");
		goto out;
	}
	pthread_create(&t, NULL, futex_wait_for_data, &fw);
	/* Let it get to sleep first, so that the wake-up is what ends it. */
	for (int i = 0; i < 2000000 && !(atomic_load(&fw.tid) &&
					 task_asleep(atomic_load(&fw.tid))); i++)
		sched_yield();
	CHECK(rb_write(w, "data", 4) == 4, "rb_write() to a futex waiter");
	pthread_join(t, NULL);
	CHECK(fw.got == 4 && !fw.timed_out,
	      "a futex waiter on rb_futex_word() wakes for the data (got %ld%s)",
	      fw.got, fw.timed_out ? ", FUTEX_WAIT timed out" : "");
out:
	rb_close(w);
	rb_close(fw.r);
	close(fds[0]);
	close(fds[1]);
}

int main(void)
{
	printf("TAP version 13\n");
	test_bad_arguments();
	test_pipe_copy_api();
	test_fake_ring_zero_copy();
	test_fake_ring_copy();
	test_spin_is_bounded();
	test_kept_side();
	test_wrong_side();
	test_kept_side_every_length();
	test_fast_move_for_the_shim();
	test_pipe_keeps_the_side();
	test_kept_writer_sees_reader_leave();
	test_take_back_stress();
	test_take_back_needs_the_barrier();
	test_unvouched_needs_the_barrier();
	test_reader_wakes_writer_only_when_it_may_go();
	test_futex_word();
	printf("1..%d\n", passed + failed);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
