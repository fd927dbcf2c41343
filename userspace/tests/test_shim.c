// SPDX-License-Identifier: GPL-2.0
/*
 * Tests of the ringpipe shim, run under it (`ringpipe -f all test_shim`)
 * on a kernel with ring-mode pipes: the program only calls read(2),
 * write(2) and friends, and checks that what the shim serves from the
 * ring is what the kernel would have done, across the calls that close,
 * duplicate and reuse fd numbers, fork, exec, threads and signal handlers.
 */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "shim_util.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Areas of ring mappings in this process (a mapping has several). */
static int ring_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "anon_inode:[ringbuffer]") != NULL;
	fclose(f);
	return n;
}

static int shim_loaded(void)
{
	const char *p = getenv("LD_PRELOAD");

	return p && strstr(p, "ringpipe-shim.so");
}

/* A temporary file, open for reading and writing, on the lowest free fd. */
static int temp_file(void)
{
	char path[] = "/tmp/test_shim.XXXXXX";
	int fd = mkstemp(path);

	if (fd >= 0)
		unlink(path);
	return fd;
}

static int file_contains(int fd, const char *want)
{
	char buf[256];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n < 0)
		return 0;
	buf[n] = 0;
	return !strcmp(buf, want);
}

/* Read what is in a pipe whose writers are all gone. */
static ssize_t drain(int fd, char *buf, size_t len)
{
	return read_full(fd, buf, len);
}

TEST(shim_maps_the_ring)
{
	int p[2];
	char buf[100];
	int before;

	ASSERT_TRUE(shim_loaded()) TH_LOG("run under ringpipe -f all");
	before = ring_mappings();
	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(6, write(p[1], "hello\n", 6));
	ASSERT_LT(before, ring_mappings());
	ASSERT_EQ(6, read(p[0], buf, sizeof(buf)));
	ASSERT_EQ(0, memcmp(buf, "hello\n", 6));
	close(p[0]);
	close(p[1]);
	/* close() unmaps them. */
	ASSERT_EQ(before, ring_mappings());
}

TEST(nonblocking_set_later)
{
	int p[2], size;
	char chunk[512] = { 0 }, buf[512];
	size_t total = 0;
	ssize_t n;

	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(1, write(p[1], "x", 1));
	ASSERT_EQ(1, read(p[0], buf, 1));
	ASSERT_EQ(0, fcntl(p[1], F_SETFL, O_NONBLOCK));
	ASSERT_EQ(0, fcntl(p[0], F_SETFL, O_NONBLOCK));
	size = fcntl(p[1], F_GETPIPE_SZ);
	ASSERT_GT(size, 0);
	while ((n = write(p[1], chunk, sizeof(chunk))) > 0)
		total += n;
	ASSERT_EQ(-1, n);
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ((size_t)size, total);
	while ((n = read(p[0], buf, sizeof(buf))) > 0)
		total -= n;
	ASSERT_EQ(-1, n);
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, total);
	close(p[1]);
	ASSERT_EQ(0, read(p[0], buf, sizeof(buf)));
	close(p[0]);
}

TEST(epipe_and_sigpipe)
{
	int p[2], status;
	pid_t pid;

	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(2, write(p[1], "ab", 2));
	close(p[0]);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		signal(SIGPIPE, SIG_DFL);
		write(p[1], "cd", 2);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGPIPE);
	signal(SIGPIPE, SIG_IGN);
	ASSERT_EQ(-1, write(p[1], "cd", 2));
	ASSERT_EQ(EPIPE, errno);
	close(p[1]);
}

TEST(end_of_file_after_data)
{
	int p[2];
	char buf[8];

	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(3, write(p[1], "abc", 3));
	close(p[1]);
	ASSERT_EQ(2, read(p[0], buf, 2));
	ASSERT_EQ(1, read(p[0], buf, 8));
	ASSERT_EQ('c', buf[0]);
	ASSERT_EQ(0, read(p[0], buf, 8));
	close(p[0]);
}

/* A number closed and reused for a file must write to the file. */
TEST(close_then_reuse_number)
{
	int p[2], fd;
	char buf[32];

	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(4, write(p[1], "pipe", 4));
	ASSERT_EQ(0, close(p[1]));
	fd = temp_file();
	ASSERT_EQ(p[1], fd);
	ASSERT_EQ(4, write(fd, "file", 4));
	ASSERT_TRUE(file_contains(fd, "file"));
	ASSERT_EQ(4, drain(p[0], buf, sizeof(buf)));
	ASSERT_EQ(0, memcmp(buf, "pipe", 4));
	close(fd);
	close(p[0]);
}

TEST(dup2_file_over_ring)
{
	int p[2], fd;
	char buf[32];

	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(4, write(p[1], "pipe", 4));
	fd = temp_file();
	ASSERT_EQ(p[1], dup2(fd, p[1]));
	ASSERT_EQ(4, write(p[1], "file", 4));
	ASSERT_TRUE(file_contains(fd, "file"));
	/* dup2() closed the pipe's only write end. */
	ASSERT_EQ(4, drain(p[0], buf, sizeof(buf)));
	close(fd);
	close(p[1]);
	close(p[0]);
}

TEST(dup3_and_fcntl_dupfd)
{
	int p[2], fd, d1, d2;
	char buf[32];

	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(1, write(p[1], "a", 1));
	d1 = fcntl(p[1], F_DUPFD, 100);
	ASSERT_GE(d1, 100);
	d2 = fcntl(p[1], F_DUPFD_CLOEXEC, 200);
	ASSERT_GE(d2, 200);
	ASSERT_EQ(1, write(d1, "b", 1));
	ASSERT_EQ(1, write(d2, "c", 1));
	fd = temp_file();
	ASSERT_EQ(d1, dup3(fd, d1, O_CLOEXEC));
	ASSERT_EQ(4, write(d1, "file", 4));
	ASSERT_TRUE(file_contains(fd, "file"));
	ASSERT_EQ(1, write(p[1], "d", 1));
	close(p[1]);
	close(d2);
	ASSERT_EQ(4, drain(p[0], buf, sizeof(buf)));
	ASSERT_EQ(0, memcmp(buf, "abcd", 4));
	close(d1);
	close(fd);
	close(p[0]);
}

TEST(close_range_then_reuse)
{
	int a[2], b[2], lo, hi, f1, f2;
	char buf[32];

	ASSERT_EQ(0, pipe(a));
	ASSERT_EQ(0, pipe(b));
	ASSERT_EQ(1, write(a[1], "a", 1));
	ASSERT_EQ(1, write(b[1], "b", 1));
	lo = a[1] < b[1] ? a[1] : b[1];
	hi = a[1] < b[1] ? b[1] : a[1];
	/* CLOEXEC closes nothing now: the ring ends still work. */
	ASSERT_EQ(0, close_range(lo, lo, CLOSE_RANGE_CLOEXEC));
	ASSERT_EQ(1, write(lo, "x", 1));
	ASSERT_EQ(0, close_range(a[1], a[1], 0));
	ASSERT_EQ(0, close_range(b[1], b[1], 0));
	f1 = temp_file();
	f2 = temp_file();
	ASSERT_EQ(lo, f1);
	ASSERT_EQ(hi, f2);
	ASSERT_EQ(2, write(f1, "f1", 2));
	ASSERT_EQ(2, write(f2, "f2", 2));
	ASSERT_TRUE(file_contains(f1, "f1"));
	ASSERT_TRUE(file_contains(f2, "f2"));
	ASSERT_EQ(lo == a[1] ? 2 : 1, drain(a[0], buf, sizeof(buf)));
	ASSERT_EQ(lo == b[1] ? 2 : 1, drain(b[0], buf, sizeof(buf)));
	close(f1);
	close(f2);
	close(a[0]);
	close(b[0]);
}

/* fclose() closes with libc's own close, which LD_PRELOAD cannot see. */
TEST(fclose_of_fdopen_pipe)
{
	int p[2], fd;
	char buf[32];
	FILE *f;

	ASSERT_EQ(0, pipe(p));
	f = fdopen(p[1], "w");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(4, write(p[1], "pipe", 4));
	ASSERT_EQ(0, fclose(f));
	fd = temp_file();
	ASSERT_EQ(p[1], fd);
	ASSERT_EQ(4, write(fd, "file", 4));
	ASSERT_TRUE(file_contains(fd, "file"));
	ASSERT_EQ(4, drain(p[0], buf, sizeof(buf)));
	close(fd);
	close(p[0]);
}

/*
 * A packet-mode pipe stays in the kernel, packets and all.  Only the
 * write end has O_DIRECT, so the shim tries to map the read end too; the
 * kernel refuses that pipe a ring, and the reads see the packets.
 */
TEST(packet_pipe_stays_in_kernel)
{
	int p[2], before = ring_mappings();
	char buf[64];

	ASSERT_EQ(0, pipe2(p, O_DIRECT));
	ASSERT_EQ(3, write(p[1], "one", 3));
	ASSERT_EQ(5, write(p[1], "three", 5));
	ASSERT_EQ(3, read(p[0], buf, sizeof(buf)));
	ASSERT_EQ(5, read(p[0], buf, sizeof(buf)));
	ASSERT_EQ(0, memcmp(buf, "three", 5));
	ASSERT_EQ(before, ring_mappings());
	close(p[0]);
	close(p[1]);
}

TEST(readv_writev)
{
	int p[2];
	char a[3] = "abc", b[5] = "defgh", c[2] = "ij", out[10];
	struct iovec w[3] = { { a, 3 }, { b, 5 }, { c, 2 } };
	struct iovec r[2] = { { out, 4 }, { out + 4, 6 } };

	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(10, writev(p[1], w, 3));
	ASSERT_EQ(10, readv(p[0], r, 2));
	ASSERT_EQ(0, memcmp(out, "abcdefghij", 10));
	close(p[0]);
	close(p[1]);
}

/* One write bigger than the ring: the ring takes a part, the kernel the rest. */
TEST(write_bigger_than_ring)
{
	const size_t len = 1 << 20;
	unsigned char *buf = malloc(len), *got = malloc(len);
	int p[2], status;
	pid_t pid;

	ASSERT_TRUE(buf && got);
	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)(i * 13 + (i >> 12));
	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(1, write(p[1], buf, 1));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		close(p[0]);
		_exit(write(p[1], buf + 1, len - 1) == (ssize_t)(len - 1) ? 0 : 1);
	}
	close(p[1]);
	ASSERT_EQ((ssize_t)len, read_full(p[0], got, len));
	ASSERT_EQ(0, memcmp(buf, got, len));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	close(p[0]);
	free(buf);
	free(got);
}

#define WRITERS		4
#define RECORDS		2000
#define RECORD_SIZE	64

static int records_check(struct __test_metadata *_metadata, int fd, int writers,
			 int records)
{
	uint32_t next[WRITERS + 1] = { 0 };
	unsigned char rec[RECORD_SIZE];
	struct record_hdr h;
	ssize_t n;
	int total = 0;

	while ((n = read_full(fd, rec, sizeof(rec))) == sizeof(rec)) {
		EXPECT_TRUE(record_ok(rec, sizeof(rec), &h)) {
			TH_LOG("torn record %d", total);
			return -1;
		}
		EXPECT_LT(h.writer, (uint32_t)writers) return -1;
		EXPECT_EQ(next[h.writer], h.seq) return -1;
		next[h.writer]++;
		total++;
	}
	EXPECT_EQ(0, n);
	EXPECT_EQ(writers * records, total);
	return total;
}

struct writer_arg {
	int fd;
	uint32_t id;
};

/* Header and body in two iovecs: writev() of <= PIPE_BUF is atomic. */
static void *writer_thread(void *p)
{
	struct writer_arg *a = p;
	unsigned char rec[RECORD_SIZE];

	for (uint32_t seq = 0; seq < RECORDS; seq++) {
		struct iovec iov[2] = { { rec, 8 }, { rec + 8, RECORD_SIZE - 8 } };

		record_fill(rec, sizeof(rec), a->id, seq);
		if (writev(a->fd, iov, 2) != RECORD_SIZE)
			return (void *)1;
	}
	return NULL;
}

/* The same, then close the fd, so that the reader sees the end. */
static void *writer_thread_close(void *p)
{
	void *ret = writer_thread(p);

	close(((struct writer_arg *)p)->fd);
	return ret;
}

TEST(threads_write_whole_records)
{
	struct writer_arg args[WRITERS];
	pthread_t t[WRITERS];
	int p[2];
	pid_t pid;
	int status;

	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		void *ret;
		int bad = 0;

		close(p[0]);
		for (int i = 0; i < WRITERS; i++) {
			args[i] = (struct writer_arg){ p[1], (uint32_t)i };
			pthread_create(&t[i], NULL, writer_thread, &args[i]);
		}
		for (int i = 0; i < WRITERS; i++) {
			pthread_join(t[i], &ret);
			bad |= ret != NULL;
		}
		_exit(bad);
	}
	close(p[1]);
	ASSERT_EQ(WRITERS * RECORDS, records_check(_metadata, p[0], WRITERS, RECORDS));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	close(p[0]);
}

/* Forked children write through the ring they inherited, with their own ids. */
TEST(forked_writers)
{
	int p[2], status;
	pid_t pids[WRITERS];

	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(0, write(p[1], "", 0));
	for (int i = 0; i < WRITERS; i++) {
		pids[i] = fork();
		ASSERT_GE(pids[i], 0);
		if (!pids[i]) {
			struct writer_arg a = { p[1], (uint32_t)i };

			close(p[0]);
			_exit(writer_thread(&a) != NULL);
		}
	}
	close(p[1]);
	ASSERT_EQ(WRITERS * RECORDS, records_check(_metadata, p[0], WRITERS, RECORDS));
	for (int i = 0; i < WRITERS; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
		ASSERT_EQ(0, status);
	}
	close(p[0]);
}


/* After exec, the new image maps the ring again and writes through it. */
TEST(exec_maps_again)
{
	int p[2], status;
	char fdstr[16];
	pid_t pid;

	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(0, write(p[1], "", 0));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		close(p[0]);
		snprintf(fdstr, sizeof(fdstr), "%d", p[1]);
		execl("/proc/self/exe", "test_shim", "--exec-writer", fdstr, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	ASSERT_EQ(RECORDS, records_check(_metadata, p[0], 1, RECORDS));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	/* The child's exit status says whether it saw its own mapping. */
	ASSERT_EQ(0, status);
	close(p[0]);
}

static int exec_writer(int fd)
{
	struct writer_arg a = { fd, 0 };

	if (ring_mappings() != 0)
		return 3;
	if (writer_thread(&a))
		return 1;
	return ring_mappings() > 0 ? 0 : 2;
}

/*
 * A signal handler that writes to the pipe while the interrupted code is
 * inside a ring write.  The interruption is made certain: the buffer
 * written is not readable, so the shim's copy faults with the side lock
 * held; the SIGSEGV handler writes its own record, makes the buffer
 * readable and returns, and the copy goes on.  The handler's record must
 * come whole, after the interrupted one, and nothing may hang.
 */
static int handler_fd = -1;
static void *fault_buf;
static size_t fault_len;
static ssize_t handler_ret;
static int handler_errno;
static int handler_calls;

static void write_in_handler(int sig)
{
	(void)sig;
	handler_calls++;
	handler_ret = write(handler_fd, "handler record\n", 15);
	handler_errno = errno;
	mprotect(fault_buf, fault_len, PROT_READ | PROT_WRITE);
}

static void read_in_handler(int sig)
{
	char c;

	(void)sig;
	handler_calls++;
	handler_ret = read(handler_fd, &c, 1);
	handler_errno = errno;
	mprotect(fault_buf, fault_len, PROT_READ | PROT_WRITE);
}

static void fault_setup(struct __test_metadata *_metadata, void (*fn)(int), int fd)
{
	struct sigaction sa = { .sa_handler = fn };

	fault_len = sysconf(_SC_PAGESIZE);
	fault_buf = mmap(NULL, fault_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, fault_buf);
	handler_fd = fd;
	handler_calls = 0;
	handler_ret = -2;
	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGSEGV, &sa, NULL));
}

/*
 * Small records written and read back, many more than the library needs
 * before it keeps a side: both ends then go through the fast path of a
 * kept side, which read() and write() of one buffer try first.
 */
static void keep_both_sides(struct __test_metadata *_metadata, int p[2])
{
	char buf[16];

	for (int i = 0; i < 256; i++) {
		ASSERT_EQ(16, write(p[1], "0123456789abcdef", 16));
		ASSERT_EQ(16, read(p[0], buf, 16));
	}
}

static void handler_writes_inside_write(struct __test_metadata *_metadata, bool kept)
{
	char got[PIPE_BUF + 15];
	int p[2];

	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(0, write(p[1], "", 0));
	if (kept)
		keep_both_sides(_metadata, p);
	fault_setup(_metadata, write_in_handler, p[1]);
	memset(fault_buf, 'M', PIPE_BUF);
	ASSERT_EQ(0, mprotect(fault_buf, fault_len, PROT_NONE));
	/* A kernel write would fail with EFAULT and run no handler. */
	ASSERT_EQ(PIPE_BUF, write(p[1], fault_buf, PIPE_BUF));
	ASSERT_EQ(1, handler_calls);
	ASSERT_EQ(15, handler_ret) TH_LOG("handler's write: errno %d", handler_errno);
	close(p[1]);
	ASSERT_EQ((ssize_t)sizeof(got), read_full(p[0], got, sizeof(got)));
	for (int i = 0; i < PIPE_BUF; i++)
		ASSERT_EQ('M', got[i]);
	ASSERT_EQ(0, memcmp(got + PIPE_BUF, "handler record\n", 15));
	signal(SIGSEGV, SIG_DFL);
	close(p[0]);
}

TEST(signal_handler_writes_inside_ring_write)
{
	handler_writes_inside_write(_metadata, false);
}

TEST(signal_handler_writes_inside_kept_ring_write)
{
	handler_writes_inside_write(_metadata, true);
}

static void handler_reads_inside_read(struct __test_metadata *_metadata, bool kept)
{
	int p[2];

	ASSERT_EQ(0, pipe(p));
	if (kept)
		keep_both_sides(_metadata, p);
	ASSERT_EQ(5, write(p[1], "hello", 5));
	fault_setup(_metadata, read_in_handler, p[0]);
	ASSERT_EQ(0, mprotect(fault_buf, fault_len, PROT_NONE));
	ASSERT_EQ(5, read(p[0], fault_buf, 5));
	ASSERT_EQ(0, memcmp(fault_buf, "hello", 5));
	ASSERT_EQ(1, handler_calls);
	/* Its data was in the hands of the code it interrupted. */
	ASSERT_EQ(-1, handler_ret);
	ASSERT_EQ(EINTR, handler_errno);
	signal(SIGSEGV, SIG_DFL);
	close(p[0]);
	close(p[1]);
}

TEST(signal_handler_reads_inside_ring_read)
{
	handler_reads_inside_read(_metadata, false);
}

TEST(signal_handler_reads_inside_kept_ring_read)
{
	handler_reads_inside_read(_metadata, true);
}

/* A writer on the ring and one on the kernel path, on one pipe. */
TEST(ring_and_kernel_writers_mix)
{
	int p[2], status;
	pid_t pid;

	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		unsigned char rec[RECORD_SIZE];

		close(p[0]);
		/* syscall(2) is not interposed: the kernel's write path. */
		for (uint32_t seq = 0; seq < RECORDS; seq++) {
			record_fill(rec, sizeof(rec), 1, seq);
			if (syscall(SYS_write, p[1], rec, sizeof(rec)) != sizeof(rec))
				_exit(1);
		}
		_exit(0);
	}
	{
		struct writer_arg a = { p[1], 0 };
		pthread_t t;
		void *ret;

		ASSERT_EQ(0, pthread_create(&t, NULL, writer_thread_close, &a));
		ASSERT_EQ(2 * RECORDS, records_check(_metadata, p[0], 2, RECORDS));
		ASSERT_EQ(0, pthread_join(t, &ret));
		ASSERT_EQ(NULL, ret);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	close(p[0]);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--exec-writer"))
		return exec_writer(atoi(argv[2]));
	return test_harness_run(argc, argv);
}
