// SPDX-License-Identifier: GPL-2.0
/*
 * Hostile shared memory on pipes and FIFOs in ring mode.  A process maps
 * both sides of a ring and stores random and adversarial values into
 * every word it may write (head and tail far apart, head behind tail,
 * lock words held for ever, or set to a dead, a foreign or an impossible
 * thread id, or to RINGBUFFER_LOCK_KERNEL) while legacy readers and
 * writers and ring peers keep working on the same pipe and other pipes
 * carry checked streams.
 *
 * The kernel must never return more bytes than asked nor write past the
 * buffer it was given, must answer only with the documented errors, must
 * never sleep uninterruptibly, and must leave other pipes alone; a legacy
 * task blocked on such a pipe can always be interrupted and killed, and
 * once the values are sane again the pipe works.
 */
#include <poll.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "reliability.h"
#include "kselftest_harness.h"

#define RING_SIZE	65536
#define SCRIBBLES	2000		/* hostile stores per run */
#define PEER_OPS	200		/* operations of each legacy or ring peer */
#define OP_CUT_MS	20		/* a blocked legacy call is interrupted after */
#define CONTROL_PIPES	3
#define CONTROL_BYTES	(128 * 1024)
#define HOSTILE_SEED	0x40571e5ULL

struct hostile_pipe {
	int rd, wr;
	struct rb_view r, w;	/* the attacker's mappings of both sides */
	char fifo[64];
};

static int open_pair(struct hostile_pipe *p, bool fifo)
{
	p->fifo[0] = 0;
	if (!fifo) {
		int fds[2];

		if (pipe(fds))
			return -1;
		p->rd = fds[0];
		p->wr = fds[1];
	} else {
		snprintf(p->fifo, sizeof(p->fifo), "/tmp/rb-hostile-%d", getpid());
		unlink(p->fifo);
		if (mkfifo(p->fifo, 0600))
			return -1;
		p->rd = open(p->fifo, O_RDONLY | O_NONBLOCK);
		p->wr = open(p->fifo, O_WRONLY);
		if (p->rd < 0 || p->wr < 0 || fcntl(p->rd, F_SETFL, 0))
			return -1;
	}
	if (rb_view_map(&p->r, p->rd, RINGBUFFER_READ, RING_SIZE) ||
	    rb_view_map(&p->w, p->wr, RINGBUFFER_WRITE, RING_SIZE))
		return -1;
	return 0;
}

static void close_pair(struct hostile_pipe *p)
{
	rb_view_unmap(&p->r);
	rb_view_unmap(&p->w);
	close(p->rd);
	close(p->wr);
	if (p->fifo[0])
		unlink(p->fifo);
}

/* Back to a sane state: empty ring, both locks free, sleepers woken. */
static void make_sane(struct hostile_pipe *p)
{
	atomic_store(p->w.producer_lock, 0);
	atomic_store(p->r.consumer_lock, 0);
	atomic_store(p->r.tail, atomic_load(p->w.head));
	sys_ringbuffer_wakeup(p->wr, RINGBUFFER_WRITE, RINGBUFFER_WAKE_LOCK);
	sys_ringbuffer_wakeup(p->rd, RINGBUFFER_READ, RINGBUFFER_WAKE_LOCK);
	sys_ringbuffer_wakeup(p->wr, RINGBUFFER_WRITE, 0);
	sys_ringbuffer_wakeup(p->rd, RINGBUFFER_READ, 0);
}

/* A reopened end: an open file of its own, here nonblocking. */
static int reopen(int fd, int flags)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return open(path, flags);
}

/* A thread id that is no more: a child's, after it was reaped. */
static uint32_t dead_tid(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return (uint32_t)pid;
}

#define PEER_BAD_RET	20	/* more bytes than asked */
#define PEER_BAD_ERRNO	21
#define PEER_OVERRUN	22	/* bytes past the buffer changed */
#define PEER_EOF	23
#define PEER_SETUP	24

/*
 * A legacy writer: write, writev, a nonblocking write through a second
 * open file, and splice from /dev/zero, each cut short by SIGALRM if it
 * blocks.  The ring's errors are EIO (garbage positions) and, for the
 * cut calls, EINTR; nonblocking ones EAGAIN.
 */
static int legacy_writer(int wr, uint64_t seed)
{
	static char buf[8192];
	struct rng rng = { seed };
	int nb = reopen(wr, O_WRONLY | O_NONBLOCK), zero = open("/dev/zero", O_RDONLY);
	unsigned long ok = 0, eio = 0, eintr = 0, eagain = 0;

	if (nb < 0 || zero < 0)
		return PEER_SETUP;
	memset(buf, 'w', sizeof(buf));
	for (int i = 0; i < PEER_OPS; i++) {
		size_t n = 1 + rng_below(&rng, sizeof(buf));
		struct iovec iov[2] = { { buf, n / 2 }, { buf + n / 2, n - n / 2 } };
		ssize_t ret;

		interrupt_after_ms(OP_CUT_MS);
		switch (rng_below(&rng, 4)) {
		case 0: ret = write(wr, buf, n); break;
		case 1: ret = writev(wr, iov, 2); break;
		case 2: ret = write(nb, buf, n); break;
		default: ret = splice(zero, NULL, wr, NULL, n, 0); break;
		}
		interrupt_cancel();
		if (ret > (ssize_t)n)
			return PEER_BAD_RET;
		if (ret >= 0)
			ok++;
		else if (errno == EIO)
			eio++;
		else if (errno == EINTR)
			eintr++;
		else if (errno == EAGAIN)
			eagain++;
		else
			return PEER_BAD_ERRNO;
	}
	printf("# legacy writer: %lu ok, %lu EIO, %lu EINTR, %lu EAGAIN\n",
	       ok, eio, eintr, eagain);
	return 0;
}

/* A legacy reader: read, readv, nonblocking read, FIONREAD, splice out. */
static int legacy_reader(int rd, uint64_t seed)
{
	static char buf[8192 + 64];
	struct rng rng = { seed };
	int nb = reopen(rd, O_RDONLY | O_NONBLOCK), null = open("/dev/null", O_WRONLY);
	unsigned long ok = 0, eio = 0, eintr = 0, eagain = 0;

	if (nb < 0 || null < 0)
		return PEER_SETUP;
	for (int i = 0; i < PEER_OPS; i++) {
		size_t n = 1 + rng_below(&rng, 8192);
		struct iovec iov[2] = { { buf, n / 3 }, { buf + n / 3, n - n / 3 } };
		ssize_t ret;
		int avail = -1;

		/* A canary after the n bytes asked for. */
		memset(buf + n, 0xa5, 64);
		interrupt_after_ms(OP_CUT_MS);
		switch (rng_below(&rng, 5)) {
		case 0: ret = read(rd, buf, n); break;
		case 1: ret = readv(rd, iov, 2); break;
		case 2: ret = read(nb, buf, n); break;
		case 3:
			ret = ioctl(rd, FIONREAD, &avail);
			if (!ret && (avail < 0 || avail > RING_SIZE))
				return PEER_BAD_RET;
			if (!ret)
				ret = 1;	/* not a read: no end of file */
			break;
		default: ret = splice(rd, NULL, null, NULL, n, 0); break;
		}
		interrupt_cancel();
		if (ret > (ssize_t)n)
			return PEER_BAD_RET;
		for (int k = 0; k < 64; k++)
			if ((unsigned char)buf[n + k] != 0xa5)
				return PEER_OVERRUN;
		if (ret == 0 && n)
			return PEER_EOF;	/* the attacker holds a write end */
		if (ret >= 0)
			ok++;
		else if (errno == EIO)
			eio++;
		else if (errno == EINTR)
			eintr++;
		else if (errno == EAGAIN)
			eagain++;
		else
			return PEER_BAD_ERRNO;
	}
	printf("# legacy reader: %lu ok, %lu EIO, %lu EINTR, %lu EAGAIN\n",
	       ok, eio, eintr, eagain);
	return 0;
}

/*
 * A ring peer on side @rw: it never waits, takes the side lock only if it
 * is free, checks the positions and copies at most what they allow, with
 * every index masked.  It must simply survive.
 */
static int ring_peer(int fd, unsigned int rw, uint64_t seed)
{
	struct rng rng = { seed };
	struct timespec zero = { 0, 0 };
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	unsigned long moved = 0, refused = 0;
	struct rb_view v = { 0 };
	char buf[256];

	if (rb_view_map(&v, fd, rw, RING_SIZE))
		return PEER_SETUP;
	for (int i = 0; i < PEER_OPS; i++) {
		uint32_t free_word = 0, head, tail, used, n;
		long w;

		w = sys_ringbuffer_wait(fd, rw, 1 + rng_below(&rng, v.size), &zero, 0);
		if (w > (long)v.size)
			return PEER_BAD_RET;
		if (w < 0 && errno != ETIMEDOUT && errno != EIO && errno != EPIPE)
			return PEER_BAD_ERRNO;
		/* Acquire: pairs with the release of whoever held it last. */
		if (!atomic_compare_exchange_strong_explicit(rb_lock_word(&v), &free_word,
				tid, memory_order_acquire, memory_order_relaxed)) {
			refused++;
			continue;
		}
		/* Acquire: the peer's data or space is ours once its position is. */
		head = atomic_load_explicit(v.head, memory_order_acquire);
		tail = atomic_load_explicit(v.tail, memory_order_acquire);
		used = head - tail;
		n = 1 + rng_below(&rng, sizeof(buf));
		if (used <= v.size) {
			if (rw == RINGBUFFER_WRITE && v.size - used >= n) {
				memset(v.data + (head & v.mask), 'r', n);
				/* Release: the bytes are there before head says so. */
				atomic_store_explicit(v.head, head + n, memory_order_release);
				moved += n;
			} else if (rw == RINGBUFFER_READ && used) {
				n = n < used ? n : used;
				memcpy(buf, v.data + (tail & v.mask), n);
				/* Release: done reading before the space goes back. */
				atomic_store_explicit(v.tail, tail + n, memory_order_release);
				moved += n;
			}
		}
		/* The attacker may have stolen the word meanwhile: free only ours. */
		atomic_compare_exchange_strong_explicit(rb_lock_word(&v), &tid, 0,
				memory_order_release, memory_order_relaxed);
		tid = (uint32_t)syscall(SYS_gettid);
		/* Full fence between the stores and the loads of the sleeper counts. */
		atomic_thread_fence(memory_order_seq_cst);
		sys_ringbuffer_wakeup(fd, rw, 0);
	}
	printf("# ring %s peer: %lu bytes moved, lock busy %lu times\n",
	       rw == RINGBUFFER_READ ? "reader" : "writer", moved, refused);
	rb_view_unmap(&v);
	return 0;
}

/* A stream of the test sequence through a clean pipe, checked at the end. */
static pid_t control_pipe(int index)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fds[2];
		uint8_t buf[4096];
		uint64_t pos = 0;
		pid_t writer;
		struct rb_view rv = { 0 };
		bool ring_reader = index & 1;

		if (pipe(fds) || convert_pipe(fds[1], RINGBUFFER_WRITE, RING_SIZE))
			_exit(PEER_SETUP);
		writer = fork();
		if (writer == 0) {
			uint64_t wpos = 0;

			close(fds[0]);
			while (wpos < CONTROL_BYTES) {
				size_t n = 1 + (wpos * 7919) % sizeof(buf);

				n = n < CONTROL_BYTES - wpos ? n : CONTROL_BYTES - wpos;
				rbtest_fill(buf, wpos, n);
				if (write_full(fds[1], buf, n))
					_exit(1);
				wpos += n;
			}
			_exit(0);
		}
		close(fds[1]);
		if (ring_reader && rb_view_map(&rv, fds[0], RINGBUFFER_READ, RING_SIZE))
			_exit(PEER_SETUP);
		for (;;) {
			long n = ring_reader ? rb_pipe_read(&rv, buf, sizeof(buf))
					     : read(fds[0], buf, sizeof(buf));

			if (n < 0 && !ring_reader && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			if (rbtest_check(buf, pos, n) >= 0)
				_exit(2);
			pos += n;
		}
		if (pos != CONTROL_BYTES || child_result(writer, 200))
			_exit(3);
		_exit(0);
	}
	return pid;
}

/* One hostile store into a word or byte the attacker may write. */
static void scribble(struct hostile_pipe *p, struct rng *rng, uint32_t foreign,
		     uint32_t dead)
{
	uint32_t head = atomic_load(p->w.head), tail = atomic_load(p->r.tail);
	uint32_t size = p->w.size, v;
	const uint32_t values[] = {
		tail + size + 1, tail - 1, tail + size, tail + (1U << 31),
		head - size - 1, head + 1, head, 0, UINT32_MAX,
		(uint32_t)rng_next(rng),
	};
	const uint32_t locks[] = {
		foreign, dead, (uint32_t)syscall(SYS_gettid),
		RINGBUFFER_LOCK_KERNEL, 4194304, UINT32_MAX, 0, 1,
	};

	switch (rng_below(rng, 8)) {
	case 0:
		v = values[rng_below(rng, sizeof(values) / sizeof(values[0]))];
		atomic_store(p->w.head, v);
		break;
	case 1:
		v = values[rng_below(rng, sizeof(values) / sizeof(values[0]))];
		atomic_store(p->r.tail, v);
		break;
	case 2:
		atomic_store(p->w.producer_lock,
			     locks[rng_below(rng, sizeof(locks) / sizeof(locks[0]))]);
		break;
	case 3:
		atomic_store(p->r.consumer_lock,
			     locks[rng_below(rng, sizeof(locks) / sizeof(locks[0]))]);
		break;
	case 4:
		p->w.data[rng_below(rng, 2 * size)] = (uint8_t)rng_next(rng);
		break;
	case 5:
		sys_ringbuffer_wakeup(rng_below(rng, 2) ? p->wr : p->rd,
				      rng_below(rng, 2), rng_below(rng, 2));
		break;
	default:
		/* Sometimes sane for a while, so that the peers get through. */
		if (rng_chance(rng, 30))
			make_sane(p);
		break;
	}
}

FIXTURE(hostile) {
	struct hostile_pipe p;
	pid_t foreign;		/* a live process that maps the ring, idle */
	uint32_t dead;
};

FIXTURE_VARIANT(hostile) {
	bool fifo;
};

FIXTURE_VARIANT_ADD(hostile, pipe) { .fifo = false };
FIXTURE_VARIANT_ADD(hostile, fifo) { .fifo = true };

FIXTURE_SETUP(hostile)
{
	int ready[2];
	char c;

	signal(SIGPIPE, SIG_IGN);
	ASSERT_EQ(0, open_pair(&self->p, variant->fifo)) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, pipe(ready));
	self->foreign = fork();
	ASSERT_LE(0, self->foreign);
	if (self->foreign == 0) {
		close(ready[0]);
		(void)!write(ready[1], "x", 1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	ASSERT_EQ(1, read(ready[0], &c, 1));
	close(ready[0]);
	self->dead = dead_tid();
}

FIXTURE_TEARDOWN(hostile)
{
	kill(self->foreign, SIGKILL);
	waitpid(self->foreign, NULL, 0);
	close_pair(&self->p);
}

static pid_t spawn(int (*fn)(int, uint64_t), int fd, uint64_t seed)
{
	pid_t pid = fork();

	if (pid == 0) {
		int ret = fn(fd, seed);

		fflush(stdout);
		_exit(ret);
	}
	return pid;
}

static pid_t spawn_ring_peer(int fd, unsigned int rw, uint64_t seed)
{
	pid_t pid = fork();

	if (pid == 0) {
		int ret = ring_peer(fd, rw, seed);

		fflush(stdout);
		_exit(ret);
	}
	return pid;
}

static bool all_exited(pid_t *pids, int *res, int n)
{
	bool all = true;

	for (int i = 0; i < n; i++) {
		int st;

		if (res[i] != -1)
			continue;
		if (waitpid(pids[i], &st, WNOHANG) == pids[i])
			res[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
		else
			all = false;
	}
	return all;
}

/*
 * The attacker scribbles while a legacy writer, a legacy reader and a
 * ring peer on each side work on the pipe, and clean pipes carry their
 * streams beside it.  One legacy task per side: see RELIABILITY.md for
 * why two that contend for the kernel's side lock are not run here.
 */
TEST_F_TIMEOUT(hostile, scribble_while_peers_work, 200)
{
	uint64_t seed = rel_seed(HOSTILE_SEED + variant->fifo);
	struct rng rng = { seed };
	pid_t peers[4], control[CONTROL_PIPES];
	int res[4] = { -1, -1, -1, -1 };
	unsigned long scribbles = 0;
	char buf[256];

	for (int i = 0; i < CONTROL_PIPES; i++)
		ASSERT_LT(0, control[i] = control_pipe(i));
	fflush(stdout);
	peers[0] = spawn(legacy_writer, self->p.wr, seed + 1);
	peers[1] = spawn(legacy_reader, self->p.rd, seed + 2);
	peers[2] = spawn_ring_peer(self->p.wr, RINGBUFFER_WRITE, seed + 3);
	peers[3] = spawn_ring_peer(self->p.rd, RINGBUFFER_READ, seed + 4);
	for (int i = 0; i < 4; i++)
		ASSERT_LT(0, peers[i]);

	/* Scribble until every peer is done (each is bounded), at least SCRIBBLES times. */
	while (!all_exited(peers, res, 4) || scribbles < rel_scale(SCRIBBLES)) {
		scribble(&self->p, &rng, (uint32_t)self->foreign, self->dead);
		scribbles++;
		if (scribbles % 64 == 0)
			sched_yield();
	}
	make_sane(&self->p);
	for (int i = 0; i < 4; i++) {
		EXPECT_EQ(0, res[i]) TH_LOG("peer %d exited with %d", i, res[i]);
	}
	for (int i = 0; i < CONTROL_PIPES; i++) {
		EXPECT_EQ(0, child_result(control[i], 150)) TH_LOG("control pipe %d", i);
	}
	printf("# seed %#llx: %lu hostile stores and wake-ups; %d clean pipes "
	       "carried %d bytes each, intact\n", (unsigned long long)seed,
	       scribbles, CONTROL_PIPES, CONTROL_BYTES);

	/* Sane again: the pipe works, and nobody is left counted asleep. */
	ASSERT_EQ(0, fcntl(self->p.rd, F_SETFL, O_NONBLOCK));
	while (read(self->p.rd, buf, sizeof(buf)) > 0)
		;
	EXPECT_EQ(5, write(self->p.wr, "sane!", 5));
	EXPECT_EQ(5, read(self->p.rd, buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, "sane!", 5));
	EXPECT_EQ(0, atomic_load(self->p.r.read_waiters));
	EXPECT_EQ(0, atomic_load(self->p.r.write_waiters));
	EXPECT_EQ(0, atomic_load(self->p.r.producer_lock_waiters));
	EXPECT_EQ(0, atomic_load(self->p.r.consumer_lock_waiters));
}

/*
 * Positions that say more than the ring holds: every legacy call and wait
 * fails with EIO, FIONREAD says 0, poll says ready (so that the caller
 * finds out); a sleeper woken by the attacker gets EIO too.  Sane
 * values make the pipe work again.
 */
TEST_F(hostile, positions_out_of_range)
{
	uint32_t size = self->p.w.size;
	char buf[64] = "", tmpl[] = "/tmp/rb-hostile-XXXXXX";
	int file = mkstemp(tmpl), other[2], avail = -1;
	struct pollfd pfd[2] = { { self->p.rd, POLLIN, 0 }, { self->p.wr, POLLOUT, 0 } };
	const int64_t gaps[] = { size + 1, -1, (int64_t)1 << 31, size + 4096 };

	ASSERT_LE(0, file);
	unlink(tmpl);
	ASSERT_EQ(0, pipe(other));
	ASSERT_EQ(10, write(file, "0123456789", 10));
	for (size_t i = 0; i < sizeof(gaps) / sizeof(gaps[0]); i++) {
		uint32_t tail = atomic_load(self->p.r.tail);
		loff_t off = 0;

		atomic_store(self->p.w.head, tail + (uint32_t)gaps[i]);
		EXPECT_EQ(EIO, FAILS_WITH(read(self->p.rd, buf, sizeof(buf))));
		EXPECT_EQ(EIO, FAILS_WITH(write(self->p.wr, buf, 1)));
		EXPECT_EQ(EIO, FAILS_WITH(sys_ringbuffer_wait(self->p.rd,
					RINGBUFFER_READ, 1, NULL, 0)));
		EXPECT_EQ(EIO, FAILS_WITH(sys_ringbuffer_wait(self->p.wr,
					RINGBUFFER_WRITE, 1, NULL, 0)));
		EXPECT_EQ(EIO, FAILS_WITH(splice(self->p.rd, NULL, other[1], NULL,
						 10, 0)));
		EXPECT_EQ(EIO, FAILS_WITH(splice(file, &off, self->p.wr, NULL, 10, 0)));
		EXPECT_EQ(EIO, FAILS_WITH(tee(self->p.rd, other[1], 10, 0)));
		EXPECT_EQ(0, ioctl(self->p.rd, FIONREAD, &avail));
		EXPECT_EQ(0, avail);
		EXPECT_EQ(2, poll(pfd, 2, 0));
		EXPECT_TRUE(pfd[0].revents & POLLIN);
		EXPECT_TRUE(pfd[1].revents & POLLOUT);
		atomic_store(self->p.w.head, tail);
	}
	/* Exactly full: a read takes what it asked for, no more. */
	atomic_store(self->p.w.head, atomic_load(self->p.r.tail) + size);
	memset(buf, 0x5c, sizeof(buf));
	EXPECT_EQ(10, read(self->p.rd, buf, 10));
	for (size_t k = 10; k < sizeof(buf); k++)
		ASSERT_EQ(0x5c, (unsigned char)buf[k]);
	ASSERT_EQ(0, fcntl(self->p.wr, F_SETFL, O_NONBLOCK));
	EXPECT_EQ(EAGAIN, FAILS_WITH(write(self->p.wr, self->p.w.data, 4096)));
	ASSERT_EQ(0, fcntl(self->p.wr, F_SETFL, 0));
	make_sane(&self->p);
	EXPECT_EQ(3, write(self->p.wr, "abc", 3));
	EXPECT_EQ(3, read(self->p.rd, buf, sizeof(buf)));
	close(file);
	close(other[0]);
	close(other[1]);
}

/* A legacy call asleep on the pipe when the attacker breaks the positions. */
static int blocked_call_gets_eio(struct __test_metadata *_metadata,
				 struct hostile_pipe *p, bool reader)
{
	pid_t pid;
	int res;

	if (!reader) {
		/* Fill it: the writer sleeps for space. */
		atomic_store(p->w.head, atomic_load(p->r.tail) + p->w.size);
	}
	pid = fork();
	if (pid == 0) {
		char c = 'x';
		ssize_t n = reader ? read(p->rd, &c, 1) : write(p->wr, &c, 1);

		_exit(n < 0 && errno == EIO ? 0 : 1);
	}
	EXPECT_TRUE(task_asleep_in(pid, NULL, reader ? 0 : 1, 30));
	/* Asleep interruptibly (it may be between two looks at the holder). */
	EXPECT_NE('D', task_state(pid));
	/* Head behind tail, then the wake-up the attacker owes. */
	atomic_store(p->w.head, atomic_load(p->r.tail) - 1);
	sys_ringbuffer_wakeup(reader ? p->wr : p->rd, reader ? RINGBUFFER_WRITE :
			      RINGBUFFER_READ, 0);
	res = child_result(pid, 30);
	make_sane(p);
	return res;
}

TEST_F(hostile, sleepers_woken_into_eio)
{
	EXPECT_EQ(0, blocked_call_gets_eio(_metadata, &self->p, true));
	EXPECT_EQ(0, blocked_call_gets_eio(_metadata, &self->p, false));
}

/*
 * A lock word that names a live task that maps the ring (an idle process
 * that fork gave the mappings, or the attacker itself) is not freed by
 * the kernel before the stall bound: a legacy call waits for it, but
 * interruptibly, so a signal ends it with EINTR and SIGKILL kills it.
 */
static void on_usr1(int sig)
{
	(void)sig;
}

static pid_t legacy_call(struct hostile_pipe *p, bool reader, bool handler)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct sigaction sa = { .sa_handler = on_usr1 };
		char c = 'x';
		ssize_t n;

		if (handler)
			sigaction(SIGUSR1, &sa, NULL);
		n = reader ? read(p->rd, &c, 1) : write(p->wr, &c, 1);
		_exit(n < 0 && errno == EINTR ? 0 : 1);
	}
	return pid;
}

static void held_lock_checks(struct __test_metadata *_metadata,
			     struct hostile_pipe *p, uint32_t holder)
{
	for (int reader = 0; reader < 2; reader++) {
		_Atomic uint32_t *lock = reader ? p->r.consumer_lock : p->w.producer_lock;
		pid_t pid;
		int st;

		if (reader)
			EXPECT_EQ(1, write(p->wr, "d", 1));
		atomic_store(lock, holder);

		pid = legacy_call(p, reader, true);
		ASSERT_TRUE(task_asleep_in(pid, "rb_wait_lock", reader ? 0 : 1, 30))
			TH_LOG("%s never slept for the lock", reader ? "read" : "write");
		/* Asleep interruptibly (it may be between two looks at the holder). */
		EXPECT_NE('D', task_state(pid));
		kill(pid, SIGUSR1);
		EXPECT_EQ(0, child_result(pid, 30));

		pid = legacy_call(p, reader, false);
		ASSERT_TRUE(task_asleep_in(pid, "rb_wait_lock", reader ? 0 : 1, 30));
		kill(pid, SIGKILL);
		ASSERT_EQ(0, wait_child(pid, 30, &st)) TH_LOG("SIGKILL did not end it");
		EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		/* Nobody is left counted as waiting for the lock. */
		EXPECT_EQ(0, atomic_load(reader ? p->r.consumer_lock_waiters :
					 p->r.producer_lock_waiters));
		make_sane(p);
	}
}

TEST_F_TIMEOUT(hostile, lock_of_a_live_foreign_task, 120)
{
	held_lock_checks(_metadata, &self->p, (uint32_t)self->foreign);
}

TEST_F_TIMEOUT(hostile, lock_of_the_attacker_itself, 120)
{
	held_lock_checks(_metadata, &self->p, (uint32_t)syscall(SYS_gettid));
}

/*
 * A thread that holds a side lock in its mapping and then calls read(2),
 * write(2) or RINGBUFFER_WAIT_LOCK on that side would wait for itself:
 * the kernel says EDEADLK at once and leaves the word alone.
 */
TEST_F_TIMEOUT(hostile, lock_holder_gets_edeadlk, 60)
{
	uint32_t me = (uint32_t)syscall(SYS_gettid);
	char buf[4];

	EXPECT_EQ(1, write(self->p.wr, "d", 1));
	interrupt_after_ms(20000);

	atomic_store(self->p.w.producer_lock, me);
	EXPECT_EQ(EDEADLK, FAILS_WITH(write(self->p.wr, "x", 1)));
	EXPECT_EQ(EDEADLK, FAILS_WITH(sys_ringbuffer_wait(self->p.wr, RINGBUFFER_WRITE, 0,
							  NULL, RINGBUFFER_WAIT_LOCK)));
	EXPECT_EQ(me, atomic_load(self->p.w.producer_lock));
	atomic_store(self->p.w.producer_lock, 0);

	atomic_store(self->p.r.consumer_lock, me);
	EXPECT_EQ(EDEADLK, FAILS_WITH(read(self->p.rd, buf, sizeof(buf))));
	EXPECT_EQ(EDEADLK, FAILS_WITH(sys_ringbuffer_wait(self->p.rd, RINGBUFFER_READ, 0,
							  NULL, RINGBUFFER_WAIT_LOCK)));
	EXPECT_EQ(me, atomic_load(self->p.r.consumer_lock));
	atomic_store(self->p.r.consumer_lock, 0);

	interrupt_cancel();
	/* Nothing was lost or added meanwhile. */
	EXPECT_EQ(1, write(self->p.wr, "y", 1));
	EXPECT_EQ(2, read(self->p.rd, buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, "dy", 2));
}

/*
 * Legacy callers that find a lock word held from user space wait for it
 * holding nothing: each blocking writer sleeps for the word itself (wchan
 * rb_wait_lock), never queued behind another for the kernel's side
 * mutex, so a signal ends only its own wait; a nonblocking write, read or
 * splice fails with EAGAIN at once, even with blocking writers asleep
 * for the same word.  When the word is free the writes go in.
 */
static pid_t queued_writer(struct hostile_pipe *p, char c, bool handler)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct sigaction sa = { .sa_handler = on_usr1 };
		ssize_t n;

		/* Not left behind, holding the pipe, if the test fails. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (handler)
			sigaction(SIGUSR1, &sa, NULL);
		n = write(p->wr, &c, 1);
		if (handler)
			_exit(n < 0 && errno == EINTR ? 0 : 1);
		_exit(n == 1 ? 0 : 1);
	}
	return pid;
}

TEST_F_TIMEOUT(hostile, lock_waiters_hold_nothing, 120)
{
	int nb_wr = reopen(self->p.wr, O_WRONLY | O_NONBLOCK);
	int nb_rd = reopen(self->p.rd, O_RDONLY | O_NONBLOCK);
	int zero = open("/dev/zero", O_RDONLY);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
	int ep = epoll_create1(0);
	pid_t first, interrupted, later;
	char buf[4];

	ASSERT_LE(0, nb_wr);
	ASSERT_LE(0, nb_rd);
	ASSERT_LE(0, zero);
	atomic_store(self->p.w.producer_lock, (uint32_t)self->foreign);
	first = queued_writer(&self->p, 'a', false);
	ASSERT_LE(0, first);
	ASSERT_TRUE(task_asleep_in(first, "rb_wait_lock", 1, 30));

	interrupted = queued_writer(&self->p, 'x', true);
	ASSERT_LE(0, interrupted);
	ASSERT_TRUE(task_asleep_in(interrupted, "rb_wait_lock", 1, 30))
		TH_LOG("the second writer queued behind the first");
	kill(interrupted, SIGUSR1);
	EXPECT_EQ(0, child_result(interrupted, 30)) TH_LOG("no EINTR");

	later = queued_writer(&self->p, 'b', false);
	ASSERT_LE(0, later);
	ASSERT_TRUE(task_asleep_in(later, "rb_wait_lock", 1, 30));
	EXPECT_NE('D', task_state(later));

	/* A blocked call here would be cut by SIGALRM, with EINTR. */
	interrupt_after_ms(20000);
	EXPECT_EQ(EAGAIN, FAILS_WITH(write(nb_wr, "n", 1)));
	EXPECT_EQ(EAGAIN, FAILS_WITH(splice(zero, NULL, self->p.wr, NULL, 1,
					    SPLICE_F_NONBLOCK)));
	interrupt_cancel();

	/* The holder lets go, as a user-space unlock does. */
	atomic_store(self->p.w.producer_lock, 0);
	ASSERT_EQ(0, sys_ringbuffer_wakeup(self->p.wr, RINGBUFFER_WRITE, RINGBUFFER_WAKE_LOCK));
	EXPECT_EQ(0, child_result(first, 30));
	EXPECT_EQ(0, child_result(later, 30));

	/*
	 * Data queued but the consumer lock held: a nonblocking read does
	 * not wait, and an edge-triggered poller that saw its EAGAIN gets
	 * an event when the holder lets go.
	 */
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, nb_rd, &ev));
	ASSERT_EQ(1, epoll_wait(ep, &ev, 1, 0));	/* the data queued */
	atomic_store(self->p.r.consumer_lock, (uint32_t)self->foreign);
	interrupt_after_ms(20000);
	EXPECT_EQ(EAGAIN, FAILS_WITH(read(nb_rd, buf, sizeof(buf))))
		TH_LOG("a nonblocking read waited for the consumer lock");
	interrupt_cancel();
	EXPECT_EQ(0, epoll_wait(ep, &ev, 1, 0));
	/* The word tells the holder to make the wake-up call. */
	EXPECT_NE(0, atomic_load(self->p.r.consumer_lock_waiters));
	atomic_store(self->p.r.consumer_lock, 0);
	ASSERT_EQ(0, sys_ringbuffer_wakeup(self->p.rd, RINGBUFFER_READ, RINGBUFFER_WAKE_LOCK));
	EXPECT_EQ(1, epoll_wait(ep, &ev, 1, 30000)) TH_LOG("no event after EAGAIN");
	EXPECT_EQ(0, atomic_load(self->p.r.consumer_lock_waiters));
	EXPECT_EQ(2, read(nb_rd, buf, sizeof(buf)));
	/* Both went in, one after the other, in either order. */
	EXPECT_TRUE((buf[0] == 'a' && buf[1] == 'b') || (buf[0] == 'b' && buf[1] == 'a'));
	EXPECT_EQ(0, atomic_load(self->p.w.producer_lock));
	EXPECT_EQ(0, atomic_load(self->p.r.producer_lock_waiters));
	close(nb_wr);
	close(nb_rd);
	close(zero);
	close(ep);
}

/* A write(2) of @c in a child: 0 if it went in, else its errno. */
static pid_t child_write(int fd, char c)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(write(fd, &c, 1) == 1 ? 0 : errno);
	}
	return pid;
}

/*
 * A kept side (RINGBUFFER_KEEP_LOCK): granted only to the thread that
 * holds the word, and not while anybody waits for it; the keeper's own
 * write(2) runs under its word and leaves it kept; another writer takes
 * the side back, at once while the keeper is out of a copy, and once the
 * keeper left its copy (busy word) and made the RINGBUFFER_WAKE_LOCK call
 * otherwise; meanwhile a nonblocking write fails with EAGAIN.
 */
TEST_F_TIMEOUT(hostile, kept_side_is_taken_back, 120)
{
	uint32_t me = (uint32_t)syscall(SYS_gettid);
	_Atomic uint32_t *lock = self->p.w.producer_lock;
	_Atomic uint32_t *keeper = self->p.w.producer_keeper;
	_Atomic uint32_t *busy = self->p.w.producer_busy;
	_Atomic uint32_t *waiters = self->p.w.producer_lock_waiters;
	int nb_wr = reopen(self->p.wr, O_WRONLY | O_NONBLOCK);
	char buf[8];
	pid_t pid;

	ASSERT_LE(0, nb_wr);
	ASSERT_NE(NULL, keeper) TH_LOG("no kept locks in this kernel");

	EXPECT_EQ(EPERM, FAILS_WITH(sys_ringbuffer_wakeup(self->p.wr, RINGBUFFER_WRITE,
							  RINGBUFFER_KEEP_LOCK)));
	atomic_store(lock, (uint32_t)self->foreign);
	EXPECT_EQ(EPERM, FAILS_WITH(sys_ringbuffer_wakeup(self->p.wr, RINGBUFFER_WRITE,
							  RINGBUFFER_KEEP_LOCK)));
	EXPECT_EQ(EINVAL, FAILS_WITH(sys_ringbuffer_wakeup(self->p.wr, RINGBUFFER_WRITE,
							   RINGBUFFER_KEEP_LOCK |
							   RINGBUFFER_WAKE_LOCK)));
	atomic_store(lock, me);
	ASSERT_EQ(0, sys_ringbuffer_wakeup(self->p.wr, RINGBUFFER_WRITE, RINGBUFFER_KEEP_LOCK));
	EXPECT_EQ(me, atomic_load(keeper));

	/* The keeper's own write(2): under its word, which stays kept. */
	interrupt_after_ms(20000);
	EXPECT_EQ(1, write(self->p.wr, "k", 1));
	interrupt_cancel();
	EXPECT_EQ(me, atomic_load(lock));
	EXPECT_EQ(me, atomic_load(keeper));

	/* In a copy: taken back, but the word stays until the copy ends. */
	atomic_store(busy, 1);
	pid = child_write(nb_wr, 'n');
	ASSERT_LE(0, pid);
	EXPECT_EQ(EAGAIN, child_result(pid, 30)) TH_LOG("nonblocking write waited");
	EXPECT_EQ(0, atomic_load(keeper));
	EXPECT_EQ(me, atomic_load(lock));
	EXPECT_NE(0, atomic_load(waiters));
	pid = queued_writer(&self->p, 'w', false);
	ASSERT_LE(0, pid);
	ASSERT_TRUE(task_asleep_in(pid, "rb_wait_lock", 1, 30));
	/* The keeper leaves its copy, sees the waiters, makes the call. */
	atomic_store(busy, 0);
	ASSERT_NE(0, atomic_load(waiters));
	ASSERT_EQ(0, sys_ringbuffer_wakeup(self->p.wr, RINGBUFFER_WRITE, RINGBUFFER_WAKE_LOCK));
	EXPECT_EQ(0, child_result(pid, 30));
	EXPECT_EQ(0, atomic_load(lock));
	EXPECT_EQ(0, atomic_load(waiters));

	/* Kept again, out of any copy: another writer takes it back at once. */
	atomic_store(lock, me);
	ASSERT_EQ(0, sys_ringbuffer_wakeup(self->p.wr, RINGBUFFER_WRITE, RINGBUFFER_KEEP_LOCK));
	pid = child_write(self->p.wr, 'v');
	ASSERT_LE(0, pid);
	EXPECT_EQ(0, child_result(pid, 30));
	EXPECT_EQ(0, atomic_load(keeper));
	EXPECT_EQ(0, atomic_load(lock));

	/* Not granted while a writer waits for the word. */
	atomic_store(lock, (uint32_t)self->foreign);
	pid = queued_writer(&self->p, 'u', false);
	ASSERT_LE(0, pid);
	ASSERT_TRUE(task_asleep_in(pid, "rb_wait_lock", 1, 30));
	atomic_store(lock, me);
	EXPECT_EQ(EBUSY, FAILS_WITH(sys_ringbuffer_wakeup(self->p.wr, RINGBUFFER_WRITE,
							  RINGBUFFER_KEEP_LOCK)));
	EXPECT_EQ(0, atomic_load(keeper));
	atomic_store(lock, 0);
	ASSERT_EQ(0, sys_ringbuffer_wakeup(self->p.wr, RINGBUFFER_WRITE, RINGBUFFER_WAKE_LOCK));
	EXPECT_EQ(0, child_result(pid, 30));

	/* Nothing lost, nothing added, in order. */
	EXPECT_EQ(4, read(self->p.rd, buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, "kwvu", 4));
	close(nb_wr);
}

/* A live process that does not map the ring (it unmapped what fork gave it). */
static pid_t spawn_unmapped(struct hostile_pipe *p)
{
	int ready[2];
	pid_t pid;
	char c;

	if (pipe(ready))
		return -1;
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		rb_view_unmap(&p->r);
		rb_view_unmap(&p->w);
		(void)!write(ready[1], "u", 1);
		for (;;)
			pause();
	}
	if (pid > 0 && read(ready[0], &c, 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(ready[0]);
	close(ready[1]);
	return pid;
}

/*
 * Words no holder can have left are freed by the next legacy call: a
 * dead task's id, the id of a live task that does not map the ring, an
 * id above PID_MAX_LIMIT, ~0, RINGBUFFER_LOCK_KERNEL while the kernel
 * holds nothing; and the id of a holder that dies while a legacy writer
 * waits for it.
 */
TEST_F_TIMEOUT(hostile, stale_locks_are_reclaimed, 120)
{
	pid_t unmapped = spawn_unmapped(&self->p);
	const uint32_t stale[] = { self->dead, (uint32_t)unmapped, 4194304 + 1,
				   UINT32_MAX, RINGBUFFER_LOCK_KERNEL };
	char buf[16];
	int ready[2];
	pid_t holder, pid;
	char c;

	ASSERT_LT(0, unmapped);

	for (size_t i = 0; i < sizeof(stale) / sizeof(stale[0]); i++) {
		atomic_store(self->p.w.producer_lock, stale[i]);
		atomic_store(self->p.r.consumer_lock, stale[i]);
		interrupt_after_ms(20000);
		EXPECT_EQ(1, write(self->p.wr, "s", 1)) TH_LOG("lock word %#x", stale[i]);
		EXPECT_EQ(1, read(self->p.rd, buf, sizeof(buf)));
		interrupt_cancel();
		EXPECT_EQ(0, atomic_load(self->p.w.producer_lock));
		EXPECT_EQ(0, atomic_load(self->p.r.consumer_lock));
	}

	/* A holder with a mapping of its own dies while a writer waits. */
	ASSERT_EQ(0, pipe(ready));
	holder = fork();
	ASSERT_LE(0, holder);
	if (holder == 0) {
		struct rb_view v = { 0 };

		if (rb_view_map(&v, self->p.wr, RINGBUFFER_WRITE, RING_SIZE))
			_exit(1);
		atomic_store(v.producer_lock, (uint32_t)syscall(SYS_gettid));
		(void)!write(ready[1], "h", 1);
		pause();
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(write(self->p.wr, "w", 1) == 1 ? 0 : 1);
	ASSERT_TRUE(task_asleep_in(pid, "rb_wait_lock", 1, 30));
	kill(holder, SIGKILL);
	EXPECT_EQ(0, child_result(holder, 30) - 1000 - SIGKILL);
	EXPECT_EQ(0, child_result(pid, 30));
	EXPECT_EQ(1, read(self->p.rd, buf, sizeof(buf)));
	EXPECT_EQ('w', buf[0]);
	close(ready[0]);
	close(ready[1]);
	kill(unmapped, SIGKILL);
	waitpid(unmapped, NULL, 0);
}

static volatile sig_atomic_t go_on;

static void on_go(int sig)
{
	(void)sig;
	go_on = 1;
}

/*
 * A holder that keeps the producer lock and never publishes cannot hold
 * a blocking writer past the documented bound: the writer gets in, the
 * holder's process loses its mappings of that side (its next access
 * raises SIGBUS), and everybody else's keep working.
 */
TEST_F_TIMEOUT(hostile, stalled_holder_loses_the_side, 120)
{
	int ready[2];
	pid_t holder;
	char buf[4], c;
	int st;

	ASSERT_EQ(0, pipe(ready));
	holder = fork();
	ASSERT_LE(0, holder);
	if (holder == 0) {
		struct sigaction sa = { .sa_handler = on_go };

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		sigaction(SIGUSR1, &sa, NULL);
		/* The mapping fork gave it is its own to hold the side with. */
		atomic_store(self->p.w.producer_lock, (uint32_t)syscall(SYS_gettid));
		(void)!write(ready[1], "h", 1);
		while (!go_on)
			pause();
		/* Its pages are gone: this load raises SIGBUS. */
		_exit(atomic_load(self->p.w.head) == 12345 ? 3 : 2);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));

	interrupt_after_ms(60000);
	EXPECT_EQ(1, write(self->p.wr, "w", 1)) TH_LOG("the writer never got in");
	interrupt_cancel();
	EXPECT_EQ(0, atomic_load(self->p.w.producer_lock));

	kill(holder, SIGUSR1);
	ASSERT_EQ(0, wait_child(holder, 30, &st));
	EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS)
		TH_LOG("the holder went on: status %#x", st);

	/* This process's own mappings of that side were left alone. */
	EXPECT_EQ(1, write(self->p.wr, "x", 1));
	EXPECT_EQ(2, read(self->p.rd, buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, "wx", 2));
	EXPECT_EQ(atomic_load(self->p.w.head), atomic_load(self->p.r.tail));
	close(ready[0]);
	close(ready[1]);
}

TEST_HARNESS_MAIN
