// SPDX-License-Identifier: GPL-2.0
/*
 * Privilege separation of pipes in ring mode.  The read end's mapping
 * lets it write its consumer page only, the write end's its producer
 * page and the data; neither can write the header.  No other route
 * (mprotect, /proc/PID/mem, process_vm_writev, ptrace, map_files,
 * madvise) writes what the mapping does not.  A side needs an fd open in
 * that direction.  Between two users, the unprivileged one holding one
 * end gets nothing beyond it: not the other end through /proc, not the
 * other process's memory, not a signal to it.  A ring made in one pid
 * namespace cannot be mapped from another (EXDEV).
 */
#include <sched.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "reliability.h"
#include "kselftest_harness.h"

#define RING_SIZE	65536

static void poke_child(void *addr)
{
	rb_poke(addr);
}

/* Whether a store into @addr through each other route fails (0) or not. */
static int other_routes(void *addr)
{
	uint32_t v = 0x5a5a5a5a;
	struct iovec local = { &v, sizeof(v) }, remote = { addr, sizeof(v) };
	int mem = open("/proc/self/mem", O_RDWR), bad = 0;
	int page_prot = PROT_READ | PROT_WRITE;
	void *page = (void *)((uintptr_t)addr & ~4095UL);

	if (mem < 0)
		return 100;
	if (pwrite(mem, &v, sizeof(v), (off_t)(uintptr_t)addr) == sizeof(v))
		bad |= 1;
	close(mem);
	if (process_vm_writev(getpid(), &local, 1, &remote, 1, 0) == sizeof(v))
		bad |= 2;
	if (!mprotect(page, 4096, page_prot) || errno != EACCES)
		bad |= 4;
	if (!madvise(page, 4096, MADV_POPULATE_WRITE))
		bad |= 8;
	return bad;
}

/* PTRACE_POKEDATA from a tracer into a traced child's read-only page. */
static int ptrace_poke(void *addr)
{
	pid_t pid = fork();
	long ret;
	int st;

	if (pid == 0) {
		raise(SIGSTOP);
		_exit(0);
	}
	if (waitpid(pid, &st, WUNTRACED) != pid)
		return -1;
	if (ptrace(PTRACE_SEIZE, pid, 0, 0))
		return -2;
	ret = ptrace(PTRACE_POKEDATA, pid, addr, 0x5a5a5a5aL);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return ret == 0 ? 1 : 0;
}

/* Open a ring area through /proc/self/map_files: refused, or no mapping. */
static int map_files_route(void *addr)
{
	char path[128];
	FILE *maps = fopen("/proc/self/maps", "r");
	unsigned long s, e, a = (unsigned long)addr;
	char line[256];
	int fd, bad = 0;

	if (!maps)
		return 100;
	while (fgets(line, sizeof(line), maps))
		if (sscanf(line, "%lx-%lx", &s, &e) == 2 && s <= a && a < e)
			break;
	fclose(maps);
	snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx", s, e);
	fd = open(path, O_RDWR);
	if (fd >= 0) {
		void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		if (m != MAP_FAILED)
			bad = 1;
		close(fd);
	}
	return bad;
}

FIXTURE(privsep) {
	int rd, wr;
	char fifo[64];
};

FIXTURE_VARIANT(privsep) {
	bool fifo;
};

FIXTURE_VARIANT_ADD(privsep, pipe) { .fifo = false };
FIXTURE_VARIANT_ADD(privsep, fifo) { .fifo = true };

FIXTURE_SETUP(privsep)
{
	signal(SIGPIPE, SIG_IGN);
	self->fifo[0] = 0;
	if (!variant->fifo) {
		int fds[2];

		ASSERT_EQ(0, pipe(fds));
		self->rd = fds[0];
		self->wr = fds[1];
	} else {
		snprintf(self->fifo, sizeof(self->fifo), "/tmp/rb-privsep-%d", getpid());
		unlink(self->fifo);
		ASSERT_EQ(0, mkfifo(self->fifo, 0600));
		self->rd = open(self->fifo, O_RDONLY | O_NONBLOCK);
		ASSERT_LE(0, self->rd);
		self->wr = open(self->fifo, O_WRONLY);
		ASSERT_LE(0, self->wr);
		ASSERT_EQ(0, fcntl(self->rd, F_SETFL, 0));
	}
}

FIXTURE_TEARDOWN(privsep)
{
	close(self->rd);
	close(self->wr);
	if (self->fifo[0])
		unlink(self->fifo);
}

TEST_F(privsep, read_end_writes_only_its_page)
{
	struct rb_view v = { 0 };
	uint32_t head;

	ASSERT_EQ(0, rb_view_map(&v, self->rd, RINGBUFFER_READ, RING_SIZE));
	ASSERT_EQ(3, write(self->wr, "abc", 3));
	head = atomic_load(v.head);
	/* Producer state, data (both copies), header words: SIGSEGV. */
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.head));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.producer_lock));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.data));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.data + v.size + 8));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.base));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.flags));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.read_waiters));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.write_waiters));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.producer_lock_waiters));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.consumer_lock_waiters));
	/* Its own page: a child's store is allowed (and shared). */
	EXPECT_EQ(0, rb_child_signal(poke_child, v.consumer_lock));
	atomic_store(v.consumer_lock, 0);
	/* No other route either. */
	EXPECT_EQ(0, other_routes(v.head));
	EXPECT_EQ(0, other_routes(v.data));
	EXPECT_EQ(0, other_routes(v.flags));
	EXPECT_EQ(0, ptrace_poke(v.head));
	EXPECT_EQ(0, ptrace_poke(v.data));
	EXPECT_EQ(0, map_files_route(v.head));
	EXPECT_EQ(0, map_files_route(v.tail));
	EXPECT_EQ(EACCES, FAILS_WITH(mprotect((void *)((uintptr_t)v.tail & ~4095UL),
					      4096, PROT_READ | PROT_EXEC)));
	/* Nothing moved. */
	EXPECT_EQ(head, atomic_load(v.head));
	EXPECT_EQ(0, memcmp(v.data + ((head - 3) & v.mask), "abc", 3));
	EXPECT_EQ(0, atomic_load(v.read_waiters));
	rb_view_unmap(&v);
}

TEST_F(privsep, write_end_cannot_write_consumer_state)
{
	struct rb_view v = { 0 };
	uint32_t tail;

	ASSERT_EQ(0, rb_view_map(&v, self->wr, RINGBUFFER_WRITE, RING_SIZE));
	tail = atomic_load(v.tail);
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.tail));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.consumer_lock));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.base));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.flags));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.read_waiters));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.write_waiters));
	EXPECT_EQ(0, rb_child_signal(poke_child, v.producer_lock));
	atomic_store(v.producer_lock, 0);
	EXPECT_EQ(0, rb_child_signal(poke_child, v.data + v.size - 4));
	EXPECT_EQ(0, other_routes(v.tail));
	EXPECT_EQ(0, other_routes(v.consumer_lock));
	EXPECT_EQ(0, other_routes(v.flags));
	EXPECT_EQ(0, ptrace_poke(v.tail));
	EXPECT_EQ(0, map_files_route(v.tail));
	EXPECT_EQ(0, map_files_route(v.data));
	/* The writable parts are not executable either. */
	EXPECT_EQ(EACCES, FAILS_WITH(mprotect(v.data, v.size, PROT_READ | PROT_EXEC)));
	EXPECT_EQ(tail, atomic_load(v.tail));
	rb_view_unmap(&v);
}

/* A side needs an fd open in its direction, for every call. */
TEST_F(privsep, side_needs_matching_open_mode)
{
	uint64_t addr = 0;
	int dup_rd = dup(self->rd);

	ASSERT_LE(0, dup_rd);
	EXPECT_EQ(EBADF, FAILS_WITH(sys_ringbuffer(self->rd, RINGBUFFER_WRITE,
						   RING_SIZE, &addr, 0)));
	EXPECT_EQ(EBADF, FAILS_WITH(sys_ringbuffer(self->wr, RINGBUFFER_READ,
						   RING_SIZE, &addr, 0)));
	ASSERT_EQ(0, convert_pipe(self->rd, RINGBUFFER_READ, RING_SIZE));
	EXPECT_EQ(EBADF, FAILS_WITH(sys_ringbuffer(self->rd, RINGBUFFER_WRITE,
						   RING_SIZE, &addr, 0)));
	EXPECT_EQ(EBADF, FAILS_WITH(sys_ringbuffer_wait(self->rd, RINGBUFFER_WRITE,
							1, NULL, 0)));
	EXPECT_EQ(EBADF, FAILS_WITH(sys_ringbuffer_wait(self->wr, RINGBUFFER_READ,
							0, NULL, RINGBUFFER_WAIT_LOCK)));
	EXPECT_EQ(EBADF, FAILS_WITH(sys_ringbuffer_wakeup(self->rd, RINGBUFFER_WRITE,
							  RINGBUFFER_WAKE_LOCK)));
	EXPECT_EQ(EBADF, FAILS_WITH(sys_ringbuffer_wakeup(self->wr, RINGBUFFER_READ, 0)));
	/* F_SETFL cannot change the access mode of an open file. */
	EXPECT_EQ(0, fcntl(dup_rd, F_SETFL, O_RDWR));
	EXPECT_EQ(EBADF, FAILS_WITH(sys_ringbuffer(dup_rd, RINGBUFFER_WRITE,
						   RING_SIZE, &addr, 0)));
	EXPECT_EQ(0, addr);
	close(dup_rd);
	if (self->fifo[0]) {
		/* A FIFO opened for both may map both sides. */
		int rdwr = open(self->fifo, O_RDWR);
		struct rb_view r = { 0 }, w = { 0 };

		ASSERT_LE(0, rdwr);
		EXPECT_EQ(0, rb_view_map(&r, rdwr, RINGBUFFER_READ, RING_SIZE));
		EXPECT_EQ(0, rb_view_map(&w, rdwr, RINGBUFFER_WRITE, RING_SIZE));
		EXPECT_EQ(r.size, w.size);
		rb_view_unmap(&r);
		rb_view_unmap(&w);
		close(rdwr);
	}
}

/* Bits of what the unprivileged side managed to do, 0 if nothing. */
enum {
	GOT_WRITE_SIDE = 1 << 0,
	GOT_WRITE_WAIT = 1 << 1,
	GOT_REOPEN_WRITE = 1 << 2,
	GOT_PEER_FD = 1 << 3,
	GOT_PEER_MEM = 1 << 4,
	GOT_PEER_VM_WRITE = 1 << 5,
	GOT_PEER_PTRACE = 1 << 6,
	GOT_PEER_SIGNAL = 1 << 7,
	GOT_PRODUCER_PAGE = 1 << 8,
	GOT_FIFO_OPEN = 1 << 9,
	READ_FAILED = 1 << 10,
	SETUP_FAILED = 1 << 11,
};

static int unprivileged_reader(int rd, pid_t peer, int peer_wr, void *peer_addr,
			       const char *fifo)
{
	char path[64], buf[16];
	uint64_t addr = 0;
	struct rb_view v = { 0 };
	uint32_t v32 = 0;
	struct iovec local = { &v32, 4 }, remote = { peer_addr, 4 };
	int fd, got = 0, mem;

	if (become_nobody())
		return SETUP_FAILED;
	if (!sys_ringbuffer(rd, RINGBUFFER_WRITE, RING_SIZE, &addr, 0) || errno != EBADF)
		got |= GOT_WRITE_SIDE;
	if (sys_ringbuffer_wait(rd, RINGBUFFER_WRITE, 1, NULL, 0) >= 0 || errno != EBADF)
		got |= GOT_WRITE_WAIT;
	/* Reopening its own end for writing: the inode is root's, 0600. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", rd);
	fd = open(path, O_WRONLY);
	if (fd >= 0 || errno != EACCES)
		got |= GOT_REOPEN_WRITE;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", peer, peer_wr);
	fd = open(path, O_WRONLY);
	if (fd >= 0 || errno != EACCES)
		got |= GOT_PEER_FD;
	snprintf(path, sizeof(path), "/proc/%d/mem", peer);
	mem = open(path, O_RDWR);
	if (mem >= 0 || errno != EACCES)
		got |= GOT_PEER_MEM;
	if (process_vm_writev(peer, &local, 1, &remote, 1, 0) >= 0 || errno != EPERM)
		got |= GOT_PEER_VM_WRITE;
	if (!ptrace(PTRACE_SEIZE, peer, 0, 0) || errno != EPERM)
		got |= GOT_PEER_PTRACE;
	if (!kill(peer, SIGKILL) || errno != EPERM)
		got |= GOT_PEER_SIGNAL;
	if (fifo && (open(fifo, O_WRONLY | O_NONBLOCK) >= 0 || errno != EACCES))
		got |= GOT_FIFO_OPEN;
	/* Its own side works, and stays read-only where it should. */
	if (rb_view_map(&v, rd, RINGBUFFER_READ, RING_SIZE))
		return got | SETUP_FAILED;
	if (rb_child_signal(poke_child, v.head) != SIGSEGV ||
	    rb_child_signal(poke_child, v.data) != SIGSEGV)
		got |= GOT_PRODUCER_PAGE;
	if (rb_pipe_read(&v, buf, sizeof(buf)) != 5 || memcmp(buf, "root!", 5))
		got |= READ_FAILED;
	return got;
}

/*
 * Root makes the pipe and keeps the write end; a child that becomes
 * nobody keeps only the read end.
 */
TEST_F(privsep, pipe_between_two_users)
{
	struct rb_view w = { 0 };
	int res;
	pid_t pid;

	ASSERT_EQ(0, convert_pipe(self->wr, RINGBUFFER_WRITE, RING_SIZE));
	/* The child inherits no mapping of the write side: it is mapped after. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(self->wr);
		_exit(unprivileged_reader(self->rd, getppid(), self->wr, &w,
					  self->fifo[0] ? self->fifo : NULL));
	}
	ASSERT_EQ(0, rb_view_map(&w, self->wr, RINGBUFFER_WRITE, RING_SIZE));
	EXPECT_EQ(5, rb_pipe_write(&w, "root!", 5));
	res = child_result(pid, 60);
	EXPECT_EQ(0, res) TH_LOG("the unprivileged side got %#x", res);
	/* The writer is intact and the pipe still works. */
	EXPECT_EQ(3, write(self->wr, "ok?", 3));
	rb_view_unmap(&w);
}

/* A ring's lock words hold ids of its creator's pid namespace. */
static int send_fd(int sock, int fd)
{
	char c = 'f', cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &c, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char c, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &c, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int fd = -1;

	if (recvmsg(sock, &msg, 0) == 1 && (cm = CMSG_FIRSTHDR(&msg)))
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* In a new pid namespace: what the ring of the outer one allows. */
static int inner_namespace(int rd, int wr, int sock)
{
	struct timespec zero = { 0, 0 };
	uint64_t addr = 0;
	char c;
	int p[2], bad = 0;

	if (sys_ringbuffer(rd, RINGBUFFER_READ, RING_SIZE, &addr, 0) == 0 ||
	    errno != EXDEV)
		bad |= 1;
	if (sys_ringbuffer_wait(wr, RINGBUFFER_WRITE, 0, &zero,
				RINGBUFFER_WAIT_LOCK) == 0 || errno != EXDEV)
		bad |= 2;
	/* Waiting for data or space and waking are fine: no thread ids. */
	if (sys_ringbuffer_wait(wr, RINGBUFFER_WRITE, 1, &zero, 0) < 0)
		bad |= 4;
	if (sys_ringbuffer_wakeup(rd, RINGBUFFER_READ, 0))
		bad |= 8;
	/* read(2) and write(2) take the lock as the kernel: they work. */
	if (write(wr, "n", 1) != 1 || read(rd, &c, 1) != 1 || c != 'n')
		bad |= 16;
	/* A ring made here goes out to the outer namespace. */
	if (pipe(p) || convert_pipe(p[0], RINGBUFFER_READ, RING_SIZE) ||
	    send_fd(sock, p[0]))
		bad |= 32;
	/* Keep the pipe alive until the outer side has tried it. */
	(void)!read(sock, &c, 1);
	return bad;
}

TEST(pid_namespace_boundary)
{
	uint64_t addr = 0;
	int fds[2], sv[2], res, fd;
	pid_t pid;

	ASSERT_EQ(0, pipe(fds));
	ASSERT_EQ(0, convert_pipe(fds[0], RINGBUFFER_READ, RING_SIZE));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		pid_t inner;

		if (unshare(CLONE_NEWPID))
			_exit(100);
		inner = fork();
		if (inner == 0)
			_exit(inner_namespace(fds[0], fds[1], sv[1]));
		_exit(child_result(inner, 60));
	}
	fd = recv_fd(sv[0]);
	ASSERT_LE(0, fd);
	EXPECT_EQ(EXDEV, FAILS_WITH(sys_ringbuffer(fd, RINGBUFFER_READ, RING_SIZE,
						   &addr, 0)));
	EXPECT_EQ(EXDEV, FAILS_WITH(sys_ringbuffer_wait(fd, RINGBUFFER_READ, 0, NULL,
							RINGBUFFER_WAIT_LOCK)));
	EXPECT_EQ(1, write(sv[0], "x", 1));
	res = child_result(pid, 60);
	EXPECT_EQ(0, res) TH_LOG("inner namespace checks failed: %#x", res);
	close(fd);
	close(fds[0]);
	close(fds[1]);
	close(sv[0]);
	close(sv[1]);
}

TEST_HARNESS_MAIN
