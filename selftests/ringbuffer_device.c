// SPDX-License-Identifier: GPL-2.0
/*
 * Data through /dev/ringbuffer-test: its threads produce and check a known
 * sequence, so every byte that crosses a ring is verified.  Waits, wake-ups,
 * timeouts, signals, end states and hostile values in the shared words.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/time.h>

#include "ringbuffer_util.h"
#include "kselftest_harness.h"

#define STREAM_BYTES	(96 * 1024)

static int set_u64(int fd, unsigned long cmd, uint64_t v)
{
	return ioctl(fd, cmd, &v);
}

/* Wait, with a deadline, until a word the kernel writes has a value. */
static bool word_becomes(_Atomic uint32_t *word, uint32_t value, double secs)
{
	double end = rb_now() + secs;

	while (atomic_load(word) != value) {
		if (rb_now() > end)
			return false;
		sched_yield();
	}
	return true;
}

/*
 * A device thread is asleep once the scheduler took it off the run queue,
 * which /proc/TID/wchan shows: it reads "0" until then.  Counting itself
 * in a waiter word comes before the last check of the condition, so that
 * word alone does not tell.
 */
static bool thread_asleep(uint32_t tid, _Atomic uint32_t *waiters, double secs)
{
	double end = rb_now() + secs;
	char path[64], wchan[64];

	snprintf(path, sizeof(path), "/proc/%u/wchan", tid);
	while (rb_now() < end) {
		FILE *f = fopen(path, "r");
		size_t n = 0;

		if (f) {
			n = fread(wchan, 1, sizeof(wchan) - 1, f);
			fclose(f);
		}
		wchan[n] = 0;
		if (atomic_load(waiters) == 1 && n && strcmp(wchan, "0"))
			return true;
		sched_yield();
	}
	return false;
}

static bool stat_reaches(int fd, size_t field, uint64_t value, double secs)
{
	double end = rb_now() + secs;
	struct ringbuffer_test_stats st;

	for (;;) {
		if (rbtest_stats(fd, &st))
			return false;
		if (((uint64_t *)&st)[field] >= value)
			return true;
		if (rb_now() > end)
			return false;
		sched_yield();
	}
}

#define STAT(name) (offsetof(struct ringbuffer_test_stats, name) / sizeof(uint64_t))

static const struct timespec ms50 = { 0, 50 * 1000 * 1000 };

FIXTURE(stream) {
	int dev;
};

FIXTURE_VARIANT(stream) {
	size_t chunk;
	uint32_t ring;
};

FIXTURE_VARIANT_ADD(stream, bytes_1) { .chunk = 1, .ring = 4096 };
FIXTURE_VARIANT_ADD(stream, bytes_7) { .chunk = 7, .ring = 4096 };
FIXTURE_VARIANT_ADD(stream, bytes_64) { .chunk = 64, .ring = 4096 };
FIXTURE_VARIANT_ADD(stream, bytes_1000) { .chunk = 1000, .ring = 8192 };
FIXTURE_VARIANT_ADD(stream, bytes_4096) { .chunk = 4096, .ring = 4096 };
FIXTURE_VARIANT_ADD(stream, whole_ring) { .chunk = 1 << 20, .ring = 65536 };

FIXTURE_SETUP(stream)
{
	self->dev = open(RBTEST_DEV, O_RDWR);
	ASSERT_GE(self->dev, 0);
}

FIXTURE_TEARDOWN(stream)
{
	close(self->dev);
}

TEST_F(stream, ring_read)
{
	struct ringbuffer_test_stats st;
	struct rb_view v = { 0 };
	uint64_t pos = 0;
	long n;

	ASSERT_EQ(0, set_u64(self->dev, RINGBUFFER_TEST_EOF_AT, STREAM_BYTES));
	ASSERT_EQ(0, rb_view_map(&v, self->dev, RINGBUFFER_READ, variant->ring));
	while ((n = rb_consume_seq(&v, &pos, variant->chunk)) > 0)
		;
	ASSERT_EQ(0, n) TH_LOG("at byte %llu: %s", (unsigned long long)pos,
			       strerror(-n));
	EXPECT_EQ(STREAM_BYTES, pos);
	EXPECT_TRUE(atomic_load(v.flags) & RINGBUFFER_EOF);
	EXPECT_EQ(0, sys_ringbuffer_wait(self->dev, RINGBUFFER_READ, 1, NULL, 0));
	ASSERT_EQ(0, rbtest_stats(self->dev, &st));
	EXPECT_EQ(STREAM_BYTES, st.produced);
	EXPECT_EQ(0, st.io_errors);
	rb_view_unmap(&v);
}

TEST_F(stream, ring_write)
{
	struct ringbuffer_test_stats st;
	struct rb_view v = { 0 };
	uint64_t pos = 0;

	ASSERT_EQ(0, rb_view_map(&v, self->dev, RINGBUFFER_WRITE, variant->ring));
	ASSERT_EQ(0, rb_produce_seq(&v, &pos, STREAM_BYTES, variant->chunk));
	/* All the space back means the device consumed everything. */
	EXPECT_EQ(v.size, sys_ringbuffer_wait(self->dev, RINGBUFFER_WRITE,
					      v.size, NULL, 0));
	ASSERT_EQ(0, rbtest_stats(self->dev, &st));
	EXPECT_EQ(STREAM_BYTES, st.consumed);
	EXPECT_EQ(0, st.mismatches);
	rb_view_unmap(&v);
}

TEST_F(stream, legacy_read)
{
	uint8_t buf[4096];
	uint64_t pos = 0;
	ssize_t n;

	ASSERT_EQ(0, set_u64(self->dev, RINGBUFFER_TEST_EOF_AT, STREAM_BYTES));
	while ((n = read(self->dev, buf, variant->chunk < sizeof(buf) ?
				variant->chunk : sizeof(buf))) > 0) {
		ASSERT_EQ(-1, rbtest_check(buf, pos, n)) TH_LOG("at %llu",
			(unsigned long long)pos);
		pos += n;
	}
	EXPECT_EQ(0, n);
	EXPECT_EQ(STREAM_BYTES, pos);
}

TEST_F(stream, legacy_write)
{
	struct ringbuffer_test_stats st;
	uint8_t buf[8192];
	uint64_t pos = 0;
	size_t chunk = variant->chunk < sizeof(buf) ? variant->chunk : sizeof(buf);

	while (pos < STREAM_BYTES) {
		size_t len = STREAM_BYTES - pos < chunk ? STREAM_BYTES - pos : chunk;

		rbtest_fill(buf, pos, len);
		ASSERT_EQ((ssize_t)len, write(self->dev, buf, len));
		pos += len;
	}
	/* write() made a ring of the default size; wait until it drained. */
	ASSERT_LT(0, sys_ringbuffer_wait(self->dev, RINGBUFFER_WRITE, 16384,
					 NULL, 0));
	ASSERT_EQ(0, rbtest_stats(self->dev, &st));
	EXPECT_EQ(STREAM_BYTES, st.consumed);
	EXPECT_EQ(0, st.mismatches);
}

TEST_F(stream, ring_and_legacy_read_one_stream)
{
	struct rb_view v = { 0 };
	uint8_t buf[4096];
	uint64_t pos = 0;
	ssize_t n;

	ASSERT_EQ(0, set_u64(self->dev, RINGBUFFER_TEST_EOF_AT, STREAM_BYTES));
	ASSERT_EQ(0, rb_view_map(&v, self->dev, RINGBUFFER_READ, variant->ring));
	while (pos < STREAM_BYTES / 2)
		ASSERT_LT(0, rb_consume_seq(&v, &pos, variant->chunk));
	while ((n = read(self->dev, buf, sizeof(buf))) > 0) {
		ASSERT_EQ(-1, rbtest_check(buf, pos, n));
		pos += n;
	}
	EXPECT_EQ(0, n);
	EXPECT_EQ(STREAM_BYTES, pos);
	rb_view_unmap(&v);
}

FIXTURE(waits) {
	int dev;
	struct rb_view rd;
	struct rb_view wr;
};

FIXTURE_SETUP(waits)
{
	self->dev = open(RBTEST_DEV, O_RDWR);
	ASSERT_GE(self->dev, 0);
	/* The producer stops after 100 bytes until told otherwise. */
	ASSERT_EQ(0, set_u64(self->dev, RINGBUFFER_TEST_PAUSE_AT, 100));
	ASSERT_EQ(0, rb_view_map(&self->rd, self->dev, RINGBUFFER_READ, 4096));
	ASSERT_EQ(0, rb_view_map(&self->wr, self->dev, RINGBUFFER_WRITE, 4096));
}

FIXTURE_TEARDOWN(waits)
{
	rb_view_unmap(&self->rd);
	rb_view_unmap(&self->wr);
	close(self->dev);
}

TEST_F(waits, minimum_amount)
{
	struct timespec zero = { 0, 0 };
	long got;

	got = sys_ringbuffer_wait(self->dev, RINGBUFFER_READ, 50, NULL, 0);
	EXPECT_GE(got, 50);
	EXPECT_LE(got, 100);
	EXPECT_EQ(100, sys_ringbuffer_wait(self->dev, RINGBUFFER_READ, 100,
					   NULL, 0));
	EXPECT_EQ(ETIMEDOUT, FAILS_WITH(sys_ringbuffer_wait(self->dev,
		RINGBUFFER_READ, 200, &ms50, 0)));
	EXPECT_EQ(ETIMEDOUT, FAILS_WITH(sys_ringbuffer_wait(self->dev,
		RINGBUFFER_READ, 101, &zero, 0)));
	/* min 0 means any amount. */
	EXPECT_EQ(100, sys_ringbuffer_wait(self->dev, RINGBUFFER_READ, 0,
					   &zero, 0));
	ASSERT_EQ(0, set_u64(self->dev, RINGBUFFER_TEST_PAUSE_AT, 1000));
	got = sys_ringbuffer_wait(self->dev, RINGBUFFER_READ, 200, NULL, 0);
	EXPECT_GE(got, 200);
	EXPECT_LE(got, 1000);
	/* A write side with space returns at once: all of it is free. */
	EXPECT_EQ(self->wr.size, sys_ringbuffer_wait(self->dev,
		RINGBUFFER_WRITE, self->wr.size, &zero, 0));
}

TEST_F(waits, timeout_is_honoured)
{
	struct timespec zero = { 0, 0 };
	uint64_t pos = 0;
	double start;

	while (pos < 100)
		ASSERT_LT(0, rb_consume_seq(&self->rd, &pos, 4096));
	start = rb_now();
	EXPECT_EQ(ETIMEDOUT, FAILS_WITH(sys_ringbuffer_wait(self->dev,
		RINGBUFFER_READ, 1, &ms50, 0)));
	EXPECT_GE(rb_now() - start, 0.049);
	EXPECT_EQ(ETIMEDOUT, FAILS_WITH(sys_ringbuffer_wait(self->dev,
		RINGBUFFER_READ, 1, &zero, 0)));
	EXPECT_EQ(0, atomic_load(self->rd.read_waiters));
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void arm_alarm(int sa_flags)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = sa_flags };
	struct itimerval it = { .it_value = { 0, 50000 } };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
}

TEST_F(waits, signal_interrupts)
{
	struct timespec long_time = { 60, 0 };

	EXPECT_EQ(100, sys_ringbuffer_wait(self->dev, RINGBUFFER_READ, 100,
					   NULL, 0));
	arm_alarm(0);
	EXPECT_EQ(EINTR, FAILS_WITH(sys_ringbuffer_wait(self->dev,
		RINGBUFFER_READ, 200, NULL, 0)));
	/* A relative timeout is never restarted, even with SA_RESTART. */
	arm_alarm(SA_RESTART);
	EXPECT_EQ(EINTR, FAILS_WITH(sys_ringbuffer_wait(self->dev,
		RINGBUFFER_READ, 200, &long_time, 0)));
	EXPECT_EQ(0, atomic_load(self->rd.read_waiters));
}

struct waiter {
	int fd;
	long ret;
	int err;
};

static void *wait_for_data(void *arg)
{
	struct waiter *w = arg;

	w->ret = sys_ringbuffer_wait(w->fd, RINGBUFFER_READ, 200, NULL, 0);
	w->err = errno;
	return NULL;
}

TEST_F(waits, producer_wakes_sleeping_reader)
{
	struct waiter w = { .fd = self->dev };
	pthread_t thread;

	ASSERT_EQ(0, pthread_create(&thread, NULL, wait_for_data, &w));
	ASSERT_TRUE(word_becomes(self->rd.read_waiters, 1, 10));
	ASSERT_EQ(0, set_u64(self->dev, RINGBUFFER_TEST_PAUSE_AT, 300));
	ASSERT_EQ(0, pthread_join(thread, NULL));
	EXPECT_GE(w.ret, 200) TH_LOG("wait: %s", strerror(w.err));
	EXPECT_EQ(0, atomic_load(self->rd.read_waiters));
}

/*
 * The kernel consumer sleeps, counted in read_waiters.  Data published
 * without ringbuffer_wakeup(2) stays where it is; the call wakes it.
 */
TEST_F(waits, wakeup_call_needed_and_enough)
{
	struct ringbuffer_test_stats st;
	uint64_t pos = 0;
	uint32_t head;

	ASSERT_EQ(0, rbtest_stats(self->dev, &st));
	ASSERT_TRUE(thread_asleep(st.consumer_tid, self->wr.read_waiters, 10));
	head = atomic_load(self->wr.head);
	rbtest_fill(self->wr.data + (head & self->wr.mask), 0, 100);
	atomic_store_explicit(self->wr.head, head + 100, memory_order_release);
	pos = 100;
	EXPECT_EQ(ETIMEDOUT, FAILS_WITH(sys_ringbuffer_wait(self->dev,
		RINGBUFFER_WRITE, self->wr.size, &ms50, 0)));
	ASSERT_EQ(0, rbtest_stats(self->dev, &st));
	EXPECT_EQ(0, st.consumed);
	EXPECT_EQ(0, sys_ringbuffer_wakeup(self->dev, RINGBUFFER_WRITE, 0));
	EXPECT_EQ(self->wr.size, sys_ringbuffer_wait(self->dev,
		RINGBUFFER_WRITE, self->wr.size, NULL, 0));
	ASSERT_EQ(0, rbtest_stats(self->dev, &st));
	EXPECT_EQ(pos, st.consumed);
	EXPECT_EQ(0, st.mismatches);
}

/* The same from the other side: the kernel producer sleeps on a full ring. */
TEST_F(waits, reader_wakes_sleeping_producer)
{
	struct ringbuffer_test_stats st;
	struct timespec zero = { 0, 0 };
	uint64_t pos = 0;

	ASSERT_EQ(0, set_u64(self->dev, RINGBUFFER_TEST_PAUSE_AT, 0));
	ASSERT_EQ(0, rbtest_stats(self->dev, &st));
	ASSERT_TRUE(thread_asleep(st.producer_tid, self->rd.write_waiters, 10));
	ASSERT_EQ(self->rd.size, sys_ringbuffer_wait(self->dev, RINGBUFFER_READ,
						     1, &zero, 0));
	/* Consume everything without the wake-up call. */
	atomic_store_explicit(self->rd.tail, atomic_load(self->rd.head),
			      memory_order_release);
	pos = atomic_load(self->rd.head);
	EXPECT_EQ(ETIMEDOUT, FAILS_WITH(sys_ringbuffer_wait(self->dev,
		RINGBUFFER_READ, 1, &ms50, 0)));
	EXPECT_EQ(0, sys_ringbuffer_wakeup(self->dev, RINGBUFFER_READ, 0));
	EXPECT_LT(0, sys_ringbuffer_wait(self->dev, RINGBUFFER_READ, 1, NULL, 0));
	/* And the stream goes on where it was. */
	EXPECT_LT(0, rb_consume_seq(&self->rd, &pos, 4096));
}

TEST_F(waits, end_states)
{
	uint8_t buf[16] = { 0 };
	uint64_t pos = 0;

	/* The producer waits at 100 bytes; end the stream there. */
	ASSERT_EQ(0, set_u64(self->dev, RINGBUFFER_TEST_EOF_AT, 100));
	while (rb_consume_seq(&self->rd, &pos, 3) > 0)
		;
	EXPECT_EQ(100, pos);
	EXPECT_TRUE(atomic_load(self->rd.flags) & RINGBUFFER_EOF);
	EXPECT_EQ(0, sys_ringbuffer_wait(self->dev, RINGBUFFER_READ, 5, NULL, 0));
	EXPECT_EQ(0, read(self->dev, buf, sizeof(buf)));

	signal(SIGPIPE, SIG_IGN);
	ASSERT_EQ(0, ioctl(self->dev, RINGBUFFER_TEST_CLOSE_CONSUMER));
	EXPECT_TRUE(atomic_load(self->wr.flags) & RINGBUFFER_BROKEN);
	EXPECT_EQ(EPIPE, FAILS_WITH(sys_ringbuffer_wait(self->dev,
		RINGBUFFER_WRITE, 1, NULL, 0)));
	EXPECT_EQ(EPIPE, FAILS_WITH(write(self->dev, buf, sizeof(buf))));
}

FIXTURE(hostile) {
	int dev;
	struct rb_view rd;
	struct rb_view wr;
};

FIXTURE_SETUP(hostile)
{
	self->dev = open(RBTEST_DEV, O_RDWR | O_NONBLOCK);
	ASSERT_GE(self->dev, 0);
	ASSERT_EQ(0, rb_view_map(&self->rd, self->dev, RINGBUFFER_READ, 4096));
	ASSERT_EQ(0, rb_view_map(&self->wr, self->dev, RINGBUFFER_WRITE, 4096));
}

FIXTURE_TEARDOWN(hostile)
{
	rb_view_unmap(&self->rd);
	rb_view_unmap(&self->wr);
	close(self->dev);
}

TEST_F(hostile, consumer_position_out_of_range)
{
	struct ringbuffer_test_stats st;
	uint8_t buf[64];
	uint32_t tail;
	uint64_t pos;

	ASSERT_TRUE(word_becomes(self->rd.write_waiters, 1, 10));
	tail = atomic_load(self->rd.tail);
	pos = tail;
	atomic_store(self->rd.tail, tail + 3 * self->rd.size);
	EXPECT_EQ(EIO, FAILS_WITH(sys_ringbuffer_wait(self->dev,
		RINGBUFFER_READ, 1, NULL, 0)));
	EXPECT_EQ(EIO, FAILS_WITH(read(self->dev, buf, sizeof(buf))));
	/* Wake the producer: it finds the garbage too, and says so. */
	EXPECT_EQ(0, sys_ringbuffer_wakeup(self->dev, RINGBUFFER_READ, 0));
	EXPECT_TRUE(stat_reaches(self->dev, STAT(io_errors), 1, 10));
	/* Undo it: the stream goes on, intact. */
	atomic_store(self->rd.tail, tail);
	EXPECT_LT(0, rb_consume_seq(&self->rd, &pos, 4096));
	EXPECT_LT(0, rb_consume_seq(&self->rd, &pos, 4096));
	ASSERT_EQ(0, rbtest_stats(self->dev, &st));
	EXPECT_LT(0, st.produced);
}

TEST_F(hostile, producer_position_out_of_range)
{
	struct ringbuffer_test_stats st;
	uint8_t buf[64] = { 0 };
	uint32_t head;
	uint64_t pos = 0;

	ASSERT_TRUE(word_becomes(self->wr.read_waiters, 1, 10));
	head = atomic_load(self->wr.head);
	atomic_store(self->wr.head, head - 1);	/* behind the tail */
	EXPECT_EQ(EIO, FAILS_WITH(sys_ringbuffer_wait(self->dev,
		RINGBUFFER_WRITE, 1, NULL, 0)));
	EXPECT_EQ(EIO, FAILS_WITH(write(self->dev, buf, sizeof(buf))));
	EXPECT_EQ(0, sys_ringbuffer_wakeup(self->dev, RINGBUFFER_WRITE, 0));
	EXPECT_TRUE(stat_reaches(self->dev, STAT(io_errors), 1, 10));
	atomic_store(self->wr.head, head);
	ASSERT_EQ(0, rb_produce_seq(&self->wr, &pos, 5000, 999));
	EXPECT_EQ(self->wr.size, sys_ringbuffer_wait(self->dev,
		RINGBUFFER_WRITE, self->wr.size, NULL, 0));
	ASSERT_EQ(0, rbtest_stats(self->dev, &st));
	EXPECT_EQ(5000, st.consumed);
	EXPECT_EQ(0, st.mismatches);
}

/*
 * Random values in every word user space may write, while the device's
 * threads and the legacy read/write path run: the kernel must stay intact
 * (the VM runner fails on any splat) and never return more than asked.
 */
TEST_F(hostile, scribble_everywhere)
{
	struct timespec zero = { 0, 0 };
	_Atomic uint32_t *words[] = {
		self->rd.tail, self->rd.consumer_lock,
		self->wr.head, self->wr.producer_lock,
	};
	uint32_t seed = 12345;
	uint8_t buf[64];

	for (int i = 0; i < 20000; i++) {
		ssize_t n;

		seed = seed * 1103515245 + 12345;
		switch (seed >> 29) {
		case 0:
			atomic_store(words[(seed >> 8) & 3], seed * 2654435761u);
			break;
		case 1:
			atomic_store(words[(seed >> 8) & 3],
				     atomic_load(self->rd.head) + (seed & 0x1fff));
			break;
		case 2:
			self->wr.data[seed & (2 * self->wr.size - 1)] = seed;
			break;
		case 3:
			n = read(self->dev, buf, 16);
			ASSERT_TRUE(n <= 16);
			break;
		case 4:
			n = write(self->dev, buf, 16);
			ASSERT_TRUE(n <= 16);
			break;
		case 5:
			sys_ringbuffer_wakeup(self->dev, seed & 1, 0);
			break;
		default:
			n = sys_ringbuffer_wait(self->dev, seed & 1, 1, &zero, 0);
			ASSERT_TRUE(n <= (long)self->rd.size);
			break;
		}
	}
}

TEST_HARNESS_MAIN
