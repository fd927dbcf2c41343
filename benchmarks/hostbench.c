// SPDX-License-Identifier: GPL-2.0-only
/*
 * hostbench: the library's real copy path on the host's CPUs, no kernel
 * in the loop.  A ring laid out as ringbuffer(2) lays it out is built in
 * a memfd (data pages mapped twice), and a producer thread moves
 * fixed-size messages to a consumer thread with rb_write() and rb_read()
 * (libringbuffer.c compiled in).  Side by side, in the same run: a plain
 * pipe with write(2) and read(2), and a minimal single-producer
 * single-consumer ring with cached indices and no lock, the limit of what
 * shared memory can do.  The threads are pinned to two CPUs.
 *
 * Runs every variant in turn, round after round, and prints per message
 * size the median throughput of the rounds with [min-max], and the
 * ratios ring/spsc, ring/rw, kept/spsc and kept/rw, each the median of
 * the rounds' ratios with [min-max].  A benchmark, not a test: nothing is
 * asserted.
 *
 *   make hostbench && benchmarks/out/hostbench [RUNS]
 *
 * With --count (see count()), it times nothing and only moves messages in
 * one thread, for an instruction count.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/ringbuffer.h>

#include "../userspace/libringbuffer.h"
#include "../userspace/libringbuffer-internal.h"
#include "../userspace/tests/fake_ring.h"

#define RING_SIZE	(1u << 16)
#define BYTES		(64u << 20)	/* moved per run and variant */

static const size_t sizes[] = { 16, 64, 256, 4096, 65536 };

/* The SPSC baseline: indices on their own cache lines, each cached. */
struct spsc {
	_Alignas(128) _Atomic uint32_t head;
	_Alignas(128) _Atomic uint32_t tail;
	_Alignas(128) uint8_t data[RING_SIZE];
};

/* One side's position and its cached copy of the other's. */
struct spsc_side {
	uint32_t pos;
	uint32_t peer;
};

/* An empty SPSC ring, its indices on their own cache lines; NULL if none. */
static struct spsc *spsc_new(void)
{
	struct spsc *s = aligned_alloc(128, sizeof(*s));

	if (s)
		memset(s, 0, sizeof(*s));
	return s;
}

/* @n bytes between @buf and the ring at @pos, which may wrap. */
static inline void spsc_copy(struct spsc *s, uint32_t pos, uint8_t *buf,
			     size_t n, const int into_ring)
{
	for (size_t c = 0; c < n;) {
		uint32_t at = (pos + c) & (RING_SIZE - 1);
		size_t run = RING_SIZE - at < n - c ? RING_SIZE - at : n - c;

		if (into_ring)
			memcpy(s->data + at, buf + c, run);
		else
			memcpy(buf + c, s->data + at, run);
		c += run;
	}
}

/* Up to @n bytes from @src into the ring: bytes moved, 0 if it was full. */
static inline size_t spsc_write(struct spsc *s, struct spsc_side *me,
				const uint8_t *src, size_t n)
{
	uint32_t space = RING_SIZE - (me->pos - me->peer);

	if (space < n && space < RING_SIZE / 4) {
		/* Acquire: the consumer is done with it. */
		me->peer = atomic_load_explicit(&s->tail, memory_order_acquire);
		return 0;
	}
	n = n < space ? n : space;
	spsc_copy(s, me->pos, (uint8_t *)src, n, 1);
	me->pos += n;
	/* Release: the data before the index. */
	atomic_store_explicit(&s->head, me->pos, memory_order_release);
	return n;
}

/* Up to @n bytes from the ring into @dst: bytes moved, 0 if it was empty. */
static inline size_t spsc_read(struct spsc *s, struct spsc_side *me,
			       uint8_t *dst, size_t n)
{
	uint32_t used = me->peer - me->pos;

	if (!used) {
		/* Acquire: the data below head is written. */
		me->peer = atomic_load_explicit(&s->head, memory_order_acquire);
		return 0;
	}
	n = used < n ? used : n;
	spsc_copy(s, me->pos, dst, n, 0);
	me->pos += n;
	/* Release: done reading before the space goes back. */
	atomic_store_explicit(&s->tail, me->pos, memory_order_release);
	return n;
}

enum variant { RW, RING, KEPT, SPSC, NR_VARIANTS };
static const char *const variant_name[] = { "rw", "ring", "kept", "spsc" };

struct job {
	enum variant v;
	size_t msg;
	int fds[2];
	struct fake_ring *m;
	struct spsc *s;
	int cpu;
};

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu % sysconf(_SC_NPROCESSORS_ONLN), &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *produce(void *arg)
{
	struct job *j = arg;
	static _Thread_local uint8_t msg[65536];
	struct spsc_side me = { 0, 0 };

	pin(j->cpu);
	if (j->v == KEPT)
		fake_ring_keep(&j->m->prod);
	for (size_t done = 0; done < BYTES; done += j->msg) {
		switch (j->v) {
		case RW:
			for (size_t w = 0; w < j->msg;) {
				ssize_t n = write(j->fds[1], msg + w, j->msg - w);

				if (n < 0)
					return (void *)1;
				w += n;
			}
			break;
		case RING:
		case KEPT:
			/* Messages up to PIPE_BUF go in whole; larger ones in parts. */
			for (size_t w = 0; w < j->msg;) {
				ssize_t n = rb_write(&j->m->prod, msg + w, j->msg - w);

				if (n > 0)
					w += n;
				else if (errno != EBADF)
					return (void *)1;
			}
			break;
		case SPSC:
			for (size_t w = 0; w < j->msg;)
				w += spsc_write(j->s, &me, msg + w, j->msg - w);
			break;
		default:
			break;
		}
	}
	return NULL;
}

static void *consume(void *arg)
{
	struct job *j = arg;
	static _Thread_local uint8_t buf[65536];
	struct spsc_side me = { 0, 0 };
	size_t got = 0;

	pin(j->cpu + 1);
	if (j->v == KEPT)
		fake_ring_keep(&j->m->cons);
	while (got < BYTES) {
		ssize_t n = 0;

		switch (j->v) {
		case RW:
			n = read(j->fds[0], buf, j->msg);
			if (n <= 0)
				return (void *)1;
			break;
		case RING:
		case KEPT:
			n = rb_read(&j->m->cons, buf, j->msg);
			if (n < 0 && errno != EBADF)
				return (void *)1;
			break;
		case SPSC:
			n = spsc_read(j->s, &me, buf, j->msg);
			break;
		default:
			break;
		}
		if (n > 0)
			got += n;
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One run: MiB/s, or -1. */
static double run(enum variant v, size_t msg)
{
	struct job j = { .v = v, .msg = msg, .cpu = 0 };
	struct fake_ring m;
	pthread_t p, c;
	void *rp, *rc;
	double t0, t;

	if (v == RW && pipe(j.fds))
		return -1;
	if (v == RING || v == KEPT) {
		if (fake_ring_init(&m, RING_SIZE))
			return -1;
		j.m = &m;
	}
	if (v == SPSC) {
		j.s = spsc_new();
		if (!j.s)
			return -1;
	}
	t0 = now();
	pthread_create(&c, NULL, consume, &j);
	pthread_create(&p, NULL, produce, &j);
	pthread_join(p, &rp);
	pthread_join(c, &rc);
	t = now() - t0;
	if (v == RW) {
		close(j.fds[0]);
		close(j.fds[1]);
	}
	if (v == RING || v == KEPT)
		munmap(m.base, m.len);
	free(j.s);
	return rp || rc ? -1 : BYTES / t / (1 << 20);
}

/*
 * hostbench --count kept|spsc SIZE: one thread writes COUNT_MESSAGES
 * messages of SIZE bytes and reads each back, on kept sides or through the
 * SPSC ring, in count_kept() or count_spsc().  For benchmarks/run, which
 * runs it under valgrind's callgrind collecting only inside count_*():
 * instructions per message, which, unlike the time, do not depend on where
 * the host runs the threads.
 */
#define COUNT_MESSAGES	100000

static __attribute__((noinline)) int count_kept(struct fake_ring *m, size_t msg)
{
	static uint8_t in[4096], out[4096];

	for (int i = 0; i < COUNT_MESSAGES; i++)
		if (rb_write(&m->prod, in, msg) != (ssize_t)msg ||
		    rb_read(&m->cons, out, msg) != (ssize_t)msg)
			return -1;
	return 0;
}

static __attribute__((noinline)) int count_spsc(struct spsc *s, size_t msg)
{
	static uint8_t in[4096], out[4096];
	struct spsc_side w = { 0, 0 }, r = { 0, 0 };

	/* As the threads do: a full or empty ring reloads the peer's index. */
	for (int i = 0; i < COUNT_MESSAGES; i++) {
		while (!spsc_write(s, &w, in, msg))
			;
		while (!spsc_read(s, &r, out, msg))
			;
	}
	return 0;
}

static int count(const char *variant, size_t msg)
{
	struct fake_ring m;
	struct spsc *s;
	int ret;

	if (!msg || msg > 4096)
		return 2;
	if (!strcmp(variant, "kept")) {
		if (fake_ring_init(&m, RING_SIZE))
			return 1;
		fake_ring_keep(&m.prod);
		fake_ring_keep(&m.cons);
		ret = count_kept(&m, msg);
		munmap(m.base, m.len);
	} else if (!strcmp(variant, "spsc")) {
		s = spsc_new();
		if (!s)
			return 1;
		ret = count_spsc(s, msg);
		free(s);
	} else {
		return 2;
	}
	printf("%d messages of %zu bytes\n", COUNT_MESSAGES, msg);
	return ret ? 1 : 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of @n values, which it sorts; their range in *@lo, *@hi. */
static double median(double *x, int n, double *lo, double *hi)
{
	qsort(x, n, sizeof(x[0]), cmp);
	*lo = x[0];
	*hi = x[n - 1];
	return x[n / 2];
}

/* a/b in each round: median [min-max], or blanks if either is missing. */
static void print_ratio(const double *a, const double *b, int runs)
{
	double q[99], lo, hi, med;

	if (!a[0] || !b[0]) {
		printf(" %22s", "-");
		return;
	}
	for (int k = 0; k < runs; k++)
		q[k] = a[k] / b[k];
	med = median(q, runs, &lo, &hi);
	printf(" %7.2fx [%5.2f-%5.2f]", med, lo, hi);
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 5;
	/* For profiling one variant at one size: hostbench RUNS VARIANT SIZE. */
	const char *only = argc > 2 ? argv[2] : NULL;
	size_t only_size = argc > 3 ? strtoul(argv[3], NULL, 10) : 0;

	if (argc == 4 && !strcmp(argv[1], "--count"))
		return count(argv[2], only_size);

	if (runs < 1 || runs > 99)
		runs = 5;
	printf("# hostbench: host CPUs, no kernel in the loop; %u MiB per run, "
	       "%d rounds of every variant in turn;\n"
	       "# MiB/s: median of the rounds [min-max]; ratios: median of the "
	       "rounds' ratios [min-max]\n", BYTES >> 20, runs);
	printf("%-8s", "size");
	for (int v = 0; v < NR_VARIANTS; v++)
		printf(" %26s", variant_name[v]);
	printf(" %22s %22s %22s %22s\n", "ring/spsc", "ring/rw", "kept/spsc", "kept/rw");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		double r[NR_VARIANTS][99] = { { 0 } };

		if (only_size && sizes[i] != only_size)
			continue;
		/*
		 * Round after round of every variant: where the host places
		 * the two CPUs can change between runs and moves every figure
		 * by up to 5x, so ratios are taken within a round.
		 */
		for (int k = 0; k < runs; k++)
			for (int v = 0; v < NR_VARIANTS; v++)
				if (!only || !strcmp(only, variant_name[v]))
					r[v][k] = run(v, sizes[i]);
		printf("%-8zu", sizes[i]);
		for (int v = 0; v < NR_VARIANTS; v++) {
			double sorted[99], lo, hi, med;

			if (!r[v][0]) {
				printf(" %26s", "-");
				continue;
			}
			memcpy(sorted, r[v], runs * sizeof(sorted[0]));
			med = median(sorted, runs, &lo, &hi);
			printf(" %10.1f [%6.0f-%6.0f]", med, lo, hi);
		}
		print_ratio(r[RING], r[SPSC], runs);
		print_ratio(r[RING], r[RW], runs);
		print_ratio(r[KEPT], r[SPSC], runs);
		print_ratio(r[KEPT], r[RW], runs);
		printf("\n");
		fflush(stdout);
	}
	return 0;
}
