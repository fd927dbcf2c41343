// SPDX-License-Identifier: GPL-2.0-only
/*
 * ringbench: pipe throughput and ping-pong latency, ring against the
 * kernel's read(2)/write(2) and vmsplice(2)/splice(2), side by side.
 *
 * Variants, each moving fixed-size messages from a producer process to a
 * consumer process (or back and forth, for latency):
 *
 *   rw      write(2)/read(2) on a plain pipe
 *   splice  vmsplice(2) into a plain pipe, splice(2) from it to /dev/null
 *   ring    libringbuffer's copy API, rb_write()/rb_read(), on a ring pipe
 *   zc      its zero-copy API, rb_reserve()/rb_commit() and
 *           rb_peek()/rb_consume(), on a ring pipe
 *   zcb     the same, batched: each span holds as many messages as there
 *           is space (producer) or data (consumer) for, up to 64 KiB
 *           (throughput only)
 *   shim    the rw code run under `ringpipe -f all` (the LD_PRELOAD shim)
 *   spsc    a ring in shared anonymous memory with no kernel at all,
 *           spinning then yielding while empty or full: the upper bound
 *
 * Every message starts with its 64-bit sequence number, followed by a
 * payload that the producer builds (memset) and the consumer reads whole
 * (a sum of its words), checking both (except for splice, whose consumer
 * never sees the data): a lost, repeated, reordered or torn message fails
 * the run.  The copy variants build and read in their own buffer and copy
 * on top; the zero-copy one builds and reads in the ring itself.
 *
 * Conditions: "pinned" (producer on CPU 0, consumer on CPU 1), "unpinned"
 * (the scheduler decides) and "busy" (pinned, plus a third process
 * spinning on the consumer's CPU 1).
 *
 * A run lasts a fixed time (the producer checks the clock every 64 KiB or
 * 1024 messages, then closes its end); the consumer's clock at end of
 * file gives the elapsed time.  During the timed part each process is
 * named rbm<ID>p or rbm<ID>c (prctl PR_SET_NAME), so that a tracer can
 * count its system calls and wake-ups; the rename at the end is a
 * prctl(2) the tracer should not count.
 *
 *   ringbench probe
 *   ringbench one   [options] --variant V --cond C --size N [--latency]
 *   ringbench suite [options]
 *
 * Output, one tab-separated line per measurement:
 *   tput VARIANT COND SIZE RUN ID BYTES SECONDS MIB/S P_CPU C_CPU
 *        P_VCSW C_VCSW P_IVCSW C_IVCSW P_SYS C_SYS P_MINFLT C_MINFLT
 *   lat  VARIANT COND SIZE RUN ID ROUNDTRIPS SECONDS USEC A_CPU B_CPU
 *        A_VCSW B_VCSW A_IVCSW B_IVCSW A_SYS B_SYS A_MINFLT B_MINFLT
 * (CPU and SYS in seconds of user+system and of system time, VCSW and
 * IVCSW the voluntary and involuntary context switches, MINFLT the minor
 * page faults, as getrusage(2) counted them in the timed part),
 * plus "info KEY VALUE", "skip VARIANT REASON" and "fail ..." lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../userspace/libringbuffer.h"
/* read_full() and write_full(), for the plain read(2)/write(2) variant */
#include "../userspace/tests/shim_util.h"

#define MAX_MSG		(1U << 20)
#define RING_SYSCALL	463	/* ringbuffer(2) in the series */

enum variant { V_RW, V_SPLICE, V_RING, V_ZC, V_ZCB, V_SHIM, V_SPSC, NR_VARIANTS };
static const char *const variant_names[NR_VARIANTS] = {
	"rw", "splice", "ring", "zc", "zcb", "shim", "spsc",
};

enum cond { C_PINNED, C_UNPINNED, C_BUSY, NR_CONDS };
static const char *const cond_names[NR_CONDS] = { "pinned", "unpinned", "busy" };

static struct {
	uint32_t pipe_size;
	double seconds;
	const char *ringpipe;	/* the wrapper command, for the shim variant */
	char self[PATH_MAX];	/* this program, which the wrapper runs */
} cfg = {
	.pipe_size = 256 * 1024,
	.seconds = 0.3,
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* Spin a while, then give the CPU away: a peer sharing it must run. */
static void backoff(unsigned int *spins)
{
	if (++*spins < 1000)
		cpu_relax();
	else
		sched_yield();
}

/* ------------------------------------------------------------------ */
/* The user-space ring, in shared anonymous memory.                    */

struct spsc {
	/* Producer's and consumer's words on separate cache lines. */
	_Alignas(64) _Atomic uint32_t head;
	_Alignas(64) _Atomic uint32_t tail;
	_Alignas(64) _Atomic uint32_t closed;
	uint32_t size;
	_Alignas(64) uint8_t data[];
};

/* ------------------------------------------------------------------ */
/* One direction of message traffic, as seen by one process.          */

struct chan {
	enum variant v;
	size_t size;		/* bytes per message */
	int rfd, wfd;		/* pipe ends; -1 when not ours */
	int nullfd;		/* splice's sink */
	struct rb_ring *ring;	/* our side of the pipe's ring */
	struct spsc *q;
	uint32_t peer_pos;	/* spsc: the peer's position when last loaded */
	uint8_t *buf;		/* the message, for the copy variants */
};

static char errbuf[200];

static int fail(const char *fmt, ...)
{
	va_list ap;
	int err = errno;

	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	va_end(ap);
	if (err) {
		size_t n = strlen(errbuf);

		snprintf(errbuf + n, sizeof(errbuf) - n, ": %s", strerror(err));
	}
	return -1;
}

/*
 * A message: its sequence number, then the payload, every byte of which
 * is the number's low byte.  Producers build all of it and consumers read
 * all of it, in their own buffer or, zero-copy, in the ring: the copy
 * variants pay for their copies on top, as a real program would.
 */
typedef uint64_t __attribute__((may_alias)) msg_word;

static void msg_build(void *msg, size_t size, uint64_t seq)
{
	memcpy(msg, &seq, sizeof(seq));
	memset((char *)msg + sizeof(seq), (uint8_t)seq, size - sizeof(seq));
}

/* The sequence number into @seq; whether the payload is whole. */
static bool msg_parse(const void *msg, size_t size, uint64_t *seq)
{
	const msg_word *w = msg;
	size_t words = size / sizeof(*w) - 1;
	uint64_t sum = 0;

	memcpy(seq, msg, sizeof(*seq));
	for (size_t i = 1; i <= words; i++)
		sum += w[i];
	return sum == words * (0x0101010101010101ULL * (uint8_t)*seq);
}

static bool is_pipe_variant(enum variant v)
{
	return v != V_SPSC;
}

static bool is_ring_variant(enum variant v)
{
	return v == V_RING || v == V_ZC || v == V_ZCB;
}

/* Before fork: the pipe or the shared ring. */
static int chan_create(struct chan *c, enum variant v, size_t size)
{
	memset(c, 0, sizeof(*c));
	c->v = v;
	c->size = size;
	c->rfd = c->wfd = c->nullfd = -1;
	if (is_pipe_variant(v)) {
		int fds[2];

		if (pipe(fds))
			return fail("pipe");
		c->rfd = fds[0];
		c->wfd = fds[1];
		/* Every variant gets the same capacity, the shim's ring too. */
		if (fcntl(c->wfd, F_SETPIPE_SZ, cfg.pipe_size) < (int)cfg.pipe_size)
			return fail("F_SETPIPE_SZ %u", cfg.pipe_size);
		return 0;
	}
	c->q = mmap(NULL, sizeof(*c->q) + cfg.pipe_size, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (c->q == MAP_FAILED)
		return fail("mmap");
	c->q->size = cfg.pipe_size;
	return 0;
}

/* In the parent after fork: it keeps nothing open. */
static void chan_drop(struct chan *c)
{
	if (c->rfd >= 0)
		close(c->rfd);
	if (c->wfd >= 0)
		close(c->wfd);
	c->rfd = c->wfd = -1;
}

/* In a child: become side @rw (RB_READ consumer, RB_WRITE producer). */
static int chan_open(struct chan *c, int rw)
{
	int mine = rw == RB_WRITE ? c->wfd : c->rfd;

	if (is_pipe_variant(c->v)) {
		close(rw == RB_WRITE ? c->rfd : c->wfd);
		c->rfd = rw == RB_READ ? mine : -1;
		c->wfd = rw == RB_WRITE ? mine : -1;
	}
	if (posix_memalign((void **)&c->buf, 4096, c->size))
		return fail("posix_memalign");
	memset(c->buf, 0x5a, c->size);
	if (c->v == V_SPLICE && rw == RB_READ) {
		c->nullfd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (c->nullfd < 0)
			return fail("/dev/null");
	}
	if (is_ring_variant(c->v)) {
		c->ring = rb_open(mine, rw, cfg.pipe_size);
		if (!c->ring)
			return fail("rb_open");
		if (!rb_is_mapped(c->ring)) {
			errno = 0;
			return fail("rb_open: no ring (kernel without ring buffers?)");
		}
	}
	return 0;
}

static int send_rw(struct chan *c)
{
	return write_full(c->wfd, c->buf, c->size) ? fail("write") : 0;
}

static int send_splice(struct chan *c)
{
	struct iovec iov = { c->buf, c->size };

	while (iov.iov_len) {
		ssize_t n = vmsplice(c->wfd, &iov, 1, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return fail("vmsplice");
		iov.iov_base = (char *)iov.iov_base + n;
		iov.iov_len -= n;
	}
	return 0;
}

static int send_ring(struct chan *c)
{
	size_t done = 0;

	while (done < c->size) {
		ssize_t n = rb_write(c->ring, c->buf + done, c->size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return fail("rb_write");
		done += n;
	}
	return 0;
}

static int send_zc(struct chan *c, uint64_t seq)
{
	for (;;) {
		void *p = rb_reserve(c->ring, c->size);

		if (p) {
			msg_build(p, c->size, seq);
			return rb_commit(c->ring, c->size) ? fail("rb_commit") : 0;
		}
		if (errno != EAGAIN)
			return fail("rb_reserve");
		if (rb_wait(c->ring, c->size, -1) < 0 && errno != EINTR)
			return fail("rb_wait (space)");
	}
}

/* The largest batch: 64 KiB of whole messages, at least one. */
static size_t batch_msgs(const struct chan *c)
{
	return c->size < 65536 ? 65536 / c->size : 1;
}

/* Messages @seq... in one span: as many as fit now, up to a batch. */
static long send_zcb(struct chan *c, uint64_t seq)
{
	for (;;) {
		long space = rb_wait(c->ring, c->size, -1);
		size_t n;
		uint8_t *p;

		if (space < 0 && errno == EINTR)
			continue;
		if (space < 0)
			return fail("rb_wait (space)");
		n = (size_t)space / c->size;
		if (n > batch_msgs(c))
			n = batch_msgs(c);
		p = rb_reserve(c->ring, n * c->size);
		if (!p && errno == EAGAIN)
			continue;	/* another producer took it */
		if (!p)
			return fail("rb_reserve");
		for (size_t i = 0; i < n; i++)
			msg_build(p + i * c->size, c->size, seq + i);
		return rb_commit(c->ring, n * c->size) ? fail("rb_commit") : (long)n;
	}
}

static void spsc_copy(uint8_t *dst_ring, const void *src, uint32_t pos,
		      uint32_t ring_size, size_t len, bool to_ring, void *dst)
{
	uint32_t off = pos & (ring_size - 1);
	size_t first = len < ring_size - off ? len : ring_size - off;

	if (to_ring) {
		memcpy(dst_ring + off, src, first);
		memcpy(dst_ring, (const uint8_t *)src + first, len - first);
	} else {
		memcpy(dst, dst_ring + off, first);
		memcpy((uint8_t *)dst + first, dst_ring, len - first);
	}
}

static int send_spsc(struct chan *c)
{
	struct spsc *q = c->q;
	/* Our own position: only we store it. */
	uint32_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
	unsigned int spins = 0;

	while (q->size - (head - c->peer_pos) < c->size) {
		/* Acquire: the consumer is done with the space below tail. */
		c->peer_pos = atomic_load_explicit(&q->tail, memory_order_acquire);
		if (q->size - (head - c->peer_pos) >= c->size)
			break;
		backoff(&spins);
	}
	spsc_copy(q->data, c->buf, head, q->size, c->size, true, NULL);
	/* Release: the message is written before head says it is there. */
	atomic_store_explicit(&q->head, head + (uint32_t)c->size, memory_order_release);
	return 0;
}

static int chan_send(struct chan *c, uint64_t seq)
{
	if (c->v == V_ZC || c->v == V_ZCB)
		return send_zc(c, seq);
	msg_build(c->buf, c->size, seq);
	switch (c->v) {
	case V_RW:
	case V_SHIM:
		return send_rw(c);
	case V_SPLICE:
		return send_splice(c);
	case V_RING:
		return send_ring(c);
	case V_SPSC:
		return send_spsc(c);
	default:
		return -1;
	}
}

/* The receivers return 1 for a message, 0 at end of file, -1 on error. */
static int got_bytes(struct chan *c, size_t got, const char *what)
{
	if (got == c->size)
		return 1;
	if (!got)
		return 0;
	errno = 0;
	return fail("%s: end of file inside a message (%zu of %zu bytes)",
		    what, got, c->size);
}

static int torn(const uint64_t *seq)
{
	errno = 0;
	return fail("message %llu: payload damaged", (unsigned long long)*seq);
}

static int recv_rw(struct chan *c)
{
	ssize_t n = read_full(c->rfd, c->buf, c->size);

	return n < 0 ? fail("read") : got_bytes(c, n, "read");
}

static int recv_splice(struct chan *c)
{
	size_t got = 0;

	while (got < c->size) {
		ssize_t n = splice(c->rfd, NULL, c->nullfd, NULL, c->size - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail("splice");
		if (!n)
			break;
		got += n;
	}
	return got_bytes(c, got, "splice");
}

static int recv_ring(struct chan *c)
{
	size_t got = 0;

	while (got < c->size) {
		ssize_t n = rb_read(c->ring, c->buf + got, c->size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail("rb_read");
		if (!n)
			break;
		got += n;
	}
	return got_bytes(c, got, "rb_read");
}

static int recv_zc(struct chan *c, uint64_t *seq)
{
	for (;;) {
		size_t len;
		const void *p = rb_peek(c->ring, c->size, &len);
		long have;

		if (p && len == c->size) {
			bool whole = msg_parse(p, c->size, seq);

			if (rb_consume(c->ring, c->size))
				return fail("rb_consume");
			return whole ? 1 : torn(seq);
		}
		if (p) {
			/* Part of a message: give nothing back, wait for all. */
			if (rb_consume(c->ring, 0))
				return fail("rb_consume");
		} else if (!errno) {
			return 0;
		} else if (errno != EAGAIN) {
			return fail("rb_peek");
		}
		have = rb_wait(c->ring, c->size, -1);
		if (have < 0 && errno == EINTR)
			continue;
		if (have < 0)
			return fail("rb_wait (data)");
		if ((size_t)have < c->size)
			return got_bytes(c, have, "rb_wait");
	}
}

/*
 * All messages there are, up to a batch, in one span, checking that they
 * are @expect...: how many, 0 at end of file, -1 on error.
 */
static long recv_zcb(struct chan *c, uint64_t expect)
{
	for (;;) {
		size_t len, n;
		const uint8_t *p = rb_peek(c->ring, batch_msgs(c) * c->size, &len);
		long have;

		n = len / c->size;
		if (p && n) {
			for (size_t i = 0; i < n; i++) {
				uint64_t seq;

				if (!msg_parse(p + i * c->size, c->size, &seq))
					return torn(&seq);
				if (seq != expect + i) {
					errno = 0;
					return fail("message %llu has sequence number %llu",
						    (unsigned long long)(expect + i),
						    (unsigned long long)seq);
				}
			}
			return rb_consume(c->ring, n * c->size) ? fail("rb_consume") : (long)n;
		}
		if (p) {
			if (rb_consume(c->ring, 0))
				return fail("rb_consume");
		} else if (!errno) {
			return 0;
		} else if (errno != EAGAIN) {
			return fail("rb_peek");
		}
		have = rb_wait(c->ring, c->size, -1);
		if (have < 0 && errno == EINTR)
			continue;
		if (have < 0)
			return fail("rb_wait (data)");
		if ((size_t)have < c->size)
			return got_bytes(c, have, "rb_wait");
	}
}

static int recv_spsc(struct chan *c)
{
	struct spsc *q = c->q;
	uint32_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
	unsigned int spins = 0;

	while (c->peer_pos - tail < c->size) {
		/* Acquire: the data below head is written. */
		c->peer_pos = atomic_load_explicit(&q->head, memory_order_acquire);
		if (c->peer_pos - tail >= c->size)
			break;
		/* Acquire, pairing with the release in chan_finish(). */
		if (atomic_load_explicit(&q->closed, memory_order_acquire)) {
			/* Ordered after the flag: the producer's last head. */
			c->peer_pos = atomic_load_explicit(&q->head, memory_order_acquire);
			if (c->peer_pos - tail >= c->size)
				break;
			return got_bytes(c, c->peer_pos - tail, "spsc");
		}
		backoff(&spins);
	}
	spsc_copy(q->data, NULL, tail, q->size, c->size, false, c->buf);
	/* Release: we are done with the bytes before tail gives them back. */
	atomic_store_explicit(&q->tail, tail + (uint32_t)c->size, memory_order_release);
	return 1;
}

static int chan_recv(struct chan *c, uint64_t *seq)
{
	int ret;

	switch (c->v) {
	case V_ZC:
	case V_ZCB:
		return recv_zc(c, seq);
	case V_SPLICE:
		/* The data went to /dev/null unseen. */
		return recv_splice(c);
	case V_RW:
	case V_SHIM:
		ret = recv_rw(c);
		break;
	case V_RING:
		ret = recv_ring(c);
		break;
	case V_SPSC:
		ret = recv_spsc(c);
		break;
	default:
		return -1;
	}
	if (ret == 1 && !msg_parse(c->buf, c->size, seq))
		return torn(seq);
	return ret;
}

/* The producer is done: the consumer sees end of file. */
static void chan_finish(struct chan *c)
{
	if (c->ring)
		rb_close(c->ring);
	c->ring = NULL;
	if (c->wfd >= 0)
		close(c->wfd);
	c->wfd = -1;
	if (c->q)
		/* Release: after our last head store (see recv_spsc()). */
		atomic_store_explicit(&c->q->closed, 1, memory_order_release);
}

/* ------------------------------------------------------------------ */
/* One measurement: two processes (and a hog), a barrier, a clock.     */

struct side_result {
	double t_end;
	uint64_t msgs;
	double cpu, sys;
	long vcsw, ivcsw, minflt;
	int failed;
	char err[200];
};

struct shared {
	_Atomic int ready;
	_Atomic int go;
	double t0, deadline;
	struct side_result side[2];
};

struct measurement {
	enum variant v;		/* what runs */
	const char *label;	/* what it is called in the output */
	enum cond cond;
	size_t size;
	bool latency;
	unsigned int run, id;
};

static int pin_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? fail("pin to CPU %d", cpu) : 0;
}

static void set_name(const struct measurement *m, int side)
{
	char name[16];

	if (side < 0)
		snprintf(name, sizeof(name), "rbdone");
	else
		snprintf(name, sizeof(name), "rbm%u%c", m->id, side ? 'c' : 'p');
	prctl(PR_SET_NAME, name, 0, 0, 0);
}

static double rusage_cpu(const struct rusage *ru)
{
	return ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6 +
	       ru->ru_stime.tv_sec + ru->ru_stime.tv_usec / 1e6;
}

struct usage_mark {
	struct rusage ru;
};

static void usage_begin(struct usage_mark *u)
{
	getrusage(RUSAGE_SELF, &u->ru);
}

static void usage_end(const struct usage_mark *u, struct side_result *res)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	res->cpu = rusage_cpu(&ru) - rusage_cpu(&u->ru);
	res->sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6 -
		   (u->ru.ru_stime.tv_sec + u->ru.ru_stime.tv_usec / 1e6);
	res->minflt = ru.ru_minflt - u->ru.ru_minflt;
	res->vcsw = ru.ru_nvcsw - u->ru.ru_nvcsw;
	res->ivcsw = ru.ru_nivcsw - u->ru.ru_nivcsw;
}

static void wait_for_go(struct shared *sh)
{
	/* Release: our setup is done; pairs with the parent's acquire. */
	atomic_fetch_add_explicit(&sh->ready, 1, memory_order_release);
	/* Acquire: t0 and the deadline are written before go. */
	while (!atomic_load_explicit(&sh->go, memory_order_acquire))
		sched_yield();
}

/* Check the clock now and then: every 64 KiB, at most every 1024 messages. */
static uint64_t clock_mask(size_t size)
{
	uint64_t every = 65536 / size;

	if (every > 1024)
		every = 1024;
	if (every < 1)
		every = 1;
	/* A power of two, for a mask. */
	while (every & (every - 1))
		every &= every - 1;
	return every - 1;
}

static void child_exit(struct side_result *res, int status)
{
	if (status) {
		res->failed = 1;
		snprintf(res->err, sizeof(res->err), "%s", errbuf);
	}
	_exit(status);
}

static void producer(struct shared *sh, struct chan *c, const struct measurement *m)
{
	struct side_result *res = &sh->side[0];
	uint64_t mask = clock_mask(m->size), seq = 1, since_clock = 0;
	struct usage_mark u;

	if ((m->cond != C_UNPINNED && pin_to(0)) || chan_open(c, RB_WRITE) ||
	    chan_send(c, 0))
		child_exit(res, 1);
	wait_for_go(sh);
	usage_begin(&u);
	set_name(m, 0);
	for (;;) {
		long sent = c->v == V_ZCB ? send_zcb(c, seq) : chan_send(c, seq) ? -1 : 1;

		if (sent < 0)
			child_exit(res, 1);
		seq += sent;
		since_clock += sent;
		if (since_clock > mask) {
			since_clock = 0;
			if (now() >= sh->deadline)
				break;
		}
	}
	chan_finish(c);
	res->t_end = now();
	set_name(m, -1);
	usage_end(&u, res);
	res->msgs = seq - 1;
	child_exit(res, 0);
}

static void consumer(struct shared *sh, struct chan *c, const struct measurement *m)
{
	struct side_result *res = &sh->side[1];
	uint64_t seq = 0, expect = 1;
	struct usage_mark u;
	int ret;

	if ((m->cond != C_UNPINNED && pin_to(1)) || chan_open(c, RB_READ))
		child_exit(res, 1);
	if (chan_recv(c, &seq) != 1 || (c->v != V_SPLICE && seq != 0)) {
		if (!errbuf[0])
			fail("warm-up message missing or wrong");
		child_exit(res, 1);
	}
	wait_for_go(sh);
	usage_begin(&u);
	set_name(m, 1);
	if (c->v == V_ZCB) {
		long got;

		while ((got = recv_zcb(c, expect)) > 0)
			expect += got;
		ret = got < 0 ? -1 : 0;
		if (ret)
			child_exit(res, 1);
	}
	while (c->v != V_ZCB && (ret = chan_recv(c, &seq)) == 1) {
		if (c->v != V_SPLICE && seq != expect) {
			errno = 0;
			fail("message %llu has sequence number %llu",
			     (unsigned long long)expect, (unsigned long long)seq);
			child_exit(res, 1);
		}
		expect++;
	}
	res->t_end = now();
	set_name(m, -1);
	usage_end(&u, res);
	res->msgs = expect - 1;
	child_exit(res, ret < 0);
}

/* Ping-pong: side 0 sends on @ab and waits for the echo on @ba. */
static void pinger(struct shared *sh, struct chan *ab, struct chan *ba,
		   const struct measurement *m)
{
	struct side_result *res = &sh->side[0];
	uint64_t seq = 0, i;
	struct usage_mark u;

	if ((m->cond != C_UNPINNED && pin_to(0)) || chan_open(ab, RB_WRITE) ||
	    chan_open(ba, RB_READ))
		child_exit(res, 1);
	if (chan_send(ab, 0) || chan_recv(ba, &seq) != 1 || seq != 0) {
		if (!errbuf[0])
			fail("warm-up echo missing or wrong");
		child_exit(res, 1);
	}
	wait_for_go(sh);
	usage_begin(&u);
	set_name(m, 0);
	for (i = 1;; i++) {
		if (chan_send(ab, i))
			child_exit(res, 1);
		if (chan_recv(ba, &seq) != 1 || seq != i) {
			if (!errbuf[0])
				fail("echo %llu missing or wrong", (unsigned long long)i);
			child_exit(res, 1);
		}
		if (!(i & 15) && now() >= sh->deadline)
			break;
	}
	res->t_end = now();
	chan_finish(ab);
	set_name(m, -1);
	usage_end(&u, res);
	res->msgs = i;
	child_exit(res, 0);
}

static void ponger(struct shared *sh, struct chan *ab, struct chan *ba,
		   const struct measurement *m)
{
	struct side_result *res = &sh->side[1];
	uint64_t seq, n = 0;
	struct usage_mark u;
	int ret;

	if ((m->cond != C_UNPINNED && pin_to(1)) || chan_open(ab, RB_READ) ||
	    chan_open(ba, RB_WRITE))
		child_exit(res, 1);
	if (chan_recv(ab, &seq) != 1 || chan_send(ba, seq))
		child_exit(res, 1);
	wait_for_go(sh);
	usage_begin(&u);
	set_name(m, 1);
	while ((ret = chan_recv(ab, &seq)) == 1) {
		if (chan_send(ba, seq))
			child_exit(res, 1);
		n++;
	}
	res->t_end = now();
	chan_finish(ba);
	set_name(m, -1);
	usage_end(&u, res);
	res->msgs = n;
	child_exit(res, ret < 0);
}

static pid_t spawn_hog(void)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	prctl(PR_SET_NAME, "rbhog", 0, 0, 0);
	if (pin_to(1))
		_exit(1);
	for (volatile unsigned long spin = 0;; spin++)
		;
}

static void watchdog(void)
{
	/* Nothing hangs: a stuck side dies by SIGALRM, and the run fails. */
	alarm((unsigned int)cfg.seconds + 60);
}

static pid_t spawn(void (*body)(struct shared *, struct chan *, struct chan *,
				const struct measurement *),
		   struct shared *sh, struct chan *a, struct chan *b,
		   const struct measurement *m)
{
	pid_t pid = fork();

	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		watchdog();
		body(sh, a, b, m);
		_exit(1);
	}
	return pid;
}

static void tput_producer(struct shared *sh, struct chan *c, struct chan *unused,
			  const struct measurement *m)
{
	(void)unused;
	producer(sh, c, m);
}

static void tput_consumer(struct shared *sh, struct chan *c, struct chan *unused,
			  const struct measurement *m)
{
	(void)unused;
	consumer(sh, c, m);
}

static const char *status_text(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d%s", WTERMSIG(status),
			 WTERMSIG(status) == SIGALRM ? " (watchdog: stuck)" : "");
	else
		snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
	return buf;
}

static int measure(const struct measurement *m)
{
	struct shared *sh;
	struct chan a, b;
	pid_t pids[2] = { -1, -1 }, hog = -1;
	int status[2] = { 0, 0 }, alive = 2, ret = -1;
	char why[64];

	errbuf[0] = 0;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		fail("mmap");
		goto report;
	}
	memset(sh, 0, sizeof(*sh));
	/* Before the pipes exist: a hog holding a write end would hide EOF. */
	if (m->cond == C_BUSY)
		hog = spawn_hog();
	if (chan_create(&a, m->v, m->size)) {
		chan_drop(&a);
		goto report;
	}
	if (m->latency && chan_create(&b, m->v, m->size)) {
		chan_drop(&a);
		chan_drop(&b);
		goto report;
	}
	fflush(NULL);
	if (m->latency) {
		pids[0] = spawn(pinger, sh, &a, &b, m);
		pids[1] = spawn(ponger, sh, &a, &b, m);
		chan_drop(&b);
	} else {
		pids[0] = spawn(tput_producer, sh, &a, NULL, m);
		pids[1] = spawn(tput_consumer, sh, &a, NULL, m);
	}
	chan_drop(&a);
	/* Acquire: pairs with the children's release in wait_for_go(). */
	while (atomic_load_explicit(&sh->ready, memory_order_acquire) < 2) {
		for (int i = 0; i < 2; i++)
			if (pids[i] > 0 && waitpid(pids[i], &status[i], WNOHANG) == pids[i]) {
				pids[i] = -1;
				alive--;
			}
		if (alive < 2)
			break;
		sched_yield();
	}
	/* One side died getting ready: the other would wait for go forever. */
	for (int i = 0; alive < 2 && i < 2; i++)
		if (pids[i] > 0)
			kill(pids[i], SIGKILL);
	if (alive == 2) {
		sh->t0 = now();
		sh->deadline = sh->t0 + cfg.seconds;
		/* Release: t0 and the deadline before go. */
		atomic_store_explicit(&sh->go, 1, memory_order_release);
	}
	for (int i = 0; i < 2; i++)
		if (pids[i] > 0) {
			while (waitpid(pids[i], &status[i], 0) < 0 && errno == EINTR)
				;
			pids[i] = -1;
		}
	if (m->v == V_SPSC)
		munmap(a.q, sizeof(*a.q) + cfg.pipe_size);
	if (m->latency && m->v == V_SPSC)
		munmap(b.q, sizeof(*b.q) + cfg.pipe_size);
	/* The side that failed by itself first, then one that was killed. */
	for (int k = 0; k < 4; k++) {
		int i = k & 1;

		if (status[i] == 0 || (k < 2 && !sh->side[i].failed))
			continue;
		errno = 0;
		fail("%s %s", i ? (m->latency ? "ponger" : "consumer")
				: (m->latency ? "pinger" : "producer"),
		     sh->side[i].failed ? sh->side[i].err
					: status_text(status[i], why, sizeof(why)));
		goto report;
	}
	if (!m->latency && sh->side[0].msgs != sh->side[1].msgs) {
		errno = 0;
		fail("%llu messages sent, %llu received",
		     (unsigned long long)sh->side[0].msgs,
		     (unsigned long long)sh->side[1].msgs);
		goto report;
	}
	ret = 0;
report:
	if (hog > 0) {
		kill(hog, SIGKILL);
		waitpid(hog, NULL, 0);
	}
	if (ret) {
		printf("fail\t%s\t%s\t%zu\t%u\t%u\t%s\n", m->label, cond_names[m->cond],
		       m->size, m->run, m->id, errbuf);
	} else {
		const struct side_result *p = &sh->side[0], *c = &sh->side[1];

		if (m->latency) {
			double secs = p->t_end - sh->t0;

			printf("lat\t%s\t%s\t%zu\t%u\t%u\t%llu\t%.6f\t%.3f", m->label,
			       cond_names[m->cond], m->size, m->run, m->id,
			       (unsigned long long)p->msgs, secs, secs / p->msgs * 1e6);
		} else {
			double secs = c->t_end - sh->t0;
			double bytes = (double)c->msgs * m->size;

			printf("tput\t%s\t%s\t%zu\t%u\t%u\t%.0f\t%.6f\t%.3f", m->label,
			       cond_names[m->cond], m->size, m->run, m->id, bytes, secs,
			       bytes / secs / 1048576);
		}
		printf("\t%.4f\t%.4f\t%ld\t%ld\t%ld\t%ld\t%.4f\t%.4f\t%ld\t%ld\n",
		       p->cpu, c->cpu, p->vcsw, c->vcsw, p->ivcsw, c->ivcsw,
		       p->sys, c->sys, p->minflt, c->minflt);
	}
	fflush(stdout);
	if (sh != MAP_FAILED)
		munmap(sh, sizeof(*sh));
	return ret;
}

/* ------------------------------------------------------------------ */
/* The shim variant: this program's rw code, run under ringpipe(1).    */

static int measure_shim(const struct measurement *m)
{
	char size[24], run[16], id[16], secs[32], psize[16];
	int status;
	pid_t pid;

	snprintf(size, sizeof(size), "%zu", m->size);
	snprintf(run, sizeof(run), "%u", m->run);
	snprintf(id, sizeof(id), "%u", m->id);
	snprintf(secs, sizeof(secs), "%g", cfg.seconds);
	snprintf(psize, sizeof(psize), "%u", cfg.pipe_size);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		execl(cfg.ringpipe, "ringpipe", "-f", "all", cfg.self, "one",
		      "--variant", "rw", "--label", "shim", "--expect-shim",
		      "--cond", cond_names[m->cond], "--size", size, "--run", run,
		      "--id", id, "--time", secs, "--pipe-size", psize,
		      m->latency ? "--latency" : NULL, (char *)NULL);
		fprintf(stderr, "ringbench: %s: %s\n", cfg.ringpipe, strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	/* The child printed its own line, "tput" or "fail", unless it never ran. */
	if (WIFSIGNALED(status) || WEXITSTATUS(status) > 1) {
		char why[64];

		printf("fail\t%s\t%s\t%zu\t%u\t%u\tringpipe: %s\n", m->label,
		       cond_names[m->cond], m->size, m->run, m->id,
		       status_text(status, why, sizeof(why)));
		fflush(stdout);
	}
	return status ? -1 : 0;
}

/* ------------------------------------------------------------------ */

/* Whether the kernel has the series: ringbuffer(2) is there. */
static bool kernel_has_rings(void)
{
	uint64_t addr = 0;

	/* Only trust the number where the series' sysctl says it is ours. */
	if (access("/proc/sys/fs/pipe-ring-force", F_OK))
		return false;
	return syscall(RING_SYSCALL, -1, 0, 4096, &addr, 0) < 0 && errno == EBADF;
}

/*
 * What ringbuffer(2) says to a bad fd: EBADF where it exists, ENOSYS on a
 * kernel without it.  (fd -1 is harmless whatever the number means.)
 */
static const char *ring_syscall_probe(void)
{
	uint64_t addr = 0;

	if (syscall(RING_SYSCALL, -1, 0, 4096, &addr, 0) == 0)
		return "0";
	return errno == ENOSYS ? "ENOSYS" : errno == EBADF ? "EBADF" : strerror(errno);
}

/* Whether libringbuffer maps a pipe's ring here. */
static bool library_maps_rings(void)
{
	struct rb_ring *r;
	int fds[2];
	bool mapped;

	if (pipe(fds))
		return false;
	r = rb_open(fds[1], RB_WRITE, 4096);
	mapped = r && rb_is_mapped(r);
	rb_close(r);
	close(fds[0]);
	close(fds[1]);
	return mapped;
}

static void print_info(void)
{
	struct utsname u;
	bool rings = kernel_has_rings();

	uname(&u);
	printf("info\tkernel\t%s %s\n", u.release, u.version);
	printf("info\tcpus\t%ld\n", sysconf(_SC_NPROCESSORS_ONLN));
	printf("info\trings\t%s\n", rings ? "yes" : "no");
	printf("info\tringbuffer_syscall\t%s\n", ring_syscall_probe());
	printf("info\tlibrary_maps_rings\t%s\n", library_maps_rings() ? "yes" : "no");
	printf("info\tpipe_size\t%u\n", cfg.pipe_size);
	printf("info\tseconds_per_run\t%g\n", cfg.seconds);
	fflush(stdout);
}

/* Why @v cannot run here, or NULL. */
static const char *unavailable(enum variant v, bool latency)
{
	if (latency && v == V_SPLICE)
		return "no ping-pong: the consumer splices to /dev/null";
	if (latency && v == V_ZCB)
		return "no ping-pong: one message in flight leaves nothing to batch";
	static char why[96];

	if (is_ring_variant(v) && !library_maps_rings()) {
		snprintf(why, sizeof(why), "no ring for a pipe here (ringbuffer(2) answers %s)",
			 ring_syscall_probe());
		return why;
	}
	if (v == V_SHIM) {
		if (!kernel_has_rings())
			return "this kernel has no ring buffers: the shim would do nothing";
		if (!cfg.ringpipe || access(cfg.ringpipe, X_OK))
			return "no ringpipe command (--ringpipe)";
	}
	return NULL;
}

static int parse_list(const char *arg, const char *const *names, int n, unsigned int *set)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	int ret = 0;

	*set = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int i;

		for (i = 0; i < n && strcmp(tok, names[i]); i++)
			;
		if (i == n) {
			fprintf(stderr, "ringbench: unknown name '%s'\n", tok);
			ret = -1;
			break;
		}
		*set |= 1U << i;
	}
	free(copy);
	return ret;
}

static int parse_sizes(const char *arg, size_t *sizes, int max)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	int n = 0;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long v = strtoul(tok, &end, 0);

		if (*end == 'K' || *end == 'k')
			v <<= 10, end++;
		if (*end || v < 16 || v > MAX_MSG || v % 8 || n == max) {
			fprintf(stderr, "ringbench: bad size '%s' (16 B to 1 MiB, a multiple of 8)\n", tok);
			n = -1;
			break;
		}
		sizes[n++] = v;
	}
	free(copy);
	return n;
}

static int usage(int status)
{
	fprintf(status ? stderr : stdout,
"usage: ringbench probe\n"
"       ringbench one   --variant V --cond C --size N [--latency] [common]\n"
"       ringbench suite [--variants LIST] [--sizes LIST] [--conds LIST]\n"
"                       [--lat-variants LIST] [--lat-sizes LIST]\n"
"                       [--runs N] [--first-id N] [common]\n"
"common: [--time SECONDS] [--pipe-size BYTES] [--ringpipe PATH]\n"
"variants: rw splice ring zc zcb shim spsc; conditions: pinned unpinned busy\n"
"sizes in bytes, K for KiB: 16,64,256,1K,4K,16K,64K\n");
	return status;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "variant", required_argument, NULL, 'v' },
		{ "label", required_argument, NULL, 'L' },
		{ "cond", required_argument, NULL, 'c' },
		{ "size", required_argument, NULL, 's' },
		{ "latency", no_argument, NULL, 'l' },
		{ "run", required_argument, NULL, 'r' },
		{ "id", required_argument, NULL, 'i' },
		{ "expect-shim", no_argument, NULL, 'E' },
		{ "variants", required_argument, NULL, 'V' },
		{ "sizes", required_argument, NULL, 'S' },
		{ "conds", required_argument, NULL, 'C' },
		{ "lat-variants", required_argument, NULL, 'W' },
		{ "lat-sizes", required_argument, NULL, 'Z' },
		{ "runs", required_argument, NULL, 'n' },
		{ "first-id", required_argument, NULL, 'f' },
		{ "time", required_argument, NULL, 't' },
		{ "pipe-size", required_argument, NULL, 'p' },
		{ "ringpipe", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned int variants = (1U << NR_VARIANTS) - 1, conds = (1U << NR_CONDS) - 1;
	unsigned int lat_variants = 1U << V_RW | 1U << V_RING | 1U << V_ZC | 1U << V_SPSC;
	size_t sizes[16] = { 16, 64, 256, 1024, 4096, 16384, 65536 }, lat_sizes[16] = { 16, 4096 };
	int nsizes = 7, nlat_sizes = 2, runs = 5, failures = 0, opt;
	struct measurement one = { .v = NR_VARIANTS, .cond = NR_CONDS };
	unsigned int id = 1, set;
	bool expect_shim = false;
	const char *cmd;
	ssize_t len;

	if (argc < 2)
		return usage(2);
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help"))
		return usage(0);
	optind = 2;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'v':
			if (parse_list(optarg, variant_names, NR_VARIANTS, &set) ||
			    __builtin_popcount(set) != 1)
				return usage(2);
			one.v = __builtin_ctz(set);
			break;
		case 'L':
			one.label = optarg;
			break;
		case 'c':
			if (parse_list(optarg, cond_names, NR_CONDS, &set) ||
			    __builtin_popcount(set) != 1)
				return usage(2);
			one.cond = __builtin_ctz(set);
			break;
		case 's':
			if (parse_sizes(optarg, &one.size, 1) != 1)
				return usage(2);
			break;
		case 'l':
			one.latency = true;
			break;
		case 'r':
			one.run = strtoul(optarg, NULL, 10);
			break;
		case 'i':
		case 'f':
			id = strtoul(optarg, NULL, 10);
			break;
		case 'E':
			expect_shim = true;
			break;
		case 'V':
			if (parse_list(optarg, variant_names, NR_VARIANTS, &variants))
				return usage(2);
			break;
		case 'W':
			if (parse_list(optarg, variant_names, NR_VARIANTS, &lat_variants))
				return usage(2);
			break;
		case 'C':
			if (parse_list(optarg, cond_names, NR_CONDS, &conds))
				return usage(2);
			break;
		case 'S':
			if ((nsizes = parse_sizes(optarg, sizes, 16)) < 0)
				return usage(2);
			break;
		case 'Z':
			if ((nlat_sizes = parse_sizes(optarg, lat_sizes, 16)) < 0)
				return usage(2);
			break;
		case 'n':
			runs = atoi(optarg);
			if (runs < 1)
				return usage(2);
			break;
		case 't':
			cfg.seconds = strtod(optarg, NULL);
			if (!(cfg.seconds > 0 && cfg.seconds <= 60))
				return usage(2);
			break;
		case 'p': {
			unsigned long v = strtoul(optarg, NULL, 0);

			if (v < 4096 || v > (1U << 28) || (v & (v - 1))) {
				fprintf(stderr, "ringbench: --pipe-size must be a power of two >= 4096\n");
				return 2;
			}
			cfg.pipe_size = v;
			break;
		}
		case 'R':
			cfg.ringpipe = optarg;
			break;
		case 'h':
			return usage(0);
		default:
			return usage(2);
		}
	}
	if (optind != argc)
		return usage(2);
	len = readlink("/proc/self/exe", cfg.self, sizeof(cfg.self) - 1);
	if (len < 0) {
		perror("ringbench: /proc/self/exe");
		return 1;
	}
	cfg.self[len] = 0;
	/* A consumer that has gone must fail the producer loudly, not kill it. */
	signal(SIGPIPE, SIG_IGN);

	if (!strcmp(cmd, "probe")) {
		print_info();
		return 0;
	}
	if (!strcmp(cmd, "one")) {
		const char *why;

		if (one.v == NR_VARIANTS || one.cond == NR_CONDS || !one.size)
			return usage(2);
		if (!one.label)
			one.label = variant_names[one.v];
		one.id = id;
		if (expect_shim && !strstr(getenv("LD_PRELOAD") ?: "", "ringpipe-shim")) {
			fprintf(stderr, "ringbench: --expect-shim without the shim preloaded\n");
			return 1;
		}
		if (one.cond != C_UNPINNED && sysconf(_SC_NPROCESSORS_ONLN) < 2) {
			fprintf(stderr, "ringbench: %s needs 2 CPUs\n", cond_names[one.cond]);
			return 1;
		}
		why = unavailable(one.v, one.latency);
		if (why) {
			printf("skip\t%s\t%s\n", one.label, why);
			return 0;
		}
		return one.v == V_SHIM ? measure_shim(&one) : measure(&one) ? 1 : 0;
	}
	if (strcmp(cmd, "suite"))
		return usage(2);

	print_info();
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 && (conds & ~(1U << C_UNPINNED))) {
		printf("skip\tpinned,busy\tonly one CPU\n");
		conds &= 1U << C_UNPINNED;
	}
	for (int lat = 0; lat < 2; lat++) {
		unsigned int *vs = lat ? &lat_variants : &variants;

		for (int v = 0; v < NR_VARIANTS; v++) {
			const char *why = (*vs >> v & 1) ? unavailable(v, lat) : NULL;

			if (why) {
				printf("skip\t%s%s\t%s\n", variant_names[v],
				       lat ? " (latency)" : "", why);
				*vs &= ~(1U << v);
			}
		}
	}
	fflush(stdout);
	/*
	 * Round after round of every point, so that a drift of the machine's
	 * speed spreads over all variants instead of biasing one.
	 */
	for (int run = 1; run <= runs; run++) {
		double t = now();

		for (int c = 0; c < NR_CONDS; c++) {
			if (!(conds >> c & 1))
				continue;
			for (int lat = 0; lat < 2; lat++) {
				unsigned int vs = lat ? lat_variants : variants;
				int n = lat ? nlat_sizes : nsizes;

				for (int s = 0; s < n; s++)
					for (int v = 0; v < NR_VARIANTS; v++) {
						struct measurement m = {
							.v = v, .label = variant_names[v],
							.cond = c, .latency = lat,
							.size = lat ? lat_sizes[s] : sizes[s],
							.run = run, .id = id++,
						};

						if (!(vs >> v & 1))
							continue;
						if (v == V_SHIM ? measure_shim(&m) : measure(&m))
							failures++;
					}
			}
		}
		fprintf(stderr, "ringbench: round %d of %d done in %.0f s\n", run, runs,
			now() - t);
	}
	printf("info\tfailures\t%d\n", failures);
	return failures ? 1 : 0;
}
