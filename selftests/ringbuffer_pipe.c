// SPDX-License-Identifier: GPL-2.0
/*
 * Pipes in ring mode: the semantics of a pipe with ring and legacy ends in
 * every combination, many writers and readers, a jobserver, writers killed
 * in the middle, and forced ring mode (fs.pipe-ring-force).
 */
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "ringbuffer_util.h"
#include "kselftest_harness.h"

#define RING_SIZE	65536
#define PIPE_BUF_BYTES	4096

/* One end of a pipe, used through its ring or through read(2)/write(2). */
struct end {
	int fd;
	bool ring;
	struct rb_view v;
};

static long end_write(struct end *e, const void *buf, size_t len)
{
	ssize_t n;

	if (e->ring)
		return rb_pipe_write(&e->v, buf, len);
	n = write(e->fd, buf, len);
	return n < 0 ? -errno : n;
}

static long end_read(struct end *e, void *buf, size_t len)
{
	ssize_t n;

	if (e->ring)
		return rb_pipe_read(&e->v, buf, len);
	n = read(e->fd, buf, len);
	return n < 0 ? -errno : n;
}

static int end_init(struct end *e, int fd, unsigned int rw, bool ring)
{
	e->fd = fd;
	e->ring = ring;
	return ring ? rb_view_map(&e->v, fd, rw, RING_SIZE) : 0;
}

FIXTURE(pipe) {
	int fds[2];
	struct end r, w;
};

FIXTURE_VARIANT(pipe) {
	bool ring_reader;
	bool ring_writer;
};

FIXTURE_VARIANT_ADD(pipe, ring_writer_legacy_reader) { .ring_writer = true };
FIXTURE_VARIANT_ADD(pipe, legacy_writer_ring_reader) { .ring_reader = true };
FIXTURE_VARIANT_ADD(pipe, ring_both) { .ring_reader = true, .ring_writer = true };
FIXTURE_VARIANT_ADD(pipe, legacy_both_on_ring) { };

FIXTURE_SETUP(pipe)
{
	signal(SIGPIPE, SIG_IGN);
	ASSERT_EQ(0, pipe(self->fds));
	ASSERT_EQ(0, end_init(&self->r, self->fds[0], RINGBUFFER_READ,
			      variant->ring_reader));
	ASSERT_EQ(0, end_init(&self->w, self->fds[1], RINGBUFFER_WRITE,
			      variant->ring_writer));
	if (!variant->ring_reader && !variant->ring_writer)
		ASSERT_EQ(0, convert_pipe(self->fds[0], RINGBUFFER_READ, RING_SIZE));
	ASSERT_TRUE(in_ring_mode(self->fds[0], RINGBUFFER_READ));
}

FIXTURE_TEARDOWN(pipe)
{
	if (self->r.ring)
		rb_view_unmap(&self->r.v);
	if (self->w.ring)
		rb_view_unmap(&self->w.v);
	if (self->fds[0] >= 0)
		close(self->fds[0]);
	if (self->fds[1] >= 0)
		close(self->fds[1]);
}

static void close_fd(int *fd)
{
	close(*fd);
	*fd = -1;
}

/* A child writes the test sequence in chunks of varying size. */
static pid_t spawn_writer(struct end *w, int other, size_t total)
{
	pid_t pid = fork();

	if (pid == 0) {
		uint8_t buf[8192];
		uint32_t seed = 7;
		uint64_t pos = 0;

		close(other);
		while (pos < total) {
			size_t n = 1 + (seed = seed * 1103515245 + 12345) % sizeof(buf);

			if (n > total - pos)
				n = total - pos;
			rbtest_fill(buf, pos, n);
			if (end_write(w, buf, n) != (long)n)
				_exit(1);
			pos += n;
		}
		_exit(0);
	}
	return pid;
}

TEST_F_TIMEOUT(pipe, stream_integrity_and_eof, 120)
{
	const size_t total = 512 * 1024;
	uint8_t buf[3000];
	uint64_t pos = 0;
	int status;
	pid_t pid;
	long n;

	pid = spawn_writer(&self->w, self->fds[0], total);
	ASSERT_GT(pid, 0);
	close_fd(&self->fds[1]);
	while ((n = end_read(&self->r, buf, sizeof(buf))) > 0) {
		ASSERT_EQ(-1, rbtest_check(buf, pos, n)) TH_LOG("at %llu",
			(unsigned long long)pos);
		pos += n;
	}
	EXPECT_EQ(0, n);
	EXPECT_EQ(total, pos);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
}

TEST_F(pipe, epipe_without_reader)
{
	char c = 'x';

	close_fd(&self->fds[0]);
	EXPECT_EQ(-EPIPE, end_write(&self->w, &c, 1));
	/* The legacy path raises SIGPIPE, ignored here; EPIPE either way. */
	EXPECT_EQ(EPIPE, FAILS_WITH(write(self->fds[1], &c, 1)));
	if (self->w.ring)
		EXPECT_TRUE(atomic_load(self->w.v.flags) & RINGBUFFER_BROKEN);
}

TEST_F(pipe, sigpipe_is_raised)
{
	int status;
	pid_t pid = fork();

	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char c = 'x';

		signal(SIGPIPE, SIG_DFL);
		close(self->fds[0]);
		if (write(self->fds[1], &c, 1) < 0)
			_exit(1);
		_exit(2);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	/* The parent still holds a read end: the child must get through. */
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2);
	close_fd(&self->fds[0]);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char c = 'x';

		signal(SIGPIPE, SIG_DFL);
		(void)!write(self->fds[1], &c, 1);
		_exit(3);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGPIPE);
}

TEST_F(pipe, nonblocking_and_pipe_buf_atomicity)
{
	static uint8_t big[RING_SIZE + 4096];
	long space;
	int fl;

	fl = fcntl(self->fds[0], F_GETFL);
	ASSERT_EQ(0, fcntl(self->fds[0], F_SETFL, fl | O_NONBLOCK));
	EXPECT_EQ(EAGAIN, FAILS_WITH(read(self->fds[0], big, 10)));
	fl = fcntl(self->fds[1], F_GETFL);
	ASSERT_EQ(0, fcntl(self->fds[1], F_SETFL, fl | O_NONBLOCK));
	/* Leave less than PIPE_BUF of space. */
	ASSERT_EQ(RING_SIZE - 100, end_write(&self->w, big, RING_SIZE - 100));
	space = 100;
	/* A PIPE_BUF write does not fit: all or nothing. */
	EXPECT_EQ(EAGAIN, FAILS_WITH(write(self->fds[1], big, PIPE_BUF_BYTES)));
	/* A small one does. */
	EXPECT_EQ(60, write(self->fds[1], big, 60));
	space -= 60;
	/* A larger-than-PIPE_BUF write may be partial. */
	EXPECT_EQ(space, write(self->fds[1], big, 2 * PIPE_BUF_BYTES));
	EXPECT_EQ(EAGAIN, FAILS_WITH(write(self->fds[1], big, 1)));
	EXPECT_EQ(RING_SIZE, read(self->fds[0], big, sizeof(big)));
	EXPECT_EQ(EAGAIN, FAILS_WITH(read(self->fds[0], big, 1)));
}

TEST_F(pipe, fionread_and_pipe_size)
{
	char buf[300] = { 0 };
	int avail = -1;

	EXPECT_EQ(300, end_write(&self->w, buf, 300));
	ASSERT_EQ(0, ioctl(self->fds[0], FIONREAD, &avail));
	EXPECT_EQ(300, avail);
	EXPECT_EQ(RING_SIZE, fcntl(self->fds[0], F_GETPIPE_SZ));
	EXPECT_EQ(RING_SIZE, fcntl(self->fds[1], F_GETPIPE_SZ));
	if (variant->ring_reader || variant->ring_writer) {
		/* A mapping cannot follow a new size: refused while mapped. */
		EXPECT_EQ(EBUSY, FAILS_WITH(fcntl(self->fds[1], F_SETPIPE_SZ, 1 << 20)));
		EXPECT_EQ(RING_SIZE, fcntl(self->fds[0], F_GETPIPE_SZ));
	} else {
		/* Nobody maps it: it resizes like a plain pipe, data kept. */
		EXPECT_EQ(1 << 20, fcntl(self->fds[1], F_SETPIPE_SZ, 1 << 20));
		EXPECT_EQ(1 << 20, fcntl(self->fds[0], F_GETPIPE_SZ));
		ASSERT_EQ(0, ioctl(self->fds[0], FIONREAD, &avail));
		EXPECT_EQ(300, avail);
	}
	EXPECT_EQ(300, end_read(&self->r, buf, sizeof(buf)));
}

TEST_F(pipe, readv_writev)
{
	char a[5] = "hello", b[6] = " world", out[11];
	struct iovec wv[2] = { { a, 5 }, { b, 6 } };
	struct iovec rv[2] = { { out, 4 }, { out + 4, 7 } };

	EXPECT_EQ(11, writev(self->fds[1], wv, 2));
	EXPECT_EQ(11, readv(self->fds[0], rv, 2));
	EXPECT_EQ(0, memcmp(out, "hello world", 11));
}

/* A writer child in another process, so that wake-ups cross processes. */
static void write_later(struct end *w, const char *what)
{
	if (fork() == 0) {
		end_write(w, what, strlen(what));
		_exit(0);
	}
}

TEST_F(pipe, poll_select_epoll_wakeups)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct pollfd pfd = { .fd = self->fds[0], .events = POLLIN };
	int lt = epoll_create1(0), et = epoll_create1(0);
	struct timeval tv = { 20, 0 };
	char buf[16];
	fd_set set;

	ASSERT_GE(lt, 0);
	ASSERT_GE(et, 0);
	ASSERT_EQ(0, epoll_ctl(lt, EPOLL_CTL_ADD, self->fds[0], &ev));
	ev.events = EPOLLIN | EPOLLET;
	ASSERT_EQ(0, epoll_ctl(et, EPOLL_CTL_ADD, self->fds[0], &ev));
	EXPECT_EQ(0, poll(&pfd, 1, 0));

	write_later(&self->w, "a");
	EXPECT_EQ(1, poll(&pfd, 1, 20000));
	EXPECT_EQ(1, epoll_wait(lt, &out, 1, 20000));
	EXPECT_EQ(1, epoll_wait(et, &out, 1, 20000));
	/* Edge-triggered: no new data, no event; level-triggered: still one. */
	EXPECT_EQ(0, epoll_wait(et, &out, 1, 0));
	EXPECT_EQ(1, epoll_wait(lt, &out, 1, 0));
	/* Every write is an edge for a pipe, even onto unread data. */
	write_later(&self->w, "b");
	EXPECT_EQ(1, epoll_wait(et, &out, 1, 20000));
	EXPECT_EQ(2, end_read(&self->r, buf, sizeof(buf)));

	FD_ZERO(&set);
	FD_SET(self->fds[0], &set);
	write_later(&self->w, "c");
	EXPECT_EQ(1, select(self->fds[0] + 1, &set, NULL, NULL, &tv));
	EXPECT_EQ(1, end_read(&self->r, buf, sizeof(buf)));

	/* POLLOUT once space comes back, POLLHUP once the writer is gone. */
	pfd.fd = self->fds[1];
	pfd.events = POLLOUT;
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	close_fd(&self->fds[1]);
	pfd.fd = self->fds[0];
	pfd.events = POLLIN;
	EXPECT_EQ(1, poll(&pfd, 1, 20000));
	EXPECT_TRUE(pfd.revents & POLLHUP);
	while (wait(NULL) > 0)
		;
	close(lt);
	close(et);
}

TEST_F(pipe, splice_tee_vmsplice)
{
	char tmpl[] = "/tmp/rb-splice-XXXXXX", buf[64];
	struct iovec iov = { .iov_base = "vmsplice!", .iov_len = 9 };
	int file = mkstemp(tmpl), other[2];
	loff_t off = 0;

	ASSERT_GE(file, 0);
	unlink(tmpl);
	ASSERT_EQ(0, pipe(other));
	ASSERT_EQ(11, write(file, "from a file", 11));

	/* file -> pipe */
	ASSERT_EQ(11, splice(file, &off, self->fds[1], NULL, 11, 0));
	/* pipe -> other pipe, without consuming */
	ASSERT_EQ(11, tee(self->fds[0], other[1], 11, 0));
	EXPECT_EQ(11, read(other[0], buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, "from a file", 11));
	/* pipe -> file */
	off = 100;
	ASSERT_EQ(11, splice(self->fds[0], NULL, file, &off, 11, 0));
	EXPECT_EQ(11, pread(file, buf, 11, 100));
	EXPECT_EQ(0, memcmp(buf, "from a file", 11));
	/* pipe -> pipe both ways */
	ASSERT_EQ(5, write(other[1], "12345", 5));
	ASSERT_EQ(5, splice(other[0], NULL, self->fds[1], NULL, 5, 0));
	ASSERT_EQ(5, splice(self->fds[0], NULL, other[1], NULL, 5, 0));
	EXPECT_EQ(5, read(other[0], buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, "12345", 5));
	/* memory -> pipe -> memory */
	ASSERT_EQ(9, vmsplice(self->fds[1], &iov, 1, 0));
	iov.iov_base = buf;
	iov.iov_len = sizeof(buf);
	ASSERT_EQ(9, vmsplice(self->fds[0], &iov, 1, 0));
	EXPECT_EQ(0, memcmp(buf, "vmsplice!", 9));
	/* Character devices, which have both ->read and ->read_iter. */
	{
		int zero = open("/dev/zero", O_RDONLY);
		int null = open("/dev/null", O_WRONLY);

		ASSERT_GE(zero, 0);
		ASSERT_GE(null, 0);
		EXPECT_EQ(4096, splice(zero, NULL, self->fds[1], NULL, 4096, 0));
		EXPECT_EQ(4096, splice(self->fds[0], NULL, null, NULL, 4096, 0));
		close(zero);
		close(null);
	}
	/* Nothing there: nonblocking splice says so. */
	EXPECT_EQ(EAGAIN, FAILS_WITH(splice(self->fds[0], NULL, other[1], NULL,
					    5, SPLICE_F_NONBLOCK)));
	close(file);
	close(other[0]);
	close(other[1]);
}

TEST(conversion_keeps_queued_bytes)
{
	struct rb_view v = { 0 };
	int fds[2];
	char buf[32];

	ASSERT_EQ(0, pipe(fds));
	ASSERT_EQ(6, write(fds[1], "queued", 6));
	ASSERT_EQ(7, write(fds[1], " before", 7));
	if (!forced_ring_mode())
		EXPECT_FALSE(in_ring_mode(fds[0], RINGBUFFER_READ));
	ASSERT_EQ(0, rb_view_map(&v, fds[0], RINGBUFFER_READ, 4096));
	EXPECT_GE(v.size, 65536);
	ASSERT_EQ(6, write(fds[1], " after", 6));
	EXPECT_EQ(19, rb_pipe_read(&v, buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, "queued before after", 19));
	rb_view_unmap(&v);
	close(fds[0]);
	close(fds[1]);
}

TEST(legacy_reader_asleep_at_conversion)
{
	int fds[2], status;
	char buf[8];
	pid_t pid;

	ASSERT_EQ(0, pipe(fds));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		/* Sleeps in the buffer path, wakes up in the ring's. */
		_exit(read(fds[0], buf, sizeof(buf)) == 3 &&
		      !memcmp(buf, "abc", 3) ? 0 : 1);
	}
	ASSERT_EQ(0, convert_pipe(fds[1], RINGBUFFER_WRITE, RING_SIZE));
	ASSERT_EQ(3, write(fds[1], "abc", 3));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	close(fds[0]);
	close(fds[1]);
}

TEST(notification_and_packet_pipes)
{
	int fds[2];
	char c = 'x', buf[4];

	/* O_NOTIFICATION_PIPE is O_EXCL. */
	if (pipe2(fds, O_EXCL) == 0) {
		EXPECT_EQ(EOPNOTSUPP, -convert_pipe(fds[0], RINGBUFFER_READ, RING_SIZE));
		close(fds[0]);
		close(fds[1]);
	}
	/*
	 * Packet mode from pipe2(): a ring cannot keep packets apart, so the
	 * pipe is never forced nor converted, and its packets stay whole.
	 */
	ASSERT_EQ(0, pipe2(fds, O_DIRECT));
	EXPECT_FALSE(in_ring_mode(fds[0], RINGBUFFER_READ));
	EXPECT_EQ(EOPNOTSUPP, -convert_pipe(fds[0], RINGBUFFER_READ, RING_SIZE));
	EXPECT_EQ(EOPNOTSUPP, -convert_pipe(fds[1], RINGBUFFER_WRITE, RING_SIZE));
	EXPECT_EQ(1, write(fds[1], &c, 1));
	EXPECT_EQ(1, write(fds[1], &c, 1));
	EXPECT_EQ(1, read(fds[0], buf, sizeof(buf)));
	close(fds[0]);
	close(fds[1]);

	/* Packet mode from fcntl() on a pipe with buffers: no ring after. */
	ASSERT_EQ(0, pipe(fds));
	if (!forced_ring_mode()) {
		EXPECT_EQ(0, fcntl(fds[1], F_SETFL, O_DIRECT));
		EXPECT_EQ(EOPNOTSUPP, -convert_pipe(fds[0], RINGBUFFER_READ, RING_SIZE));
		close(fds[0]);
		close(fds[1]);
		ASSERT_EQ(0, pipe(fds));
	}

	/* On a pipe in ring mode packet mode is refused: a byte stream it stays. */
	ASSERT_EQ(0, convert_pipe(fds[0], RINGBUFFER_READ, RING_SIZE));
	EXPECT_EQ(EINVAL, FAILS_WITH(fcntl(fds[1], F_SETFL, O_DIRECT)));
	EXPECT_FALSE(fcntl(fds[1], F_GETFL) & O_DIRECT);
	EXPECT_EQ(1, write(fds[1], &c, 1));
	EXPECT_EQ(1, write(fds[1], &c, 1));
	EXPECT_EQ(2, read(fds[0], buf, sizeof(buf)));
	close(fds[0]);
	close(fds[1]);
}

TEST(fifo_ring_mode_and_reopen)
{
	char path[64], buf[8];
	struct rb_view v = { 0 };
	int rd, wr;

	snprintf(path, sizeof(path), "/tmp/rb-fifo-%d", getpid());
	ASSERT_EQ(0, mkfifo(path, 0600));
	rd = open(path, O_RDONLY | O_NONBLOCK);
	ASSERT_GE(rd, 0);
	wr = open(path, O_WRONLY);
	ASSERT_GE(wr, 0);
	ASSERT_EQ(0, rb_view_map(&v, rd, RINGBUFFER_READ, 4096));
	ASSERT_EQ(4, write(wr, "fifo", 4));
	EXPECT_EQ(4, rb_pipe_read(&v, buf, sizeof(buf)));
	close(wr);
	EXPECT_TRUE(atomic_load(v.flags) & RINGBUFFER_EOF);
	EXPECT_EQ(0, rb_pipe_read(&v, buf, sizeof(buf)));
	/* A new writer: no longer at end of file. */
	wr = open(path, O_WRONLY);
	ASSERT_GE(wr, 0);
	EXPECT_FALSE(atomic_load(v.flags) & RINGBUFFER_EOF);
	ASSERT_EQ(2, write(wr, "ok", 2));
	EXPECT_EQ(2, rb_pipe_read(&v, buf, sizeof(buf)));
	rb_view_unmap(&v);
	close(rd);
	close(wr);
	unlink(path);
}

TEST(unconverted_pipe_has_no_ring)
{
	long before = rb_live_rings();
	int fds[2];
	char buf[100] = { 0 };

	if (forced_ring_mode())
		SKIP(return, "every pipe has a ring in forced mode");
	ASSERT_GE(before, 0);
	ASSERT_EQ(0, pipe(fds));
	ASSERT_EQ(100, write(fds[1], buf, 100));
	ASSERT_EQ(100, read(fds[0], buf, 100));
	EXPECT_EQ(before, rb_live_rings());
	EXPECT_FALSE(in_ring_mode(fds[0], RINGBUFFER_READ));
	EXPECT_EQ(EINVAL, FAILS_WITH(sys_ringbuffer_wakeup(fds[1],
					RINGBUFFER_WRITE, 0)));
	close(fds[0]);
	close(fds[1]);
	EXPECT_EQ(before, rb_live_rings());
}

TEST(forced_mode_rings_every_pipe)
{
	long before = rb_live_rings();
	int fds[2];

	if (!forced_ring_mode())
		SKIP(return, "fs.pipe-ring-force is 0");
	ASSERT_EQ(0, pipe(fds));
	EXPECT_TRUE(in_ring_mode(fds[0], RINGBUFFER_READ));
	EXPECT_EQ(before + 1, rb_live_rings());
	close(fds[0]);
	close(fds[1]);
	EXPECT_EQ(before, rb_live_rings());
}

/*
 * Ping-pong across two pipes, one byte each way, with one end of each
 * through the ring, and the other end waiting in read(2), poll(2) or
 * epoll_wait(2) by turns: every round needs a wake-up of a sleeper, so
 * a single lost one hangs the test into its timeout.
 */
TEST_F_TIMEOUT(pipe, no_lost_wakeup_ping_pong, 240)
{
	const int rounds = 3000;
	int back[2], status;
	struct end br, bw;
	pid_t pid;

	ASSERT_EQ(0, pipe(back));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int ep = epoll_create1(0);
		struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
		struct pollfd pfd = { .fd = self->fds[0], .events = POLLIN };
		char c;

		/* The echo side: legacy on the back pipe, reader end as set up. */
		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, self->fds[0], &ev))
			_exit(10);
		if (end_init(&bw, back[1], RINGBUFFER_WRITE, false))
			_exit(11);
		for (int i = 0; i < rounds; i++) {
			if (i % 3 == 1 && poll(&pfd, 1, -1) != 1)
				_exit(12);
			if (i % 3 == 2 && epoll_wait(ep, &ev, 1, -1) != 1)
				_exit(13);
			if (end_read(&self->r, &c, 1) != 1)
				_exit(14);
			if (end_write(&bw, &c, 1) != 1)
				_exit(15);
		}
		_exit(0);
	}
	/* This side: the writer end as set up, and a ring reader on back. */
	ASSERT_EQ(0, end_init(&br, back[0], RINGBUFFER_READ, true));
	for (int i = 0; i < rounds; i++) {
		char c = (char)i, got;

		ASSERT_EQ(1, end_write(&self->w, &c, 1));
		ASSERT_EQ(1, end_read(&br, &got, 1));
		ASSERT_EQ(c, got);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	rb_view_unmap(&br.v);
	close(back[0]);
	close(back[1]);
}

TEST(ring_charged_like_pipe_buffers)
{
	const char *hard = "/proc/sys/fs/pipe-user-pages-hard";
	char old[32] = "0";
	int fds[2], status;
	FILE *f = fopen(hard, "r");
	pid_t pid;

	if (forced_ring_mode())
		SKIP(return, "pipes of forced mode are charged at creation");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(old, sizeof(old), f));
	fclose(f);
	/* The limit is set as root, for the unprivileged child. */
	f = fopen(hard, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "20\n");
	fclose(f);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct rb_view v;
		char buf[4];

		if (setgid(65534) || setuid(65534) || pipe(fds))
			_exit(10);
		/* 16 pages for the pipe; a 32-page ring goes over 20. */
		if (rb_view_map(&v, fds[0], RINGBUFFER_READ, 131072) != -EPERM)
			_exit(12);
		/* The pipe works on, in buffer mode. */
		if (in_ring_mode(fds[0], RINGBUFFER_READ))
			_exit(13);
		if (write(fds[1], "abc", 3) != 3 || read(fds[0], buf, 3) != 3)
			_exit(14);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	f = fopen(hard, "w");
	ASSERT_NE(NULL, f);
	fputs(old, f);
	fclose(f);
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/*
 * Records for the many-process tests: a header with length, writer and
 * sequence number, then bytes that depend on all three.
 */
struct record {
	uint16_t len;
	uint16_t writer;
	uint32_t seq;
};

static size_t record_make(uint8_t *buf, unsigned int writer, uint32_t seq,
			  size_t len)
{
	struct record r = { (uint16_t)len, (uint16_t)writer, seq };

	memcpy(buf, &r, sizeof(r));
	for (size_t i = sizeof(r); i < len; i++)
		buf[i] = (uint8_t)(writer * 31 + seq * 7 + i);
	return len;
}

static bool record_ok(const uint8_t *buf, struct record *r)
{
	memcpy(r, buf, sizeof(*r));
	if (r->len < sizeof(*r) || r->len > PIPE_BUF_BYTES)
		return false;
	for (size_t i = sizeof(*r); i < r->len; i++)
		if (buf[i] != (uint8_t)(r->writer * 31 + r->seq * 7 + i))
			return false;
	return true;
}

/* A whole record at the front of @stream (@have bytes)?  Its header in @rec. */
static bool record_ready(const uint8_t *stream, size_t have, struct record *rec)
{
	if (have < sizeof(*rec))
		return false;
	memcpy(rec, stream, sizeof(*rec));
	return have >= rec->len;
}

/* Drop the record at the front of @stream. */
static void record_drop(uint8_t *stream, size_t *have, size_t len)
{
	memmove(stream, stream + len, *have - len);
	*have -= len;
}

/* Writer @id (ring or legacy) writes @count records of random size. */
static pid_t spawn_record_writer(int fd, bool ring, unsigned int id,
				 uint32_t count, bool fixed_size)
{
	pid_t pid = fork();

	if (pid == 0) {
		uint8_t buf[PIPE_BUF_BYTES];
		uint32_t seed = id * 2654435761u + 1;
		struct end w = { 0 };

		if (end_init(&w, fd, RINGBUFFER_WRITE, ring))
			_exit(10);
		for (uint32_t seq = 0; seq < count; seq++) {
			size_t len = fixed_size ? 64 : sizeof(struct record) +
				(seed = seed * 1103515245 + 12345) %
				(PIPE_BUF_BYTES - sizeof(struct record) + 1);

			record_make(buf, id, seq, len);
			if (end_write(&w, buf, len) != (long)len)
				_exit(11);
		}
		_exit(0);
	}
	return pid;
}

FIXTURE(many) {
	int fds[2];
};

FIXTURE_VARIANT(many) {
	bool ring_reader;
};

FIXTURE_VARIANT_ADD(many, ring_reader) { .ring_reader = true };
FIXTURE_VARIANT_ADD(many, legacy_reader) { .ring_reader = false };

FIXTURE_SETUP(many)
{
	signal(SIGPIPE, SIG_IGN);
	ASSERT_EQ(0, pipe(self->fds));
	ASSERT_EQ(0, convert_pipe(self->fds[1], RINGBUFFER_WRITE, RING_SIZE));
}

FIXTURE_TEARDOWN(many)
{
	close(self->fds[0]);
	if (self->fds[1] >= 0)
		close(self->fds[1]);
}

#define WRITERS 8
#define RECORDS 300

/* Eight writers, half ring, half legacy; one reader checks every record. */
TEST_F_TIMEOUT(many, writers_never_tear_or_lose, 300)
{
	static uint8_t stream[2 * PIPE_BUF_BYTES];
	uint32_t next[WRITERS] = { 0 };
	size_t have = 0, records = 0;
	struct end r = { 0 };
	long n;

	for (unsigned int i = 0; i < WRITERS; i++)
		ASSERT_GT(spawn_record_writer(self->fds[1], i & 1, i, RECORDS,
					      false), 0);
	close(self->fds[1]);
	self->fds[1] = -1;
	ASSERT_EQ(0, end_init(&r, self->fds[0], RINGBUFFER_READ,
			      variant->ring_reader));
	while ((n = end_read(&r, stream + have, sizeof(stream) - have)) > 0) {
		have += n;
		struct record rec;

		while (record_ready(stream, have, &rec)) {
			ASSERT_TRUE(record_ok(stream, &rec))
				TH_LOG("torn record after %zu", records);
			ASSERT_LT(rec.writer, WRITERS);
			ASSERT_EQ(next[rec.writer], rec.seq)
				TH_LOG("writer %u lost or reordered", rec.writer);
			next[rec.writer]++;
			records++;
			record_drop(stream, &have, rec.len);
		}
	}
	EXPECT_EQ(0, n);
	EXPECT_EQ(0, have);
	EXPECT_EQ(WRITERS * RECORDS, records);
	for (int i = 0; i < WRITERS; i++)
		EXPECT_EQ(RECORDS, next[i]);
	while (wait(NULL) > 0)
		;
	if (r.ring)
		rb_view_unmap(&r.v);
}

#define READERS 4

/*
 * Fixed-size records, so that every read of one record's size takes a
 * whole record: four readers (mixed) share the read side, each reports
 * what it saw through a result pipe; every record is seen exactly once.
 */
TEST_F_TIMEOUT(many, readers_share_the_read_side, 300)
{
	static uint8_t seen[WRITERS][RECORDS];
	int results[2];
	struct { uint16_t writer; uint16_t ok; uint32_t seq; } note;

	ASSERT_EQ(0, pipe(results));
	for (unsigned int i = 0; i < READERS; i++) {
		if (fork() == 0) {
			uint8_t buf[64];
			struct record rec = { 0 };
			struct end r = { 0 };
			long n;

			close(results[0]);
			close(self->fds[1]);
			if (end_init(&r, self->fds[0], RINGBUFFER_READ,
				     (i & 1) == variant->ring_reader))
				_exit(10);
			while ((n = end_read(&r, buf, sizeof(buf))) > 0) {
				note.ok = n == 64 && record_ok(buf, &rec);
				note.writer = rec.writer;
				note.seq = rec.seq;
				if (write(results[1], &note, sizeof(note)) != sizeof(note))
					_exit(11);
			}
			_exit(n == 0 ? 0 : 12);
		}
	}
	close(results[1]);
	for (unsigned int i = 0; i < WRITERS; i++)
		ASSERT_GT(spawn_record_writer(self->fds[1], i & 1, i, RECORDS,
					      true), 0);
	close(self->fds[1]);
	self->fds[1] = -1;
	close(self->fds[0]);
	self->fds[0] = open("/dev/null", O_RDONLY);
	for (size_t total = 0; total < WRITERS * RECORDS; total++) {
		ASSERT_EQ(sizeof(note), read(results[0], &note, sizeof(note)));
		ASSERT_TRUE(note.ok) TH_LOG("torn record");
		ASSERT_LT(note.writer, WRITERS);
		ASSERT_LT(note.seq, RECORDS);
		ASSERT_EQ(0, seen[note.writer][note.seq]) TH_LOG("duplicate");
		seen[note.writer][note.seq] = 1;
	}
	EXPECT_EQ(0, read(results[0], &note, sizeof(note)));
	close(results[0]);
	while (wait(NULL) > 0)
		;
}

/*
 * A jobserver: processes take one-byte tokens and give them back, half of
 * them through the ring.  No token is lost or made up.
 */
TEST_F_TIMEOUT(many, jobserver_tokens, 300)
{
	const int tokens = 8, workers = 6, rounds = 200;
	char buf[64];
	int status, left = 0;
	ssize_t n;

	ASSERT_EQ(tokens, write(self->fds[1], "++++++++", tokens));
	for (int i = 0; i < workers; i++) {
		if (fork() == 0) {
			struct end r = { 0 }, w = { 0 };
			char t;

			if (end_init(&r, self->fds[0], RINGBUFFER_READ, i & 1) ||
			    end_init(&w, self->fds[1], RINGBUFFER_WRITE, i & 2))
				_exit(10);
			for (int k = 0; k < rounds; k++) {
				if (end_read(&r, &t, 1) != 1)
					_exit(11);
				if (end_write(&w, &t, 1) != 1)
					_exit(12);
			}
			_exit(0);
		}
	}
	for (int i = 0; i < workers; i++) {
		ASSERT_GT(wait(&status), 0);
		EXPECT_EQ(0, status);
	}
	ASSERT_EQ(0, fcntl(self->fds[0], F_SETFL, O_NONBLOCK));
	while ((n = read(self->fds[0], buf, sizeof(buf))) > 0)
		left += n;
	EXPECT_EQ(tokens, left);
}

/*
 * Ring writers are killed with SIGKILL at random points, some while they
 * hold the producer lock, while two legacy writers go on: the pipe never
 * hangs, no record is torn, and the steady writers lose nothing.
 */
TEST_F_TIMEOUT(many, killed_ring_writers, 300)
{
	static uint8_t stream[2 * PIPE_BUF_BYTES];
	uint32_t next[WRITERS] = { 0 };
	size_t have = 0;
	uint32_t seed = 99;
	int reader[2];
	long n;

	/* The reader is a child; the parent kills and counts. */
	ASSERT_EQ(0, pipe(reader));
	if (fork() == 0) {
		struct end r = { 0 };
		uint32_t counts[2] = { 0, 0 };

		close(self->fds[1]);
		close(reader[0]);
		if (end_init(&r, self->fds[0], RINGBUFFER_READ,
			     variant->ring_reader))
			_exit(10);
		while ((n = end_read(&r, stream + have, sizeof(stream) - have)) > 0) {
			have += n;
			struct record rec;

			while (record_ready(stream, have, &rec)) {
				if (!record_ok(stream, &rec) || rec.writer >= WRITERS)
					_exit(11);
				if (rec.writer < 2) {
					if (next[rec.writer] != rec.seq)
						_exit(12);
					next[rec.writer]++;
				}
				record_drop(stream, &have, rec.len);
			}
		}
		counts[0] = next[0];
		counts[1] = next[1];
		_exit(write(reader[1], counts, sizeof(counts)) == sizeof(counts) &&
		      n == 0 && have == 0 ? 0 : 13);
	}
	close(reader[1]);
	close(self->fds[0]);
	self->fds[0] = open("/dev/null", O_RDONLY);

	pid_t steady[2] = {
		spawn_record_writer(self->fds[1], false, 0, 2000, false),
		spawn_record_writer(self->fds[1], false, 1, 2000, false),
	};
	for (int k = 0; k < 30; k++) {
		pid_t victim = spawn_record_writer(self->fds[1], true,
						   2 + k % 6, 100000, false);
		struct timespec t = { 0, 1000000 + (seed = seed * 1103515245 + 12345) % 20000000 };

		ASSERT_GT(victim, 0);
		/* A random point in its life: not synchronisation. */
		nanosleep(&t, NULL);
		kill(victim, SIGKILL);
		ASSERT_EQ(victim, waitpid(victim, NULL, 0));
	}
	for (int i = 0; i < 2; i++) {
		int status;

		ASSERT_EQ(steady[i], waitpid(steady[i], &status, 0));
		EXPECT_EQ(0, status);
	}
	close(self->fds[1]);
	self->fds[1] = -1;
	{
		uint32_t counts[2];
		int status;

		ASSERT_EQ(sizeof(counts), read(reader[0], counts, sizeof(counts)));
		EXPECT_EQ(2000, counts[0]);
		EXPECT_EQ(2000, counts[1]);
		ASSERT_GT(wait(&status), 0);
		EXPECT_EQ(0, status);
	}
	close(reader[0]);
}

TEST_HARNESS_MAIN
