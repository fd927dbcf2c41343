// SPDX-License-Identifier: GPL-2.0
/*
 * Every documented error of ringbuffer(2), ringbuffer_wait(2) and
 * ringbuffer_wakeup(2).
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include "ringbuffer_util.h"
#include "kselftest_harness.h"

FIXTURE(errors) {
	int dev;	/* the test device, both rings mapped */
	int fresh;	/* the test device, no ring yet */
	int rdonly;
	int wronly;
	int file;
	int closed;
	struct rb_view rd, wr;
};

FIXTURE_SETUP(errors)
{
	char path[] = "/tmp/rb-errors-XXXXXX";

	self->dev = open(RBTEST_DEV, O_RDWR);
	ASSERT_GE(self->dev, 0) TH_LOG("open %s: %s", RBTEST_DEV, strerror(errno));
	ASSERT_EQ(0, rb_view_map(&self->rd, self->dev, RINGBUFFER_READ, 4096));
	ASSERT_EQ(0, rb_view_map(&self->wr, self->dev, RINGBUFFER_WRITE, 4096));
	self->fresh = open(RBTEST_DEV, O_RDWR);
	self->rdonly = open(RBTEST_DEV, O_RDONLY);
	self->wronly = open(RBTEST_DEV, O_WRONLY);
	ASSERT_GE(self->fresh, 0);
	ASSERT_GE(self->rdonly, 0);
	ASSERT_GE(self->wronly, 0);
	self->file = mkstemp(path);
	ASSERT_GE(self->file, 0);
	unlink(path);
	self->closed = dup(self->file);
	ASSERT_GE(self->closed, 0);
	close(self->closed);
}

FIXTURE_TEARDOWN(errors)
{
	rb_view_unmap(&self->rd);
	rb_view_unmap(&self->wr);
	close(self->dev);
	close(self->fresh);
	close(self->rdonly);
	close(self->wronly);
	close(self->file);
}

static int map_err(int fd, unsigned int rw, uint32_t size, unsigned int flags)
{
	uint64_t addr = 0;
	long ret = sys_ringbuffer(fd, rw, size, &addr, flags);

	if (ret == 0) {
		munmap((void *)(uintptr_t)addr,
		       ((struct ringbuffer_header *)(uintptr_t)addr)->map_size);
		return 0;
	}
	return errno;
}

TEST_F(errors, ringbuffer_bad_fd)
{
	EXPECT_EQ(EBADF, map_err(-1, RINGBUFFER_READ, 4096, 0));
	EXPECT_EQ(EBADF, map_err(self->closed, RINGBUFFER_READ, 4096, 0));
	EXPECT_EQ(EBADF, map_err(100000, RINGBUFFER_WRITE, 4096, 0));
}

TEST_F(errors, ringbuffer_unsupported_file)
{
	int null = open("/dev/null", O_RDWR);
	int sock = socket(AF_UNIX, SOCK_STREAM, 0);

	ASSERT_GE(null, 0);
	ASSERT_GE(sock, 0);
	EXPECT_EQ(EOPNOTSUPP, map_err(self->file, RINGBUFFER_READ, 4096, 0));
	EXPECT_EQ(EOPNOTSUPP, map_err(null, RINGBUFFER_WRITE, 4096, 0));
	EXPECT_EQ(EOPNOTSUPP, map_err(sock, RINGBUFFER_READ, 4096, 0));
	close(null);
	close(sock);
}

TEST_F(errors, ringbuffer_bad_rw)
{
	EXPECT_EQ(EINVAL, map_err(self->dev, 2, 4096, 0));
	EXPECT_EQ(EINVAL, map_err(self->dev, (unsigned int)-1, 4096, 0));
}

TEST_F(errors, ringbuffer_rw_against_file_mode)
{
	EXPECT_EQ(EBADF, map_err(self->rdonly, RINGBUFFER_WRITE, 4096, 0));
	EXPECT_EQ(EBADF, map_err(self->wronly, RINGBUFFER_READ, 4096, 0));
	EXPECT_EQ(0, map_err(self->rdonly, RINGBUFFER_READ, 4096, 0));
	EXPECT_EQ(0, map_err(self->wronly, RINGBUFFER_WRITE, 4096, 0));
}

TEST_F(errors, ringbuffer_bad_size)
{
	EXPECT_EQ(EINVAL, map_err(self->fresh, RINGBUFFER_READ, 0, 0));
	EXPECT_EQ(EINVAL, map_err(self->fresh, RINGBUFFER_READ, 3, 0));
	EXPECT_EQ(EINVAL, map_err(self->fresh, RINGBUFFER_READ, 4097, 0));
	EXPECT_EQ(EINVAL, map_err(self->fresh, RINGBUFFER_READ, 12288, 0));
	EXPECT_EQ(EINVAL, map_err(self->fresh, RINGBUFFER_READ,
				  RINGBUFFER_MAX_SIZE << 1, 0));
	EXPECT_EQ(EINVAL, map_err(self->fresh, RINGBUFFER_READ, 1U << 31, 0));
	EXPECT_EQ(EINVAL, map_err(self->fresh, RINGBUFFER_READ, UINT32_MAX, 0));
	/* Nothing was created by the failed calls. */
	EXPECT_EQ(EINVAL, FAILS_WITH(sys_ringbuffer_wakeup(self->fresh,
							    RINGBUFFER_READ, 0)));
}

TEST_F(errors, ringbuffer_bad_addr)
{
	uint64_t *ro, nonzero = 4096;
	void *gone;

	EXPECT_EQ(EFAULT, FAILS_WITH(sys_ringbuffer(self->dev, RINGBUFFER_READ,
						    4096, NULL, 0)));
	gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, gone);
	ASSERT_EQ(0, munmap(gone, 4096));
	EXPECT_EQ(EFAULT, FAILS_WITH(sys_ringbuffer(self->dev, RINGBUFFER_READ,
						    4096, gone, 0)));
	EXPECT_EQ(EINVAL, FAILS_WITH(sys_ringbuffer(self->dev, RINGBUFFER_READ,
						    4096, &nonzero, 0)));
	/* Readable but not writable: the mapping is made, then undone. */
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	EXPECT_EQ(EFAULT, FAILS_WITH(sys_ringbuffer(self->dev, RINGBUFFER_READ,
						    4096, ro, 0)));
	munmap(ro, 4096);
}

TEST_F(errors, ringbuffer_bad_flags)
{
	EXPECT_EQ(EINVAL, map_err(self->dev, RINGBUFFER_READ, 4096, 1));
	EXPECT_EQ(EINVAL, map_err(self->dev, RINGBUFFER_WRITE, 4096, 1U << 31));
}

TEST_F(errors, wait_bad_fd_file_rw_flags)
{
	EXPECT_EQ(EBADF, FAILS_WITH(sys_ringbuffer_wait(-1, 0, 1, NULL, 0)));
	EXPECT_EQ(EBADF, FAILS_WITH(sys_ringbuffer_wait(self->closed, 0, 1,
							 NULL, 0)));
	EXPECT_EQ(EOPNOTSUPP, FAILS_WITH(sys_ringbuffer_wait(self->file, 0, 1,
							      NULL, 0)));
	EXPECT_EQ(EINVAL, FAILS_WITH(sys_ringbuffer_wait(self->dev, 2, 1,
							  NULL, 0)));
	EXPECT_EQ(EINVAL, FAILS_WITH(sys_ringbuffer_wait(self->dev, 0, 1,
							  NULL, 1)));
	EXPECT_EQ(EBADF, FAILS_WITH(sys_ringbuffer_wait(self->wronly,
							 RINGBUFFER_READ, 1,
							 NULL, 0)));
	EXPECT_EQ(EBADF, FAILS_WITH(sys_ringbuffer_wait(self->rdonly,
							 RINGBUFFER_WRITE, 1,
							 NULL, 0)));
}

TEST_F(errors, wait_without_ring)
{
	EXPECT_EQ(EINVAL, FAILS_WITH(sys_ringbuffer_wait(self->fresh,
							  RINGBUFFER_READ, 1,
							  NULL, 0)));
}

TEST_F(errors, wait_min_above_size)
{
	EXPECT_EQ(EINVAL, FAILS_WITH(sys_ringbuffer_wait(self->dev,
							  RINGBUFFER_WRITE,
							  self->wr.size + 1,
							  NULL, 0)));
}

TEST_F(errors, wait_bad_timeout)
{
	struct timespec bad_ns = { 0, 1000000000 }, negative = { -1, 0 };
	void *gone = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);

	ASSERT_NE(MAP_FAILED, gone);
	ASSERT_EQ(0, munmap(gone, 4096));
	EXPECT_EQ(EFAULT, FAILS_WITH(sys_ringbuffer_wait(self->dev,
							  RINGBUFFER_WRITE, 1,
							  gone, 0)));
	EXPECT_EQ(EINVAL, FAILS_WITH(sys_ringbuffer_wait(self->dev,
							  RINGBUFFER_WRITE, 1,
							  &bad_ns, 0)));
	EXPECT_EQ(EINVAL, FAILS_WITH(sys_ringbuffer_wait(self->dev,
							  RINGBUFFER_WRITE, 1,
							  &negative, 0)));
}

TEST_F(errors, wakeup_errors)
{
	EXPECT_EQ(EBADF, FAILS_WITH(sys_ringbuffer_wakeup(-1, 0, 0)));
	EXPECT_EQ(EBADF, FAILS_WITH(sys_ringbuffer_wakeup(self->closed, 0, 0)));
	EXPECT_EQ(EOPNOTSUPP, FAILS_WITH(sys_ringbuffer_wakeup(self->file, 0, 0)));
	EXPECT_EQ(EINVAL, FAILS_WITH(sys_ringbuffer_wakeup(self->dev, 2, 0)));
	EXPECT_EQ(EINVAL, FAILS_WITH(sys_ringbuffer_wakeup(self->dev, 0, 4)));
	EXPECT_EQ(EINVAL, FAILS_WITH(sys_ringbuffer_wakeup(self->fresh, 0, 0)));
	EXPECT_EQ(EBADF, FAILS_WITH(sys_ringbuffer_wakeup(self->wronly,
							   RINGBUFFER_READ, 0)));
	EXPECT_EQ(EBADF, FAILS_WITH(sys_ringbuffer_wakeup(self->rdonly,
							   RINGBUFFER_WRITE, 0)));
	EXPECT_EQ(0, sys_ringbuffer_wakeup(self->dev, RINGBUFFER_READ, 0));
	EXPECT_EQ(0, sys_ringbuffer_wakeup(self->dev, RINGBUFFER_WRITE, 0));
}

/* Limits apply to users without CAP_SYS_RESOURCE, as for pipes. */
static int map_err_as_nobody(int fd, uint32_t size)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(255);
		_exit(map_err(fd, RINGBUFFER_READ, size, 0));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static unsigned long read_sysctl(const char *path)
{
	unsigned long v = 0;
	FILE *f = fopen(path, "r");

	if (f) {
		if (fscanf(f, "%lu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

static int write_sysctl(const char *path, unsigned long v)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -1;
	ret = fprintf(f, "%lu\n", v) < 0;
	return fclose(f) || ret ? -1 : 0;
}

TEST_F(errors, ringbuffer_limits_unprivileged)
{
	const char *max = "/proc/sys/fs/pipe-max-size";
	const char *hard = "/proc/sys/fs/pipe-user-pages-hard";
	unsigned long max_size = read_sysctl(max), old_hard = read_sysctl(hard);
	int one, two;

	ASSERT_GE(max_size, 65536UL);
	/* Above pipe-max-size: refused for the user, allowed for root. */
	EXPECT_EQ(EPERM, map_err_as_nobody(self->fresh, max_size * 2));
	EXPECT_EQ(0, map_err(self->fresh, RINGBUFFER_READ, max_size * 2, 0));

	/* Over pipe-user-pages-hard: the second ring of 16 pages is refused. */
	one = open(RBTEST_DEV, O_RDWR);
	two = open(RBTEST_DEV, O_RDWR);
	ASSERT_GE(one, 0);
	ASSERT_GE(two, 0);
	ASSERT_EQ(0, write_sysctl(hard, 16 + 16 / 2));
	EXPECT_EQ(0, map_err_as_nobody(one, 65536));
	EXPECT_EQ(EPERM, map_err_as_nobody(two, 65536));
	EXPECT_EQ(0, write_sysctl(hard, old_hard));
	close(one);
	close(two);
}

TEST_HARNESS_MAIN
