// SPDX-License-Identifier: GPL-2.0
/*
 * Allocation failures (CONFIG_FAULT_INJECTION: failslab, fail_page_alloc)
 * in ringbuffer(2), in pipe creation in forced ring mode, and in the
 * splice paths of ring-mode pipes.
 *
 * Systematically: /proc/thread-self/fail-nth makes the n-th allocation of
 * this task fail, for n = 1, 2, ... until the call gets through without
 * meeting a failure, so that every allocation the call makes fails once.
 * At random: failslab and fail_page_alloc with task-filter, so that only
 * this task (/proc/self/make-it-fail) fails, every k-th allocation for a
 * seeded k.  Either way the call succeeds or fails with ENOMEM (pipe(2)
 * and open(2) also ENFILE), the pipe keeps every byte and keeps working,
 * in buffer mode if the ring could not be made, no ring is left behind,
 * nothing is left charged (an unprivileged user can still make exactly
 * as many rings as before), and the kmemleak scan of selftests/run is
 * clean.
 */
#include <sys/stat.h>

#include "reliability.h"
#include "kselftest_harness.h"

#define RING_SIZE	65536
#define FAULT_SEED	0xfa017ULL
#define RANDOM_ROUNDS	100
#define DBG		"/sys/kernel/debug/"

static const char *const knobs[] = {
	DBG "failslab/ignore-gfp-wait", DBG "failslab/verbose",
	DBG "failslab/task-filter", DBG "failslab/probability",
	DBG "failslab/interval", DBG "failslab/times",
	DBG "fail_page_alloc/ignore-gfp-wait", DBG "fail_page_alloc/ignore-gfp-highmem",
	DBG "fail_page_alloc/min-order", DBG "fail_page_alloc/verbose",
	DBG "fail_page_alloc/task-filter", DBG "fail_page_alloc/probability",
	DBG "fail_page_alloc/interval", DBG "fail_page_alloc/times",
};
#define NR_KNOBS (sizeof(knobs) / sizeof(knobs[0]))

/* Both fault types, set alike: "failslab/X" and "fail_page_alloc/X". */
static int set_both(const char *knob, const char *value)
{
	char path[128];

	snprintf(path, sizeof(path), DBG "failslab/%s", knob);
	if (knob_write(path, value))
		return -1;
	snprintf(path, sizeof(path), DBG "fail_page_alloc/%s", knob);
	return knob_write(path, value);
}

FIXTURE(faults) {
	char saved[NR_KNOBS][32];
	int nth;		/* /proc/thread-self/fail-nth */
	long live_before;
	bool forced;
};

FIXTURE_SETUP(faults)
{
	if (access("/proc/thread-self/fail-nth", W_OK) || access(knobs[0], W_OK))
		SKIP(return, "no fault injection (CONFIG_FAULT_INJECTION_DEBUG_FS)");
	for (size_t i = 0; i < NR_KNOBS; i++) {
		ASSERT_EQ(0, knob_read(knobs[i], self->saved[i], sizeof(self->saved[i])))
			TH_LOG("%s", knobs[i]);
	}
	/*
	 * Every allocation may fail, of any order and with any flags, but
	 * only when fail-nth says so (probability 0), and quietly.
	 */
	ASSERT_EQ(0, set_both("ignore-gfp-wait", "N"));
	ASSERT_EQ(0, set_both("verbose", "0"));
	ASSERT_EQ(0, set_both("probability", "0"));
	ASSERT_EQ(0, set_both("task-filter", "N"));
	ASSERT_EQ(0, knob_write(DBG "fail_page_alloc/ignore-gfp-highmem", "N"));
	ASSERT_EQ(0, knob_write(DBG "fail_page_alloc/min-order", "0"));
	self->nth = open("/proc/thread-self/fail-nth", O_RDWR);
	ASSERT_LE(0, self->nth);
	self->live_before = rb_live_rings();
	ASSERT_LE(0, self->live_before);
	self->forced = forced_ring_mode();
}

FIXTURE_TEARDOWN(faults)
{
	if (self->nth <= 0)
		return;
	close(self->nth);
	for (size_t i = NR_KNOBS; i-- > 0;)
		knob_write(knobs[i], self->saved[i]);
	sysctl_write(SYSCTL_FORCE, self->forced);
}

/* Arm fail-nth for the next call of this thread. */
static void arm(int nth, unsigned int n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", n);

	if (pwrite(nth, buf, len, 0) != len)
		abort();
}

/* Disarm it; whether the failure was injected. */
static bool disarm(int nth)
{
	char buf[16] = "";

	if (pread(nth, buf, sizeof(buf) - 1, 0) < 0)
		abort();
	if (pwrite(nth, "0", 1, 0) != 1)
		abort();
	return atoi(buf) == 0;
}

/* What a sweep saw, for RELIABILITY.md. */
struct sweep {
	unsigned int points;	/* allocations the call makes */
	unsigned int enomem;	/* failures reported as ENOMEM */
	unsigned int absorbed;	/* failures the call got over */
	unsigned int in_ring;	/* failed after the ring was made */
};

static void print_sweep(const char *what, const struct sweep *s)
{
	printf("# %s: %u allocation points, %u gave ENOMEM, %u absorbed, "
	       "%u left the pipe in ring mode\n", what, s->points, s->enomem,
	       s->absorbed, s->in_ring);
	fflush(stdout);
}

/* A pipe or FIFO with "queued" and " bytes" in its buffers. */
struct victim {
	int rd, wr;
	char fifo[64];
};

static int victim_open(struct victim *v, bool fifo)
{
	v->fifo[0] = 0;
	if (fifo) {
		snprintf(v->fifo, sizeof(v->fifo), "/tmp/rb-faults-%d", getpid());
		unlink(v->fifo);
		if (mkfifo(v->fifo, 0600))
			return -1;
		v->rd = open(v->fifo, O_RDONLY | O_NONBLOCK);
		v->wr = open(v->fifo, O_WRONLY);
	} else {
		int fds[2];

		if (pipe(fds))
			return -1;
		v->rd = fds[0];
		v->wr = fds[1];
	}
	if (v->rd < 0 || v->wr < 0 || fcntl(v->rd, F_SETFL, O_NONBLOCK))
		return -1;
	return write(v->wr, "queued", 6) == 6 && write(v->wr, " bytes", 6) == 6 ? 0 : -1;
}

/* Every queued byte is still there, in order, and the pipe still works. */
static int victim_check(struct victim *v)
{
	char buf[64];
	ssize_t n;

	n = read(v->rd, buf, sizeof(buf));
	if (n != 12 || memcmp(buf, "queued bytes", 12))
		return 1;
	if (write(v->wr, "more", 4) != 4 || read(v->rd, buf, sizeof(buf)) != 4 ||
	    memcmp(buf, "more", 4))
		return 2;
	if (read(v->rd, buf, sizeof(buf)) != -1 || errno != EAGAIN)
		return 3;
	return 0;
}

static void victim_close(struct victim *v)
{
	close(v->rd);
	close(v->wr);
	if (v->fifo[0])
		unlink(v->fifo);
}

/*
 * ringbuffer(2) on a fresh pipe (or FIFO) with the n-th allocation
 * failing, for every n.
 */
static void sweep_ringbuffer(struct __test_metadata *_metadata,
			     FIXTURE_DATA(faults) *self, bool fifo,
			     unsigned int rw, struct sweep *s)
{
	for (unsigned int n = 1; n < 5000; n++) {
		struct victim v;
		uint64_t addr = 0;
		bool injected, ring;
		long ret;
		int err;

		ASSERT_EQ(0, victim_open(&v, fifo));
		arm(self->nth, n);
		ret = sys_ringbuffer(rw == RINGBUFFER_READ ? v.rd : v.wr, rw,
				     RING_SIZE, &addr, 0);
		err = errno;
		injected = disarm(self->nth);
		ring = in_ring_mode(v.rd, RINGBUFFER_READ);
		if (!injected) {
			ASSERT_EQ(0, ret) TH_LOG("no failure, yet %s", strerror(err));
			s->points = n - 1;
		} else if (ret) {
			ASSERT_EQ(ENOMEM, err) TH_LOG("allocation %u: %s", n, strerror(err));
			s->enomem++;
			s->in_ring += ring;
		} else {
			s->absorbed++;
		}
		if (!ret) {
			ASSERT_TRUE(ring);
			munmap((void *)(uintptr_t)addr,
			       ((struct ringbuffer_header *)(uintptr_t)addr)->map_size);
		}
		EXPECT_EQ(0, victim_check(&v)) TH_LOG("allocation %u", n);
		/* If it stayed in buffer mode, it can still be converted. */
		if (!ring)
			EXPECT_EQ(0, convert_pipe(v.rd, RINGBUFFER_READ, RING_SIZE));
		victim_close(&v);
		ASSERT_TRUE(rings_back_to(self->live_before, 0)) TH_LOG("allocation %u", n);
		if (!injected)
			return;
	}
	ASSERT_TRUE(false) TH_LOG("more than 5000 allocations?");
}

TEST_F_TIMEOUT(faults, ringbuffer_on_pipe_read_end, 300)
{
	struct sweep s = { 0 };

	sweep_ringbuffer(_metadata, self, false, RINGBUFFER_READ, &s);
	print_sweep("ringbuffer(2) on a pipe's read end", &s);
	EXPECT_LT(0, s.enomem);
}

TEST_F_TIMEOUT(faults, ringbuffer_on_pipe_write_end, 300)
{
	struct sweep s = { 0 };

	sweep_ringbuffer(_metadata, self, false, RINGBUFFER_WRITE, &s);
	print_sweep("ringbuffer(2) on a pipe's write end", &s);
	EXPECT_LT(0, s.enomem);
}

TEST_F_TIMEOUT(faults, ringbuffer_on_fifo, 300)
{
	struct sweep s = { 0 };

	sweep_ringbuffer(_metadata, self, true, RINGBUFFER_READ, &s);
	print_sweep("ringbuffer(2) on a FIFO", &s);
	EXPECT_LT(0, s.enomem);
}

/* The test device: its ring, and the kernel thread that comes with it. */
TEST_F_TIMEOUT(faults, ringbuffer_on_test_device, 300)
{
	struct sweep s = { 0 };

	for (unsigned int n = 1; n < 5000; n++) {
		int dev = open(RBTEST_DEV, O_RDWR);
		uint64_t addr = 0;
		bool injected;
		long ret;
		int err;

		ASSERT_LE(0, dev);
		arm(self->nth, n);
		ret = sys_ringbuffer(dev, RINGBUFFER_READ, 4096, &addr, 0);
		err = errno;
		injected = disarm(self->nth);
		if (ret)
			ASSERT_EQ(ENOMEM, err) TH_LOG("allocation %u: %s", n, strerror(err));
		s.enomem += ret != 0;
		s.absorbed += injected && !ret;
		if (!ret)
			munmap((void *)(uintptr_t)addr,
			       ((struct ringbuffer_header *)(uintptr_t)addr)->map_size);
		/* Mapped or not, the device's ring serves read(2). */
		{
			uint8_t buf[16];

			EXPECT_EQ(16, read(dev, buf, sizeof(buf)));
			EXPECT_EQ(-1, rbtest_check(buf, 0, sizeof(buf)));
		}
		close(dev);
		ASSERT_TRUE(rings_back_to(self->live_before, 0));
		if (!injected) {
			ASSERT_EQ(0, ret);
			s.points = n - 1;
			break;
		}
	}
	print_sweep("ringbuffer(2) on the test device", &s);
	EXPECT_LT(0, s.enomem);
}

/*
 * Forced ring mode: pipe(2) and the open of a FIFO convert at creation;
 * a failure there leaves an ordinary pipe.
 */
TEST_F_TIMEOUT(faults, creation_in_forced_mode, 300)
{
	struct sweep pipes = { 0 }, fifos = { 0 };
	char path[64];

	ASSERT_EQ(0, sysctl_write(SYSCTL_FORCE, 1));
	for (unsigned int n = 1; n < 5000; n++) {
		struct victim v = { .fifo = "" };
		int fds[2], ret, err;
		bool injected;

		arm(self->nth, n);
		ret = pipe(fds);
		err = errno;
		injected = disarm(self->nth);
		if (ret) {
			ASSERT_TRUE(err == ENFILE || err == ENOMEM)
				TH_LOG("pipe(2), allocation %u: %s", n, strerror(err));
			pipes.enomem++;
			continue;
		}
		pipes.absorbed += injected;
		pipes.in_ring += injected && in_ring_mode(fds[0], RINGBUFFER_READ);
		v.rd = fds[0];
		v.wr = fds[1];
		ASSERT_EQ(0, fcntl(v.rd, F_SETFL, O_NONBLOCK));
		ASSERT_EQ(6, write(v.wr, "queued", 6));
		ASSERT_EQ(6, write(v.wr, " bytes", 6));
		EXPECT_EQ(0, victim_check(&v)) TH_LOG("allocation %u", n);
		if (!in_ring_mode(fds[0], RINGBUFFER_READ))
			EXPECT_EQ(0, convert_pipe(fds[1], RINGBUFFER_WRITE, RING_SIZE));
		victim_close(&v);
		ASSERT_TRUE(rings_back_to(self->live_before, 0));
		if (!injected) {
			pipes.points = n - 1;
			break;
		}
	}

	snprintf(path, sizeof(path), "/tmp/rb-faults-fifo-%d", getpid());
	unlink(path);
	ASSERT_EQ(0, mkfifo(path, 0600));
	for (unsigned int n = 1; n < 5000; n++) {
		struct victim v = { .fifo = "" };
		bool injected;
		int fd, err;

		arm(self->nth, n);
		fd = open(path, O_RDWR | O_NONBLOCK);
		err = errno;
		injected = disarm(self->nth);
		if (fd < 0) {
			ASSERT_TRUE(err == ENFILE || err == ENOMEM)
				TH_LOG("open(FIFO), allocation %u: %s", n, strerror(err));
			fifos.enomem++;
			continue;
		}
		fifos.absorbed += injected;
		fifos.in_ring += injected && in_ring_mode(fd, RINGBUFFER_READ);
		v.rd = fd;
		v.wr = dup(fd);
		ASSERT_EQ(6, write(v.wr, "queued", 6));
		ASSERT_EQ(6, write(v.wr, " bytes", 6));
		EXPECT_EQ(0, victim_check(&v)) TH_LOG("allocation %u", n);
		victim_close(&v);
		ASSERT_TRUE(rings_back_to(self->live_before, 0));
		if (!injected) {
			fifos.points = n - 1;
			break;
		}
	}
	unlink(path);
	ASSERT_EQ(0, sysctl_write(SYSCTL_FORCE, self->forced));
	print_sweep("pipe(2) in forced ring mode", &pipes);
	print_sweep("open(2) of a FIFO in forced ring mode", &fifos);
	EXPECT_LT(0, pipes.enomem);
}

/*
 * splice(2) in both directions and tee(2) on a ring-mode pipe, with
 * every allocation failing once: a failed call moves nothing.
 */
TEST_F_TIMEOUT(faults, splice_and_tee, 300)
{
	char tmpl[] = "/tmp/rb-faults-XXXXXX", buf[4096];
	int file = mkstemp(tmpl), fds[2], other[2];
	unsigned int ops[3] = { 0 }, failed[3] = { 0 };

	ASSERT_LE(0, file);
	unlink(tmpl);
	memset(buf, 's', sizeof(buf));
	ASSERT_EQ((ssize_t)sizeof(buf), write(file, buf, sizeof(buf)));
	ASSERT_EQ(0, pipe(fds));
	ASSERT_EQ(0, pipe(other));
	ASSERT_EQ(0, convert_pipe(fds[0], RINGBUFFER_READ, RING_SIZE));
	for (int op = 0; op < 3; op++) {
		for (unsigned int n = 1; n < 5000; n++) {
			loff_t off = 0;
			int before = 0, after = 0, err;
			bool injected;
			ssize_t ret;

			if (op > 0)	/* something to take out of the pipe */
				ASSERT_EQ(100, write(fds[1], buf, 100));
			ASSERT_EQ(0, ioctl(fds[0], FIONREAD, &before));
			arm(self->nth, n);
			if (op == 0)
				ret = splice(file, &off, fds[1], NULL, sizeof(buf), 0);
			else if (op == 1)
				ret = splice(fds[0], NULL, file, &off, 100, 0);
			else
				ret = tee(fds[0], other[1], 100, 0);
			err = errno;
			injected = disarm(self->nth);
			ASSERT_EQ(0, ioctl(fds[0], FIONREAD, &after));
			if (ret < 0) {
				ASSERT_EQ(ENOMEM, err) TH_LOG("op %d, allocation %u: %s",
							     op, n, strerror(err));
				EXPECT_EQ(before, after) TH_LOG("a failed call moved data");
				failed[op]++;
			} else {
				EXPECT_EQ(op == 0 ? (ssize_t)sizeof(buf) : 100, ret);
				EXPECT_EQ(op == 0 ? before + (int)sizeof(buf) :
					  op == 1 ? before - 100 : before, after);
			}
			/* Empty both pipes for the next round. */
			while (after > 0) {
				ssize_t got = read(fds[0], buf, after < 4096 ? after : 4096);

				ASSERT_LT(0, got);
				after -= got;
			}
			ASSERT_EQ(0, fcntl(other[0], F_SETFL, O_NONBLOCK));
			while (read(other[0], buf, sizeof(buf)) > 0)
				;
			memset(buf, 's', sizeof(buf));
			if (!injected) {
				ops[op] = n - 1;
				break;
			}
		}
	}
	printf("# splice in: %u allocation points, %u ENOMEM; splice out: %u, %u; "
	       "tee: %u, %u\n", ops[0], failed[0], ops[1], failed[1], ops[2], failed[2]);
	close(file);
	close(fds[0]);
	close(fds[1]);
	close(other[0]);
	close(other[1]);
}

/*
 * An unprivileged user's rings are all uncharged again after the sweep:
 * with pipe-user-pages-hard at 5 rings' worth, it makes exactly as many
 * rings after ringbuffer(2) failed at every allocation as before.
 */
static int rings_until_refused(void)
{
	struct rb_view v[16];
	int made = 0;

	while (made < 16) {
		int fds[2];

		if (pipe(fds))
			break;
		if (rb_view_map(&v[made], fds[0], RINGBUFFER_READ, RING_SIZE)) {
			close(fds[0]);
			close(fds[1]);
			break;
		}
		close(fds[0]);
		close(fds[1]);
		made++;
	}
	for (int i = 0; i < made; i++)
		rb_view_unmap(&v[i]);
	return made;
}

TEST_F_TIMEOUT(faults, nothing_stays_charged, 300)
{
	long hard = sysctl_read(SYSCTL_PAGES_HARD);
	pid_t pid;
	int res;

	ASSERT_EQ(0, sysctl_write(SYSCTL_PAGES_HARD, 6 * 16));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int before, after, nth;
		unsigned int n;

		if (become_nobody())
			_exit(100);
		nth = open("/proc/thread-self/fail-nth", O_RDWR);
		if (nth < 0)
			_exit(101);
		before = rings_until_refused();
		for (n = 1; n < 5000; n++) {
			struct victim v;
			uint64_t addr = 0;
			bool injected;
			long ret;

			if (victim_open(&v, false))
				_exit(102);
			arm(nth, n);
			ret = sys_ringbuffer(v.rd, RINGBUFFER_READ, RING_SIZE, &addr, 0);
			if (ret && errno != ENOMEM)
				_exit(103);
			injected = disarm(nth);
			if (!ret)
				munmap((void *)(uintptr_t)addr,
				       ((struct ringbuffer_header *)(uintptr_t)addr)->map_size);
			victim_close(&v);
			if (!injected)
				break;
		}
		after = rings_until_refused();
		printf("# as nobody, hard limit of 6 rings' pages: %d rings before "
		       "a sweep of %u allocations, %d after\n", before, n - 1, after);
		fflush(stdout);
		_exit(before == 5 && after == before ? 0 : 104);
	}
	res = child_result(pid, 250);
	EXPECT_EQ(0, sysctl_write(SYSCTL_PAGES_HARD, hard));
	EXPECT_EQ(0, res);
}

/*
 * At random: task-filter, every k-th allocation of this task fails for a
 * seeded k, across ringbuffer(2), the first write and read through the
 * ring, and the unmap.
 */
TEST_F_TIMEOUT(faults, random_failures_task_filter, 300)
{
	uint64_t seed = rel_seed(FAULT_SEED);
	struct rng rng = { seed };
	unsigned int ok = 0, enomem = 0, rounds = rel_scale(RANDOM_ROUNDS);
	int mif = open("/proc/self/make-it-fail", O_WRONLY);

	ASSERT_LE(0, mif);
	ASSERT_EQ(0, set_both("task-filter", "Y"));
	ASSERT_EQ(0, set_both("times", "-1"));
	ASSERT_EQ(0, set_both("probability", "100"));
	for (unsigned int i = 0; i < rounds; i++) {
		char interval[16];
		unsigned int rw;
		struct victim v;
		uint64_t addr = 0;
		uint32_t size;
		long ret;
		int err;

		snprintf(interval, sizeof(interval), "%u",
			 2 + (unsigned int)rng_below(&rng, 60));
		ASSERT_EQ(0, set_both("interval", interval));
		ASSERT_EQ(0, victim_open(&v, rng_chance(&rng, 30)));
		rw = rng_below(&rng, 2);
		size = RING_SIZE << rng_below(&rng, 3);
		ASSERT_EQ(1, pwrite(mif, "1", 1, 0));
		ret = sys_ringbuffer(rw == RINGBUFFER_READ ? v.rd : v.wr, rw, size,
				     &addr, 0);
		err = errno;
		ASSERT_EQ(1, pwrite(mif, "0", 1, 0));
		if (ret) {
			ASSERT_EQ(ENOMEM, err) TH_LOG("round %u: %s", i, strerror(err));
			enomem++;
		} else {
			ok++;
			munmap((void *)(uintptr_t)addr,
			       ((struct ringbuffer_header *)(uintptr_t)addr)->map_size);
		}
		EXPECT_EQ(0, victim_check(&v)) TH_LOG("round %u", i);
		victim_close(&v);
		ASSERT_TRUE(rings_back_to(self->live_before, 0));
	}
	close(mif);
	printf("# seed %#llx: %u rounds of ringbuffer(2) with every k-th allocation "
	       "failing (k in 2..61): %u succeeded, %u ENOMEM\n",
	       (unsigned long long)seed, rounds, ok, enomem);
	EXPECT_LT(0, enomem);
}

TEST_HARNESS_MAIN
