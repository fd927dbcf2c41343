// SPDX-License-Identifier: GPL-2.0
/*
 * Limits on ring memory.  Rings are charged to the user that creates
 * them against fs.pipe-user-pages-hard and -soft, like pipe buffers, for
 * as long as they live (also after every fd is closed, while mapped); a
 * ring above fs.pipe-max-size is refused; root is exempt.  An
 * unprivileged user makes thousands of rings, each mapped with its fds
 * closed, until the documented EPERM, and no more: exactly as many as
 * the limit allows.  Mapping one ring many times costs no charge.
 * Forced ring mode charges the same way and falls back to buffer mode.
 * And the rlimits and sysctls that bound mappings: RLIMIT_AS and
 * vm.max_map_count (ENOMEM), RLIMIT_MEMLOCK with mlockall (EAGAIN),
 * fs.file-max (ENFILE); RLIMIT_NOFILE does not apply (no fd is made).
 */
#include <sys/stat.h>

#include "reliability.h"
#include "kselftest_harness.h"

#define RING_SIZE	65536
#define RING_PAGES	(RING_SIZE / 4096)
#define MANY_RINGS	1000		/* one-page rings, to the soft limit */
#define BIG_RINGS	100		/* 64 KiB rings, to the hard limit */

struct saved_limits {
	long soft, hard, max_size, force, file_max, map_count;
};

static void save_limits(struct saved_limits *s)
{
	s->soft = sysctl_read(SYSCTL_PAGES_SOFT);
	s->hard = sysctl_read(SYSCTL_PAGES_HARD);
	s->max_size = sysctl_read(SYSCTL_MAX_SIZE);
	s->force = sysctl_read(SYSCTL_FORCE);
	s->file_max = sysctl_read("/proc/sys/fs/file-max");
	s->map_count = sysctl_read("/proc/sys/vm/max_map_count");
}

static void restore_limits(const struct saved_limits *s)
{
	sysctl_write(SYSCTL_PAGES_SOFT, s->soft);
	sysctl_write(SYSCTL_PAGES_HARD, s->hard);
	sysctl_write(SYSCTL_MAX_SIZE, s->max_size);
	sysctl_write(SYSCTL_FORCE, s->force);
	sysctl_write("/proc/sys/fs/file-max", s->file_max);
	sysctl_write("/proc/sys/vm/max_map_count", s->map_count);
}

FIXTURE(limits) {
	struct saved_limits saved;
	long live_before;
};

FIXTURE_SETUP(limits)
{
	save_limits(&self->saved);
	ASSERT_LT(0, self->saved.max_size);
	self->live_before = rb_live_rings();
	ASSERT_LE(0, self->live_before);
	/* Rings of fresh pipes are made by ringbuffer(2) here, not at creation. */
	ASSERT_EQ(0, sysctl_write(SYSCTL_FORCE, 0));
}

FIXTURE_TEARDOWN(limits)
{
	restore_limits(&self->saved);
}

static long mem_available_kb(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	long kb = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/*
 * A ring of a new pipe (shrunk to one page first if @small), mapped, with
 * both fds closed; -errno on failure, *@failed_step 0 for pipe(2).
 */
static int ring_of_new_pipe(struct rb_view *v, int *failed_step, bool small)
{
	int fds[2], ret;

	if (pipe(fds)) {
		*failed_step = 0;
		return -errno;
	}
	if (small && fcntl(fds[0], F_SETPIPE_SZ, 4096) < 0)
		return -errno;
	ret = rb_view_map(v, fds[0], RINGBUFFER_READ, small ? 4096 : RING_SIZE);
	close(fds[0]);
	close(fds[1]);
	*failed_step = 1;
	return ret;
}

static int one_ring(struct rb_view *v, int *failed_step)
{
	return ring_of_new_pipe(v, failed_step, false);
}

/*
 * As nobody: rings until refused.  Reports what it made, at which step
 * and with which errno it stopped, and that a freed ring's charge comes
 * back.  Exit status 0 if everything was as @expect says.
 */
static int rings_as_nobody(int expect, bool small)
{
	int pages = small ? 1 : RING_PAGES;
	struct rb_view *v = calloc(expect + 2, sizeof(*v));
	long avail_before = mem_available_kb(), avail_after;
	int made = 0, step = -1, err = 0, again, again_err = 0;

	if (!v || become_nobody())
		return 100;
	while (made < expect + 2) {
		err = ring_of_new_pipe(&v[made], &step, small);
		if (err)
			break;
		made++;
	}
	avail_after = mem_available_kb();
	/* One freed, one more fits; then refused again. */
	if (made)
		rb_view_unmap(&v[--made]);
	again = ring_of_new_pipe(&v[made], &step, small);
	if (!again) {
		made++;
		again_err = ring_of_new_pipe(&v[made], &step, small);
	}
	printf("# nobody, pipe-user-pages-%s %d: %d rings of %d kB made (%d pages "
	       "charged, %ld kB of memory used, %ld kB per ring), then %s at %s; one "
	       "freed, one made again: %s, then %s\n", small ? "soft" : "hard",
	       (expect + 1) * pages, made, pages * 4, made * pages,
	       avail_before - avail_after,
	       made ? (avail_before - avail_after) / made : 0,
	       strerrorname_np(-err), step ? "ringbuffer(2)" : "pipe(2)",
	       again ? strerrorname_np(-again) : "ok",
	       again_err ? strerrorname_np(-again_err) : "ok");
	fflush(stdout);
	for (int i = 0; i < made; i++)
		rb_view_unmap(&v[i]);
	free(v);
	if (made != expect || err != -EPERM || again || again_err != -EPERM)
		return 1;
	return 0;
}

/*
 * pipe-user-pages-soft at N + 1 pages, one-page rings: with k rings
 * alive, a new pipe gets its minimum of buffers (the soft limit), is
 * shrunk to one page, and its ring would make k + 2 pages, so N rings are
 * made and the next ringbuffer(2) fails with EPERM.
 */
TEST_F_TIMEOUT(limits, thousands_of_rings_until_soft_limit, 400)
{
	int n = rel_scale(MANY_RINGS);
	pid_t pid;

	ASSERT_EQ(0, sysctl_write(SYSCTL_PAGES_HARD, 0));
	ASSERT_EQ(0, sysctl_write(SYSCTL_PAGES_SOFT, (long)n + 1));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct rlimit nofile = { 64, 64 };

		/* Few fds, many rings: the fds are closed, the rings live. */
		setrlimit(RLIMIT_NOFILE, &nofile);
		_exit(rings_as_nobody(n, true));
	}
	EXPECT_EQ(0, child_result(pid, 380));
	EXPECT_TRUE(rings_back_to(self->live_before, 30));
}

/*
 * pipe-user-pages-hard at N + 1 rings' pages, 64 KiB rings: with k rings
 * alive, a new pipe needs k + 1 rings' worth (its buffers), its ring
 * k + 2, so N rings are made and the next ringbuffer(2) fails with EPERM.
 */
TEST_F_TIMEOUT(limits, rings_until_hard_limit, 200)
{
	int n = rel_scale(BIG_RINGS);
	pid_t pid;

	ASSERT_EQ(0, sysctl_write(SYSCTL_PAGES_SOFT, 0));
	ASSERT_EQ(0, sysctl_write(SYSCTL_PAGES_HARD, (long)(n + 1) * RING_PAGES));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(rings_as_nobody(n, false));
	EXPECT_EQ(0, child_result(pid, 180));
	EXPECT_TRUE(rings_back_to(self->live_before, 30));
}

/* What ringbuffer(2) gives nobody, as an errno (0 for success). */
static int nobody_ringbuffer(uint32_t size, int pipe_size)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fds[2];
		struct rb_view v = { 0 };

		if (become_nobody() || pipe(fds))
			_exit(200);
		if (pipe_size && fcntl(fds[0], F_SETPIPE_SZ, pipe_size) < 0)
			_exit(201);
		_exit(-rb_view_map(&v, fds[0], RINGBUFFER_READ, size));
	}
	return child_result(pid, 60);
}

TEST_F(limits, pipe_max_size)
{
	long max = self->saved.max_size;
	int fds[2];
	struct rb_view v = { 0 };

	EXPECT_EQ(EPERM, nobody_ringbuffer(max * 2, 0));
	EXPECT_EQ(0, nobody_ringbuffer(max, 0));
	/* A pipe enlarged to pipe-max-size gets a ring that large. */
	EXPECT_EQ(0, nobody_ringbuffer(4096, max));
	/* Root is not bound by it. */
	ASSERT_EQ(0, pipe(fds));
	EXPECT_EQ(0, rb_view_map(&v, fds[0], RINGBUFFER_READ, max * 2));
	EXPECT_EQ(max * 2, v.size);
	rb_view_unmap(&v);
	close(fds[0]);
	close(fds[1]);
	/*
	 * Below a pipe's default 64 KiB, new pipes are made smaller, and so
	 * are their rings; a larger one is still refused.
	 */
	ASSERT_EQ(0, sysctl_write(SYSCTL_MAX_SIZE, 16384));
	EXPECT_EQ(0, nobody_ringbuffer(4096, 0));
	EXPECT_EQ(0, nobody_ringbuffer(16384, 0));
	EXPECT_EQ(EPERM, nobody_ringbuffer(32768, 0));
	ASSERT_EQ(0, sysctl_write(SYSCTL_MAX_SIZE, max));
}

/*
 * Each ringbuffer(2) call makes a new mapping of the same ring, charged
 * once: 200 mappings of one ring, and still room for exactly one more
 * ring under a limit of three rings' pages.
 */
TEST_F(limits, many_mappings_one_charge)
{
	pid_t pid;

	ASSERT_EQ(0, sysctl_write(SYSCTL_PAGES_SOFT, 0));
	ASSERT_EQ(0, sysctl_write(SYSCTL_PAGES_HARD, 3 * RING_PAGES));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		static struct rb_view maps[200];
		struct rb_view second, third;
		int fds[2], step;

		if (become_nobody() || pipe(fds))
			_exit(100);
		for (int i = 0; i < 200; i++)
			if (rb_view_map(&maps[i], fds[0], RINGBUFFER_READ, RING_SIZE))
				_exit(101);
		close(fds[0]);
		close(fds[1]);
		if (one_ring(&second, &step))
			_exit(102);
		if (one_ring(&third, &step) != -EPERM)
			_exit(103);
		/* All mappings gone: the first ring's charge is back. */
		for (int i = 0; i < 200; i++)
			rb_view_unmap(&maps[i]);
		if (one_ring(&third, &step))
			_exit(104);
		_exit(0);
	}
	EXPECT_EQ(0, child_result(pid, 120));
}

/*
 * Forced ring mode charges a pipe's ring at creation: with the hard limit
 * at 11 rings' pages, 10 pipes get rings, the 11th is an ordinary pipe,
 * the 12th is refused (ENFILE, as for pipe buffers).
 */
TEST_F(limits, forced_mode_falls_back_then_refuses)
{
	pid_t pid;

	ASSERT_EQ(0, sysctl_write(SYSCTL_PAGES_SOFT, 0));
	ASSERT_EQ(0, sysctl_write(SYSCTL_PAGES_HARD, 11 * RING_PAGES));
	ASSERT_EQ(0, sysctl_write(SYSCTL_FORCE, 1));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fds[2], rings = 0, plain = 0;

		if (become_nobody())
			_exit(100);
		while (!pipe(fds)) {
			if (in_ring_mode(fds[0], RINGBUFFER_READ))
				rings++;
			else
				plain++;
		}
		printf("# forced mode, nobody, hard limit 11 rings' pages: %d ring "
		       "pipes, %d buffer pipes, then %s\n", rings, plain,
		       strerrorname_np(errno));
		fflush(stdout);
		_exit(rings == 10 && plain == 1 && errno == ENFILE ? 0 : 1);
	}
	EXPECT_EQ(0, child_result(pid, 60));
	ASSERT_EQ(0, sysctl_write(SYSCTL_FORCE, 0));
}

/* The number of mappings of this process. */
static int map_count(void)
{
	static char buf[1 << 16];
	int fd = open("/proc/self/maps", O_RDONLY), lines = 0;
	ssize_t n;

	size_t have = 0;

	while (fd >= 0 && (n = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0)
		have += n;
	buf[have] = 0;
	for (size_t i = 0; i < have; i++)
		lines += buf[i] == '\n';
	/* The gate area is listed but is no mapping of the process. */
	if (strstr(buf, "[vsyscall]"))
		lines--;
	if (fd >= 0)
		close(fd);
	return lines;
}

static long vm_size_bytes(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[128];
	long kb = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb * 1024;
}

/*
 * RLIMIT_AS: no room for the mapping.  The ring itself was made, so the
 * pipe is in ring mode, and nothing of the mapping is left.
 */
TEST(rlimit_as)
{
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fds[2], maps;
		struct rb_view v = { 0 };
		struct rlimit as;
		char c;

		if (become_nobody() || pipe(fds))
			_exit(100);
		maps = map_count();
		as.rlim_cur = as.rlim_max = vm_size_bytes() + 256 * 1024;
		if (setrlimit(RLIMIT_AS, &as))
			_exit(101);
		if (rb_view_map(&v, fds[0], RINGBUFFER_READ, 1 << 20) != -ENOMEM)
			_exit(102);
		if (map_count() != maps)
			_exit(103);
		if (!in_ring_mode(fds[0], RINGBUFFER_READ))
			_exit(104);
		if (write(fds[1], "x", 1) != 1 || read(fds[0], &c, 1) != 1)
			_exit(105);
		_exit(0);
	}
	EXPECT_EQ(0, child_result(pid, 60));
}

/* RLIMIT_MEMLOCK after mlockall(MCL_FUTURE): EAGAIN. */
TEST(rlimit_memlock)
{
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct rlimit lock = { 4096, 4096 };
		struct rb_view v = { 0 };
		int fds[2];

		if (become_nobody() || pipe(fds) || setrlimit(RLIMIT_MEMLOCK, &lock))
			_exit(100);
		if (mlockall(MCL_FUTURE))
			_exit(101);
		_exit(rb_view_map(&v, fds[0], RINGBUFFER_READ, RING_SIZE) == -EAGAIN ? 0 : 102);
	}
	EXPECT_EQ(0, child_result(pid, 60));
}

/* RLIMIT_NOFILE does not apply: a mapping holds a file, not an fd. */
TEST(rlimit_nofile)
{
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct rlimit nofile;
		struct rb_view v[8];
		int fds[2];

		if (become_nobody() || pipe(fds))
			_exit(100);
		nofile.rlim_cur = nofile.rlim_max = fds[1] + 1;
		if (setrlimit(RLIMIT_NOFILE, &nofile) || dup(0) != -1 || errno != EMFILE)
			_exit(101);
		for (int i = 0; i < 8; i++)
			if (rb_view_map(&v[i], fds[i & 1], i & 1, RING_SIZE))
				_exit(102);
		_exit(0);
	}
	EXPECT_EQ(0, child_result(pid, 60));
}

/*
 * vm.max_map_count one above what the process has: the first area of
 * the mapping fits, the second does not; ENOMEM, and the first is gone
 * again.  fs.file-max reached: ENFILE for an unprivileged caller.
 */
TEST_F(limits, map_count_and_file_max)
{
	int go[2], done[2], res;
	pid_t pid = fork();
	char c;

	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fds[2], maps;
		struct rb_view v = { 0 };
		char buf[24];
		int fd, len;

		if (pipe(fds))
			_exit(100);
		maps = map_count();
		/* Room for one more area: the mapping needs three. */
		len = snprintf(buf, sizeof(buf), "%d\n", maps);
		fd = open("/proc/sys/vm/max_map_count", O_WRONLY);
		if (fd < 0 || write(fd, buf, len) != len)
			_exit(101);
		res = rb_view_map(&v, fds[0], RINGBUFFER_READ, RING_SIZE);
		len = snprintf(buf, sizeof(buf), "%ld\n", self->saved.map_count);
		if (pwrite(fd, buf, len, 0) != len)
			_exit(102);
		if (res != -ENOMEM)
			_exit(103);
		_exit(map_count() == maps ? 0 : 104);
	}
	EXPECT_EQ(0, child_result(pid, 60));

	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct rb_view v = { 0 };
		int fds[2];

		if (become_nobody() || pipe(fds))
			_exit(100);
		if (write(done[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(101);
		res = rb_view_map(&v, fds[0], RINGBUFFER_READ, RING_SIZE);
		if (write(done[1], "d", 1) != 1)
			_exit(102);
		_exit(res == -ENFILE ? 0 : 103);
	}
	ASSERT_EQ(1, read(done[0], &c, 1));
	ASSERT_EQ(0, sysctl_write("/proc/sys/fs/file-max", 1));
	ASSERT_EQ(1, write(go[1], "g", 1));
	interrupt_after_ms(30000);
	res = read(done[0], &c, 1);
	interrupt_cancel();
	ASSERT_EQ(0, sysctl_write("/proc/sys/fs/file-max", self->saved.file_max));
	EXPECT_EQ(1, res);
	EXPECT_EQ(0, child_result(pid, 60));
	close(go[0]);
	close(go[1]);
	close(done[0]);
	close(done[1]);
}

TEST_HARNESS_MAIN
