// SPDX-License-Identifier: GPL-2.0
/*
 * A pipe in ring mode must look like a plain pipe to every program that
 * never calls ringbuffer(2).  Each test runs on a plain pipe (the reference
 * behaviour of fs/pipe.c, unless every pipe is forced into ring mode) and
 * on a pipe converted to ring mode whose ring nobody maps, and asserts the
 * result pipe(7), splice(2), vmsplice(2), fcntl(2), epoll(7) and signal(7)
 * document.  Waits that could hang run under alarm(); "asleep" is read
 * from /proc, never guessed with a sleep.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ringbuffer_util.h"
#include "kselftest_harness.h"

#define RING_SIZE	65536
#define CAPACITY	65536	/* a new pipe's, and the converted ring's */

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* Whether thread @tid of this process is asleep ('S') right now. */
static bool thread_asleep(pid_t tid)
{
	char path[64], buf[256], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

/* Wait until thread *@tid (set by the thread itself) sleeps. */
static void wait_asleep(_Atomic pid_t *tid)
{
	const struct timespec tick = { 0, 1000000 };

	while (!atomic_load(tid) || !thread_asleep(atomic_load(tid)))
		nanosleep(&tick, NULL);
	/* Asleep once could be a page fault: it must stay asleep. */
	for (int i = 0; i < 20; i++) {
		nanosleep(&tick, NULL);
		if (!thread_asleep(atomic_load(tid)))
			i = 0;
	}
}

static void fill(uint8_t *buf, size_t len, size_t pos)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)((pos + i) * 131 + 7);
}

static long check(const uint8_t *buf, size_t len, size_t pos)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != (uint8_t)((pos + i) * 131 + 7))
			return (long)i;
	return -1;
}

static ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, (char *)buf + done, len - done);

		if (n <= 0)
			return n < 0 ? -errno : (ssize_t)done;
		done += n;
	}
	return done;
}

FIXTURE(compat) {
	int fds[2];
};

FIXTURE_VARIANT(compat) {
	bool ring;
};

FIXTURE_VARIANT_ADD(compat, plain) { .ring = false };
FIXTURE_VARIANT_ADD(compat, ring) { .ring = true };

FIXTURE_SETUP(compat)
{
	signal(SIGPIPE, SIG_IGN);
	ASSERT_EQ(0, pipe(self->fds));
	if (variant->ring)
		ASSERT_EQ(0, convert_pipe(self->fds[1], RINGBUFFER_WRITE, RING_SIZE));
	ASSERT_EQ(variant->ring || forced_ring_mode(),
		  in_ring_mode(self->fds[0], RINGBUFFER_READ));
	alarm(60);
}

FIXTURE_TEARDOWN(compat)
{
	alarm(0);
	if (self->fds[0] >= 0)
		close(self->fds[0]);
	if (self->fds[1] >= 0)
		close(self->fds[1]);
}

/* fcntl(2): F_SETPIPE_SZ, F_GETPIPE_SZ, and what is queued survives. */
TEST_F(compat, setpipe_sz_resizes_and_keeps_data)
{
	static uint8_t buf[20000];
	int avail = -1;

	EXPECT_EQ(CAPACITY, fcntl(self->fds[0], F_GETPIPE_SZ));
	fill(buf, 10000, 0);
	ASSERT_EQ(10000, write(self->fds[1], buf, 10000));

	EXPECT_EQ(1 << 20, fcntl(self->fds[1], F_SETPIPE_SZ, 1 << 20));
	EXPECT_EQ(1 << 20, fcntl(self->fds[0], F_GETPIPE_SZ));
	ASSERT_EQ(0, ioctl(self->fds[0], FIONREAD, &avail));
	EXPECT_EQ(10000, avail);
	/* Too small for what is queued. */
	EXPECT_EQ(EBUSY, FAILS_WITH(fcntl(self->fds[1], F_SETPIPE_SZ, 4096)));
	EXPECT_EQ(1 << 20, fcntl(self->fds[0], F_GETPIPE_SZ));
	/* Rounded up to a power of two pages; 0 is one page. */
	EXPECT_EQ(16384, fcntl(self->fds[1], F_SETPIPE_SZ, 12289));
	EXPECT_EQ(EINVAL, FAILS_WITH(fcntl(self->fds[1], F_SETPIPE_SZ,
					   (1U << 31) + 1)));

	fill(buf + 10000, 5000, 10000);
	EXPECT_EQ(5000, write(self->fds[1], buf + 10000, 5000));
	memset(buf, 0, sizeof(buf));
	ASSERT_EQ(15000, read_full(self->fds[0], buf, 15000));
	EXPECT_EQ(-1, check(buf, 15000, 0));
	EXPECT_EQ(4096, fcntl(self->fds[1], F_SETPIPE_SZ, 0));
	EXPECT_EQ(4096, fcntl(self->fds[0], F_GETPIPE_SZ));
	/* A full one-page pipe takes PIPE_BUF and no more, nonblocking. */
	ASSERT_EQ(0, fcntl(self->fds[1], F_SETFL, O_NONBLOCK));
	EXPECT_EQ(4096, write(self->fds[1], buf, 4096));
	EXPECT_EQ(EAGAIN, FAILS_WITH(write(self->fds[1], buf, 1)));
}

static void setpipe_sz_as_nobody(void *arg)
{
	int *fds = arg;
	long max = 0;
	FILE *f = fopen("/proc/sys/fs/pipe-max-size", "r");

	if (!f || fscanf(f, "%ld", &max) != 1)
		_exit(10);
	fclose(f);
	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		_exit(11);
	if (fcntl(fds[1], F_SETPIPE_SZ, (int)max * 2) != -1 || errno != EPERM)
		_exit(12);
	if (fcntl(fds[1], F_SETPIPE_SZ, (int)max) != max)
		_exit(13);
	_exit(0);
}

TEST_F(compat, setpipe_sz_limits_for_the_unprivileged)
{
	int status;
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0)
		setpipe_sz_as_nobody(self->fds);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

struct blocked_read {
	int fd;
	_Atomic pid_t tid;
	ssize_t ret;
	char buf[16];
};

static void *blocked_read_thread(void *arg)
{
	struct blocked_read *b = arg;

	atomic_store(&b->tid, gettid_());
	b->ret = read(b->fd, b->buf, sizeof(b->buf));
	return NULL;
}

/* A reader asleep across a resize gets what is written after it. */
TEST_F(compat, setpipe_sz_with_a_reader_asleep)
{
	struct blocked_read b = { .fd = self->fds[0] };
	pthread_t t;

	ASSERT_EQ(0, pthread_create(&t, NULL, blocked_read_thread, &b));
	wait_asleep(&b.tid);
	EXPECT_EQ(1 << 18, fcntl(self->fds[1], F_SETPIPE_SZ, 1 << 18));
	ASSERT_EQ(3, write(self->fds[1], "abc", 3));
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(3, b.ret);
	EXPECT_EQ(0, memcmp(b.buf, "abc", 3));
}

/* Documented refusal: a mapping cannot follow a new size. */
TEST(setpipe_sz_refused_only_while_mapped)
{
	struct rb_view v = { 0 };
	int fds[2];

	ASSERT_EQ(0, pipe(fds));
	ASSERT_EQ(0, rb_view_map(&v, fds[0], RINGBUFFER_READ, RING_SIZE));
	EXPECT_EQ(EBUSY, FAILS_WITH(fcntl(fds[1], F_SETPIPE_SZ, 1 << 20)));
	EXPECT_EQ(RING_SIZE, fcntl(fds[1], F_GETPIPE_SZ));
	ASSERT_EQ(0, rb_view_unmap(&v));
	EXPECT_EQ(1 << 20, fcntl(fds[1], F_SETPIPE_SZ, 1 << 20));
	/* Mapped again, the new size shows. */
	ASSERT_EQ(0, rb_view_map(&v, fds[0], RINGBUFFER_READ, RING_SIZE));
	EXPECT_EQ(1U << 20, v.size);
	ASSERT_EQ(0, rb_view_unmap(&v));
	close(fds[0]);
	close(fds[1]);
}

/* vmsplice(2) into a pipe the caller itself reads: a partial count. */
TEST_F(compat, vmsplice_returns_what_fit)
{
	static uint8_t buf[4 * CAPACITY];
	struct iovec iov = { buf, sizeof(buf) };
	ssize_t n;

	fill(buf, sizeof(buf), 0);
	n = vmsplice(self->fds[1], &iov, 1, 0);
	ASSERT_LT(0, n);
	EXPECT_LE(n, CAPACITY);
	iov.iov_base = buf + n;
	iov.iov_len = sizeof(buf) - n;
	EXPECT_EQ(EAGAIN, FAILS_WITH(vmsplice(self->fds[1], &iov, 1,
					     SPLICE_F_NONBLOCK)));
	{
		static uint8_t back[4 * CAPACITY];

		ASSERT_EQ(n, read_full(self->fds[0], back, n));
		EXPECT_EQ(-1, check(back, n, 0));
	}
}

struct epoll_waiter {
	int pipe_fd;
	int epfd;
	_Atomic pid_t tid;
	_Atomic int *woken;
};

static void *epoll_waiter_thread(void *arg)
{
	struct epoll_waiter *w = arg;
	struct epoll_event ev;

	atomic_store(&w->tid, gettid_());
	if (epoll_wait(w->epfd, &ev, 1, -1) == 1)
		atomic_fetch_add(w->woken, 1);
	return NULL;
}

/* epoll(7): one event wakes one EPOLLEXCLUSIVE waiter. */
TEST_F(compat, epollexclusive_wakes_one_waiter)
{
	const struct timespec tick = { 0, 1000000 };
	struct epoll_waiter w[6];
	_Atomic int woken = 0;
	pthread_t t[6];

	for (int i = 0; i < 6; i++) {
		struct epoll_event ev = {
			.events = EPOLLIN | EPOLLEXCLUSIVE,
		};

		w[i].pipe_fd = self->fds[0];
		w[i].epfd = epoll_create1(0);
		w[i].woken = &woken;
		atomic_store(&w[i].tid, 0);
		ASSERT_LE(0, w[i].epfd);
		ASSERT_EQ(0, epoll_ctl(w[i].epfd, EPOLL_CTL_ADD, self->fds[0], &ev));
		ASSERT_EQ(0, pthread_create(&t[i], NULL, epoll_waiter_thread, &w[i]));
	}
	for (int i = 0; i < 6; i++)
		wait_asleep(&w[i].tid);
	ASSERT_EQ(1, write(self->fds[1], "x", 1));
	while (!atomic_load(&woken))
		nanosleep(&tick, NULL);
	/* A second wake-up, if any, would come at once; give it 300 ms. */
	for (int i = 0; i < 300; i++)
		nanosleep(&tick, NULL);
	EXPECT_EQ(1, atomic_load(&woken));
	/* The end of the writer wakes everybody. */
	close(self->fds[1]);
	self->fds[1] = -1;
	for (int i = 0; i < 6; i++) {
		pthread_join(t[i], NULL);
		close(w[i].epfd);
	}
	EXPECT_EQ(6, atomic_load(&woken));
}

struct splice_job {
	int in, out;
	size_t len;
	unsigned int flags;
	_Atomic pid_t tid;
	ssize_t ret;
	int err;
};

static void *splice_thread(void *arg)
{
	struct splice_job *j = arg;

	atomic_store(&j->tid, gettid_());
	j->ret = splice(j->in, NULL, j->out, NULL, j->len, j->flags);
	j->err = j->ret < 0 ? errno : 0;
	return NULL;
}

static void *tee_thread(void *arg)
{
	struct splice_job *j = arg;

	atomic_store(&j->tid, gettid_());
	j->ret = tee(j->in, j->out, j->len, j->flags);
	j->err = j->ret < 0 ? errno : 0;
	return NULL;
}

/*
 * splice(2) into a socket, asleep on an empty pipe that converts under
 * it: the byte written after the conversion arrives, with no spinning.
 */
TEST(splice_to_socket_across_conversion)
{
	struct splice_job j = { .len = 100 };
	int fds[2], sv[2];
	pthread_t t;
	char c = 0;

	alarm(60);
	ASSERT_EQ(0, pipe(fds));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	j.in = fds[0];
	j.out = sv[0];
	ASSERT_EQ(0, pthread_create(&t, NULL, splice_thread, &j));
	wait_asleep(&j.tid);
	ASSERT_EQ(0, convert_pipe(fds[1], RINGBUFFER_WRITE, RING_SIZE));
	/* Converted and still empty: it must go back to sleep, not spin. */
	wait_asleep(&j.tid);
	ASSERT_EQ(1, write(fds[1], "x", 1));
	close(fds[1]);
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(1, j.ret);
	EXPECT_EQ(1, read(sv[1], &c, 1));
	EXPECT_EQ('x', c);
	close(fds[0]);
	close(sv[0]);
	close(sv[1]);
	alarm(0);
}

/* splice(2) and tee(2) on a pipe that converts under them: no EAGAIN. */
TEST(blocking_splice_and_tee_across_conversion)
{
	for (int use_tee = 0; use_tee < 2; use_tee++) {
		struct splice_job j = { .len = 100 };
		int fds[2], out[2];
		char buf[8] = { 0 };
		pthread_t t;

		alarm(60);
		ASSERT_EQ(0, pipe(fds));
		ASSERT_EQ(0, pipe(out));
		j.in = fds[0];
		j.out = out[1];
		ASSERT_EQ(0, pthread_create(&t, NULL,
					    use_tee ? tee_thread : splice_thread, &j));
		wait_asleep(&j.tid);
		ASSERT_EQ(0, convert_pipe(fds[1], RINGBUFFER_WRITE, RING_SIZE));
		ASSERT_EQ(3, write(fds[1], "abc", 3));
		ASSERT_EQ(0, pthread_join(t, NULL));
		EXPECT_EQ(3, j.ret) TH_LOG("%s: %s", use_tee ? "tee" : "splice",
					   strerror(j.err));
		EXPECT_EQ(3, read(out[0], buf, sizeof(buf)));
		EXPECT_EQ(0, memcmp(buf, "abc", 3));
		for (int i = 0; i < 2; i++) {
			close(fds[i]);
			close(out[i]);
		}
		alarm(0);
	}
}

/*
 * sendfile(2) from a pipe is refused (pipes have no splice_read), in ring
 * mode too, and it never leaves the writers stalled.
 */
TEST_F(compat, sendfile_from_a_pipe_is_refused)
{
	off_t off = 0;

	EXPECT_EQ(EINVAL, FAILS_WITH(sendfile(self->fds[1], self->fds[0], NULL, 100)));
	EXPECT_EQ(ESPIPE, FAILS_WITH(sendfile(self->fds[1], self->fds[0], &off, 100)));
	EXPECT_EQ(5, write(self->fds[1], "hello", 5));
}

struct mover {
	int in, out;
	size_t total;
	ssize_t err;
};

static void *mover_thread(void *arg)
{
	struct mover *m = arg;
	size_t moved = 0;

	while (moved < m->total) {
		size_t want = m->total - moved < 4096 ? m->total - moved : 4096;
		ssize_t n = splice(m->in, NULL, m->out, NULL, want, 0);

		if (n <= 0) {
			m->err = n < 0 ? -errno : -EPIPE;
			return NULL;
		}
		moved += n;
	}
	return NULL;
}

/* splice(2) both ways between two pipes at once: no deadlock. */
TEST_F(compat, splice_both_ways_between_two_pipes)
{
	static uint8_t buf[16384];
	struct mover ab = { .total = 1 << 20 }, ba = { .total = 1 << 20 };
	int other[2];
	pthread_t t1, t2;

	ASSERT_EQ(0, pipe(other));
	if (variant->ring)
		ASSERT_EQ(0, convert_pipe(other[0], RINGBUFFER_READ, RING_SIZE));
	fill(buf, sizeof(buf), 0);
	ASSERT_EQ((ssize_t)sizeof(buf), write(self->fds[1], buf, sizeof(buf)));
	ab.in = self->fds[0];
	ab.out = other[1];
	ba.in = other[0];
	ba.out = self->fds[1];
	ASSERT_EQ(0, pthread_create(&t1, NULL, mover_thread, &ab));
	ASSERT_EQ(0, pthread_create(&t2, NULL, mover_thread, &ba));
	ASSERT_EQ(0, pthread_join(t1, NULL));
	ASSERT_EQ(0, pthread_join(t2, NULL));
	EXPECT_EQ(0, ab.err);
	EXPECT_EQ(0, ba.err);
	memset(buf, 0, sizeof(buf));
	ASSERT_EQ((ssize_t)sizeof(buf), read_full(self->fds[0], buf, sizeof(buf)));
	EXPECT_EQ(-1, check(buf, sizeof(buf), 0));
	close(other[0]);
	close(other[1]);
}

/*
 * splice(2) and tee(2) never see end of file while a writer's last data
 * is in the pipe, however the writer's exit and the call interleave.
 */
TEST_F(compat, splice_and_tee_see_the_last_data_before_eof)
{
	static uint8_t buf[3000];
	int devnull = open("/dev/null", O_WRONLY);

	ASSERT_LE(0, devnull);
	fill(buf, sizeof(buf), 0);
	for (int round = 0; round < 100; round++) {
		int fds[2], sink[2];
		size_t got = 0;
		pid_t pid;
		ssize_t n;

		ASSERT_EQ(0, pipe(fds));
		ASSERT_EQ(0, pipe(sink));
		if (variant->ring)
			ASSERT_EQ(0, convert_pipe(fds[1], RINGBUFFER_WRITE, RING_SIZE));
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			close(fds[0]);
			_exit(write(fds[1], buf, sizeof(buf)) != sizeof(buf));
		}
		close(fds[1]);
		if (round & 1) {
			/* tee first: it must not return 0 with data queued. */
			n = tee(fds[0], sink[1], sizeof(buf), 0);
			ASSERT_LT(0, n);
		}
		while ((n = splice(fds[0], NULL, devnull, NULL, sizeof(buf), 0)) > 0)
			got += n;
		EXPECT_EQ(0, n);
		EXPECT_EQ(sizeof(buf), got);
		waitpid(pid, NULL, 0);
		close(fds[0]);
		close(sink[0]);
		close(sink[1]);
		if (got != sizeof(buf))
			break;
	}
	close(devnull);
}

struct poller {
	int fd;
	_Atomic pid_t tid;
	int ret;
	short revents;
};

static void *poll_thread(void *arg)
{
	struct poller *p = arg;
	struct pollfd pfd = { .fd = p->fd, .events = POLLIN };

	atomic_store(&p->tid, gettid_());
	p->ret = poll(&pfd, 1, -1);
	p->revents = pfd.revents;
	return NULL;
}

/* poll(2) asleep on a pipe that converts: the data wakes it. */
TEST(poll_across_conversion)
{
	for (int round = 0; round < 20; round++) {
		struct poller p = { 0 };
		int fds[2];
		pthread_t t;

		alarm(60);
		ASSERT_EQ(0, pipe(fds));
		p.fd = fds[0];
		ASSERT_EQ(0, pthread_create(&t, NULL, poll_thread, &p));
		if (round & 1)
			wait_asleep(&p.tid);
		ASSERT_EQ(0, convert_pipe(fds[1], RINGBUFFER_WRITE, RING_SIZE));
		ASSERT_EQ(1, write(fds[1], "x", 1));
		ASSERT_EQ(0, pthread_join(t, NULL));
		EXPECT_EQ(1, p.ret);
		EXPECT_TRUE(p.revents & POLLIN);
		close(fds[0]);
		close(fds[1]);
		alarm(0);
	}
}

static _Atomic int signals_seen;

static void count_signal(int sig)
{
	(void)sig;
	atomic_fetch_add(&signals_seen, 1);
}

/*
 * signal(7), SA_RESTART: read(2) on a pipe restarts after the handler,
 * also while it waits for the consumer lock that a mapping holds.
 */
TEST(sa_restart_read_never_sees_eintr)
{
	struct sigaction sa = { .sa_handler = count_signal, .sa_flags = SA_RESTART };
	struct blocked_read b = { 0 };
	struct rb_view v = { 0 };
	int fds[2];
	pthread_t t;

	alarm(60);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, pipe(fds));
	ASSERT_EQ(0, rb_view_map(&v, fds[0], RINGBUFFER_READ, RING_SIZE));
	/* Hold the consumer lock as a ring user in this process would. */
	atomic_store(v.consumer_lock, (uint32_t)gettid_());
	ASSERT_EQ(3, write(fds[1], "abc", 3));
	b.fd = fds[0];
	ASSERT_EQ(0, pthread_create(&t, NULL, blocked_read_thread, &b));
	wait_asleep(&b.tid);
	for (int i = 0; i < 5; i++) {
		int before = atomic_load(&signals_seen);

		ASSERT_EQ(0, syscall(SYS_tgkill, getpid(), b.tid, SIGUSR1));
		while (atomic_load(&signals_seen) == before)
			sched_yield();
		wait_asleep(&b.tid);
	}
	rb_side_unlock(&v);
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(3, b.ret) TH_LOG("read: %s", strerror(errno));
	EXPECT_EQ(0, memcmp(b.buf, "abc", 3));
	rb_view_unmap(&v);
	close(fds[0]);
	close(fds[1]);
	signal(SIGUSR1, SIG_DFL);
	alarm(0);
}

/* A ringbuffer(2) that fails on its arguments leaves the pipe alone. */
TEST(failed_ringbuffer_leaves_the_pipe_as_it_was)
{
	long live = rb_live_rings();
	uint64_t *ro;
	int fds[2];
	char buf[8] = { 0 };

	if (forced_ring_mode())
		SKIP(return, "every pipe is in ring mode already");
	ASSERT_EQ(0, pipe(fds));
	ASSERT_EQ(5, write(fds[1], "hello", 5));
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	EXPECT_EQ(EFAULT, FAILS_WITH(sys_ringbuffer(fds[0], RINGBUFFER_READ,
						    RING_SIZE, ro, 0)));
	EXPECT_EQ(EFAULT, FAILS_WITH(sys_ringbuffer(fds[0], RINGBUFFER_READ,
						    RING_SIZE, NULL, 0)));
	EXPECT_FALSE(in_ring_mode(fds[0], RINGBUFFER_READ));
	if (live >= 0)
		EXPECT_EQ(live, rb_live_rings());
	EXPECT_EQ(CAPACITY, fcntl(fds[0], F_GETPIPE_SZ));
	EXPECT_EQ(5, read(fds[0], buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, "hello", 5));
	munmap(ro, 4096);
	close(fds[0]);
	close(fds[1]);
}

/*
 * splice(2) from a socket into a pipe without a reader: EPIPE, and the
 * socket keeps its bytes.
 */
TEST_F(compat, splice_into_a_broken_pipe_takes_nothing)
{
	char buf[8] = { 0 };
	int sv[2];

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	ASSERT_EQ(4, write(sv[1], "data", 4));
	close(self->fds[0]);
	self->fds[0] = -1;
	EXPECT_EQ(EPIPE, FAILS_WITH(splice(sv[0], NULL, self->fds[1], NULL, 4, 0)));
	EXPECT_EQ(4, recv(sv[0], buf, sizeof(buf), MSG_DONTWAIT));
	EXPECT_EQ(0, memcmp(buf, "data", 4));
	close(sv[0]);
	close(sv[1]);
}

static _Atomic int sigio_seen;

static void count_sigio(int sig)
{
	(void)sig;
	atomic_fetch_add(&sigio_seen, 1);
}

/* O_ASYNC: data published through a mapping raises SIGIO. */
TEST(sigio_for_data_published_through_the_ring)
{
	struct sigaction sa = { .sa_handler = count_sigio };
	const struct timespec tick = { 0, 1000000 };

	ASSERT_EQ(0, sigaction(SIGIO, &sa, NULL));
	for (int map_first = 0; map_first < 2; map_first++) {
		struct rb_view v = { 0 };
		int fds[2];

		alarm(60);
		ASSERT_EQ(0, pipe(fds));
		if (map_first)
			ASSERT_EQ(0, rb_view_map(&v, fds[1], RINGBUFFER_WRITE, RING_SIZE));
		ASSERT_EQ(0, fcntl(fds[0], F_SETOWN, getpid()));
		ASSERT_EQ(0, fcntl(fds[0], F_SETFL, O_ASYNC | O_NONBLOCK));
		if (!map_first)
			ASSERT_EQ(0, rb_view_map(&v, fds[1], RINGBUFFER_WRITE, RING_SIZE));
		atomic_store(&sigio_seen, 0);
		ASSERT_EQ(2, rb_pipe_write(&v, "hi", 2));
		while (!atomic_load(&sigio_seen))
			nanosleep(&tick, NULL);
		EXPECT_LE(1, atomic_load(&sigio_seen));
		rb_view_unmap(&v);
		close(fds[0]);
		close(fds[1]);
		alarm(0);
	}
	signal(SIGIO, SIG_DFL);
}

/*
 * How many threads of process @pid, other than the first, are asleep:
 * interruptibly (*@s) or not (*@d).
 */
static void count_sleepers(pid_t pid, int *s, int *d)
{
	char path[320], buf[256], *p;
	struct dirent *e;
	DIR *dir;

	*s = *d = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((e = readdir(dir))) {
		FILE *f;
		size_t n;

		if (e->d_name[0] == '.' || atoi(e->d_name) == pid)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", pid, e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		p = strrchr(buf, ')');
		if (p && p[2] == 'S')
			(*s)++;
		else if (p && p[2] == 'D')
			(*d)++;
	}
	closedir(dir);
}

static void *device_wait_thread(void *arg)
{
	int fd = *(int *)arg;

	sys_ringbuffer_wait(fd, RINGBUFFER_READ, 1, NULL, 0);
	return NULL;
}

static void *device_read_thread(void *arg)
{
	int fd = *(int *)arg;
	char c;

	if (read(fd, &c, 1) < 0)
		return NULL;
	return NULL;
}

/*
 * The test device: a second call on a fd whose read blocks stays
 * interruptible, so the process dies at once on SIGKILL.
 */
TEST(test_device_calls_stay_killable)
{
	int status, fd, pipefd[2];
	pid_t pid;
	char c;

	alarm(60);
	fd = open(RBTEST_DEV, O_RDWR);
	if (fd < 0)
		SKIP(return, "no %s", RBTEST_DEV);
	close(fd);
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		uint64_t zero_pause = 1;
		pthread_t t1, t2;
		char drain[64];

		fd = open(RBTEST_DEV, O_RDWR);
		/* The producer stops after one byte: reads then block. */
		if (fd < 0 || ioctl(fd, RINGBUFFER_TEST_PAUSE_AT, &zero_pause))
			_exit(1);
		if (read(fd, drain, 1) != 1)
			_exit(2);
		pthread_create(&t1, NULL, device_read_thread, &fd);
		pthread_create(&t2, NULL, device_wait_thread, &fd);
		if (write(pipefd[1], "r", 1) != 1)
			_exit(3);
		pthread_join(t1, NULL);
		_exit(0);
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	/* Both threads reach their calls; neither may sleep in D state. */
	for (;;) {
		const struct timespec tick = { 0, 2000000 };
		int s, d, d_seen = 0;

		nanosleep(&tick, NULL);
		count_sleepers(pid, &s, &d);
		if (s + d < 2)
			continue;
		for (int i = 0; i < 50; i++) {
			nanosleep(&tick, NULL);
			count_sleepers(pid, &s, &d);
			d_seen += d;
		}
		EXPECT_EQ(0, d_seen);
		break;
	}
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	close(pipefd[0]);
	alarm(0);
}

TEST_HARNESS_MAIN
