// SPDX-License-Identifier: GPL-2.0
/*
 * rst_client - conformance client of the ring buffer ABI.
 *
 * A client of ringbuffer(2), ringbuffer_wait(2), ringbuffer_wakeup(2) and of
 * pipes in ring mode, written from Documentation/userspace-api/ringbuffer.rst
 * (and <linux/ringbuffer.h>) alone, which checks that the kernel does what the
 * document says.  Every check follows from a sentence of the document; where
 * the document allows several outcomes, each of them passes.
 *
 * Run it as root, in the VM, on a kernel with the ring buffer series:
 * `make selftests` builds it into selftests/out/rst_client, and
 * selftests/run runs it with the other tests (`make check`), or alone:
 *
 *	ci/vm-run --debug -- selftests/out/rst_client [test ...]
 *
 * It prints one line per check, "ok N - test: check" or
 * "not ok N - test: check (detail)", "# ..." lines that only inform, and
 * ends with a line of the form "N passed, N failed".  The exit status is 0
 * when nothing failed, 1 otherwise.  Under the fs.pipe-ring-force sysctl,
 * checks about pipes that are not in ring mode report "# SKIP".
 */
#include "rst_client.h"

#include <grp.h>
#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>

#ifndef O_NOTIFICATION_PIPE
#define O_NOTIFICATION_PIPE	O_EXCL	/* as in <linux/watch_queue.h> */
#endif

#define READ_SIDE	RINGBUFFER_READ
#define WRITE_SIDE	RINGBUFFER_WRITE

struct report *report;
const char *current_test = "main";
bool forced_ring_mode;
bool last_copy_woke_other_side;

/* An unprivileged identity, for the limits that CAP_SYS_RESOURCE lifts. */
#define NOBODY_ID	65534

/*
 * Test data: a pseudo-random pattern with a prime period, so that the
 * data never lines up with the ring size and a misplaced byte shows.
 */
#define PATTERN_PERIOD	65521u
static unsigned char pattern[PATTERN_PERIOD + 2 * 1048576];

static void pattern_init(void)
{
	uint32_t x = 12345;

	for (size_t i = 0; i < sizeof(pattern); i++) {
		if (i < PATTERN_PERIOD) {
			x = x * 1103515245u + 12345u;
			pattern[i] = (unsigned char)(x >> 16);
		} else {
			pattern[i] = pattern[i - PATTERN_PERIOD];
		}
	}
}

static const unsigned char *pattern_at(uint64_t position)
{
	return pattern + position % PATTERN_PERIOD;
}

/* "EINVAL: the file of fd has no ring yet" is how a pipe tells it has none. */
static bool pipe_has_no_ring(int read_fd)
{
	errno = 0;
	return sys_ringbuffer_wait(read_fd, READ_SIDE, 0, &zero_timeout, 0) == -1 &&
	       errno == EINVAL;
}

static unsigned long read_ulong_file(const char *path)
{
	unsigned long value = 0;
	FILE *f = fopen(path, "r");

	if (!f || fscanf(f, "%lu", &value) != 1)
		value = 0;
	if (f)
		fclose(f);
	return value;
}

/* The smallest power of two above pipe-max-size: more than an unprivileged user may ask. */
static uint32_t size_above_pipe_max_size(void)
{
	unsigned long max_size = read_ulong_file("/proc/sys/fs/pipe-max-size");
	uint64_t size = 1;

	while (size <= max_size)
		size <<= 1;
	return size > RINGBUFFER_MAX_SIZE ? 0 : (uint32_t)size;
}

static bool become_nobody(void)
{
	return !setgroups(0, NULL) && !setresgid(NOBODY_ID, NOBODY_ID, NOBODY_ID) &&
	       !setresuid(NOBODY_ID, NOBODY_ID, NOBODY_ID);
}

/* A second, nonblocking open file of the same pipe end. */
static int reopen_nonblocking(int fd, int access)
{
	char path[64];
	int nb;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	nb = open(path, access | O_NONBLOCK);
	if (nb < 0)
		die("open /proc/self/fd");
	return nb;
}

static void set_nonblocking(int fd, bool on)
{
	int flags = fcntl(fd, F_GETFL);

	fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK);
}

/* Fills the ring of a pipe with write(2) until there is no space left. */
static void fill_pipe(int write_fd)
{
	set_nonblocking(write_fd, true);
	while (write(write_fd, pattern, PAGE_SIZE_BYTES) > 0)
		;
	set_nonblocking(write_fd, false);
}

/* The kept-lock words are optional: offset 0 means a kernel without them. */
static bool have_kept_locks(const struct ring *r)
{
	if (r->producer_keeper && r->consumer_keeper && r->producer_busy && r->consumer_busy)
		return true;
	skip("kept locks", "kernel without kept locks (keeper offsets 0)");
	return false;
}

/* So are the wait minimum words: without them, wake whenever the count is not 0. */
static bool have_wait_minimum(const struct ring *r, const char *what)
{
	if (r->read_wait_min && r->write_wait_min)
		return true;
	skip(what, "kernel without wait minimum words");
	return false;
}

/* ---------------------------------------------------------------------- */
/* Arguments and errors                                                    */
/* ---------------------------------------------------------------------- */

/*
 * ringbuffer_wait() and ringbuffer_wakeup() on a pipe that cannot have a
 * ring (EOPNOTSUPP), which has no ring yet either (EINVAL): "When several
 * errors apply, any one of them may be returned."  Which one came is noted.
 */
#define EXPECT_CANNOT_HAVE_RING(call, what) ({					\
	errno = 0;								\
	long rc_ = (long)(call);						\
	int err_ = errno;							\
	note("%s: %ld %s", what, rc_, rc_ < 0 ? errno_name(err_) : "");	\
	expect_failure_result(rc_, err_, what, (const int[]){ EOPNOTSUPP, EINVAL, 0 }); \
})

static uint64_t scratch_addr;
static bool failed_call_stored_address;

/* ringbuffer(2) with *addr 0 on entry; notes a failed call that stored an address. */
static long ringbuffer_call(long fd, unsigned int side, uint32_t size, unsigned int flags)
{
	long rc;
	int err;

	scratch_addr = 0;
	rc = sys_ringbuffer(fd, side, size, &scratch_addr, flags);
	err = errno;
	if (rc < 0 && scratch_addr)
		failed_call_stored_address = true;
	errno = err;
	return rc;
}

static void test_args(void)
{
	static const uint32_t bad_sizes[] = {
		0, 3, 12345, 3 * PAGE_SIZE_BYTES, RINGBUFFER_MAX_SIZE + 1,
		RINGBUFFER_MAX_SIZE * 2u, 1u << 31, 0xffffffffu,
	};
	int p[2], packet[2], packet_by_fcntl[2], sockets[2], fd;
	char tmp_path[] = "/tmp/rst_client_argsXXXXXX";
	uint64_t *read_only_page, addr;
	char buf[8] = { 0 };
	int size_before;

	make_pipe(p);
	size_before = fcntl(p[0], F_GETPIPE_SZ);

	EXPECT_FAILURE(ringbuffer_call(9999, READ_SIDE, 65536, 0),
		       "ringbuffer() on a closed fd fails with EBADF", EBADF);
	EXPECT_FAILURE(ringbuffer_call(-1, READ_SIDE, 65536, 0),
		       "ringbuffer() on fd -1 fails with EBADF", EBADF);
	EXPECT_FAILURE(ringbuffer_call(p[1], READ_SIDE, 65536, 0),
		       "ringbuffer(READ) on the write end fails with EBADF", EBADF);
	EXPECT_FAILURE(ringbuffer_call(p[0], WRITE_SIDE, 65536, 0),
		       "ringbuffer(WRITE) on the read end fails with EBADF", EBADF);
	EXPECT_FAILURE(ringbuffer_call(p[0], 2, 65536, 0),
		       "ringbuffer() with rw 2 fails with EINVAL", EINVAL);
	EXPECT_FAILURE(ringbuffer_call(p[0], 0x80000000u, 65536, 0),
		       "ringbuffer() with rw 0x80000000 fails with EINVAL", EINVAL);
	for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++)
		EXPECT_FAILURE(ringbuffer_call(p[0], READ_SIDE, bad_sizes[i], 0),
			       text("ringbuffer() with size %#x fails with EINVAL", bad_sizes[i]),
			       EINVAL);
	for (unsigned int flags = 1; flags; flags = flags == 2 ? 0x80000000u : flags << 1)
		EXPECT_FAILURE(ringbuffer_call(p[0], READ_SIDE, 65536, flags),
			       text("ringbuffer() with flags %#x fails with EINVAL", flags),
			       EINVAL);
	check(!failed_call_stored_address, "failed ringbuffer() calls leave *addr 0",
	      "a failed call stored an address");

	addr = 0x1000;
	EXPECT_FAILURE(sys_ringbuffer(p[0], READ_SIDE, 65536, &addr, 0),
		       "ringbuffer() with *addr not 0 fails with EINVAL", EINVAL);
	EXPECT_FAILURE(sys_ringbuffer(p[0], READ_SIDE, 65536, NULL, 0),
		       "ringbuffer() with addr NULL fails with EFAULT", EFAULT);
	EXPECT_FAILURE(sys_ringbuffer(p[0], READ_SIDE, 65536, (uint64_t *)16, 0),
		       "ringbuffer() with addr 16 fails with EFAULT", EFAULT);
	read_only_page = mmap(NULL, PAGE_SIZE_BYTES, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
			      -1, 0);
	if (read_only_page == MAP_FAILED)
		die("mmap");
	EXPECT_FAILURE(sys_ringbuffer(p[0], READ_SIDE, 65536, read_only_page, 0),
		       "ringbuffer(READ) with addr in a read-only page fails with EFAULT", EFAULT);
	EXPECT_FAILURE(sys_ringbuffer(p[1], WRITE_SIDE, 65536, read_only_page, 0),
		       "ringbuffer(WRITE) with addr in a read-only page fails with EFAULT", EFAULT);
	munmap(read_only_page, PAGE_SIZE_BYTES);

	/* "When several errors apply, any one of them may be returned." */
	EXPECT_FAILURE(ringbuffer_call(9999, 2, 0, 1),
		       "ringbuffer(bad fd, rw 2, size 0, flags 1) fails with one of the errors",
		       EBADF, EINVAL);
	EXPECT_FAILURE(sys_ringbuffer(p[0], READ_SIDE, 0, NULL, 0),
		       "ringbuffer(size 0, addr NULL) fails with one of the errors",
		       EINVAL, EFAULT);

	/* Files without ring support. */
	fd = open("/dev/null", O_RDWR);
	EXPECT_FAILURE(ringbuffer_call(fd, READ_SIDE, 65536, 0),
		       "ringbuffer() on /dev/null fails with EOPNOTSUPP", EOPNOTSUPP);
	EXPECT_FAILURE(sys_ringbuffer_wait(fd, READ_SIDE, 0, &zero_timeout, 0),
		       "ringbuffer_wait() on /dev/null fails with EOPNOTSUPP", EOPNOTSUPP);
	EXPECT_FAILURE(sys_ringbuffer_wakeup(fd, WRITE_SIDE, 0),
		       "ringbuffer_wakeup() on /dev/null fails with EOPNOTSUPP", EOPNOTSUPP);
	close(fd);
	fd = mkstemp(tmp_path);
	unlink(tmp_path);
	EXPECT_FAILURE(ringbuffer_call(fd, WRITE_SIDE, 65536, 0),
		       "ringbuffer() on a regular file fails with EOPNOTSUPP", EOPNOTSUPP);
	close(fd);
	fd = eventfd(0, 0);
	EXPECT_FAILURE(ringbuffer_call(fd, READ_SIDE, 65536, 0),
		       "ringbuffer() on an eventfd fails with EOPNOTSUPP", EOPNOTSUPP);
	close(fd);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sockets))
		die("socketpair");
	EXPECT_FAILURE(ringbuffer_call(sockets[0], READ_SIDE, 65536, 0),
		       "ringbuffer() on a unix socket fails with EOPNOTSUPP", EOPNOTSUPP);
	close(sockets[0]);
	close(sockets[1]);

	/* Packet mode keeps its buffers, also under fs.pipe-ring-force. */
	if (pipe2(packet, O_DIRECT))
		die("pipe2(O_DIRECT)");
	EXPECT_FAILURE(ringbuffer_call(packet[0], READ_SIDE, 65536, 0),
		       "ringbuffer(READ) on a packet-mode pipe fails with EOPNOTSUPP", EOPNOTSUPP);
	EXPECT_FAILURE(ringbuffer_call(packet[1], WRITE_SIDE, 65536, 0),
		       "ringbuffer(WRITE) on a packet-mode pipe fails with EOPNOTSUPP", EOPNOTSUPP);
	EXPECT_CANNOT_HAVE_RING(sys_ringbuffer_wait(packet[0], READ_SIDE, 0, &zero_timeout, 0),
				"ringbuffer_wait() on a packet-mode pipe fails (EOPNOTSUPP or "
				"no ring)");
	EXPECT_CANNOT_HAVE_RING(sys_ringbuffer_wakeup(packet[1], WRITE_SIDE, 0),
				"ringbuffer_wakeup() on a packet-mode pipe fails (EOPNOTSUPP or "
				"no ring)");
	make_pipe(packet_by_fcntl);
	if (!skipped_in_forced_mode("ringbuffer() on a pipe put in packet mode by F_SETFL "
				    "fails with EOPNOTSUPP")) {
		if (fcntl(packet_by_fcntl[1], F_SETFL, O_DIRECT))
			die("F_SETFL O_DIRECT");
		EXPECT_FAILURE(ringbuffer_call(packet_by_fcntl[1], WRITE_SIDE, 65536, 0),
			       "ringbuffer() on a pipe put in packet mode by F_SETFL fails with "
			       "EOPNOTSUPP", EOPNOTSUPP);
	}

	/* ringbuffer_wait() and ringbuffer_wakeup() on a pipe without a ring. */
	EXPECT_FAILURE(sys_ringbuffer_wait(9999, READ_SIDE, 0, &zero_timeout, 0),
		       "ringbuffer_wait() on a closed fd fails with EBADF", EBADF);
	EXPECT_FAILURE(sys_ringbuffer_wakeup(9999, READ_SIDE, 0),
		       "ringbuffer_wakeup() on a closed fd fails with EBADF", EBADF);
	if (forced_ring_mode) {
		EXPECT_FAILURE(sys_ringbuffer_wait(p[1], READ_SIDE, 0, &zero_timeout, 0),
			       "ringbuffer_wait(READ) on the write end fails with EBADF", EBADF);
		EXPECT_FAILURE(sys_ringbuffer_wakeup(p[0], WRITE_SIDE, 0),
			       "ringbuffer_wakeup(WRITE) on the read end fails with EBADF", EBADF);
	} else {
		/* The pipe has no ring yet either: EINVAL applies too. */
		EXPECT_FAILURE(sys_ringbuffer_wait(p[1], READ_SIDE, 0, &zero_timeout, 0),
			       "ringbuffer_wait(READ) on the write end fails with EBADF or EINVAL",
			       EBADF, EINVAL);
		EXPECT_FAILURE(sys_ringbuffer_wakeup(p[0], WRITE_SIDE, 0),
			       "ringbuffer_wakeup(WRITE) on the read end fails with EBADF or "
			       "EINVAL",
			       EBADF, EINVAL);
	}
	if (!skipped_in_forced_mode("ringbuffer_wakeup() on a pipe without a ring fails with "
				    "EINVAL")) {
		EXPECT_FAILURE(sys_ringbuffer_wakeup(p[0], READ_SIDE, 0),
			       "ringbuffer_wakeup() on a pipe without a ring fails with EINVAL",
			       EINVAL);
		EXPECT_FAILURE(sys_ringbuffer_wait(p[1], WRITE_SIDE, 0, &zero_timeout, 0),
			       "ringbuffer_wait(WRITE) on a pipe without a ring fails with EINVAL",
			       EINVAL);
		EXPECT_FAILURE(sys_ringbuffer_wait(p[0], READ_SIDE, 0, NULL, RINGBUFFER_WAIT_LOCK),
			       "RINGBUFFER_WAIT_LOCK on a pipe without a ring fails with EINVAL",
			       EINVAL);
	}

	/* Failed calls leave the file as it was. */
	EXPECT_VALUE(fcntl(p[0], F_GETPIPE_SZ), size_before,
		     "F_GETPIPE_SZ is unchanged after the failed calls");
	if (!skipped_in_forced_mode("the pipe still has no ring after the failed calls"))
		check(pipe_has_no_ring(p[0]), "the pipe still has no ring after the failed calls",
		      "ringbuffer_wait() did not fail with EINVAL");
	EXPECT_VALUE(write(p[1], "abc", 3), 3, "write(2) works after the failed calls");
	EXPECT_VALUE(read(p[0], buf, sizeof(buf)), 3, "read(2) works after the failed calls");
	check(!memcmp(buf, "abc", 3), "the data is intact", "read \"%.3s\"", buf);
	/* Only a pipe that is not in ring mode accepts O_DIRECT. */
	if (!skipped_in_forced_mode("F_SETFL O_DIRECT is still accepted (no ring mode)"))
		EXPECT_VALUE(fcntl(p[1], F_SETFL, O_DIRECT), 0,
			     "F_SETFL O_DIRECT is still accepted (no ring mode)");
}

/* EPERM above pipe-max-size without CAP_SYS_RESOURCE; the pipe stays as it was. */
static void test_eperm(void)
{
	uint32_t too_big = size_above_pipe_max_size();
	struct ring producer, consumer;
	pid_t child;
	int p[2];

	if (!too_big) {
		skip("EPERM above pipe-max-size", "pipe-max-size above RINGBUFFER_MAX_SIZE");
		return;
	}
	make_pipe(p);
	child = fork_helper();
	if (!child) {
		int size_before = fcntl(p[0], F_GETPIPE_SZ);
		int err;

		if (!become_nobody()) {
			skip("EPERM above pipe-max-size", "cannot drop privileges");
			_exit(0);
		}
		/* Under fs.pipe-ring-force the ring exists already: nothing is created. */
		if (!skipped_in_forced_mode("unprivileged ringbuffer() above pipe-max-size fails "
					    "with EPERM")) {
			EXPECT_FAILURE(ringbuffer_call(p[1], WRITE_SIDE, too_big, 0),
				       text("unprivileged ringbuffer(size %#x) above pipe-max-size "
					    "fails with EPERM", too_big), EPERM);
			EXPECT_VALUE(fcntl(p[0], F_GETPIPE_SZ), size_before,
				     "F_GETPIPE_SZ is unchanged after EPERM");
			check(pipe_has_no_ring(p[0]), "the pipe has no ring after EPERM",
			      "ringbuffer_wait() did not fail with EINVAL");
		}
		err = ring_map(&producer, p[1], WRITE_SIDE, 65536);
		check(!err, "unprivileged ringbuffer(64 KiB) works", "%s", errno_name(-err));
		/* An existing ring is mapped as it is, whatever size says. */
		err = ring_map(&consumer, p[0], READ_SIDE, too_big);
		check(!err && consumer.size == producer.size,
		      "unprivileged ringbuffer() with a too large size maps an existing ring as is",
		      "%s, size %u", err ? errno_name(-err) : "0", err ? 0 : consumer.size);
		_exit(0);
	}
	EXPECT_VALUE(wait_child(child), 0, "the unprivileged child finished");
}

/* ---------------------------------------------------------------------- */
/* The mapping                                                             */
/* ---------------------------------------------------------------------- */

/* Stores @value at @p in a child: 0, or the signal the store raised. */
static int store_signal(volatile void *p, uint32_t value)
{
	pid_t child = fork_helper();
	int status;

	if (!child) {
		*(volatile uint32_t *)p = value;
		_exit(0);
	}
	status = wait_child(child);
	return status >= 1000 ? status - 1000 : (status ? -1 : 0);
}

static int load_signal(volatile void *p)
{
	pid_t child = fork_helper();
	int status;

	if (!child) {
		volatile uint32_t value = *(volatile uint32_t *)p;

		(void)value;
		_exit(0);
	}
	status = wait_child(child);
	return status >= 1000 ? status - 1000 : (status ? -1 : 0);
}

static uint32_t page_of(uint32_t offset)
{
	return offset / PAGE_SIZE_BYTES;
}

struct area {
	uintptr_t start, end;
	bool writable;
	bool alone;	/* the own page: "an area of its own" */
};

#define MAPPING_PARTS 5

/*
 * The parts of a mapping in address order, with the access the table of
 * "The mapping" gives the mapping's side: header page, consumer page,
 * producer page, data twice, own page.  Found from the offsets, not from
 * the order.
 */
static void mapping_parts(const struct ring *r, struct area parts[MAPPING_PARTS])
{
	const struct ringbuffer_offsets *o = &r->header->offsets;
	uintptr_t base = (uintptr_t)r->base;
	bool producer = r->side == WRITE_SIDE;
	uintptr_t consumer_page = base + page_of(o->tail) * PAGE_SIZE_BYTES;
	uintptr_t producer_page = base + page_of(o->head) * PAGE_SIZE_BYTES;
	uintptr_t own_page = base + page_of(producer ? o->producer_held : o->consumer_held) *
			     PAGE_SIZE_BYTES;

	parts[0] = (struct area){ base, base + PAGE_SIZE_BYTES, false, false };
	parts[1] = (struct area){ consumer_page, consumer_page + PAGE_SIZE_BYTES, !producer,
				  false };
	parts[2] = (struct area){ producer_page, producer_page + PAGE_SIZE_BYTES, producer,
				  false };
	parts[3] = (struct area){ base + o->data, base + o->data + 2ull * r->size, producer,
				  false };
	parts[4] = (struct area){ own_page, own_page + PAGE_SIZE_BYTES, true, true };
	for (int i = 1; i < MAPPING_PARTS; i++)
		for (int j = i; j > 0 && parts[j].start < parts[j - 1].start; j--) {
			struct area t = parts[j];

			parts[j] = parts[j - 1];
			parts[j - 1] = t;
		}
}

/*
 * "The parts with the same access that follow each other form one area,
 * except the own page, which is an area of its own."
 */
static int mapping_areas(const struct ring *r, struct area areas[MAPPING_PARTS])
{
	struct area parts[MAPPING_PARTS];
	int count = 0;

	mapping_parts(r, parts);
	for (int i = 0; i < MAPPING_PARTS; i++) {
		if (count && areas[count - 1].end == parts[i].start &&
		    areas[count - 1].writable == parts[i].writable &&
		    !areas[count - 1].alone && !parts[i].alone)
			areas[count - 1].end = parts[i].end;
		else
			areas[count++] = parts[i];
	}
	return count;
}

/* The VMAs that overlap [start, start + len), as /proc/self/maps lists them. */
static int vmas_of(uintptr_t start, uint64_t len, struct area vmas[8], bool *all_readable,
		   bool *any_executable)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int count = 0;

	*all_readable = true;
	*any_executable = false;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f) && count < 8) {
		unsigned long lo, hi;
		char perm[8];

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) != 3)
			continue;
		if (hi <= start || lo >= start + len)
			continue;
		vmas[count++] = (struct area){ lo, hi, perm[1] == 'w', false };
		*all_readable &= perm[0] == 'r';
		*any_executable |= perm[2] == 'x';
	}
	fclose(f);
	return count;
}

static void describe_areas(char *buf, size_t size, uintptr_t base, const struct area *a, int n)
{
	buf[0] = 0;
	for (int i = 0; i < n; i++) {
		size_t len = strlen(buf);

		snprintf(buf + len, size - len, "[+%#lx..+%#lx %s] ",
			 (unsigned long)(a[i].start - base), (unsigned long)(a[i].end - base),
			 a[i].writable ? "rw" : "r");
	}
}

static const struct area *area_containing(const struct area *areas, int n, uintptr_t address)
{
	for (int i = 0; i < n; i++)
		if (address >= areas[i].start && address < areas[i].end)
			return &areas[i];
	return NULL;
}

/* Checks the layout a ring's header describes. */
static void check_header(const struct ring *r, int pipe_capacity)
{
	const struct ringbuffer_header *h = r->header;
	const struct ringbuffer_offsets *o = &h->offsets;
	const uint32_t required[] = {
		o->head, o->tail, o->producer_lock, o->consumer_lock, o->flags,
		o->read_waiters, o->write_waiters, o->data, o->producer_lock_waiters,
		o->consumer_lock_waiters,
	};
	const uint32_t optional[] = {
		o->producer_keeper, o->consumer_keeper, o->producer_busy, o->consumer_busy,
		o->read_wait_min, o->write_wait_min, o->producer_held, o->consumer_held,
	};
	/* The own page: after the data, the mapping's last. */
	uint32_t own = (uint32_t)(h->map_size / PAGE_SIZE_BYTES) - 1;
	struct {
		uint32_t offset;
		uint32_t page;
		const char *name;
	} placement[] = {
		{ o->head, page_of(o->head), "head" },
		{ o->head64, page_of(o->head), "head64" },
		{ o->producer_lock, page_of(o->head), "producer_lock" },
		{ o->producer_busy, own, "producer_busy" },
		{ o->producer_held, own, "producer_held" },
		{ o->tail, page_of(o->tail), "tail" },
		{ o->tail64, page_of(o->tail), "tail64" },
		{ o->consumer_lock, page_of(o->tail), "consumer_lock" },
		{ o->consumer_busy, own, "consumer_busy" },
		{ o->consumer_held, own, "consumer_held" },
		{ o->flags, 0, "flags" },
		{ o->read_waiters, 0, "read_waiters" },
		{ o->write_waiters, 0, "write_waiters" },
		{ o->read_wait_min, 0, "read_wait_min" },
		{ o->write_wait_min, 0, "write_wait_min" },
		{ o->producer_lock_waiters, 0, "producer_lock_waiters" },
		{ o->consumer_lock_waiters, 0, "consumer_lock_waiters" },
		{ o->producer_keeper, 0, "producer_keeper" },
		{ o->consumer_keeper, 0, "consumer_keeper" },
	};
	bool required_present = true, aligned = true, misplaced = false;
	const char *misplaced_name = "";
	struct area parts[MAPPING_PARTS];
	bool tiled = true;
	bool resv_zero = true;

	check(h->magic == RINGBUFFER_MAGIC, "magic is RINGBUFFER_MAGIC", "%#x", h->magic);
	check(h->version == 2, "version is 2", "%u", h->version);
	check(h->size && !(h->size & (h->size - 1)), "size is a power of two", "%u", h->size);
	check(h->size >= (uint32_t)pipe_capacity,
	      "the ring holds at least the pipe's capacity at conversion",
	      "size %u, capacity %d", h->size, pipe_capacity);
	check(h->mask == h->size - 1, "mask is size - 1", "mask %#x size %u", h->mask, h->size);
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		required_present &= required[i] != 0;
		aligned &= required[i] % 4 == 0;
	}
	for (size_t i = 0; i < sizeof(optional) / sizeof(optional[0]); i++)
		aligned &= optional[i] % 4 == 0;
	check(required_present, "the offsets of the words every version has are not 0",
	      "an offset is 0");
	check(aligned, "every word is a naturally aligned __u32", "an offset is not 4-aligned");
	check(o->data % PAGE_SIZE_BYTES == 0, "the data area starts on a page",
	      "data at %#x", o->data);
	for (size_t i = 0; i < sizeof(placement) / sizeof(placement[0]); i++) {
		if (!placement[i].offset)
			continue;	/* an optional word this kernel lacks */
		if (page_of(placement[i].offset) != placement[i].page ||
		    (placement[i].page != own && placement[i].offset >= o->data)) {
			misplaced = true;
			misplaced_name = placement[i].name;
		}
	}
	check(!misplaced, "every word is in the page the table puts it in", "%s", misplaced_name);
	check(page_of(o->head) != 0 && page_of(o->tail) != 0 &&
	      page_of(o->head) != page_of(o->tail),
	      "header, consumer and producer pages are distinct",
	      "consumer page %u, producer page %u", page_of(o->tail), page_of(o->head));
	mapping_parts(r, parts);
	tiled = parts[0].start == (uintptr_t)r->base &&
		parts[MAPPING_PARTS - 1].end == (uintptr_t)r->base + h->map_size;
	for (int i = 0; i + 1 < MAPPING_PARTS; i++)
		tiled &= parts[i].end == parts[i + 1].start;
	check(tiled, "map_size is a header page, a consumer page, a producer page, the data "
	      "twice and the own page", "map_size %llu, data at %#x, size %u",
	      (unsigned long long)h->map_size, o->data, h->size);
	check(o->producer_held == o->consumer_held && o->producer_busy == o->consumer_busy,
	      "both names of the held and busy words name the same word",
	      "held %#x/%#x busy %#x/%#x", o->producer_held, o->consumer_held,
	      o->producer_busy, o->consumer_busy);
	for (size_t i = 0; i < sizeof(o->resv) / sizeof(o->resv[0]); i++)
		resv_zero &= o->resv[i] == 0;
	check(resv_zero, "resv is 0", "%#x %#x", o->resv[0], o->resv[1]);
	/* A 64-bit process runs on a 64-bit kernel, which names 64-bit positions. */
	check(sizeof(long) < 8 || (o->head64 && o->tail64),
	      "a 64-bit kernel names the 64-bit positions", "head64 %#x tail64 %#x",
	      o->head64, o->tail64);
	if (o->head64 || o->tail64) {
		uint32_t low = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? 4 : 0;

		check(o->head64 % 8 == 0 && o->tail64 % 8 == 0 &&
		      o->head == o->head64 + low && o->tail == o->tail64 + low,
		      "head and tail name the low halves of the aligned __u64 head64 and tail64",
		      "head %#x head64 %#x tail %#x tail64 %#x", o->head, o->head64, o->tail,
		      o->tail64);
	}
}

/* The VMAs of a mapping are the areas the document defines, with their access. */
static void check_areas(const struct ring *r, const char *which)
{
	struct area expected[MAPPING_PARTS], seen[8];
	bool readable, executable, same;
	char want[300], got[300];
	int n_expected, n_seen;

	n_expected = mapping_areas(r, expected);
	n_seen = vmas_of((uintptr_t)r->base, r->map_size, seen, &readable, &executable);
	same = n_expected == n_seen;
	for (int i = 0; same && i < n_seen; i++)
		same = seen[i].start == expected[i].start && seen[i].end == expected[i].end &&
		       seen[i].writable == expected[i].writable;
	describe_areas(want, sizeof(want), (uintptr_t)r->base, expected, n_expected);
	describe_areas(got, sizeof(got), (uintptr_t)r->base, seen, n_seen);
	check(same, text("the %s mapping's VMAs are its areas with the table's access", which),
	      "want %s got %s", want, got);
	check(readable && !executable,
	      text("every area of the %s mapping is readable, none executable", which),
	      "got %s", got);
	note("areas of the %s mapping: %s", which, got);
}

/* mprotect(2), munmap(2) and mremap(2) on a producer mapping; run in a child. */
static void check_area_operations(const struct ring *consumer, const struct ring *producer)
{
	struct area areas[MAPPING_PARTS];
	int n = mapping_areas(producer, areas);
	const struct area *data = area_containing(areas, n, (uintptr_t)producer->data);
	const struct area *first = &areas[0];
	uintptr_t part = data->start + PAGE_SIZE_BYTES;
	size_t part_len = data->end - part;
	size_t data_len = data->end - data->start;
	size_t first_len = first->end - first->start;
	void *dest = mmap(NULL, producer->map_size + PAGE_SIZE_BYTES, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool header_whole = first_len == PAGE_SIZE_BYTES;

	if (dest == MAP_FAILED)
		die("mmap");
	/* Making a read-only part writable or anything executable: EACCES. */
	EXPECT_FAILURE(mprotect(consumer->base, consumer->map_size, PROT_READ | PROT_WRITE),
		       "mprotect(whole consumer mapping, read-write) fails with EACCES", EACCES);
	if (header_whole)
		EXPECT_FAILURE(mprotect(producer->base, PAGE_SIZE_BYTES, PROT_READ | PROT_WRITE),
			       "mprotect(header page, read-write) fails with EACCES", EACCES);
	else	/* the header page is part of an area too */
		EXPECT_FAILURE(mprotect(producer->base, PAGE_SIZE_BYTES, PROT_READ | PROT_WRITE),
			       "mprotect(header page, read-write) fails with EACCES or EINVAL",
			       EACCES, EINVAL);
	EXPECT_FAILURE(mprotect(consumer->data, 2ull * consumer->size, PROT_READ | PROT_WRITE),
		       "mprotect(consumer's data, read-write) fails with EACCES or EINVAL",
		       EACCES, EINVAL);
	EXPECT_FAILURE(mprotect(producer->base, producer->map_size,
				PROT_READ | PROT_WRITE | PROT_EXEC),
		       "mprotect(whole producer mapping, with PROT_EXEC) fails with EACCES",
		       EACCES);
	EXPECT_FAILURE(mprotect((void *)data->start, data_len, PROT_READ | PROT_WRITE | PROT_EXEC),
		       "mprotect(the writable data area, with PROT_EXEC) fails with EACCES",
		       EACCES);

	/* Part of an area: EINVAL; moving an area: EINVAL; growing one: EFAULT. */
	EXPECT_FAILURE(mprotect((void *)part, PAGE_SIZE_BYTES, PROT_READ),
		       "mprotect(part of an area) fails with EINVAL", EINVAL);
	EXPECT_FAILURE(munmap((void *)part, PAGE_SIZE_BYTES),
		       "munmap(part of an area) fails with EINVAL", EINVAL);
	EXPECT_FAILURE(munmap(consumer->data, consumer->size),
		       "munmap(the first data copy only) fails with EINVAL", EINVAL);
	if (!header_whole)
		EXPECT_FAILURE(munmap(producer->base, PAGE_SIZE_BYTES),
			       "munmap(header page, part of an area) fails with EINVAL", EINVAL);
	EXPECT_FAILURE((long)mremap((void *)part, part_len, part_len - PAGE_SIZE_BYTES, 0),
		       "mremap(shrink part of an area) fails with EINVAL", EINVAL);
	EXPECT_FAILURE((long)mremap((void *)part, PAGE_SIZE_BYTES, PAGE_SIZE_BYTES,
				    MREMAP_MAYMOVE | MREMAP_FIXED, dest),
		       "mremap(move part of an area) fails with EINVAL", EINVAL);
	EXPECT_FAILURE((long)mremap((void *)part, part_len, part_len + PAGE_SIZE_BYTES, 0),
		       "mremap(grow part of an area) fails with EINVAL or EFAULT", EINVAL, EFAULT);
	EXPECT_FAILURE((long)mremap((void *)data->start, data_len, data_len,
				    MREMAP_MAYMOVE | MREMAP_FIXED, dest),
		       "mremap(move a whole area) fails with EINVAL", EINVAL);
	EXPECT_FAILURE((long)mremap((void *)first->start, first_len, first_len,
				    MREMAP_MAYMOVE | MREMAP_FIXED, dest),
		       "mremap(move the first area) fails with EINVAL", EINVAL);
	EXPECT_FAILURE((long)mremap((void *)data->start, data_len, data_len + PAGE_SIZE_BYTES, 0),
		       "mremap(grow a whole area in place) fails with EFAULT", EFAULT);
	/* With MREMAP_MAYMOVE the growth may also be a move: EINVAL applies too. */
	EXPECT_FAILURE((long)mremap((void *)data->start, data_len, data_len + PAGE_SIZE_BYTES,
				    MREMAP_MAYMOVE),
		       "mremap(grow a whole area, may move) fails with EFAULT or EINVAL",
		       EFAULT, EINVAL);
	EXPECT_FAILURE((long)mremap(producer->base, producer->map_size, producer->map_size,
				    MREMAP_MAYMOVE | MREMAP_FIXED, dest),
		       "mremap(move the whole mapping, across areas) fails with EFAULT or EINVAL",
		       EFAULT, EINVAL);
	check(producer->header->magic == RINGBUFFER_MAGIC &&
	      load_signal(producer->data) == 0 && load_signal((void *)part) == 0,
	      "the mapping is intact after the refused calls", "it is not");

	/* munmap(2) of whole areas works and leaves the others mapped. */
	EXPECT_VALUE(munmap((void *)first->start, first_len), 0,
		     "munmap(a whole area) works");
	check(load_signal(producer->data) == 0,
	      "the other areas stay mapped after munmap() of one area",
	      "loading data raised a signal");
	EXPECT_VALUE(munmap(producer->base, producer->map_size), 0,
		     "munmap() of all of map_size afterwards works");
}

static void test_map(void)
{
	struct ring consumer, producer, consumer2, consumer3;
	uint32_t wrapped, index;
	int p[2], capacity, err, status, dup_fd;
	int bytes_queued = -1;
	struct area areas[MAPPING_PARTS];
	const struct area *consumer_data;
	pid_t child;

	make_pipe(p);
	capacity = fcntl(p[0], F_GETPIPE_SZ);
	EXPECT_VALUE(write(p[1], "hello", 5), 5, "write(2) before the first mapping");
	err = ring_map(&consumer, p[0], READ_SIDE, 4096);
	if (!check(!err, "ringbuffer(read end, 4096) works", "%s", errno_name(-err)))
		return;
	check_header(&consumer, capacity);
	EXPECT_VALUE(fcntl(p[0], F_GETPIPE_SZ), consumer.size,
		     "F_GETPIPE_SZ reports the ring's size");
	check(load_relaxed(consumer.head) - load_relaxed(consumer.tail) == 5,
	      "what was queued moved into the ring", "head - tail = %u",
	      load_relaxed(consumer.head) - load_relaxed(consumer.tail));
	check(!memcmp(consumer.data + (load_relaxed(consumer.tail) & consumer.mask), "hello", 5),
	      "in order", "the data area differs");
	ioctl(p[0], FIONREAD, &bytes_queued);
	EXPECT_VALUE(bytes_queued, 5, "FIONREAD reports the ring's data");
	check(load_relaxed(consumer.flags) == 0, "flags is 0 while both ends are open",
	      "%#x", load_relaxed(consumer.flags));
	check(load_relaxed(consumer.producer_lock) == 0 &&
	      load_relaxed(consumer.consumer_lock) == 0,
	      "both lock words are free on a new ring", "producer %u, consumer %u",
	      load_relaxed(consumer.producer_lock), load_relaxed(consumer.consumer_lock));
	if (consumer.producer_keeper && consumer.producer_busy)
		check(!load_relaxed(consumer.producer_keeper) &&
		      !load_relaxed(consumer.consumer_keeper) &&
		      !load_relaxed(consumer.producer_busy) &&
		      !load_relaxed(consumer.consumer_busy),
		      "keeper and busy words are 0 on a new ring", "they are not");
	note("new ring: read_waiters %u write_waiters %u", load_relaxed(consumer.read_waiters),
	     load_relaxed(consumer.write_waiters));

	err = ring_map(&producer, p[1], WRITE_SIDE, 1u << 20);
	check(!err && producer.size == consumer.size,
	      "ringbuffer(write end, 1 MiB) maps the existing ring as it is",
	      "%s, size %u", errno_name(-err), err ? 0 : producer.size);
	if (err)
		return;
	err = ring_map(&consumer2, p[0], READ_SIDE, 4096);
	check(!err && consumer2.base != consumer.base,
	      "a second ringbuffer() of the same side makes a new mapping", "%s",
	      errno_name(-err));
	if (err)
		return;
	check(producer.base != consumer.base, "each side's mapping has its own address",
	      "same address");
	/* "every ringbuffer() call gets a new one, zeroed" */
	check(load_relaxed(consumer.held) == 0 && load_relaxed(consumer2.held) == 0 &&
	      load_relaxed(producer.held) == 0, "the held words of new own pages are 0",
	      "%u %u %u", load_relaxed(consumer.held), load_relaxed(consumer2.held),
	      load_relaxed(producer.held));
	atomic_store(consumer.held, 77);
	check(load_relaxed(consumer2.held) == 0 && load_relaxed(producer.held) == 0,
	      "the own page belongs to its mapping alone", "another mapping sees %u or %u",
	      load_relaxed(consumer2.held), load_relaxed(producer.held));
	atomic_store(consumer.held, 0);

	/* The data area is mapped twice in a row, in every mapping of the ring. */
	index = (load_relaxed(producer.tail) + 100) & producer.mask;
	producer.data[producer.size + index] = 'Q';
	check(consumer.data[index] == 'Q' && consumer2.data[index] == 'Q',
	      "a store into the second data copy shows in the first, in every mapping",
	      "it does not");
	producer.data[producer.size - 1] = 'Z';
	check(consumer.data[2 * consumer.size - 1] == 'Z',
	      "the last byte shows at the end of the second copy", "it does not");
	check(!memcmp(consumer.data, consumer.data + consumer.size, consumer.size),
	      "both copies of the data are the same", "they differ");
	wrapped = producer.size - 8;
	memcpy(producer.data + wrapped, "0123456789abcdef", 16);
	check(!memcmp(consumer.data, "89abcdef", 8),
	      "bytes stored past the end of the first copy land at its start", "they do not");

	/* Access, areas. */
	check_areas(&consumer, "consumer");
	check_areas(&producer, "producer");
	check(store_signal((void *)consumer.base, RINGBUFFER_MAGIC) == SIGSEGV &&
	      store_signal((void *)producer.base, RINGBUFFER_MAGIC) == SIGSEGV,
	      "a store into the header raises SIGSEGV, from either side", "it does not");
	check(store_signal(consumer.flags, 0) == SIGSEGV &&
	      store_signal(producer.read_waiters, 0) == SIGSEGV &&
	      store_signal(consumer.write_waiters, 0) == SIGSEGV,
	      "a store into flags or a waiter count raises SIGSEGV", "it does not");
	if (producer.producer_keeper)
		EXPECT_VALUE(store_signal(producer.producer_keeper, 0), SIGSEGV,
			     "a store into producer_keeper from the producer raises SIGSEGV");
	EXPECT_VALUE(store_signal(consumer.head, load_relaxed(consumer.head)), SIGSEGV,
		     "a store into head from the consumer raises SIGSEGV");
	EXPECT_VALUE(store_signal(consumer.producer_lock, 0), SIGSEGV,
		     "a store into producer_lock from the consumer raises SIGSEGV");
	EXPECT_VALUE(store_signal(producer.tail, load_relaxed(producer.tail)), SIGSEGV,
		     "a store into tail from the producer raises SIGSEGV");
	EXPECT_VALUE(store_signal(producer.consumer_lock, 0), SIGSEGV,
		     "a store into consumer_lock from the producer raises SIGSEGV");
	EXPECT_VALUE(store_signal(consumer.data + 64, 0), SIGSEGV,
		     "a store into the data from the consumer raises SIGSEGV");
	EXPECT_VALUE(store_signal(consumer.data + consumer.size + 64, 0), SIGSEGV,
		     "a store into the second data copy from the consumer raises SIGSEGV");
	EXPECT_VALUE(store_signal(consumer.tail, load_relaxed(consumer.tail)), 0,
		     "the consumer can store into tail");
	EXPECT_VALUE(store_signal(consumer.consumer_lock, 0), 0,
		     "the consumer can store into consumer_lock");
	if (consumer.consumer_busy)
		EXPECT_VALUE(store_signal(consumer.consumer_busy, 0), 0,
			     "the consumer can store into consumer_busy");
	EXPECT_VALUE(store_signal(producer.head, load_relaxed(producer.head)), 0,
		     "the producer can store into head");
	EXPECT_VALUE(store_signal(producer.producer_lock, 0), 0,
		     "the producer can store into producer_lock");
	if (producer.producer_busy)
		EXPECT_VALUE(store_signal(producer.producer_busy, 0), 0,
			     "the producer can store into producer_busy");
	EXPECT_VALUE(store_signal(producer.data + 64, 0), 0,
		     "the producer can store into the data");

	/* What the areas allow, in a child so that the parent keeps its mappings. */
	child = fork_helper();
	if (!child) {
		check_area_operations(&consumer, &producer);
		_exit(0);
	}
	EXPECT_VALUE(wait_child(child), 0, "the child checking area operations finished");

	/* madvise(2) on an area leaves it unusable. */
	consumer_data = area_containing(areas, mapping_areas(&consumer, areas),
					(uintptr_t)consumer.data);
	child = fork_helper();
	if (!child) {
		volatile char byte;

		madvise((void *)consumer_data->start, consumer_data->end - consumer_data->start,
			MADV_DONTNEED);
		byte = consumer.data[5];
		(void)byte;
		_exit(0);
	}
	status = wait_child(child);
	check(status == 1000 + SIGBUS, "after MADV_DONTNEED on an area an access raises SIGBUS",
	      "child status %d", status);
	check(consumer.header->magic == RINGBUFFER_MAGIC && load_signal(consumer.data) == 0,
	      "the parent's mapping is unaffected by the child's madvise()", "it is not");

	/* fork(2): the child has the same ring at the same address. */
	child = fork_helper();
	if (!child)
		_exit(consumer.header->magic == RINGBUFFER_MAGIC &&
		      load_relaxed(consumer.head) == load_relaxed(producer.head) ? 0 : 1);
	EXPECT_VALUE(wait_child(child), 0, "a forked child sees the ring at the same address");

	/* Closing the fd does not invalidate a mapping. */
	dup_fd = dup(p[0]);
	err = ring_map(&consumer3, dup_fd, READ_SIDE, 4096);
	close(dup_fd);
	check(!err && consumer3.header->magic == RINGBUFFER_MAGIC &&
	      load_relaxed(consumer3.head) == load_relaxed(consumer.head) &&
	      consumer3.data[index] == 'Q',
	      "a mapping stays usable after its fd is closed", "%s", errno_name(-err));
	if (!err)
		check(load_relaxed(consumer3.flags) == 0,
		      "closing one of several read fds sets no flag", "flags %#x",
		      load_relaxed(consumer3.flags));
	EXPECT_VALUE(munmap(consumer3.base, consumer3.map_size), 0,
		     "munmap() of the whole mapping works");
	EXPECT_VALUE(munmap(consumer2.base, consumer2.map_size), 0,
		     "munmap() of another whole mapping works");
	ring_unmap(&producer);
	ring_unmap(&consumer);
}

/* ---------------------------------------------------------------------- */
/* Transfers                                                               */
/* ---------------------------------------------------------------------- */

#define TRANSFER_BYTES	(20u << 20)

/* Publishes TRANSFER_BYTES of the pattern through a mapping, in varied sizes. */
static void produce_mapped(int write_fd)
{
	uint64_t position = 0;
	uint32_t random = 777;
	struct ring producer;
	int err = ring_map(&producer, write_fd, WRITE_SIDE, 65536);

	if (err) {
		check(false, "producer ringbuffer() works", "%s", errno_name(-err));
		_exit(1);
	}
	while (position < TRANSFER_BYTES) {
		uint32_t want, min_len;
		long n;

		random = random * 1103515245u + 12345u;
		want = 1 + (random >> 8) % 20000;
		if (want > TRANSFER_BYTES - position)
			want = TRANSFER_BYTES - position;
		if (want > producer.size)
			want = producer.size;
		/* Up to PIPE_BUF bytes go in one piece, as for write(2). */
		min_len = want < PIPE_BUF ? want : PIPE_BUF;
		n = ring_produce(&producer, pattern_at(position), min_len, want, true);
		if (n <= 0) {
			check(false, "the mapped producer can publish", "at %llu: %s",
			      (unsigned long long)position, errno_name((int)-n));
			_exit(1);
		}
		position += n;
	}
	_exit(0);
}

static void produce_with_write(int write_fd)
{
	uint64_t position = 0;
	uint32_t random = 999;

	while (position < TRANSFER_BYTES) {
		uint32_t want;
		ssize_t n;

		random = random * 1103515245u + 12345u;
		want = 1 + (random >> 8) % 100000;
		if (want > TRANSFER_BYTES - position)
			want = TRANSFER_BYTES - position;
		n = write(write_fd, pattern_at(position), want);
		if (n <= 0) {
			check(false, "write(2) producer can write", "at %llu: %s",
			      (unsigned long long)position, strerror(errno));
			_exit(1);
		}
		position += n;
	}
	_exit(0);
}

/* Consumes with read(2) or through a mapping until end of file, checking the pattern. */
static void consume_and_verify(int read_fd, bool mapped, const char *what)
{
	static char buf[1 << 17];
	uint64_t position = 0;
	uint32_t random = 4242;
	bool damaged = false;
	struct ring consumer;
	int64_t start = now_ms();

	if (mapped) {
		int err = ring_map(&consumer, read_fd, READ_SIDE, 65536);

		if (!check(!err, text("%s: consumer ringbuffer() works", what), "%s",
			   errno_name(-err)))
			return;
	}
	for (;;) {
		uint32_t want;
		long n;

		random = random * 1103515245u + 12345u;
		want = 1 + (random >> 8) % sizeof(buf);
		n = mapped ? ring_consume(&consumer, buf, want, true) : read(read_fd, buf, want);
		if (n < 0) {
			check(false, text("%s: the consumer gets no error", what), "at %llu: %s",
			      (unsigned long long)position, errno_name(mapped ? (int)-n : errno));
			damaged = true;
			break;
		}
		if (n == 0)
			break;
		if (!damaged && memcmp(buf, pattern_at(position), n)) {
			check(false, text("%s: the data is intact", what),
			      "mismatch in [%llu, +%ld)", (unsigned long long)position, n);
			damaged = true;
		}
		position += n;
	}
	check(!damaged && position == TRANSFER_BYTES,
	      text("%s: every byte arrives intact and in order", what),
	      "%llu bytes, want %u", (unsigned long long)position, TRANSFER_BYTES);
	note("%s: %u bytes in %lld ms", what, TRANSFER_BYTES, (long long)(now_ms() - start));
	if (mapped) {
		check(load_acquire(consumer.flags) & RINGBUFFER_EOF,
		      text("%s: RINGBUFFER_EOF is set at the end", what), "flags %#x",
		      load_relaxed(consumer.flags));
		ring_unmap(&consumer);
	}
}

static void transfer(bool producer_mapped, bool consumer_mapped, const char *what)
{
	pid_t producer;
	int p[2];

	make_pipe(p);
	producer = fork_helper();
	if (!producer) {
		alarm(240);
		close(p[0]);
		if (producer_mapped)
			produce_mapped(p[1]);
		produce_with_write(p[1]);
	}
	close(p[1]);
	consume_and_verify(p[0], consumer_mapped, what);
	EXPECT_VALUE(wait_child(producer), 0, text("%s: the producer finished", what));
	close(p[0]);
}

static void test_xfer_map_to_read(void)
{
	transfer(true, false, "mapped producer to read(2)");
}

static void test_xfer_write_to_map(void)
{
	transfer(false, true, "write(2) to mapped consumer");
}

static void test_xfer_map_to_map(void)
{
	transfer(true, true, "mapped producer to mapped consumer");
}

/*
 * Several producers, half mapped and half with write(2), send numbered
 * messages of at most PIPE_BUF bytes: none may be split or interleaved.
 */
#define PRODUCERS	4
#define MESSAGES	1200
#define MESSAGE_MAGIC	0x4d534721u

struct message_header {
	uint32_t magic;
	uint16_t len;
	uint8_t producer;
	uint8_t pad;
	uint32_t seq;
	uint32_t sum;
};

static uint32_t message_len(int producer, uint32_t seq)
{
	uint32_t h = (uint32_t)(producer + 1) * 2654435761u ^ (seq * 40503u);

	h ^= h >> 13;
	h *= 0x5bd1e995u;
	h ^= h >> 15;
	return sizeof(struct message_header) + h % (PIPE_BUF - sizeof(struct message_header) + 1);
}

static char message_byte(int producer, uint32_t seq, uint32_t k)
{
	return (char)(producer * 31 + seq * 7 + k);
}

static uint32_t message_build(char *buf, int producer, uint32_t seq)
{
	uint32_t len = message_len(producer, seq);
	struct message_header m = {
		MESSAGE_MAGIC, (uint16_t)len, (uint8_t)producer, 0, seq,
		len ^ seq ^ (uint32_t)producer * 0x01010101u,
	};

	memcpy(buf, &m, sizeof(m));
	for (uint32_t k = sizeof(m); k < len; k++)
		buf[k] = message_byte(producer, seq, k);
	return len;
}

/* 1: a whole good message; 0: incomplete; -1: damaged. */
static int message_parse(const char *buf, uint32_t available, struct message_header *m)
{
	if (available < sizeof(*m))
		return 0;
	memcpy(m, buf, sizeof(*m));
	if (m->magic != MESSAGE_MAGIC || m->producer >= PRODUCERS || m->len < sizeof(*m) ||
	    m->len > PIPE_BUF || m->sum != (m->len ^ m->seq ^ m->producer * 0x01010101u) ||
	    m->len != message_len(m->producer, m->seq))
		return -1;
	if (available < m->len)
		return 0;
	for (uint32_t k = sizeof(*m); k < m->len; k++)
		if (buf[k] != message_byte(m->producer, m->seq, k))
			return -1;
	return 1;
}

static void run_producer(int index, int write_fd, struct channel *start)
{
	bool mapped = index % 2 == 0;
	struct ring producer;
	char buf[PIPE_BUF];

	alarm(240);
	if (mapped && ring_map(&producer, write_fd, WRITE_SIDE, 65536)) {
		check(false, text("producer %d ringbuffer() works", index), "%s", strerror(errno));
		_exit(1);
	}
	channel_receive(start, 30000);
	for (uint32_t seq = 0; seq < MESSAGES; seq++) {
		uint32_t len = message_build(buf, index, seq);
		long n = mapped ? ring_produce(&producer, buf, len, len, true) :
				  write(write_fd, buf, len);

		if (n != (long)len) {
			check(false, text("producer %d sends every message whole", index),
			      "message %u: %ld %s", seq, n,
			      mapped ? errno_name((int)-n) : strerror(errno));
			_exit(1);
		}
	}
	_exit(0);
}

static void several_producers(bool consumer_mapped, const char *what)
{
	static char stream[1 << 18];
	uint32_t buffered = 0, next_seq[PRODUCERS] = { 0 };
	pid_t producers[PRODUCERS];
	bool damaged = false, complete = true;
	struct channel start;
	struct ring consumer;
	uint64_t total = 0;
	int p[2];

	make_pipe(p);
	channel_init(&start);
	for (int i = 0; i < PRODUCERS; i++) {
		producers[i] = fork_helper();
		if (!producers[i]) {
			close(p[0]);
			run_producer(i, p[1], &start);
		}
	}
	close(p[1]);
	if (consumer_mapped && ring_map(&consumer, p[0], READ_SIDE, 65536))
		die("consumer ringbuffer()");
	for (int i = 0; i < PRODUCERS; i++)
		channel_send(&start, 1);
	for (;;) {
		struct message_header m;
		uint32_t offset = 0;
		uint32_t room = sizeof(stream) - buffered;
		long n;
		int parsed;

		n = consumer_mapped ? ring_consume(&consumer, stream + buffered, room, true) :
				      read(p[0], stream + buffered, room);
		if (n < 0) {
			check(false, text("%s: the consumer gets no error", what), "%s",
			      consumer_mapped ? errno_name((int)-n) : strerror(errno));
			damaged = true;
			break;
		}
		if (n == 0)
			break;
		buffered += n;
		total += n;
		while ((parsed = message_parse(stream + offset, buffered - offset, &m)) != 0) {
			if (parsed < 0) {
				check(false, text("%s: no message is split or interleaved", what),
				      "damage at stream offset %llu",
				      (unsigned long long)(total - buffered + offset));
				damaged = true;
				break;
			}
			if (m.seq != next_seq[m.producer]) {
				check(false,
				      text("%s: each producer's messages arrive in order", what),
				      "producer %u: seq %u, want %u", m.producer, m.seq,
				      next_seq[m.producer]);
				damaged = true;
			}
			next_seq[m.producer] = m.seq + 1;
			offset += m.len;
		}
		if (damaged)
			break;
		memmove(stream, stream + offset, buffered - offset);
		buffered -= offset;
	}
	for (int i = 0; i < PRODUCERS; i++)
		complete &= next_seq[i] == MESSAGES;
	check(!damaged && complete && buffered == 0,
	      text("%s: %d producers (2 mapped, 2 write(2)) x %d messages arrive whole and in "
		   "order", what, PRODUCERS, MESSAGES),
	      "%llu bytes", (unsigned long long)total);
	for (int i = 0; i < PRODUCERS; i++)
		EXPECT_VALUE(wait_child(producers[i]), 0,
			     text("%s: producer %d finished", what, i));
}

static void test_multi_read(void)
{
	several_producers(false, "read(2) consumer");
}

static void test_multi_mapped(void)
{
	several_producers(true, "mapped consumer");
}

/* ---------------------------------------------------------------------- */
/* ringbuffer_wait() and ringbuffer_wakeup()                               */
/* ---------------------------------------------------------------------- */

static void test_wait_eof(void)
{
	struct ring consumer, producer;
	char buf[32];
	pid_t child;
	int p[2];

	make_pipe(p);
	EXPECT_VALUE(write(p[1], "0123456789", 10), 10, "write(2) of 10 bytes");
	if (ring_map(&consumer, p[0], READ_SIDE, 4096) ||
	    ring_map(&producer, p[1], WRITE_SIDE, 4096))
		die("ringbuffer()");
	EXPECT_VALUE(ring_produce(&producer, "abc", 3, 3, true), 3,
		     "a mapped publish of 3 bytes");
	/* A mapping is not an end: closing the only write fd ends the producer side. */
	close(p[1]);
	check(load_acquire(consumer.flags) & RINGBUFFER_EOF,
	      "RINGBUFFER_EOF is set when the last write fd closes, mapping or not",
	      "flags %#x", load_relaxed(consumer.flags));
	EXPECT_VALUE(sys_ringbuffer_wait(p[0], READ_SIDE, 100, NULL, 0), 13,
		     "at EOF ringbuffer_wait(min 100) returns the data left");
	EXPECT_VALUE(sys_ringbuffer_wait(p[0], READ_SIDE, 0, NULL, 0), 13,
		     "at EOF ringbuffer_wait(min 0) returns the data left");
	EXPECT_VALUE(read(p[0], buf, sizeof(buf)), 13, "read(2) gets the 13 bytes");
	check(!memcmp(buf, "0123456789abc", 13), "in order", "read \"%.13s\"", buf);
	EXPECT_VALUE(sys_ringbuffer_wait(p[0], READ_SIDE, 100, NULL, 0), 0,
		     "at EOF with an empty ring ringbuffer_wait() returns 0");
	EXPECT_VALUE(read(p[0], buf, sizeof(buf)), 0, "read(2) returns 0 at end of file");
	EXPECT_VALUE(ring_consume(&consumer, buf, 1, true), 0,
		     "the mapped consumer sees the end of file");
	ring_unmap(&producer);
	ring_unmap(&consumer);
	close(p[0]);

	/* A sleeper is woken by the close of the last writer. */
	make_pipe(p);
	if (ring_map(&consumer, p[0], READ_SIDE, 4096))
		die("ringbuffer()");
	child = fork_helper();
	if (!child) {
		close(p[1]);
		EXPECT_VALUE(sys_ringbuffer_wait(p[0], READ_SIDE, 100, NULL, 0), 7,
			     "a sleeping ringbuffer_wait(min 100) returns 7 when the writer "
			     "closes");
		_exit(0);
	}
	check(WAIT_UNTIL(load_relaxed(consumer.read_waiters) >= 1, 10000),
	      "read_waiters counts the sleeper", "%u", load_relaxed(consumer.read_waiters));
	if (have_wait_minimum(&consumer, "read_wait_min is at most what the sleeper waits for"))
		check(load_relaxed(consumer.read_wait_min) <= 100,
		      "read_wait_min is at most what the sleeper waits for", "%u",
		      load_relaxed(consumer.read_wait_min));
	EXPECT_VALUE(write(p[1], "1234567", 7), 7, "write(2) of 7 bytes, fewer than the minimum");
	close(p[1]);
	EXPECT_VALUE(wait_child(child), 0, "the sleeper finished");
	check(load_relaxed(consumer.read_waiters) == 0, "read_waiters is 0 again", "%u",
	      load_relaxed(consumer.read_waiters));
	if (have_wait_minimum(&consumer, "read_wait_min is 0xffffffff once the count is 0"))
		check(load_relaxed(consumer.read_wait_min) == 0xffffffffu,
		      "read_wait_min is 0xffffffff once the count is 0", "%#x",
		      load_relaxed(consumer.read_wait_min));
}

/*
 * The waiter of "Waiting with futexes": the word, with acquire, before the
 * state; FUTEX_WAIT (shared) on the value loaded.  Waits for @n bytes of
 * data, or the end of the producer side.  Returns the data there, or -1
 * if FUTEX_WAIT ran out of time, which only a lost wake-up explains.
 */
static long futex_wait_for_data(const struct ring *consumer, uint32_t n)
{
	for (;;) {
		struct timespec patience = { .tv_sec = 20 };
		uint32_t word = load_acquire(consumer->read_futex);		/* (4) */
		uint32_t tail = load_relaxed(consumer->tail);
		uint32_t head = load_acquire(consumer->head);

		if (head - tail >= n)
			return head - tail;
		if (load_acquire(consumer->flags) & RINGBUFFER_EOF)
			return load_acquire(consumer->head) - tail;
		if (syscall(SYS_futex, consumer->read_futex, FUTEX_WAIT, word, &patience,
			    NULL, 0) && errno == ETIMEDOUT)
			return -1;
	}
}

/* Whether @pid sleeps in a futex wait, as far as /proc tells. */
static bool in_futex_wait(pid_t pid)
{
	char path[64], buf[128] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strstr(buf, "futex") != NULL;
}

static void test_wait_futex(void)
{
	struct ring consumer, producer;
	uint32_t before;
	pid_t child;
	int p[2];

	make_pipe(p);
	if (ring_map(&consumer, p[0], READ_SIDE, 4096) ||
	    ring_map(&producer, p[1], WRITE_SIDE, 4096))
		die("ringbuffer()");
	if (!consumer.read_futex) {
		skip("futex words", "the kernel has no read_futex");
		goto out;
	}
	check(consumer.write_futex && consumer.read_futex != consumer.write_futex &&
	      consumer.header->offsets.read_futex % 4 == 0 &&
	      consumer.header->offsets.write_futex % 4 == 0 &&
	      consumer.header->offsets.read_futex < (uint32_t)sysconf(_SC_PAGESIZE) &&
	      consumer.header->offsets.write_futex < (uint32_t)sysconf(_SC_PAGESIZE),
	      "read_futex and write_futex are two aligned words of the header page", "%u %u",
	      consumer.header->offsets.read_futex, consumer.header->offsets.write_futex);
	EXPECT_FAILURE(sys_ringbuffer_wait(p[0], READ_SIDE, 1, NULL, RINGBUFFER_WAIT_FUTEX),
		       "RINGBUFFER_WAIT_FUTEX with min 1", EINVAL);
	EXPECT_FAILURE(sys_ringbuffer_wait(p[0], READ_SIDE, 0, &(struct __kernel_timespec){ 0 },
					   RINGBUFFER_WAIT_FUTEX),
		       "RINGBUFFER_WAIT_FUTEX with a timeout", EINVAL);
	EXPECT_VALUE(sys_ringbuffer_wait(p[0], READ_SIDE, 0, NULL, RINGBUFFER_WAIT_FUTEX), 0,
		     "RINGBUFFER_WAIT_FUTEX arms the consumer side and returns 0");
	check(load_relaxed(consumer.read_waiters) == 1,
	      "an armed side counts one sleeper for good", "read_waiters %u",
	      load_relaxed(consumer.read_waiters));
	if (consumer.read_wait_min)
		check(load_relaxed(consumer.read_wait_min) == 1,
		      "an armed side's wait minimum is 1", "read_wait_min %u",
		      load_relaxed(consumer.read_wait_min));
	EXPECT_VALUE(sys_ringbuffer_wait(p[0], READ_SIDE, 0, NULL, RINGBUFFER_WAIT_FUTEX), 0,
		     "arming again returns 0");
	check(load_relaxed(consumer.read_waiters) == 1, "arming again changes nothing",
	      "read_waiters %u", load_relaxed(consumer.read_waiters));

	/* A mapped producer, by the protocol of "Producing and consuming". */
	before = load_relaxed(consumer.read_futex);
	child = fork_helper();
	if (!child) {
		struct ring mine;

		close(p[1]);
		/* A mapping of its own: the futex is found through any. */
		if (ring_map(&mine, p[0], READ_SIDE, 4096))
			_exit(EXIT_SETUP_FAILED);
		_exit(futex_wait_for_data(&mine, 5) == 5 ? 0 : 1);
	}
	check(WAIT_UNTIL(in_futex_wait(child), 10000), "the waiter sleeps in FUTEX_WAIT",
	      "wchan says otherwise");
	EXPECT_VALUE(ring_produce(&producer, "fives", 5, 5, true), 5,
		     "a mapped publish of 5 bytes");
	check(last_copy_woke_other_side, "the publish makes the wake-up call for the armed side",
	      "no call");
	EXPECT_VALUE(wait_child(child), 0, "the futex waiter is woken by the publish");
	check(load_relaxed(consumer.read_futex) != before,
	      "the kernel changed read_futex when it woke the side", "still %u", before);

	/* write(2), and then the end of the producer side. */
	child = fork_helper();
	if (!child) {
		close(p[1]);
		if (futex_wait_for_data(&consumer, 6) != 6)
			_exit(1);
		_exit(futex_wait_for_data(&consumer, 100) == 6 ? 0 : 2);
	}
	check(WAIT_UNTIL(in_futex_wait(child), 10000), "the waiter sleeps in FUTEX_WAIT again",
	      "wchan says otherwise");
	EXPECT_VALUE(write(p[1], "x", 1), 1, "write(2) of 1 byte");
	ring_unmap(&producer);
	close(p[1]);
	EXPECT_VALUE(wait_child(child), 0,
		     "the futex waiter is woken by write(2) and by the close of the last writer");
	ring_unmap(&consumer);
	close(p[0]);
	return;
out:
	ring_unmap(&producer);
	ring_unmap(&consumer);
	close(p[0]);
	close(p[1]);
}

static bool sigpipe_pending(void)
{
	sigset_t pending;

	sigpending(&pending);
	return sigismember(&pending, SIGPIPE);
}

static void block_signal(int signo)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, signo);
	sigprocmask(SIG_BLOCK, &set, NULL);
}

static void test_wait_epipe(void)
{
	struct ring producer;
	pid_t child;
	int p[2];

	block_signal(SIGPIPE);
	make_pipe(p);
	if (ring_map(&producer, p[1], WRITE_SIDE, 4096))
		die("ringbuffer()");
	close(p[0]);
	check(load_acquire(producer.flags) & RINGBUFFER_BROKEN,
	      "RINGBUFFER_BROKEN is set when the last read fd closes", "flags %#x",
	      load_relaxed(producer.flags));
	EXPECT_FAILURE(sys_ringbuffer_wait(p[1], WRITE_SIDE, 1, NULL, 0),
		       "ringbuffer_wait(WRITE) without a reader fails with EPIPE", EPIPE);
	EXPECT_FAILURE(sys_ringbuffer_wait(p[1], WRITE_SIDE, 0, &zero_timeout, 0),
		       "ringbuffer_wait(WRITE, zero timeout) without a reader fails with EPIPE",
		       EPIPE);
	check(!sigpipe_pending(), "ringbuffer_wait() sends no SIGPIPE", "SIGPIPE is pending");
	EXPECT_VALUE(ring_produce(&producer, "x", 1, 1, true), -EPIPE,
		     "the mapped producer sees RINGBUFFER_BROKEN");
	EXPECT_FAILURE(write(p[1], "x", 1), "write(2) without a reader fails with EPIPE", EPIPE);
	check(sigpipe_pending(), "write(2) still sends SIGPIPE", "no SIGPIPE pending");
	ring_unmap(&producer);
	close(p[1]);

	/* A producer asleep for space is woken by the close of the last reader. */
	make_pipe(p);
	if (ring_map(&producer, p[1], WRITE_SIDE, 4096))
		die("ringbuffer()");
	fill_pipe(p[1]);
	check(load_relaxed(producer.head) - load_relaxed(producer.tail) == producer.size,
	      "the ring is full", "%u bytes", load_relaxed(producer.head) -
	      load_relaxed(producer.tail));
	child = fork_helper();
	if (!child) {
		close(p[0]);
		block_signal(SIGPIPE);
		EXPECT_FAILURE(sys_ringbuffer_wait(p[1], WRITE_SIDE, 1, NULL, 0),
			       "a sleeping ringbuffer_wait(WRITE) fails with EPIPE when the "
			       "readers close", EPIPE);
		check(!sigpipe_pending(), "the sleeper gets no SIGPIPE", "SIGPIPE is pending");
		_exit(0);
	}
	check(WAIT_UNTIL(load_relaxed(producer.write_waiters) >= 1, 10000),
	      "write_waiters counts the sleeper", "%u", load_relaxed(producer.write_waiters));
	close(p[0]);
	EXPECT_VALUE(wait_child(child), 0, "the sleeper finished");
}

static void test_wait_misc(void)
{
	struct __kernel_timespec fifty_ms = { 0, 50 * 1000000 };
	struct __kernel_timespec bad_nsec = { 0, 1000000000 }, negative_sec = { -1, 0 };
	struct __kernel_timespec negative_nsec = { 0, -1 };
	struct channel go;
	struct ring consumer, producer;
	int64_t start, elapsed;
	pid_t child;
	int p[2], q[2];
	long rc;

	make_pipe(p);
	if (ring_map(&consumer, p[0], READ_SIDE, 4096))
		die("ringbuffer()");
	start = now_ms();
	EXPECT_FAILURE(sys_ringbuffer_wait(p[0], READ_SIDE, 1, &fifty_ms, 0),
		       "ringbuffer_wait(50 ms) on an empty ring fails with ETIMEDOUT", ETIMEDOUT);
	elapsed = now_ms() - start;
	check(elapsed >= 45 && elapsed < 5000, "it waited for the timeout", "%lld ms",
	      (long long)elapsed);
	start = now_ms();
	EXPECT_FAILURE(sys_ringbuffer_wait(p[0], READ_SIDE, 1, &zero_timeout, 0),
		       "a zero timeout on an empty ring fails with ETIMEDOUT", ETIMEDOUT);
	check(now_ms() - start < 1000, "a zero timeout only checks", "%lld ms",
	      (long long)(now_ms() - start));
	EXPECT_VALUE(write(p[1], "12345", 5), 5, "write(2) of 5 bytes");
	EXPECT_VALUE(sys_ringbuffer_wait(p[0], READ_SIDE, 0, &zero_timeout, 0), 5,
		     "min 0 means 1: returns the amount, 5");
	EXPECT_VALUE(sys_ringbuffer_wait(p[0], READ_SIDE, 3, &zero_timeout, 0), 5,
		     "min 3 returns the amount, not the minimum");
	EXPECT_VALUE(sys_ringbuffer_wait(p[0], READ_SIDE, 5, NULL, 0), 5,
		     "min 5 without a timeout returns 5 at once");
	EXPECT_FAILURE(sys_ringbuffer_wait(p[0], READ_SIDE, 6, &zero_timeout, 0),
		       "min 6 with 5 there and a zero timeout fails with ETIMEDOUT", ETIMEDOUT);
	EXPECT_VALUE(sys_ringbuffer_wait(p[1], WRITE_SIDE, 0, &zero_timeout, 0),
		     consumer.size - 5, "the producer's ringbuffer_wait() returns the space");
	EXPECT_VALUE(sys_ringbuffer_wait(p[1], WRITE_SIDE, consumer.size - 5, &zero_timeout, 0),
		     consumer.size - 5, "min equal to the space returns the space");
	EXPECT_FAILURE(sys_ringbuffer_wait(p[1], WRITE_SIDE, consumer.size, &zero_timeout, 0),
		       "min equal to the size with data queued fails with ETIMEDOUT", ETIMEDOUT);
	EXPECT_FAILURE(sys_ringbuffer_wait(p[0], READ_SIDE, consumer.size + 1, &zero_timeout, 0),
		       "min above the size fails with EINVAL", EINVAL);
	EXPECT_FAILURE(sys_ringbuffer_wait(p[1], WRITE_SIDE, consumer.size + 1, NULL, 0),
		       "the producer's min above the size fails with EINVAL", EINVAL);
	EXPECT_FAILURE(sys_ringbuffer_wait(p[0], READ_SIDE, 0xffffffffu, NULL, 0),
		       "min 0xffffffff fails with EINVAL", EINVAL);
	EXPECT_FAILURE(sys_ringbuffer_wait(p[0], READ_SIDE, 1, NULL, RINGBUFFER_WAIT_LOCK),
		       "RINGBUFFER_WAIT_LOCK with min 1 fails with EINVAL", EINVAL);
	EXPECT_FAILURE(sys_ringbuffer_wait(p[0], READ_SIDE, 0, NULL, 4),
		       "ringbuffer_wait() with flags 4 fails with EINVAL", EINVAL);
	EXPECT_FAILURE(sys_ringbuffer_wait(p[0], READ_SIDE, 0, NULL,
					   RINGBUFFER_WAIT_LOCK | RINGBUFFER_WAIT_FUTEX),
		       "RINGBUFFER_WAIT_LOCK with RINGBUFFER_WAIT_FUTEX fails with EINVAL", EINVAL);
	EXPECT_FAILURE(sys_ringbuffer_wait(p[0], 2, 0, NULL, 0),
		       "ringbuffer_wait() with rw 2 fails with EINVAL", EINVAL);
	EXPECT_FAILURE(sys_ringbuffer_wait(p[0], READ_SIDE, 6, &bad_nsec, 0),
		       "a timeout of one billion nanoseconds fails with EINVAL", EINVAL);
	EXPECT_FAILURE(sys_ringbuffer_wait(p[0], READ_SIDE, 6, &negative_sec, 0),
		       "a negative timeout fails with EINVAL", EINVAL);
	EXPECT_FAILURE(sys_ringbuffer_wait(p[0], READ_SIDE, 6, &negative_nsec, 0),
		       "negative nanoseconds fail with EINVAL", EINVAL);
	EXPECT_FAILURE(sys_ringbuffer_wait(p[0], READ_SIDE, 6, (void *)16, 0),
		       "an unreadable timeout fails with EFAULT", EFAULT);
	EXPECT_VALUE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, 0), 0,
		     "ringbuffer_wakeup(WRITE) with nobody asleep returns 0");
	EXPECT_VALUE(sys_ringbuffer_wakeup(p[0], READ_SIDE, 0), 0,
		     "ringbuffer_wakeup(READ) returns 0");
	EXPECT_VALUE(sys_ringbuffer_wakeup(p[0], READ_SIDE, RINGBUFFER_WAKE_LOCK), 0,
		     "RINGBUFFER_WAKE_LOCK with nobody waiting returns 0");
	EXPECT_FAILURE(sys_ringbuffer_wakeup(p[0], READ_SIDE,
					     RINGBUFFER_WAKE_LOCK | RINGBUFFER_KEEP_LOCK),
		       "RINGBUFFER_WAKE_LOCK | RINGBUFFER_KEEP_LOCK fails with EINVAL", EINVAL);
	EXPECT_FAILURE(sys_ringbuffer_wakeup(p[0], READ_SIDE, 4),
		       "ringbuffer_wakeup() with flags 4 fails with EINVAL", EINVAL);
	EXPECT_FAILURE(sys_ringbuffer_wakeup(p[0], 2, 0),
		       "ringbuffer_wakeup() with rw 2 fails with EINVAL", EINVAL);
	EXPECT_FAILURE(sys_ringbuffer_wait(p[1], READ_SIDE, 0, &zero_timeout, 0),
		       "ringbuffer_wait(READ) on the write end fails with EBADF", EBADF);
	EXPECT_FAILURE(sys_ringbuffer_wakeup(p[1], READ_SIDE, 0),
		       "ringbuffer_wakeup(READ) on the write end fails with EBADF", EBADF);

	/* The calls need no mapping in the calling process. */
	make_pipe(q);
	channel_init(&go);
	child = fork_helper();
	if (!child) {
		channel_receive(&go, 10000);
		EXPECT_VALUE(sys_ringbuffer_wait(q[0], READ_SIDE, 0, &zero_timeout, 0), 4,
			     "ringbuffer_wait(READ) works in a process that never mapped the ring");
		EXPECT_VALUE(sys_ringbuffer_wait(q[1], WRITE_SIDE, 0, &zero_timeout, 0),
			     65536 - 4,
			     "ringbuffer_wait(WRITE) works in a process that never mapped the "
			     "ring");
		_exit(0);
	}
	if (ring_map(&producer, q[1], WRITE_SIDE, 65536))
		die("ringbuffer()");
	ring_produce(&producer, "abcd", 4, 4, true);
	channel_send(&go, 1);
	EXPECT_VALUE(wait_child(child), 0, "the child that never mapped finished");
	/* Both ends share one ring: mapping the write end gave the read end its ring. */
	rc = sys_ringbuffer_wait(q[0], READ_SIDE, 0, &zero_timeout, 0);
	EXPECT_VALUE(rc, 4, "the read end has the ring that only the write end mapped");
}

static struct channel signal_channel;

static void note_sigusr1(int signo)
{
	char b = 1;

	(void)signo;
	if (write(signal_channel.write_fd, &b, 1) < 0)
		_exit(9);
}

enum eintr_case { WITH_TIMEOUT_RESTART, NO_TIMEOUT_RESTART, NO_TIMEOUT_NO_RESTART };

static void test_wait_eintr(void)
{
	struct ring consumer;
	int p[2];

	make_pipe(p);
	if (ring_map(&consumer, p[0], READ_SIDE, 4096))
		die("ringbuffer()");
	channel_init(&signal_channel);
	for (int c = WITH_TIMEOUT_RESTART; c <= NO_TIMEOUT_NO_RESTART; c++) {
		pid_t child = fork_helper();

		if (!child) {
			struct __kernel_timespec twenty_seconds = { 20, 0 };
			struct sigaction sa = { 0 };
			char b;
			long rc;

			sa.sa_handler = note_sigusr1;
			sa.sa_flags = c == NO_TIMEOUT_NO_RESTART ? 0 : SA_RESTART;
			sigaction(SIGUSR1, &sa, NULL);
			if (c == WITH_TIMEOUT_RESTART) {
				EXPECT_FAILURE(sys_ringbuffer_wait(p[0], READ_SIDE, 1,
								   &twenty_seconds, 0),
					       "with a timeout a signal ends the wait with EINTR, "
					       "SA_RESTART or not", EINTR);
			} else if (c == NO_TIMEOUT_RESTART) {
				rc = sys_ringbuffer_wait(p[0], READ_SIDE, 1, NULL, 0);
				check(rc == 1, "without a timeout, SA_RESTART restarts the wait",
				      "got %ld %s", rc, rc < 0 ? errno_name(errno) : "");
				if (read(p[0], &b, 1) != 1)
					_exit(1);
			} else {
				EXPECT_FAILURE(sys_ringbuffer_wait(p[0], READ_SIDE, 1, NULL, 0),
					       "without a timeout or SA_RESTART a signal gives "
					       "EINTR",
					       EINTR);
			}
			_exit(0);
		}
		check(WAIT_UNTIL(load_relaxed(consumer.read_waiters) >= 1 &&
				 task_state(child) == 'S', 10000),
		      text("the child sleeps in ringbuffer_wait() (case %d)", c), "it does not");
		kill(child, SIGUSR1);
		check(channel_receive(&signal_channel, 10000) == 1,
		      text("the handler ran (case %d)", c), "no sign of it");
		if (c == NO_TIMEOUT_RESTART)
			EXPECT_VALUE(write(p[1], "x", 1), 1, "write(2) of 1 byte after the signal");
		EXPECT_VALUE(wait_child(child), 0, text("the child finished (case %d)", c));
	}
}

/* The wait minimum lets a publisher skip calls that would wake nobody. */
static void test_wait_min(void)
{
	static char buf[4000];
	struct ring consumer;
	uint32_t minimum;
	pid_t child;
	int p[2];
	long n;

	make_pipe(p);
	if (ring_map(&consumer, p[0], READ_SIDE, 65536))
		die("ringbuffer()");
	if (!have_wait_minimum(&consumer, "wait minimum words"))
		return;
	fill_pipe(p[1]);
	check(load_relaxed(consumer.head) - load_relaxed(consumer.tail) == consumer.size,
	      "the ring is full", "it is not");
	check(load_relaxed(consumer.write_waiters) == 0, "write_waiters is 0 with nobody asleep",
	      "%u", load_relaxed(consumer.write_waiters));
	child = fork_helper();
	if (!child) {
		long rc = sys_ringbuffer_wait(p[1], WRITE_SIDE, 4000, NULL, 0);

		check(rc >= 4000, "the producer waiting for 4000 bytes gets at least that",
		      "got %ld", rc);
		_exit(0);
	}
	check(WAIT_UNTIL(load_relaxed(consumer.write_waiters) >= 1, 10000),
	      "write_waiters counts the sleeper", "%u", load_relaxed(consumer.write_waiters));
	minimum = load_relaxed(consumer.write_wait_min);
	check(minimum <= 4000, "write_wait_min is at most what the sleeper waits for", "%u",
	      minimum);
	n = ring_consume(&consumer, buf, 1000, true);
	check(n == 1000 && (minimum != 4000 || !last_copy_woke_other_side),
	      "freeing 1000 bytes, below the minimum, needs no wake-up call",
	      "consumed %ld, called %d", n, last_copy_woke_other_side);
	check(child_still_running(child), "the producer still sleeps with 1000 bytes free",
	      "it returned");
	n = ring_consume(&consumer, buf, 3000, true);
	check(n == 3000 && last_copy_woke_other_side,
	      "freeing 3000 more, 4000 in all, makes the wake-up call",
	      "consumed %ld, called %d", n, last_copy_woke_other_side);
	EXPECT_VALUE(wait_child(child), 0, "the producer woke up");
	check(load_relaxed(consumer.write_waiters) == 0 &&
	      load_relaxed(consumer.write_wait_min) == 0xffffffffu,
	      "afterwards write_waiters is 0 and write_wait_min 0xffffffff", "%u, %#x",
	      load_relaxed(consumer.write_waiters), load_relaxed(consumer.write_wait_min));
}

/* Inconsistent positions: EIO for the calls, 0 for FIONREAD, ready for poll(2). */
static void test_eio(void)
{
	struct pollfd read_end, write_end;
	struct ring producer, consumer;
	int bytes_queued = -1;
	uint32_t saved_head;
	char buf[8];
	int p[2];
	long rc;

	make_pipe(p);
	if (ring_map(&producer, p[1], WRITE_SIDE, 4096) ||
	    ring_map(&consumer, p[0], READ_SIDE, 4096))
		die("ringbuffer()");
	EXPECT_VALUE(write(p[1], "abc", 3), 3, "write(2) of 3 bytes");
	saved_head = load_relaxed(producer.head);
	atomic_store(producer.head, load_relaxed(producer.tail) + producer.size + 1);
	EXPECT_FAILURE(sys_ringbuffer_wait(p[0], READ_SIDE, 1, &zero_timeout, 0),
		       "ringbuffer_wait(READ) with head - tail above the size fails with EIO", EIO);
	EXPECT_FAILURE(sys_ringbuffer_wait(p[1], WRITE_SIDE, 1, &zero_timeout, 0),
		       "ringbuffer_wait(WRITE) with head - tail above the size fails with EIO",
		       EIO);
	rc = ioctl(p[0], FIONREAD, &bytes_queued);
	check(rc == 0 && bytes_queued == 0, "FIONREAD reports 0", "rc %ld, value %d", rc,
	      bytes_queued);
	read_end = (struct pollfd){ .fd = p[0], .events = POLLIN };
	rc = poll(&read_end, 1, 0);
	check(rc == 1 && (read_end.revents & (POLLIN | POLLERR)),
	      "poll(2) reports the read end ready", "rc %ld, revents %#x", rc, read_end.revents);
	write_end = (struct pollfd){ .fd = p[1], .events = POLLOUT };
	rc = poll(&write_end, 1, 0);
	check(rc == 1 && (write_end.revents & (POLLOUT | POLLERR)),
	      "poll(2) reports the write end ready", "rc %ld, revents %#x", rc,
	      write_end.revents);
	EXPECT_FAILURE(read(p[0], buf, sizeof(buf)), "read(2) fails with EIO", EIO);
	EXPECT_FAILURE(write(p[1], "x", 1), "write(2) fails with EIO", EIO);
	EXPECT_VALUE(ring_consume(&consumer, buf, sizeof(buf), true), -EIO,
		     "the mapped consumer sees the inconsistency");
	atomic_store(producer.head, saved_head);
	EXPECT_VALUE(read(p[0], buf, sizeof(buf)), 3, "read(2) works again once head is restored");
}

/* ---------------------------------------------------------------------- */
/* Side locks                                                              */
/* ---------------------------------------------------------------------- */

static void test_lock_basic(void)
{
	struct ring producer, consumer;
	uint32_t me = my_tid();
	char buf[8];
	int p[2];

	make_pipe(p);
	if (ring_map(&producer, p[1], WRITE_SIDE, 4096) ||
	    ring_map(&consumer, p[0], READ_SIDE, 4096))
		die("ringbuffer()");
	check(side_lock_take(&producer) == 0 && load_relaxed(producer.producer_lock) == me,
	      "producer_lock is taken with a compare-and-swap of gettid()", "word %u, me %u",
	      load_relaxed(producer.producer_lock), me);
	EXPECT_FAILURE(sys_ringbuffer_wait(p[1], WRITE_SIDE, 0, NULL, RINGBUFFER_WAIT_LOCK),
		       "RINGBUFFER_WAIT_LOCK by the holder fails with EDEADLK", EDEADLK);
	EXPECT_FAILURE(sys_ringbuffer_wait(p[1], WRITE_SIDE, 0, &zero_timeout,
					   RINGBUFFER_WAIT_LOCK),
		       "RINGBUFFER_WAIT_LOCK with a zero timeout by the holder fails with EDEADLK",
		       EDEADLK);
	EXPECT_FAILURE(write(p[1], "x", 1),
		       "write(2) by the thread holding producer_lock fails with EDEADLK", EDEADLK);
	check(!side_lock_release(&producer),
	      "with nobody waiting the release needs no RINGBUFFER_WAKE_LOCK call",
	      "producer_lock_waiters was not 0");
	EXPECT_VALUE(sys_ringbuffer_wait(p[1], WRITE_SIDE, 0, &zero_timeout, RINGBUFFER_WAIT_LOCK),
		     0, "RINGBUFFER_WAIT_LOCK on a free word returns 0 (zero timeout)");
	EXPECT_VALUE(sys_ringbuffer_wait(p[1], WRITE_SIDE, 0, NULL, RINGBUFFER_WAIT_LOCK), 0,
		     "RINGBUFFER_WAIT_LOCK on a free word returns 0 (no timeout)");
	EXPECT_VALUE(write(p[1], "xyz", 3), 3, "write(2) works after the release");
	check(load_relaxed(producer.producer_lock) == 0,
	      "producer_lock is free after the kernel's write", "%u",
	      load_relaxed(producer.producer_lock));
	check(side_lock_take(&consumer) == 0 && load_relaxed(consumer.consumer_lock) == me,
	      "consumer_lock is taken", "word %u", load_relaxed(consumer.consumer_lock));
	EXPECT_FAILURE(read(p[0], buf, sizeof(buf)),
		       "read(2) by the thread holding consumer_lock fails with EDEADLK", EDEADLK);
	EXPECT_FAILURE(sys_ringbuffer_wait(p[0], READ_SIDE, 0, NULL, RINGBUFFER_WAIT_LOCK),
		       "RINGBUFFER_WAIT_LOCK(READ) by the holder fails with EDEADLK", EDEADLK);
	EXPECT_VALUE(write(p[1], "q", 1), 1,
		     "write(2) works while holding the other side's lock");
	side_lock_release(&consumer);
	EXPECT_VALUE(read(p[0], buf, sizeof(buf)), 4, "read(2) works after the release");
}

/*
 * A child takes the producer lock, publishes @byte and waits for the word
 * "release"; then it releases and sends 2 if it made the RINGBUFFER_WAKE_LOCK
 * call, 3 if it did not.
 */
static pid_t start_lock_holder(struct ring *producer, char byte, struct channel *up,
			       struct channel *down)
{
	pid_t holder = fork_helper();

	if (!holder) {
		uint32_t head;
		bool called;

		if (side_lock_take(producer))
			_exit(1);
		head = load_relaxed(producer->head);
		producer->data[head & producer->mask] = byte;
		atomic_store_explicit(producer->head, head + 1, memory_order_release);
		channel_send(up, 1);
		channel_receive(down, 30000);
		called = side_lock_release(producer);
		wake_consumers_if_needed(producer, head + 1);
		channel_send(up, called ? 2 : 3);
		_exit(0);
	}
	return holder;
}

/* A live holder in another process. */
static void test_lock_live_holder(void)
{
	struct __kernel_timespec fifty_ms = { 0, 50000000 };
	struct epoll_event event = { .events = EPOLLOUT | EPOLLET }, out;
	struct channel up, down;
	struct ring producer;
	struct pollfd pfd;
	pid_t holder, writer;
	int p[2], nonblocking, epoll_fd, rc;
	char buf[8] = { 0 };
	int64_t start;

	make_pipe(p);
	if (ring_map(&producer, p[1], WRITE_SIDE, 65536))
		die("ringbuffer()");
	channel_init(&up);
	channel_init(&down);
	holder = start_lock_holder(&producer, 'H', &up, &down);
	check(channel_receive(&up, 10000) == 1, "the holder took the word", "it did not");
	check(load_relaxed(producer.producer_lock) == (uint32_t)holder,
	      "producer_lock holds the holder's thread id", "%u, holder %d",
	      load_relaxed(producer.producer_lock), holder);
	start = now_ms();
	EXPECT_FAILURE(sys_ringbuffer_wait(p[1], WRITE_SIDE, 0, &fifty_ms, RINGBUFFER_WAIT_LOCK),
		       "RINGBUFFER_WAIT_LOCK for 50 ms on a live holder fails with ETIMEDOUT",
		       ETIMEDOUT);
	check(now_ms() - start >= 45, "it waited for the timeout", "%lld ms",
	      (long long)(now_ms() - start));
	EXPECT_FAILURE(sys_ringbuffer_wait(p[1], WRITE_SIDE, 0, &zero_timeout,
					   RINGBUFFER_WAIT_LOCK),
		       "RINGBUFFER_WAIT_LOCK with a zero timeout on a live holder fails with "
		       "ETIMEDOUT", ETIMEDOUT);
	check(load_relaxed(producer.producer_lock_waiters) == 0,
	      "producer_lock_waiters is 0 after the waits timed out", "%u",
	      load_relaxed(producer.producer_lock_waiters));

	nonblocking = reopen_nonblocking(p[1], O_WRONLY);
	epoll_fd = epoll_create1(0);
	epoll_ctl(epoll_fd, EPOLL_CTL_ADD, nonblocking, &event);
	EXPECT_VALUE(epoll_wait(epoll_fd, &out, 1, 0), 1,
		     "edge-triggered epoll: EPOLLOUT at first");
	EXPECT_VALUE(epoll_wait(epoll_fd, &out, 1, 0), 0, "edge-triggered epoll: only once");
	/* "poll(2) reports space and data as they are, held lock or not" */
	pfd = (struct pollfd){ .fd = nonblocking, .events = POLLOUT };
	rc = poll(&pfd, 1, 0);
	check(rc == 1 && (pfd.revents & POLLOUT),
	      "poll(2) reports the space while a user-space holder has the word",
	      "rc %d, revents %#x", rc, pfd.revents);
	start = now_ms();
	EXPECT_FAILURE(write(nonblocking, "N", 1),
		       "O_NONBLOCK write(2) with producer_lock held from user space fails with "
		       "EAGAIN", EAGAIN);
	check(now_ms() - start < 1000, "the EAGAIN came at once", "%lld ms",
	      (long long)(now_ms() - start));
	check(load_relaxed(producer.producer_lock_waiters) >= 1,
	      "producer_lock_waiters counts the refused nonblocking call", "%u",
	      load_relaxed(producer.producer_lock_waiters));
	/* A level-triggered poll may report the end ready again at once: allowed. */
	pfd.revents = 0;
	rc = poll(&pfd, 1, 0);
	check(rc == 1 && (pfd.revents & POLLOUT),
	      "poll(2) still reports the space after that EAGAIN", "rc %d, revents %#x", rc,
	      pfd.revents);
	rc = epoll_wait(epoll_fd, &out, 1, 0);
	note("edge-triggered events right after the EAGAIN, lock still held: %d", rc);
	channel_send(&down, 1);
	check(channel_receive(&up, 10000) == 2,
	      "the holder's release saw the lock waiter and made the RINGBUFFER_WAKE_LOCK call",
	      "it did not");
	rc = epoll_wait(epoll_fd, &out, 1, 5000);
	check(rc == 1 && (out.events & EPOLLOUT),
	      "the RINGBUFFER_WAKE_LOCK call gives edge-triggered pollers an EPOLLOUT event",
	      "rc %d", rc);
	EXPECT_VALUE(write(nonblocking, "N", 1), 1,
		     "the nonblocking write(2) works after the release");
	check(load_relaxed(producer.producer_lock_waiters) == 0,
	      "producer_lock_waiters is 0 again once the call was told", "%u",
	      load_relaxed(producer.producer_lock_waiters));
	EXPECT_VALUE(wait_child(holder), 0, "the holder finished");
	EXPECT_VALUE(read(p[0], buf, sizeof(buf)), 2, "read(2) of the 2 bytes");
	check(!memcmp(buf, "HN", 2), "the holder's byte comes before the nonblocking write's",
	      "read \"%.2s\"", buf);

	/* A blocking write(2) sleeps until the holder releases the word. */
	holder = start_lock_holder(&producer, 'H', &up, &down);
	check(channel_receive(&up, 10000) == 1, "the holder took the word again", "it did not");
	writer = fork_helper();
	if (!writer)
		_exit(write(p[1], "B", 1) == 1 ? 0 : 1);
	check(WAIT_UNTIL(load_relaxed(producer.producer_lock_waiters) >= 1, 10000),
	      "a blocked write(2) counts in producer_lock_waiters", "%u",
	      load_relaxed(producer.producer_lock_waiters));
	check(child_still_running(writer), "the blocking write(2) waits for the word",
	      "it returned");
	start = now_ms();
	EXPECT_FAILURE(write(nonblocking, "N", 1),
		       "a nonblocking write(2) while a blocking one waits fails with EAGAIN",
		       EAGAIN);
	check(now_ms() - start < 1000, "the EAGAIN came at once", "%lld ms",
	      (long long)(now_ms() - start));
	channel_send(&down, 1);
	check(channel_receive(&up, 10000) == 2, "the release made the RINGBUFFER_WAKE_LOCK call",
	      "it did not");
	/* After an EAGAIN there is always an event to wait for: that call made it. */
	EXPECT_VALUE(epoll_wait(epoll_fd, &out, 1, 0), 1,
		     "the refused nonblocking writer got its EPOLLOUT event");
	EXPECT_VALUE(wait_child(writer), 0, "the blocking write(2) finished after the release");
	EXPECT_VALUE(wait_child(holder), 0, "the holder finished");
	EXPECT_VALUE(read(p[0], buf, sizeof(buf)), 2, "read(2) of the 2 bytes");
	check(!memcmp(buf, "HB", 2), "the holder's byte, then the writer's", "read \"%.2s\"", buf);
}

static void test_lock_consumer_nb(void)
{
	struct epoll_event event = { .events = EPOLLIN | EPOLLET }, out;
	struct channel up, down;
	struct ring consumer;
	struct pollfd pfd;
	int p[2], nonblocking, epoll_fd, bytes_queued = -1, rc;
	char buf[8];
	pid_t holder;
	int64_t start;

	make_pipe(p);
	if (ring_map(&consumer, p[0], READ_SIDE, 65536))
		die("ringbuffer()");
	EXPECT_VALUE(write(p[1], "abc", 3), 3, "write(2) of 3 bytes");
	channel_init(&up);
	channel_init(&down);
	holder = fork_helper();
	if (!holder) {
		if (side_lock_take(&consumer))
			_exit(1);
		channel_send(&up, 1);
		channel_receive(&down, 30000);
		channel_send(&up, side_lock_release(&consumer) ? 2 : 3);
		_exit(0);
	}
	check(channel_receive(&up, 10000) == 1, "the consumer-lock holder took the word",
	      "it did not");
	nonblocking = reopen_nonblocking(p[0], O_RDONLY);
	epoll_fd = epoll_create1(0);
	epoll_ctl(epoll_fd, EPOLL_CTL_ADD, nonblocking, &event);
	epoll_wait(epoll_fd, &out, 1, 0);	/* the first edge, for the data there */
	start = now_ms();
	EXPECT_FAILURE(read(nonblocking, buf, sizeof(buf)),
		       "O_NONBLOCK read(2) with data but consumer_lock held fails with EAGAIN",
		       EAGAIN);
	check(now_ms() - start < 1000, "the EAGAIN came at once", "%lld ms",
	      (long long)(now_ms() - start));
	check(load_relaxed(consumer.consumer_lock_waiters) >= 1,
	      "consumer_lock_waiters counts the refused call", "%u",
	      load_relaxed(consumer.consumer_lock_waiters));
	ioctl(nonblocking, FIONREAD, &bytes_queued);
	EXPECT_VALUE(bytes_queued, 3, "FIONREAD reports the data while consumer_lock is held");
	pfd = (struct pollfd){ .fd = nonblocking, .events = POLLIN };
	rc = poll(&pfd, 1, 0);
	check(rc == 1 && (pfd.revents & POLLIN),
	      "poll(2) reports the data while consumer_lock is held", "rc %d, revents %#x", rc,
	      pfd.revents);
	channel_send(&down, 1);
	check(channel_receive(&up, 10000) == 2,
	      "the holder's release made the RINGBUFFER_WAKE_LOCK call", "it did not");
	EXPECT_VALUE(epoll_wait(epoll_fd, &out, 1, 5000), 1,
		     "edge-triggered EPOLLIN event after the release");
	EXPECT_VALUE(read(nonblocking, buf, sizeof(buf)), 3,
		     "the nonblocking read(2) works after the release");
	EXPECT_VALUE(wait_child(holder), 0, "the holder finished");
}

/* A child that takes the producer lock and then waits to be killed. */
static pid_t start_holder_until_killed(int write_fd, struct channel *up)
{
	pid_t holder = fork_helper();

	if (!holder) {
		struct ring producer;

		if (ring_map(&producer, write_fd, WRITE_SIDE, 4096) || side_lock_take(&producer))
			_exit(1);
		channel_send(up, 1);
		for (;;)
			pause();
	}
	return holder;
}

static void test_lock_dead_holder(void)
{
	struct ring producer;
	struct channel up;
	pid_t holder;
	int64_t start;
	int p[2];

	make_pipe(p);
	if (ring_map(&producer, p[1], WRITE_SIDE, 4096))
		die("ringbuffer()");
	channel_init(&up);

	holder = start_holder_until_killed(p[1], &up);
	check(channel_receive(&up, 10000) == 1, "the holder took the word", "it did not");
	kill(holder, SIGKILL);
	EXPECT_VALUE(wait_child(holder), 1000 + SIGKILL, "the holder was killed");
	note("producer_lock after the holder died: %u (holder %d)",
	     load_relaxed(producer.producer_lock), holder);
	start = now_ms();
	EXPECT_VALUE(sys_ringbuffer_wait(p[1], WRITE_SIDE, 0, &zero_timeout, RINGBUFFER_WAIT_LOCK),
		     0, "RINGBUFFER_WAIT_LOCK frees a dead holder's word and returns 0");
	check(load_relaxed(producer.producer_lock) == 0, "the word is free", "%u",
	      load_relaxed(producer.producer_lock));
	check(now_ms() - start < 2000, "it returned at once", "%lld ms",
	      (long long)(now_ms() - start));

	holder = start_holder_until_killed(p[1], &up);
	check(channel_receive(&up, 10000) == 1, "another holder took the word", "it did not");
	kill(holder, SIGKILL);
	EXPECT_VALUE(wait_child(holder), 1000 + SIGKILL, "the holder was killed");
	start = now_ms();
	EXPECT_VALUE(write(p[1], "x", 1), 1, "a blocking write(2) after the holder died works");
	/* The word is freed by the next task that waits for it, not after 10 s. */
	check(now_ms() - start < 5000, "without waiting for the 10 s limit", "%lld ms",
	      (long long)(now_ms() - start));
}

/* Values in the word that the kernel does not honour. */
static void test_lock_bogus(void)
{
	struct channel go, up;
	struct ring producer;
	pid_t idle, consumer_only, unmapped;
	int64_t start;
	uint32_t word;
	int p[2];

	make_pipe(p);
	channel_init(&go);
	channel_init(&up);
	idle = fork_helper();			/* a live task that never maps the ring */
	if (!idle) {
		channel_receive(&go, 30000);
		_exit(0);
	}
	consumer_only = fork_helper();		/* a live task that maps the other side only */
	if (!consumer_only) {
		struct ring consumer;

		if (ring_map(&consumer, p[0], READ_SIDE, 4096))
			_exit(1);
		channel_send(&up, 1);
		channel_receive(&go, 30000);
		_exit(0);
	}
	check(channel_receive(&up, 10000) == 1, "the consumer-only task mapped its side",
	      "it did not");
	unmapped = fork_helper();		/* a holder whose process unmapped the ring */
	if (!unmapped) {
		struct ring own;

		if (ring_map(&own, p[1], WRITE_SIDE, 4096) || side_lock_take(&own))
			_exit(1);
		ring_unmap(&own);
		channel_send(&up, 2);
		channel_receive(&go, 30000);
		_exit(0);
	}
	check(channel_receive(&up, 10000) == 2, "the holder took the word and unmapped",
	      "it did not");
	if (ring_map(&producer, p[1], WRITE_SIDE, 4096))
		die("ringbuffer()");
	word = load_relaxed(producer.producer_lock);
	/* Nothing says when the kernel frees it, only that the next waiter does. */
	check(word == (uint32_t)unmapped || word == 0,
	      "the word names the holder that unmapped, or is free", "%u", word);
	EXPECT_VALUE(sys_ringbuffer_wait(p[1], WRITE_SIDE, 0, &zero_timeout, RINGBUFFER_WAIT_LOCK),
		     0, "RINGBUFFER_WAIT_LOCK frees the word of a holder that unmapped");
	check(load_relaxed(producer.producer_lock) == 0, "the word is free", "%u",
	      load_relaxed(producer.producer_lock));

	struct {
		uint32_t value;
		const char *what;
	} bogus[] = {
		{ 0x3ffffff0u, "an impossible id" },
		{ RINGBUFFER_LOCK_KERNEL, "RINGBUFFER_LOCK_KERNEL while the kernel holds nothing" },
		{ (uint32_t)idle, "a live task that never mapped the ring" },
		{ (uint32_t)consumer_only, "a live task that maps only the other side" },
		{ 0xffffffffu, "0xffffffff" },
	};
	for (size_t i = 0; i < sizeof(bogus) / sizeof(bogus[0]); i++) {
		atomic_store(producer.producer_lock, bogus[i].value);
		EXPECT_VALUE(sys_ringbuffer_wait(p[1], WRITE_SIDE, 0, &zero_timeout,
						 RINGBUFFER_WAIT_LOCK), 0,
			     text("RINGBUFFER_WAIT_LOCK frees a word holding %s", bogus[i].what));
		check(load_relaxed(producer.producer_lock) == 0,
		      text("the word holding %s is free", bogus[i].what), "%#x",
		      load_relaxed(producer.producer_lock));
	}
	atomic_store(producer.producer_lock, (uint32_t)idle);
	start = now_ms();
	EXPECT_VALUE(write(p[1], "x", 1), 1, "a blocking write(2) with a bogus holder works");
	check(now_ms() - start < 5000, "without waiting for the 10 s limit", "%lld ms",
	      (long long)(now_ms() - start));
	for (int i = 0; i < 3; i++)
		channel_send(&go, 1);
	wait_child(idle);
	wait_child(consumer_only);
	wait_child(unmapped);
}

static sigjmp_buf sigbus_jump;

static void jump_on_sigbus(int signo)
{
	(void)signo;
	siglongjmp(sigbus_jump, 1);
}

/* Loads from a mapping: true if the load raised SIGBUS. */
static bool load_raises_sigbus(atomic_u32 *word)
{
	signal(SIGBUS, jump_on_sigbus);
	if (sigsetjmp(sigbus_jump, 1) == 0) {
		volatile uint32_t value = load_relaxed(word);

		(void)value;
		return false;
	}
	return true;
}

/* A holder may stall the others for 10 seconds at most. */
static void test_lock_revoke(void)
{
	struct channel up, down;
	struct ring consumer;
	int64_t start, elapsed;
	pid_t holder;
	int p[2];

	make_pipe(p);
	if (ring_map(&consumer, p[0], READ_SIDE, 4096))
		die("ringbuffer()");
	channel_init(&up);
	channel_init(&down);
	holder = fork_helper();
	if (!holder) {
		struct ring producer, again;

		if (ring_map(&producer, p[1], WRITE_SIDE, 4096) || side_lock_take(&producer))
			_exit(1);
		channel_send(&up, 1);
		channel_receive(&down, 60000);
		if (!load_raises_sigbus(producer.head))
			_exit(2);
		/* "The process may map the ring again with ringbuffer(2)." */
		if (ring_map(&again, p[1], WRITE_SIDE, 4096))
			_exit(3);
		_exit(0);
	}
	check(channel_receive(&up, 10000) == 1, "the holder took the word", "it did not");
	alarm(60);
	start = now_ms();
	EXPECT_VALUE(write(p[1], "x", 1), 1, "a blocking write(2) against a stalled holder works");
	elapsed = now_ms() - start;
	check(elapsed >= 9500 && elapsed < 30000, "after about 10 s", "%lld ms",
	      (long long)elapsed);
	check(load_relaxed(consumer.producer_lock) != (uint32_t)holder,
	      "the word no longer names the stalled holder", "%u",
	      load_relaxed(consumer.producer_lock));
	channel_send(&down, 1);
	EXPECT_VALUE(wait_child(holder), 0,
		     "the stalled holder's next access raises SIGBUS, and it can map again");
}

/*
 * "Otherwise nobody vouches for the word, which any user of the side may
 * have stored: the kernel frees it, and the named thread loses nothing."
 */
static void test_lock_unvouched(void)
{
	struct channel up, down;
	struct ring producer;
	int64_t start, elapsed;
	int p[2], nonblocking;
	pid_t named;

	make_pipe(p);
	channel_init(&up);
	channel_init(&down);
	named = fork_helper();
	if (!named) {
		struct ring mine;

		if (ring_map(&mine, p[1], WRITE_SIDE, 4096))
			_exit(1);
		channel_send(&up, 1);
		channel_receive(&down, 60000);
		_exit(load_raises_sigbus(mine.head) ? 2 : 0);
	}
	check(channel_receive(&up, 10000) == 1, "the named process mapped the producer side",
	      "it did not");
	if (ring_map(&producer, p[1], WRITE_SIDE, 4096))
		die("ringbuffer()");
	/* Its id, in the word and in our own held word: neither is its say. */
	atomic_store(producer.lock, (uint32_t)named);
	atomic_store(producer.held, (uint32_t)named);
	alarm(60);
	start = now_ms();
	EXPECT_VALUE(write(p[1], "x", 1), 1,
		     "a blocking write(2) against a word nobody vouches for works");
	elapsed = now_ms() - start;
	check(elapsed < 5000, "freed by the writer, not at the 10 s stall bound", "%lld ms",
	      (long long)elapsed);
	check(load_relaxed(producer.lock) == 0, "the word is free afterwards", "%u",
	      load_relaxed(producer.lock));
	/* "blocking or not": a nonblocking writer frees it too. */
	nonblocking = reopen_nonblocking(p[1], O_WRONLY);
	atomic_store(producer.lock, (uint32_t)named);
	EXPECT_VALUE(write(nonblocking, "y", 1), 1,
		     "an O_NONBLOCK write(2) against a word nobody vouches for works");
	check(load_relaxed(producer.lock) == 0, "the word is free afterwards", "%u",
	      load_relaxed(producer.lock));
	close(nonblocking);
	channel_send(&down, 1);
	EXPECT_VALUE(wait_child(named), 0, "the process the word named keeps its mapping");
	atomic_store(producer.held, 0);
	ring_unmap(&producer);
}

/* A holder stopped for 10 s loses the side the same way. */
static void test_lock_revoke_stopped(void)
{
	struct ring consumer;
	struct channel up;
	int64_t start, elapsed;
	pid_t holder;
	int p[2], status;

	make_pipe(p);
	if (ring_map(&consumer, p[0], READ_SIDE, 4096))
		die("ringbuffer()");
	channel_init(&up);
	holder = fork_helper();
	if (!holder) {
		struct ring producer;

		if (ring_map(&producer, p[1], WRITE_SIDE, 4096) || side_lock_take(&producer))
			_exit(1);
		channel_send(&up, 1);
		raise(SIGSTOP);
		_exit(load_raises_sigbus(producer.head) ? 0 : 2);
	}
	check(channel_receive(&up, 10000) == 1, "the holder took the word", "it did not");
	waitpid(holder, &status, WUNTRACED);
	check(WIFSTOPPED(status), "the holder is stopped", "status %#x", status);
	alarm(60);
	start = now_ms();
	EXPECT_VALUE(write(p[1], "x", 1), 1, "a blocking write(2) against a stopped holder works");
	elapsed = now_ms() - start;
	check(elapsed >= 9500 && elapsed < 30000, "after about 10 s", "%lld ms",
	      (long long)elapsed);
	kill(holder, SIGCONT);
	EXPECT_VALUE(wait_child(holder), 0, "the continued holder's access raises SIGBUS");
}

/* A sleeper in RINGBUFFER_WAIT_LOCK notices when its holder dies or unmaps. */
static void test_waitlock_holder_dies(void)
{
	struct channel up, down;
	struct ring producer;
	pid_t holder, waiter;
	int p[2];

	make_pipe(p);
	if (ring_map(&producer, p[1], WRITE_SIDE, 4096))
		die("ringbuffer()");
	channel_init(&up);
	channel_init(&down);
	holder = start_holder_until_killed(p[1], &up);
	check(channel_receive(&up, 10000) == 1, "the holder took the word", "it did not");
	waiter = fork_helper();
	if (!waiter) {
		int64_t start = now_ms();
		long rc = sys_ringbuffer_wait(p[1], WRITE_SIDE, 0, NULL, RINGBUFFER_WAIT_LOCK);

		_exit(rc == 0 && now_ms() - start < 5000 ? 0 : 1);
	}
	check(WAIT_UNTIL(load_relaxed(producer.producer_lock_waiters) >= 1 &&
			 task_state(waiter) == 'S', 10000),
	      "the RINGBUFFER_WAIT_LOCK sleeper is counted", "it is not");
	kill(holder, SIGKILL);
	wait_child(holder);
	EXPECT_VALUE(wait_child(waiter), 0, "the sleeper returns 0 soon after the holder dies");
	check(load_relaxed(producer.producer_lock) == 0, "the word is free", "%u",
	      load_relaxed(producer.producer_lock));

	holder = fork_helper();
	if (!holder) {
		struct ring own;

		if (ring_map(&own, p[1], WRITE_SIDE, 4096) || side_lock_take(&own))
			_exit(1);
		channel_send(&up, 1);
		channel_receive(&down, 30000);
		ring_unmap(&own);
		ring_unmap(&producer);	/* the mapping inherited from the parent */
		for (;;)
			pause();
	}
	check(channel_receive(&up, 10000) == 1, "another holder took the word", "it did not");
	waiter = fork_helper();
	if (!waiter) {
		int64_t start = now_ms();
		long rc = sys_ringbuffer_wait(p[1], WRITE_SIDE, 0, NULL, RINGBUFFER_WAIT_LOCK);

		_exit(rc == 0 && now_ms() - start < 5000 ? 0 : 1);
	}
	check(WAIT_UNTIL(load_relaxed(producer.producer_lock_waiters) >= 1 &&
			 task_state(waiter) == 'S', 10000),
	      "the RINGBUFFER_WAIT_LOCK sleeper is counted", "it is not");
	channel_send(&down, 1);
	EXPECT_VALUE(wait_child(waiter), 0, "the sleeper returns 0 soon after the holder unmaps");
	kill(holder, SIGKILL);
	wait_child(holder);
}

static void *take_lock_and_exit(void *producer)
{
	side_lock_take(producer);
	return (void *)(uintptr_t)my_tid();
}

static bool comm_is(pid_t pid, const char *name)
{
	char path[64], comm[32] = "";
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	if (read(fd, comm, sizeof(comm) - 1) < 0)
		comm[0] = 0;
	close(fd);
	return !strncmp(comm, name, strlen(name));
}

/* A holder that calls execve(2), a holder thread that exits. */
static void test_lock_exec(void)
{
	struct ring consumer, producer;
	struct channel input;
	pid_t holder;
	uint32_t word;
	pthread_t thread;
	void *thread_tid;
	int p[2];

	make_pipe(p);
	if (ring_map(&consumer, p[0], READ_SIDE, 4096))
		die("ringbuffer()");
	channel_init(&input);
	holder = fork_helper();
	if (!holder) {
		struct ring own;
		int null_fd;

		if (ring_map(&own, p[1], WRITE_SIDE, 4096) || side_lock_take(&own))
			_exit(1);
		/* cat waits on its input until the test closes it. */
		close(input.write_fd);
		dup2(input.read_fd, 0);
		null_fd = open("/dev/null", O_WRONLY);
		dup2(null_fd, 1);
		execl("/bin/cat", "cat", (char *)NULL);
		_exit(5);
	}
	check(WAIT_UNTIL(comm_is(holder, "cat"), 10000), "the holder called execve()",
	      "it did not");
	word = load_relaxed(consumer.producer_lock);
	check(word == (uint32_t)holder || word == 0,
	      "the word names the holder that called execve(), or is free", "%u", word);
	if (ring_map(&producer, p[1], WRITE_SIDE, 4096))
		die("ringbuffer()");
	EXPECT_VALUE(sys_ringbuffer_wait(p[1], WRITE_SIDE, 0, &zero_timeout, RINGBUFFER_WAIT_LOCK),
		     0, "RINGBUFFER_WAIT_LOCK frees the word of a holder that called execve()");
	check(load_relaxed(consumer.producer_lock) == 0, "the word is free", "%u",
	      load_relaxed(consumer.producer_lock));
	close(input.write_fd);
	wait_child(holder);

	pthread_create(&thread, NULL, take_lock_and_exit, &producer);
	pthread_join(thread, &thread_tid);
	word = load_relaxed(consumer.producer_lock);
	check(word == (uint32_t)(uintptr_t)thread_tid || word == 0,
	      "the word names the exited thread, or is free", "%u", word);
	EXPECT_VALUE(sys_ringbuffer_wait(p[1], WRITE_SIDE, 0, &zero_timeout, RINGBUFFER_WAIT_LOCK),
		     0, "RINGBUFFER_WAIT_LOCK frees the word of an exited thread of a live "
		     "process");
	check(load_relaxed(consumer.producer_lock) == 0, "the word is free", "%u",
	      load_relaxed(consumer.producer_lock));
}

/* ---------------------------------------------------------------------- */
/* Kept locks                                                              */
/* ---------------------------------------------------------------------- */

enum keeper_path {
	KEPT_COPY,		/* the side was still ours: plain loads and stores */
	KEPT_COPY_THEN_ENDED,	/* ... and lock waiters made us call (9) after it */
	TAKEN_BACK_COPY,	/* taken back: (9), then a copy under the plain lock */
};

/*
 * One copy of a producer that keeps its side, transcribed from the code of
 * "Kept locks", taken-back path included.  Returns the bytes published or
 * -errno; *path tells which way the copy went.
 */
static long keeper_produce(struct ring *r, const void *buf, uint32_t len,
			   enum keeper_path *path)
{
	uint32_t me = my_tid(), head, tail;

	*path = KEPT_COPY;
	if (load_relaxed(r->keeper) != me)
		goto taken_back;
	atomic_store_explicit(r->busy, 1, memory_order_relaxed);		/* (6) */
	atomic_signal_fence(memory_order_seq_cst);
	if (load_acquire(r->keeper) != me) {					/* (7) */
		atomic_store_explicit(r->busy, 0, memory_order_release);
		goto taken_back;
	}
	head = load_relaxed(r->head);
	tail = load_acquire(r->tail);
	if (head - tail > r->size || r->size - (head - tail) < len) {
		/*
		 * Leave the copy as (8) does; a caller would then sleep for
		 * space, which a keeper not in a copy may do.  The tests
		 * here never fill a kept ring.
		 */
		atomic_store_explicit(r->busy, 0, memory_order_release);
		atomic_signal_fence(memory_order_seq_cst);
		if (load_relaxed(r->lock_waiters))
			sys_ringbuffer_wakeup(r->fd, r->side, RINGBUFFER_WAKE_LOCK);
		return head - tail > r->size ? -EIO : -ENOSPC;
	}
	memcpy(r->data + (head & r->mask), buf, len);
	atomic_store_explicit(r->head, head + len, memory_order_release);	/* (2) */
	atomic_store_explicit(r->busy, 0, memory_order_release);		/* (8) */
	atomic_signal_fence(memory_order_seq_cst);
	if (load_relaxed(r->lock_waiters)) {
		sys_ringbuffer_wakeup(r->fd, r->side, RINGBUFFER_WAKE_LOCK);	/* (9) */
		*path = KEPT_COPY_THEN_ENDED;
	}
	last_copy_woke_other_side = wake_consumers_if_needed(r, head + len);
	return len;

taken_back:
	sys_ringbuffer_wakeup(r->fd, r->side, RINGBUFFER_WAKE_LOCK);		/* (9) */
	*path = TAKEN_BACK_COPY;
	/* No longer a keeper: take the word, copy, publish and release it. */
	return ring_produce(r, buf, len, len, true);
}

/* Publishes @s under a word the caller holds, without releasing it. */
static void publish_held(struct ring *producer, const char *s)
{
	uint32_t len = strlen(s), head = load_relaxed(producer->head);

	memcpy(producer->data + (head & producer->mask), s, len);
	atomic_store_explicit(producer->head, head + len, memory_order_release);
}

static void expect_read(int fd, const char *want, const char *what)
{
	size_t len = strlen(want);
	char buf[256] = { 0 };
	ssize_t n = read_full(fd, buf, len);

	check(n == (ssize_t)len && !memcmp(buf, want, len), what, "read \"%s\", want \"%s\"", buf,
	      want);
}

static bool words_are(const struct ring *r, uint32_t lock, uint32_t keeper)
{
	return load_relaxed(r->lock) == lock && load_relaxed(r->keeper) == keeper;
}

static void test_keep_basic(void)
{
	struct ring producer, consumer, producer2;
	uint32_t me = my_tid();
	enum keeper_path path;
	char buf[4];
	long rc;
	int p[2];

	make_pipe(p);
	if (ring_map(&producer, p[1], WRITE_SIDE, 4096) ||
	    ring_map(&consumer, p[0], READ_SIDE, 4096))
		die("ringbuffer()");
	if (!have_kept_locks(&producer))
		return;
	EXPECT_FAILURE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_KEEP_LOCK),
		       "RINGBUFFER_KEEP_LOCK without holding the word fails with EPERM", EPERM);
	atomic_store(producer.producer_lock, me + 1);
	EXPECT_FAILURE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_KEEP_LOCK),
		       "RINGBUFFER_KEEP_LOCK with the word naming another thread fails with EPERM",
		       EPERM);
	atomic_store(producer.producer_lock, 0);
	side_lock_take(&producer);
	publish_held(&producer, "A");
	EXPECT_VALUE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_KEEP_LOCK), 0,
		     "RINGBUFFER_KEEP_LOCK by the holder returns 0");
	check(words_are(&producer, me, me),
	      "producer_keeper names the caller and the word stays its thread id",
	      "lock %u, keeper %u, me %u", load_relaxed(producer.producer_lock),
	      load_relaxed(producer.producer_keeper), me);
	rc = keeper_produce(&producer, "B", 1, &path);
	check(rc == 1 && path == KEPT_COPY, "the keeper copies with plain loads and stores",
	      "rc %ld, path %d", rc, path);
	EXPECT_VALUE(write(p[1], "C", 1), 1, "the keeper's own write(2) runs under its word");
	check(words_are(&producer, me, me), "and leaves it kept", "lock %u, keeper %u",
	      load_relaxed(producer.producer_lock), load_relaxed(producer.producer_keeper));
	rc = keeper_produce(&producer, "D", 1, &path);
	check(rc == 1 && path == KEPT_COPY, "the keeper copies again", "rc %ld, path %d", rc,
	      path);
	EXPECT_VALUE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_WAKE_LOCK), 0,
		     "RINGBUFFER_WAKE_LOCK from the keeper returns 0");
	check(words_are(&producer, 0, 0), "it ended the keeping and freed the word",
	      "lock %u, keeper %u", load_relaxed(producer.producer_lock),
	      load_relaxed(producer.producer_keeper));
	expect_read(p[0], "ABCD", "the keeper's data arrives in order");

	/* The consumer side. */
	EXPECT_VALUE(write(p[1], "xyz", 3), 3, "write(2) of 3 bytes");
	side_lock_take(&consumer);
	EXPECT_VALUE(sys_ringbuffer_wakeup(p[0], READ_SIDE, RINGBUFFER_KEEP_LOCK), 0,
		     "RINGBUFFER_KEEP_LOCK on the consumer side returns 0");
	check(words_are(&consumer, me, me), "consumer_keeper names the caller",
	      "lock %u, keeper %u", load_relaxed(consumer.consumer_lock),
	      load_relaxed(consumer.consumer_keeper));
	EXPECT_VALUE(read(p[0], buf, 3), 3, "the keeper's own read(2) runs under its word");
	check(words_are(&consumer, me, me), "and leaves it kept", "lock %u, keeper %u",
	      load_relaxed(consumer.consumer_lock), load_relaxed(consumer.consumer_keeper));
	EXPECT_VALUE(sys_ringbuffer_wakeup(p[0], READ_SIDE, RINGBUFFER_WAKE_LOCK), 0,
		     "RINGBUFFER_WAKE_LOCK ends the consumer side's keeping");
	check(words_are(&consumer, 0, 0), "and frees the word", "lock %u, keeper %u",
	      load_relaxed(consumer.consumer_lock), load_relaxed(consumer.consumer_keeper));

	/* The caller's process must map the side. */
	side_lock_take(&producer);
	ring_unmap(&producer);
	EXPECT_FAILURE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_KEEP_LOCK),
		       "RINGBUFFER_KEEP_LOCK by a holder whose process unmapped the side fails "
		       "with EPERM", EPERM);
	if (ring_map(&producer2, p[1], WRITE_SIDE, 4096))
		die("ringbuffer()");
	atomic_store(producer2.producer_lock, me);
	ring_unmap(&producer2);
	EXPECT_FAILURE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_KEEP_LOCK),
		       "RINGBUFFER_KEEP_LOCK with only the other side mapped fails with EPERM",
		       EPERM);
	/*
	 * The word holds our own id (EDEADLK), yet it is not honoured because
	 * the process does not map the side (freed, 0): either may come.
	 */
	rc = sys_ringbuffer_wait(p[1], WRITE_SIDE, 0, &zero_timeout, RINGBUFFER_WAIT_LOCK);
	check(rc == 0 || (rc == -1 && errno == EDEADLK),
	      "RINGBUFFER_WAIT_LOCK on our own id without a mapping frees it or gives EDEADLK",
	      "got %ld %s", rc, rc < 0 ? errno_name(errno) : "");
}

struct keep_attempt {
	struct ring *producer;
	long keep_rc;
	int keep_errno;
	uint32_t keeper_seen;
	uint32_t lock_seen;
	long end_rc;
};

/* In another thread: take the word, try to keep it, then let go of it either way. */
static void *try_keep_in_thread(void *arg)
{
	struct keep_attempt *a = arg;

	side_lock_take(a->producer);
	errno = 0;
	a->keep_rc = sys_ringbuffer_wakeup(a->producer->fd, WRITE_SIDE, RINGBUFFER_KEEP_LOCK);
	a->keep_errno = errno;
	a->keeper_seen = load_relaxed(a->producer->producer_keeper);
	a->lock_seen = load_relaxed(a->producer->producer_lock);
	if (a->keep_rc == 0)
		a->end_rc = sys_ringbuffer_wakeup(a->producer->fd, WRITE_SIDE,
						  RINGBUFFER_WAKE_LOCK);
	else
		side_lock_release(a->producer);
	return NULL;
}

/* A side kept but idle is taken back by the next user at once. */
static void test_keep_takeback_idle(void)
{
	struct keep_attempt attempt = { 0 };
	uint32_t me = my_tid();
	enum keeper_path path;
	struct ring producer;
	pthread_t thread;
	pid_t child;
	int p[2];
	long rc;

	make_pipe(p);
	if (ring_map(&producer, p[1], WRITE_SIDE, 4096))
		die("ringbuffer()");
	if (!have_kept_locks(&producer))
		return;
	attempt.producer = &producer;
	side_lock_take(&producer);
	publish_held(&producer, "K1");
	EXPECT_VALUE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_KEEP_LOCK), 0,
		     "RINGBUFFER_KEEP_LOCK returns 0");
	child = fork_helper();
	if (!child)
		_exit(write(p[1], "W", 1) == 1 ? 0 : 1);
	EXPECT_VALUE(wait_child(child), 0,
		     "a write(2) from another process takes an idle kept side back and finishes");
	check(load_relaxed(producer.producer_keeper) == 0, "producer_keeper was cleared", "%u",
	      load_relaxed(producer.producer_keeper));
	check(load_relaxed(producer.producer_lock) == 0, "producer_lock is free after that write",
	      "%u", load_relaxed(producer.producer_lock));

	/* Until the old keeper makes call (9), nobody else may keep the side. */
	pthread_create(&thread, NULL, try_keep_in_thread, &attempt);
	pthread_join(thread, NULL);
	check(attempt.keep_rc == -1 && attempt.keep_errno == EBUSY,
	      "another thread's RINGBUFFER_KEEP_LOCK before the old keeper's call (9) fails "
	      "with EBUSY", "got %ld %s", attempt.keep_rc,
	      attempt.keep_rc < 0 ? errno_name(attempt.keep_errno) : "");
	check(attempt.keep_rc == 0 ||
	      (attempt.keeper_seen == 0 && attempt.lock_seen != 0 && attempt.lock_seen != me),
	      "after EBUSY that thread still holds the word, not kept", "lock %u, keeper %u",
	      attempt.lock_seen, attempt.keeper_seen);

	/* The old keeper's next copy finds the side taken back. */
	rc = keeper_produce(&producer, "K2", 2, &path);
	check(rc == 2 && path == TAKEN_BACK_COPY,
	      "the old keeper's next copy goes the taken-back way", "rc %ld, path %d", rc, path);
	check(words_are(&producer, 0, 0), "after it the word is free and nobody keeps the side",
	      "lock %u, keeper %u", load_relaxed(producer.producer_lock),
	      load_relaxed(producer.producer_keeper));
	child = fork_helper();
	if (!child) {
		int nonblocking = reopen_nonblocking(p[1], O_WRONLY);

		_exit(write(nonblocking, "N", 1) == 1 ? 0 : 1);
	}
	EXPECT_VALUE(wait_child(child), 0,
		     "a nonblocking write(2) from another process then works at once");

	memset(&attempt, 0, sizeof(attempt));
	attempt.producer = &producer;
	pthread_create(&thread, NULL, try_keep_in_thread, &attempt);
	pthread_join(thread, NULL);
	check(attempt.keep_rc == 0, "after call (9) another thread may keep the side",
	      "got %ld %s", attempt.keep_rc,
	      attempt.keep_rc < 0 ? errno_name(attempt.keep_errno) : "");
	check(attempt.keeper_seen != 0 && attempt.keeper_seen != me,
	      "producer_keeper named that thread", "%u", attempt.keeper_seen);
	check(attempt.end_rc == 0 && words_are(&producer, 0, 0),
	      "its RINGBUFFER_WAKE_LOCK ended the keeping", "rc %ld, lock %u, keeper %u",
	      attempt.end_rc, load_relaxed(producer.producer_lock),
	      load_relaxed(producer.producer_keeper));
	expect_read(p[0], "K1WK2N", "the data arrives in order");
}

/* A side taken back while its keeper copies: the kernel waits for the copy. */
static void test_keep_takeback_busy(void)
{
	struct ring producer;
	uint32_t me = my_tid();
	uint32_t head;
	pid_t child;
	int p[2];

	make_pipe(p);
	if (ring_map(&producer, p[1], WRITE_SIDE, 4096))
		die("ringbuffer()");
	if (!have_kept_locks(&producer))
		return;
	side_lock_take(&producer);
	publish_held(&producer, "K0");
	EXPECT_VALUE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_KEEP_LOCK), 0,
		     "RINGBUFFER_KEEP_LOCK returns 0");
	/* Start a copy: (6), then (7) finds the side still ours. */
	atomic_store_explicit(producer.busy, 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	check(load_acquire(producer.keeper) == me, "(7): the side is still ours", "keeper %u",
	      load_relaxed(producer.keeper));
	child = fork_helper();
	if (!child)
		_exit(write(p[1], "W", 1) == 1 ? 0 : 1);
	check(WAIT_UNTIL(load_relaxed(producer.producer_keeper) == 0 &&
			 load_relaxed(producer.producer_lock_waiters) >= 1, 10000),
	      "the contender counts in lock_waiters and clears the keeper word",
	      "keeper %u, waiters %u", load_relaxed(producer.producer_keeper),
	      load_relaxed(producer.producer_lock_waiters));
	check(child_still_running(child), "the contender's write(2) waits while busy is 1",
	      "it returned");
	check(load_relaxed(producer.producer_lock) == me, "the word stays ours while busy",
	      "%u", load_relaxed(producer.producer_lock));
	head = load_relaxed(producer.head);
	memcpy(producer.data + (head & producer.mask), "K1", 2);
	atomic_store_explicit(producer.head, head + 2, memory_order_release);
	atomic_store_explicit(producer.busy, 0, memory_order_release);		/* (8) */
	atomic_signal_fence(memory_order_seq_cst);
	check(load_relaxed(producer.lock_waiters) != 0, "after (8) the keeper sees the contender",
	      "lock_waiters 0");
	EXPECT_VALUE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_WAKE_LOCK), 0,
		     "call (9) finishes the taking back and returns 0");
	EXPECT_VALUE(wait_child(child), 0, "the contender's write(2) finished");
	expect_read(p[0], "K0K1W", "the data arrives in order");
	check(words_are(&producer, 0, 0) && load_relaxed(producer.producer_busy) == 0,
	      "the lock, keeper and busy words are 0 afterwards", "lock %u, keeper %u, busy %u",
	      load_relaxed(producer.producer_lock), load_relaxed(producer.producer_keeper),
	      load_relaxed(producer.producer_busy));

	/* The same with a contender in RINGBUFFER_WAIT_LOCK. */
	side_lock_take(&producer);
	EXPECT_VALUE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_KEEP_LOCK), 0,
		     "RINGBUFFER_KEEP_LOCK returns 0 again");
	atomic_store_explicit(producer.busy, 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	child = fork_helper();
	if (!child) {
		long rc;

		do
			rc = sys_ringbuffer_wait(p[1], WRITE_SIDE, 0, NULL, RINGBUFFER_WAIT_LOCK);
		while (rc == 0 && load_relaxed(producer.producer_lock) == me);
		_exit(rc == 0 ? 0 : 1);
	}
	check(WAIT_UNTIL(load_relaxed(producer.producer_keeper) == 0 &&
			 load_relaxed(producer.producer_lock_waiters) >= 1, 10000),
	      "a RINGBUFFER_WAIT_LOCK contender takes the side back", "keeper %u, waiters %u",
	      load_relaxed(producer.producer_keeper),
	      load_relaxed(producer.producer_lock_waiters));
	atomic_store_explicit(producer.busy, 0, memory_order_release);		/* (8) */
	atomic_signal_fence(memory_order_seq_cst);
	check(load_relaxed(producer.lock_waiters) != 0, "after (8) the keeper sees the contender",
	      "lock_waiters 0");
	EXPECT_VALUE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_WAKE_LOCK), 0,
		     "call (9) returns 0");
	EXPECT_VALUE(wait_child(child), 0,
		     "the RINGBUFFER_WAIT_LOCK contender returned 0 once the word was freed");
}

static void test_keep_ebusy(void)
{
	struct ring producer;
	uint32_t me = my_tid();
	pid_t child;
	int p[2];

	make_pipe(p);
	if (ring_map(&producer, p[1], WRITE_SIDE, 4096))
		die("ringbuffer()");
	if (!have_kept_locks(&producer))
		return;
	side_lock_take(&producer);
	child = fork_helper();
	if (!child)
		_exit(sys_ringbuffer_wait(p[1], WRITE_SIDE, 0, NULL, RINGBUFFER_WAIT_LOCK) == 0 ?
		      0 : 1);
	check(WAIT_UNTIL(load_relaxed(producer.producer_lock_waiters) >= 1, 10000),
	      "the RINGBUFFER_WAIT_LOCK sleeper is counted", "%u",
	      load_relaxed(producer.producer_lock_waiters));
	EXPECT_FAILURE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_KEEP_LOCK),
		       "RINGBUFFER_KEEP_LOCK while a task waits for the word fails with EBUSY",
		       EBUSY);
	check(words_are(&producer, me, 0), "after EBUSY the caller still holds the word, not kept",
	      "lock %u, keeper %u", load_relaxed(producer.producer_lock),
	      load_relaxed(producer.producer_keeper));
	check(side_lock_release(&producer), "the release made the RINGBUFFER_WAKE_LOCK call",
	      "lock_waiters was 0");
	EXPECT_VALUE(wait_child(child), 0, "the waiter returned 0");

	/* A refused nonblocking call that was not told yet. */
	side_lock_take(&producer);
	child = fork_helper();
	if (!child) {
		int nonblocking = reopen_nonblocking(p[1], O_WRONLY);

		_exit(write(nonblocking, "x", 1) == -1 && errno == EAGAIN ? 0 : 1);
	}
	EXPECT_VALUE(wait_child(child), 0, "a nonblocking write(2) was refused with EAGAIN");
	check(load_relaxed(producer.producer_lock_waiters) >= 1,
	      "it counts in producer_lock_waiters", "%u",
	      load_relaxed(producer.producer_lock_waiters));
	EXPECT_FAILURE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_KEEP_LOCK),
		       "RINGBUFFER_KEEP_LOCK while a refused call was not told fails with EBUSY",
		       EBUSY);
	check(words_are(&producer, me, 0), "after EBUSY the caller still holds the word, not kept",
	      "lock %u, keeper %u", load_relaxed(producer.producer_lock),
	      load_relaxed(producer.producer_keeper));
	check(side_lock_release(&producer), "the release made the RINGBUFFER_WAKE_LOCK call",
	      "lock_waiters was 0");
	check(load_relaxed(producer.producer_lock_waiters) == 0,
	      "producer_lock_waiters is 0 once the call was told", "%u",
	      load_relaxed(producer.producer_lock_waiters));
	side_lock_take(&producer);
	EXPECT_VALUE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_KEEP_LOCK), 0,
		     "RINGBUFFER_KEEP_LOCK works after that");
	EXPECT_VALUE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_WAKE_LOCK), 0,
		     "RINGBUFFER_WAKE_LOCK ends the keeping");
}

/* A keeper that exits or unmaps keeps nothing: the next user gets the side at once. */
static void test_keep_exit(void)
{
	struct ring consumer;
	struct channel up;
	int64_t start;
	int p[2];

	make_pipe(p);
	if (ring_map(&consumer, p[0], READ_SIDE, 4096))
		die("ringbuffer()");
	if (!have_kept_locks(&consumer))
		return;
	channel_init(&up);
	for (int unmaps = 0; unmaps <= 1; unmaps++) {
		const char *how = unmaps ? "unmapped" : "exited";
		uint32_t lock, keeper;
		pid_t child = fork_helper();

		if (!child) {
			struct ring producer;

			if (ring_map(&producer, p[1], WRITE_SIDE, 4096) ||
			    side_lock_take(&producer))
				_exit(1);
			publish_held(&producer, "X");
			if (sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_KEEP_LOCK))
				_exit(2);
			if (unmaps)
				ring_unmap(&producer);
			channel_send(&up, 1);
			if (!unmaps)
				_exit(0);
			for (;;)
				pause();
		}
		check(channel_receive(&up, 10000) == 1,
		      text("a child keeps the producer side (then %s)", how), "it does not");
		if (!unmaps)
			EXPECT_VALUE(wait_child(child), 0, "the keeper exited");
		/* Until the next task wants the side, the words may still name it. */
		lock = load_relaxed(consumer.producer_lock);
		keeper = load_relaxed(consumer.producer_keeper);
		check((lock == 0 || lock == (uint32_t)child) &&
		      (keeper == 0 || keeper == (uint32_t)child),
		      text("after the keeper %s the words name it or nobody", how),
		      "lock %u, keeper %u, keeper was %d", lock, keeper, child);
		start = now_ms();
		EXPECT_VALUE(write(p[1], "Y", 1), 1,
			     text("write(2) after the keeper %s works", how));
		check(now_ms() - start < 5000, "without waiting for the 10 s limit", "%lld ms",
		      (long long)(now_ms() - start));
		lock = load_relaxed(consumer.producer_lock);
		keeper = load_relaxed(consumer.producer_keeper);
		check(lock != (uint32_t)child && keeper != (uint32_t)child,
		      text("once the side was wanted the words no longer name the keeper that %s",
			   how), "lock %u, keeper %u", lock, keeper);
		expect_read(p[0], "XY", "the data arrives in order");
		if (unmaps) {
			kill(child, SIGKILL);
			wait_child(child);
		}
	}
}

enum keeping_end { BY_WAKE_LOCK, BY_WAIT_LOCK_ZERO_TIMEOUT, BY_WAIT_LOCK_NO_TIMEOUT };

static const char *const keeping_end_names[] = {
	[BY_WAKE_LOCK] = "RINGBUFFER_WAKE_LOCK",
	[BY_WAIT_LOCK_ZERO_TIMEOUT] = "RINGBUFFER_WAIT_LOCK (zero timeout)",
	[BY_WAIT_LOCK_NO_TIMEOUT] = "RINGBUFFER_WAIT_LOCK (no timeout)",
};

/*
 * The keeper ends the keeping itself; the side was never taken back, so
 * nothing makes a new RINGBUFFER_KEEP_LOCK of the same thread fail.
 */
static void end_keeping_and_keep_again(struct ring *producer, enum keeping_end how)
{
	const char *name = keeping_end_names[how];
	int fd = producer->fd;
	long rc;
	int err;

	side_lock_take(producer);
	EXPECT_VALUE(sys_ringbuffer_wakeup(fd, WRITE_SIDE, RINGBUFFER_KEEP_LOCK), 0,
		     "RINGBUFFER_KEEP_LOCK returns 0");
	if (how == BY_WAKE_LOCK)
		rc = sys_ringbuffer_wakeup(fd, WRITE_SIDE, RINGBUFFER_WAKE_LOCK);
	else
		rc = sys_ringbuffer_wait(fd, WRITE_SIDE, 0,
					 how == BY_WAIT_LOCK_ZERO_TIMEOUT ? &zero_timeout : NULL,
					 RINGBUFFER_WAIT_LOCK);
	check(rc == 0, text("the keeper's own %s returns 0", name), "got %ld %s", rc,
	      rc < 0 ? errno_name(errno) : "");
	check(words_are(producer, 0, 0), text("%s ended the keeping and freed the word", name),
	      "lock %u, keeper %u", load_relaxed(producer->producer_lock),
	      load_relaxed(producer->producer_keeper));
	if (how != BY_WAKE_LOCK) {
		/*
		 * "as after any taking back, the thread makes call (9) before it
		 * keeps the side again (until then RINGBUFFER_KEEP_LOCK fails
		 * with EBUSY)".
		 */
		side_lock_take(producer);
		errno = 0;
		rc = sys_ringbuffer_wakeup(fd, WRITE_SIDE, RINGBUFFER_KEEP_LOCK);
		err = errno;
		check(rc == -1 && err == EBUSY,
		      text("after %s, RINGBUFFER_KEEP_LOCK before call (9) fails with EBUSY", name),
		      "got %ld %s", rc, rc < 0 ? errno_name(err) : "");
		if (rc == 0)
			sys_ringbuffer_wakeup(fd, WRITE_SIDE, RINGBUFFER_WAKE_LOCK);
		else
			side_lock_release(producer);	/* after EBUSY the word is still ours */
		EXPECT_VALUE(sys_ringbuffer_wakeup(fd, WRITE_SIDE, RINGBUFFER_WAKE_LOCK), 0,
			     "call (9) acknowledges the taking back");
	}
	side_lock_take(producer);
	errno = 0;
	rc = sys_ringbuffer_wakeup(fd, WRITE_SIDE, RINGBUFFER_KEEP_LOCK);
	err = errno;
	check(rc == 0, text("after ending the keeping with %s the thread may keep again", name),
	      "got %ld %s, producer_lock_waiters %u", rc, rc < 0 ? errno_name(err) : "",
	      load_relaxed(producer->producer_lock_waiters));
	if (rc)
		side_lock_release(producer);	/* after EBUSY the word is still ours */
	/* End whatever is left; a spurious call is harmless. */
	sys_ringbuffer_wakeup(fd, WRITE_SIDE, RINGBUFFER_WAKE_LOCK);
	check(words_are(producer, 0, 0), "the word is free again", "lock %u, keeper %u",
	      load_relaxed(producer->producer_lock), load_relaxed(producer->producer_keeper));
}

/* The keeper's own RINGBUFFER_WAIT_LOCK and RINGBUFFER_KEEP_LOCK. */
static void test_keep_waitlock(void)
{
	struct ring producer;
	uint32_t me = my_tid();
	enum keeper_path path;
	int p[2];
	long rc;

	make_pipe(p);
	if (ring_map(&producer, p[1], WRITE_SIDE, 4096))
		die("ringbuffer()");
	if (!have_kept_locks(&producer))
		return;
	for (int how = BY_WAKE_LOCK; how <= BY_WAIT_LOCK_NO_TIMEOUT; how++)
		end_keeping_and_keep_again(&producer, how);

	/* "Either way, take the word as above before the next copy." */
	side_lock_take(&producer);
	EXPECT_VALUE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_KEEP_LOCK), 0,
		     "RINGBUFFER_KEEP_LOCK returns 0");
	EXPECT_VALUE(sys_ringbuffer_wait(p[1], WRITE_SIDE, 0, &zero_timeout, RINGBUFFER_WAIT_LOCK),
		     0, "the keeper's own RINGBUFFER_WAIT_LOCK returns 0 (not EDEADLK)");
	rc = keeper_produce(&producer, "A", 1, &path);
	check(rc == 1 && path == TAKEN_BACK_COPY,
	      "the former keeper's next copy takes the word as usual", "rc %ld, path %d", rc,
	      path);
	EXPECT_VALUE(write(p[1], "B", 1), 1, "write(2) works afterwards");
	expect_read(p[0], "AB", "the data arrives in order");

	side_lock_take(&producer);
	EXPECT_VALUE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_KEEP_LOCK), 0,
		     "RINGBUFFER_KEEP_LOCK returns 0");
	EXPECT_VALUE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_KEEP_LOCK), 0,
		     "RINGBUFFER_KEEP_LOCK from the thread that keeps already returns 0");
	check(words_are(&producer, me, me), "the side is still kept by the caller",
	      "lock %u, keeper %u", load_relaxed(producer.producer_lock),
	      load_relaxed(producer.producer_keeper));
	EXPECT_VALUE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_WAKE_LOCK), 0,
		     "RINGBUFFER_WAKE_LOCK ends the keeping");
	check(words_are(&producer, 0, 0), "the word is free", "lock %u, keeper %u",
	      load_relaxed(producer.producer_lock), load_relaxed(producer.producer_keeper));
}

/* A keeper that is not in a copy may sleep for space; a contender takes the side back. */
static void test_keep_sleep(void)
{
	struct __kernel_timespec twenty_seconds = { 20, 0 };
	struct ring producer;
	uint32_t me = my_tid();
	enum keeper_path path;
	pid_t contender;
	int p[2];
	long rc;

	make_pipe(p);
	if (ring_map(&producer, p[1], WRITE_SIDE, 4096))
		die("ringbuffer()");
	if (!have_kept_locks(&producer))
		return;
	side_lock_take(&producer);
	EXPECT_VALUE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_KEEP_LOCK), 0,
		     "RINGBUFFER_KEEP_LOCK returns 0");
	EXPECT_VALUE(sys_ringbuffer_wait(p[1], WRITE_SIDE, 1, &zero_timeout, 0), producer.size,
		     "the keeper's ringbuffer_wait() for space returns the space");
	EXPECT_VALUE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_WAKE_LOCK), 0,
		     "RINGBUFFER_WAKE_LOCK ends the keeping");
	fill_pipe(p[1]);
	side_lock_take(&producer);
	EXPECT_VALUE(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_KEEP_LOCK), 0,
		     "RINGBUFFER_KEEP_LOCK on a full ring returns 0");

	contender = fork_helper();
	if (!contender) {
		int64_t start;
		char byte;

		/* Wait until the keeper sleeps for space, then want the side. */
		if (!WAIT_UNTIL(load_relaxed(producer.write_waiters) >= 1, 10000))
			_exit(2);
		start = now_ms();
		if (side_lock_take(&producer))
			_exit(3);
		if (now_ms() - start >= 5000)
			_exit(4);
		side_lock_release(&producer);
		/* Free some space so that the keeper wakes up. */
		if (read(p[0], &byte, 1) != 1)
			_exit(5);
		_exit(0);
	}
	rc = sys_ringbuffer_wait(p[1], WRITE_SIDE, 1, &twenty_seconds, 0);
	check(rc >= 1, "the keeper sleeps in ringbuffer_wait() until there is space",
	      "got %ld %s", rc, rc < 0 ? errno_name(errno) : "");
	EXPECT_VALUE(wait_child(contender), 0,
		     "meanwhile another process took the side back and had the word at once");
	check(load_relaxed(producer.producer_keeper) != me,
	      "the keeper word no longer names the sleeping keeper", "%u",
	      load_relaxed(producer.producer_keeper));
	rc = keeper_produce(&producer, "K", 1, &path);
	check(rc == 1 && path == TAKEN_BACK_COPY, "the keeper's next copy goes the taken-back way",
	      "rc %ld, path %d", rc, path);
	check(words_are(&producer, 0, 0), "the word is free afterwards", "lock %u, keeper %u",
	      load_relaxed(producer.producer_lock), load_relaxed(producer.producer_keeper));
}

/* A keeper busy for 10 s without moving the position loses the side. */
static void test_keep_revoke_busy(void)
{
	struct channel up, down;
	struct ring consumer;
	int64_t start, elapsed;
	pid_t keeper;
	int p[2];

	make_pipe(p);
	if (ring_map(&consumer, p[0], READ_SIDE, 4096))
		die("ringbuffer()");
	if (!have_kept_locks(&consumer))
		return;
	channel_init(&up);
	channel_init(&down);
	keeper = fork_helper();
	if (!keeper) {
		struct ring producer;

		if (ring_map(&producer, p[1], WRITE_SIDE, 4096) || side_lock_take(&producer))
			_exit(1);
		if (sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_KEEP_LOCK))
			_exit(4);
		atomic_store_explicit(producer.busy, 1, memory_order_relaxed);	/* (6), stall */
		channel_send(&up, 1);
		channel_receive(&down, 60000);
		_exit(load_raises_sigbus(producer.head) ? 0 : 2);
	}
	check(channel_receive(&up, 10000) == 1, "the keeper is busy", "it is not");
	alarm(60);
	start = now_ms();
	EXPECT_VALUE(write(p[1], "x", 1), 1, "a blocking write(2) against a stalled keeper works");
	elapsed = now_ms() - start;
	check(elapsed >= 9500 && elapsed < 30000, "after about 10 s", "%lld ms",
	      (long long)elapsed);
	check(load_relaxed(consumer.producer_keeper) != (uint32_t)keeper,
	      "the keeper word no longer names the stalled keeper", "%u",
	      load_relaxed(consumer.producer_keeper));
	channel_send(&down, 1);
	EXPECT_VALUE(wait_child(keeper), 0, "the stalled keeper's next access raises SIGBUS");
}

/* ---------------------------------------------------------------------- */
/* Pipes: poll, O_ASYNC, sleepers of read(2) and write(2)                  */
/* ---------------------------------------------------------------------- */

static void test_poll(void)
{
	struct epoll_event event = { .events = EPOLLIN | EPOLLET }, out;
	struct pollfd read_end, write_end;
	int p[2], bytes_queued = -1, epoll_fd;
	struct ring producer;
	char buf[256];
	pid_t poller;
	long rc;

	make_pipe(p);
	if (ring_map(&producer, p[1], WRITE_SIDE, 65536))
		die("ringbuffer()");
	check(load_relaxed(producer.read_waiters) == 0 && load_relaxed(producer.write_waiters) == 0,
	      "the waiter counts are 0 before any poll", "%u, %u",
	      load_relaxed(producer.read_waiters), load_relaxed(producer.write_waiters));
	EXPECT_VALUE(ring_produce(&producer, pattern, 100, 100, true), 100,
		     "a mapped publish of 100 bytes");
	ioctl(p[0], FIONREAD, &bytes_queued);
	EXPECT_VALUE(bytes_queued, 100, "FIONREAD counts what a mapping published");
	read_end = (struct pollfd){ .fd = p[0], .events = POLLIN };
	EXPECT_VALUE(poll(&read_end, 1, 0), 1, "poll(POLLIN) reports the data");
	if (have_wait_minimum(&producer, "after a poll of the read end read_wait_min is 1"))
		check(load_relaxed(producer.read_waiters) >= 1 &&
		      load_relaxed(producer.read_wait_min) == 1,
		      "after a poll of the read end read_waiters is raised and read_wait_min 1",
		      "%u, %u", load_relaxed(producer.read_waiters),
		      load_relaxed(producer.read_wait_min));
	EXPECT_VALUE(read(p[0], buf, sizeof(buf)), 100, "read(2) of the 100 bytes");
	read_end.revents = 0;
	EXPECT_VALUE(poll(&read_end, 1, 0), 0, "poll(POLLIN) on the empty pipe reports nothing");

	/* A mapped publish wakes a sleeping poller. */
	poller = fork_helper();
	if (!poller) {
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };

		_exit(poll(&pfd, 1, 20000) == 1 && (pfd.revents & POLLIN) ? 0 : 1);
	}
	check(WAIT_UNTIL(task_state(poller) == 'S', 10000), "the poller sleeps", "it does not");
	EXPECT_VALUE(ring_produce(&producer, pattern, 5, 5, true), 5,
		     "a mapped publish of 5 bytes");
	check(last_copy_woke_other_side,
	      "the publisher made the wake-up call, since polling raised the count",
	      "it did not");
	EXPECT_VALUE(wait_child(poller), 0, "the sleeping poll(2) woke up");
	EXPECT_VALUE(read(p[0], buf, sizeof(buf)), 5, "read(2) of the 5 bytes");

	/* EPOLLOUT means PIPE_BUF bytes of space; writes up to PIPE_BUF are whole. */
	set_nonblocking(p[1], true);
	EXPECT_VALUE(write_full(p[1], pattern, producer.size - PIPE_BUF + 1),
		     producer.size - PIPE_BUF + 1,
		     "fill the ring up to PIPE_BUF - 1 bytes of space");
	write_end = (struct pollfd){ .fd = p[1], .events = POLLOUT };
	EXPECT_VALUE(poll(&write_end, 1, 0), 0, "no POLLOUT with PIPE_BUF - 1 bytes of space");
	EXPECT_FAILURE(write(p[1], pattern, PIPE_BUF),
		       "a nonblocking write of PIPE_BUF bytes into less space fails with EAGAIN",
		       EAGAIN);
	EXPECT_VALUE(write(p[1], pattern, 10), 10, "a small write(2) fits");
	EXPECT_VALUE(read(p[0], buf, 11), 11, "read(2) of 11 bytes");
	EXPECT_VALUE(poll(&write_end, 1, 0), 1, "POLLOUT with PIPE_BUF bytes of space");
	rc = write(p[1], pattern, 3 * PIPE_BUF);
	check(rc > 0 && rc <= PIPE_BUF,
	      "a longer nonblocking write(2) may be split: it writes what fits", "got %ld %s", rc,
	      rc < 0 ? errno_name(errno) : "");
	if (rc == PIPE_BUF)
		EXPECT_FAILURE(write(p[1], pattern, 1),
			       "write(2) into a full ring fails with EAGAIN", EAGAIN);
	close(p[0]);
	close(p[1]);
	ring_unmap(&producer);

	/* Edge-triggered epoll: every write is an edge, a mapped publish too. */
	make_pipe(p);
	if (ring_map(&producer, p[1], WRITE_SIDE, 65536))
		die("ringbuffer()");
	epoll_fd = epoll_create1(0);
	epoll_ctl(epoll_fd, EPOLL_CTL_ADD, p[0], &event);
	EXPECT_VALUE(epoll_wait(epoll_fd, &out, 1, 0), 0,
		     "edge-triggered epoll: no event when empty");
	EXPECT_VALUE(write(p[1], "a", 1), 1, "write(2) of 1 byte");
	EXPECT_VALUE(epoll_wait(epoll_fd, &out, 1, 0), 1, "an event for the write(2)");
	EXPECT_VALUE(epoll_wait(epoll_fd, &out, 1, 0), 0, "only one");
	EXPECT_VALUE(write(p[1], "b", 1), 1, "a second write(2) without reading");
	EXPECT_VALUE(epoll_wait(epoll_fd, &out, 1, 0), 1, "the second write(2) is an edge too");
	EXPECT_VALUE(ring_produce(&producer, "c", 1, 1, true), 1, "a mapped publish");
	check(last_copy_woke_other_side, "the publisher made the wake-up call (epoll raised "
	      "the count)", "it did not");
	EXPECT_VALUE(epoll_wait(epoll_fd, &out, 1, 0), 1, "the mapped publish is an edge");
	ring_unmap(&producer);
}

enum poll_kind {
	POLL_READ_END,
	POLL_WRITE_END,
	POLL_READ_END_FOR_BOTH,
	EPOLL_READ_END,
	EPOLL_WRITE_END_ET,
};

static const char *const poll_kind_names[] = {
	[POLL_READ_END] = "poll(read end, POLLIN)",
	[POLL_WRITE_END] = "poll(write end, POLLOUT)",
	[POLL_READ_END_FOR_BOTH] = "poll(read end, POLLIN | POLLOUT)",
	[EPOLL_READ_END] = "epoll(read end, EPOLLIN)",
	[EPOLL_WRITE_END_ET] = "epoll(write end, EPOLLOUT | EPOLLET)",
};

static bool side_raised(atomic_u32 *count, atomic_u32 *minimum)
{
	return load_relaxed(count) >= 1 && load_relaxed(minimum) == 1;
}

/* A polled end raises the waiter count of its own side, for good. */
static void check_polled_end(enum poll_kind kind)
{
	struct epoll_event event = { 0 }, out;
	struct ring producer;
	struct pollfd pfd;
	bool read_side;
	int p[2], epoll_fd;

	make_pipe(p);
	if (ring_map(&producer, p[1], WRITE_SIDE, 65536))
		die("ringbuffer()");
	switch (kind) {
	case POLL_READ_END:
		pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
		poll(&pfd, 1, 0);
		break;
	case POLL_WRITE_END:
		pfd = (struct pollfd){ .fd = p[1], .events = POLLOUT };
		poll(&pfd, 1, 0);
		break;
	case POLL_READ_END_FOR_BOTH:
		pfd = (struct pollfd){ .fd = p[0], .events = POLLIN | POLLOUT };
		poll(&pfd, 1, 0);
		break;
	case EPOLL_READ_END:
	case EPOLL_WRITE_END_ET:
		epoll_fd = epoll_create1(0);
		event.events = kind == EPOLL_READ_END ? EPOLLIN : EPOLLOUT | EPOLLET;
		epoll_ctl(epoll_fd, EPOLL_CTL_ADD, kind == EPOLL_READ_END ? p[0] : p[1], &event);
		epoll_wait(epoll_fd, &out, 1, 0);
		close(epoll_fd);
		break;
	}
	read_side = kind != POLL_WRITE_END && kind != EPOLL_WRITE_END_ET;
	check(read_side ? side_raised(producer.read_waiters, producer.read_wait_min) :
			  side_raised(producer.write_waiters, producer.write_wait_min),
	      text("after %s the %s count is raised and its minimum 1", poll_kind_names[kind],
		   read_side ? "read_waiters" : "write_waiters"),
	      "read %u/%#x, write %u/%#x", load_relaxed(producer.read_waiters),
	      load_relaxed(producer.read_wait_min), load_relaxed(producer.write_waiters),
	      load_relaxed(producer.write_wait_min));
	if (kind == POLL_READ_END) {
		/* "for good": a sleeper that comes and goes leaves it raised. */
		pid_t reader = fork_helper();
		char byte;

		if (!reader)
			_exit(read(p[0], &byte, 1) == 1 ? 0 : 1);
		check(WAIT_UNTIL(load_relaxed(producer.read_waiters) >= 2, 10000),
		      "a blocked read(2) counts on top of the poller", "%u",
		      load_relaxed(producer.read_waiters));
		EXPECT_VALUE(write(p[1], "x", 1), 1, "write(2) of 1 byte");
		EXPECT_VALUE(wait_child(reader), 0, "the reader woke up");
		check(side_raised(producer.read_waiters, producer.read_wait_min),
		      "read_waiters stays raised and read_wait_min 1 after the sleeper left",
		      "%u/%#x", load_relaxed(producer.read_waiters),
		      load_relaxed(producer.read_wait_min));
	}
	ring_unmap(&producer);
	close(p[0]);
	close(p[1]);
}

static void test_poll_counts(void)
{
	struct ring producer;
	struct pollfd pfd;
	char path[64];
	int p[2], fifo;

	make_pipe(p);
	if (ring_map(&producer, p[1], WRITE_SIDE, 65536))
		die("ringbuffer()");
	if (!have_wait_minimum(&producer, "waiter counts raised by polling"))
		return;
	ring_unmap(&producer);
	for (int kind = POLL_READ_END; kind <= EPOLL_WRITE_END_ET; kind++)
		check_polled_end(kind);

	/* An end open for reading and writing raises both. */
	snprintf(path, sizeof(path), "/tmp/rst_client_fifo_poll.%d", getpid());
	unlink(path);
	if (mkfifo(path, 0600))
		die("mkfifo");
	fifo = open(path, O_RDWR);
	unlink(path);
	if (fifo < 0 || ring_map(&producer, fifo, WRITE_SIDE, 65536))
		die("FIFO ringbuffer()");
	pfd = (struct pollfd){ .fd = fifo, .events = POLLIN };
	poll(&pfd, 1, 0);
	check(side_raised(producer.read_waiters, producer.read_wait_min) &&
	      side_raised(producer.write_waiters, producer.write_wait_min),
	      "after a poll of a FIFO end open for reading and writing both counts are raised",
	      "read %u/%#x, write %u/%#x", load_relaxed(producer.read_waiters),
	      load_relaxed(producer.read_wait_min), load_relaxed(producer.write_waiters),
	      load_relaxed(producer.write_wait_min));
	ring_unmap(&producer);
	close(fifo);

	/* A poll of the pipe before it moved to ring mode raises both. */
	make_pipe(p);
	if (!skipped_in_forced_mode("a poll before ring mode raises both counts in the new ring")) {
		pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
		poll(&pfd, 1, 0);
		if (ring_map(&producer, p[1], WRITE_SIDE, 65536))
			die("ringbuffer()");
		check(side_raised(producer.read_waiters, producer.read_wait_min) &&
		      side_raised(producer.write_waiters, producer.write_wait_min),
		      "a poll before ring mode raises both counts in the new ring",
		      "read %u/%#x, write %u/%#x", load_relaxed(producer.read_waiters),
		      load_relaxed(producer.read_wait_min), load_relaxed(producer.write_waiters),
		      load_relaxed(producer.write_wait_min));
	}
}

static void drain_signal(const sigset_t *set)
{
	struct timespec no_wait = { 0, 0 };

	while (sigtimedwait(set, NULL, &no_wait) > 0)
		;
}

static void test_async(void)
{
	struct timespec five_seconds = { 5, 0 };
	struct ring producer, consumer;
	sigset_t sigio;
	char buf[8];
	int p[2], q[2];

	sigemptyset(&sigio);
	sigaddset(&sigio, SIGIO);
	sigprocmask(SIG_BLOCK, &sigio, NULL);
	make_pipe(p);
	if (ring_map(&producer, p[1], WRITE_SIDE, 65536) ||
	    ring_map(&consumer, p[0], READ_SIDE, 65536))
		die("ringbuffer()");
	if (!have_wait_minimum(&producer, "waiter counts raised by O_ASYNC"))
		return;
	check(load_relaxed(producer.read_waiters) == 0 && load_relaxed(producer.write_waiters) == 0,
	      "the waiter counts are 0 before O_ASYNC", "%u, %u",
	      load_relaxed(producer.read_waiters), load_relaxed(producer.write_waiters));
	fcntl(p[0], F_SETOWN, getpid());
	fcntl(p[0], F_SETFL, O_ASYNC);
	check(side_raised(producer.read_waiters, producer.read_wait_min) &&
	      side_raised(producer.write_waiters, producer.write_wait_min),
	      "O_ASYNC on the read end raises both counts, minimums 1",
	      "read %u/%#x, write %u/%#x", load_relaxed(producer.read_waiters),
	      load_relaxed(producer.read_wait_min), load_relaxed(producer.write_waiters),
	      load_relaxed(producer.write_wait_min));
	EXPECT_VALUE(ring_produce(&producer, "hello", 5, 5, true), 5, "a mapped publish");
	check(last_copy_woke_other_side, "the publish made the wake-up call", "it did not");
	EXPECT_VALUE(sigtimedwait(&sigio, NULL, &five_seconds), SIGIO,
		     "SIGIO for data a mapping published");
	fcntl(p[1], F_SETOWN, getpid());
	fcntl(p[1], F_SETFL, O_ASYNC);
	drain_signal(&sigio);
	EXPECT_VALUE(ring_consume(&consumer, buf, 5, true), 5, "a mapped consume");
	check(last_copy_woke_other_side, "the consume made the wake-up call", "it did not");
	EXPECT_VALUE(sigtimedwait(&sigio, NULL, &five_seconds), SIGIO,
		     "SIGIO for space a mapping freed");
	ring_unmap(&producer);
	ring_unmap(&consumer);

	/* O_ASYNC set before the pipe moved to ring mode. */
	make_pipe(q);
	fcntl(q[0], F_SETOWN, getpid());
	fcntl(q[0], F_SETFL, O_ASYNC);
	if (ring_map(&producer, q[1], WRITE_SIDE, 65536))
		die("ringbuffer()");
	check(side_raised(producer.read_waiters, producer.read_wait_min) &&
	      side_raised(producer.write_waiters, producer.write_wait_min),
	      "O_ASYNC set before ring mode raises both counts in the new ring",
	      "read %u/%#x, write %u/%#x", load_relaxed(producer.read_waiters),
	      load_relaxed(producer.read_wait_min), load_relaxed(producer.write_waiters),
	      load_relaxed(producer.write_wait_min));
	drain_signal(&sigio);
	EXPECT_VALUE(ring_produce(&producer, "x", 1, 1, true), 1, "a mapped publish");
	EXPECT_VALUE(sigtimedwait(&sigio, NULL, &five_seconds), SIGIO, "SIGIO for it");
}

/* Tasks blocked in read(2) and write(2) count like ringbuffer_wait() sleepers. */
static void test_legacy_sleepers(void)
{
	static char buf[65536];
	struct ring producer, consumer;
	uint32_t head_before, freed;
	pid_t child;
	int64_t start;
	long got, n;
	int p[2];

	make_pipe(p);
	if (ring_map(&producer, p[1], WRITE_SIDE, 65536) ||
	    ring_map(&consumer, p[0], READ_SIDE, 65536))
		die("ringbuffer()");
	child = fork_helper();
	if (!child)
		_exit(read(p[0], buf, 16) == 3 ? 0 : 1);
	check(WAIT_UNTIL(load_relaxed(producer.read_waiters) >= 1, 10000),
	      "a task blocked in read(2) counts in read_waiters", "%u",
	      load_relaxed(producer.read_waiters));
	if (producer.read_wait_min)
		check(load_relaxed(producer.read_wait_min) <= 1,
		      "read_wait_min is 1 for read(2), which waits for one byte", "%u",
		      load_relaxed(producer.read_wait_min));
	EXPECT_VALUE(ring_produce(&producer, "abc", 3, 3, true), 3, "a mapped publish");
	check(last_copy_woke_other_side, "the publisher made the wake-up call", "it did not");
	EXPECT_VALUE(wait_child(child), 0, "the read(2) was woken by the mapped publish");

	/* A write(2) of at most PIPE_BUF bytes waits for all of its space. */
	fill_pipe(p[1]);
	child = fork_helper();
	if (!child)
		_exit(write(p[1], pattern, 4000) == 4000 ? 0 : 1);
	check(WAIT_UNTIL(load_relaxed(producer.write_waiters) >= 1, 10000),
	      "a task blocked in a write(2) of 4000 bytes counts in write_waiters", "%u",
	      load_relaxed(producer.write_waiters));
	if (producer.write_wait_min)
		check(load_relaxed(producer.write_wait_min) <= 4000,
		      "write_wait_min is at most the 4000 bytes it waits for", "%u",
		      load_relaxed(producer.write_wait_min));
	head_before = load_relaxed(producer.head);
	for (freed = 0; freed < 3500; freed += n) {
		n = ring_consume(&consumer, buf, 500, true);
		if (n <= 0)
			break;
	}
	check(load_relaxed(producer.head) == head_before,
	      "with 3500 bytes free the write(2) of 4000 has written nothing", "head moved by %u",
	      load_relaxed(producer.head) - head_before);
	for (; freed < 4000; freed += n) {
		n = ring_consume(&consumer, buf, 500, true);
		if (n <= 0)
			break;
	}
	EXPECT_VALUE(wait_child(child), 0,
		     "the write(2) of 4000 finished once the mapped consumer freed 4000 bytes");
	check(load_relaxed(producer.head) - head_before == 4000 &&
	      !memcmp(producer.data + (head_before & producer.mask), pattern, 4000),
	      "it wrote its 4000 bytes in one piece", "head moved by %u",
	      load_relaxed(producer.head) - head_before);

	/* A longer write(2) waits for any space. */
	while (load_relaxed(producer.head) != load_relaxed(producer.tail))
		if (ring_consume(&consumer, buf, sizeof(buf), true) <= 0)
			break;
	fill_pipe(p[1]);
	child = fork_helper();
	if (!child)
		_exit(write_full(p[1], pattern, 300000) == 300000 ? 0 : 1);
	check(WAIT_UNTIL(load_relaxed(producer.write_waiters) >= 1, 10000),
	      "a task blocked in a large write(2) counts in write_waiters", "%u",
	      load_relaxed(producer.write_waiters));
	if (producer.write_wait_min)
		check(load_relaxed(producer.write_wait_min) <= producer.size,
		      "write_wait_min is at most the size for a large write(2)", "%u",
		      load_relaxed(producer.write_wait_min));
	got = 0;
	start = now_ms();
	while (got < 300000 + 65536 && now_ms() - start < 20000) {
		n = ring_consume(&consumer, buf, 1000, true);
		if (n <= 0)
			break;
		got += n;
	}
	EXPECT_VALUE(got, 300000 + 65536,
		     "a mapped consumer taking 1000 bytes at a time drains a large write(2)");
	EXPECT_VALUE(wait_child(child), 0, "the large write(2) finished");
}

/* ---------------------------------------------------------------------- */
/* Pipes: sizes, FIFOs, namespaces, splice, special pipes                  */
/* ---------------------------------------------------------------------- */

static void test_setpipe_sz(void)
{
	static char data[70003];
	uint32_t too_big = size_above_pipe_max_size();
	struct ring consumer;
	struct channel go;
	pid_t child;
	int p[2];

	make_pipe(p);
	EXPECT_VALUE(write(p[1], "abc", 3), 3, "write(2) of 3 bytes");
	if (ring_map(&consumer, p[0], READ_SIDE, 4096))
		die("ringbuffer()");
	EXPECT_FAILURE(fcntl(p[0], F_SETPIPE_SZ, 1 << 20),
		       "F_SETPIPE_SZ while the ring is mapped fails with EBUSY", EBUSY);
	channel_init(&go);
	child = fork_helper();
	if (!child) {		/* keeps the mapping it inherited */
		channel_receive(&go, 30000);
		_exit(0);
	}
	ring_unmap(&consumer);
	EXPECT_FAILURE(fcntl(p[0], F_SETPIPE_SZ, 1 << 20),
		       "F_SETPIPE_SZ while a child still maps the ring fails with EBUSY", EBUSY);
	channel_send(&go, 1);
	wait_child(child);
	EXPECT_VALUE(fcntl(p[0], F_SETPIPE_SZ, 1 << 20), 1 << 20,
		     "F_SETPIPE_SZ(1 MiB) works once every mapping is gone");
	EXPECT_VALUE(fcntl(p[0], F_GETPIPE_SZ), 1 << 20, "F_GETPIPE_SZ reports the new size");
	if (ring_map(&consumer, p[0], READ_SIDE, 4096))
		die("ringbuffer()");
	check(consumer.size == 1u << 20 &&
	      load_relaxed(consumer.head) - load_relaxed(consumer.tail) == 3 &&
	      !memcmp(consumer.data + (load_relaxed(consumer.tail) & consumer.mask), "abc", 3),
	      "a later ringbuffer() maps the new ring, with the data", "size %u", consumer.size);
	EXPECT_FAILURE(fcntl(p[1], F_SETFL, O_DIRECT),
		       "F_SETFL O_DIRECT on a pipe in ring mode fails with EINVAL", EINVAL);
	ring_unmap(&consumer);
	EXPECT_VALUE(fcntl(p[0], F_SETPIPE_SZ, 100000), 131072,
		     "F_SETPIPE_SZ(100000) rounds up to a power of two");
	if (ring_map(&consumer, p[0], READ_SIDE, 4096))
		die("ringbuffer()");
	EXPECT_VALUE(consumer.size, 131072, "the new ring has that size");
	ring_unmap(&consumer);
	EXPECT_VALUE(write_full(p[1], pattern, 70000), 70000, "queue 70000 bytes");
	EXPECT_FAILURE(fcntl(p[0], F_SETPIPE_SZ, 65536),
		       "F_SETPIPE_SZ below what is queued fails with EBUSY", EBUSY);
	EXPECT_FAILURE(fcntl(p[0], F_SETPIPE_SZ, 512 << 20),
		       "F_SETPIPE_SZ above RINGBUFFER_MAX_SIZE fails with ENOMEM", ENOMEM);
	EXPECT_VALUE(fcntl(p[0], F_GETPIPE_SZ), 131072, "the size is unchanged after the failures");
	EXPECT_VALUE(read_full(p[0], data, sizeof(data)), sizeof(data), "all the data is there");
	check(!memcmp(data, "abc", 3) && !memcmp(data + 3, pattern, 70000),
	      "the data is intact across the resizes", "it differs");

	if (!too_big) {
		skip("unprivileged F_SETPIPE_SZ above pipe-max-size fails with EPERM",
		     "pipe-max-size above RINGBUFFER_MAX_SIZE");
		return;
	}
	child = fork_helper();
	if (!child) {
		if (!become_nobody()) {
			skip("unprivileged F_SETPIPE_SZ above pipe-max-size fails with EPERM",
			     "cannot drop privileges");
			_exit(0);
		}
		EXPECT_FAILURE(fcntl(p[0], F_SETPIPE_SZ, too_big),
			       "unprivileged F_SETPIPE_SZ above pipe-max-size fails with EPERM",
			       EPERM);
		_exit(0);
	}
	wait_child(child);
}

static void test_capacity(void)
{
	struct ring consumer;
	int p[2], q[2], u[2], v[2];
	char buf[4];

	make_pipe(p);
	EXPECT_VALUE(fcntl(p[0], F_SETPIPE_SZ, 4096), 4096, "F_SETPIPE_SZ(4096)");
	if (ring_map(&consumer, p[0], READ_SIDE, 16384))
		die("ringbuffer()");
	/* Under fs.pipe-ring-force the ring exists already and is mapped as it is. */
	if (!skipped_in_forced_mode("the ring of a 4 KiB pipe asked for 16 KiB holds 16 KiB"))
		check(consumer.size >= 16384,
		      "the ring of a 4 KiB pipe asked for 16 KiB holds 16 KiB", "size %u",
		      consumer.size);
	EXPECT_VALUE(fcntl(p[0], F_GETPIPE_SZ), consumer.size,
		     "F_GETPIPE_SZ reports the ring's size");

	make_pipe(q);
	EXPECT_VALUE(fcntl(q[0], F_SETPIPE_SZ, 1 << 18), 1 << 18, "F_SETPIPE_SZ(256 KiB)");
	if (ring_map(&consumer, q[0], READ_SIDE, 1))
		die("ringbuffer()");
	check(consumer.size >= 1 << 18,
	      "size 1 on a 256 KiB pipe gives a ring of at least the capacity", "size %u",
	      consumer.size);

	make_pipe(u);
	EXPECT_VALUE(fcntl(u[0], F_SETPIPE_SZ, 4096), 4096, "F_SETPIPE_SZ(4096)");
	if (ring_map(&consumer, u[0], READ_SIDE, 1))
		die("ringbuffer()");
	check(consumer.size >= PAGE_SIZE_BYTES, "size 1 is rounded up to at least a page",
	      "size %u", consumer.size);

	/* What was queued moves into the ring, in order, a partly read buffer too. */
	make_pipe(v);
	if (write(v[1], "one ", 4) != 4 || write(v[1], "two ", 4) != 4 ||
	    read(v[0], buf, 2) != 2 || write(v[1], "three", 5) != 5)
		die("queueing");
	if (ring_map(&consumer, v[0], READ_SIDE, 4096))
		die("ringbuffer()");
	check(load_relaxed(consumer.head) - load_relaxed(consumer.tail) == 11 &&
	      !memcmp(consumer.data + (load_relaxed(consumer.tail) & consumer.mask),
		      "e two three", 11),
	      "queued buffers, one partly read, move into the ring in order", "%u bytes",
	      load_relaxed(consumer.head) - load_relaxed(consumer.tail));
}

static void test_fifo(void)
{
	struct ring consumer, producer;
	int both, reader, writer, err;
	char path[64], buf[4];

	snprintf(path, sizeof(path), "/tmp/rst_client_fifo.%d", getpid());
	unlink(path);
	if (mkfifo(path, 0600))
		die("mkfifo");
	both = open(path, O_RDWR);
	err = ring_map(&consumer, both, READ_SIDE, 4096);
	check(!err, "an O_RDWR FIFO end can map the consumer side", "%s", errno_name(-err));
	err = err ? err : ring_map(&producer, both, WRITE_SIDE, 4096);
	check(!err, "an O_RDWR FIFO end can map the producer side", "%s", errno_name(-err));
	if (err) {
		unlink(path);
		return;
	}
	reader = open(path, O_RDONLY | O_NONBLOCK);
	writer = open(path, O_WRONLY);
	close(both);
	check(load_relaxed(consumer.flags) == 0, "flags is 0 with a reader and a writer", "%#x",
	      load_relaxed(consumer.flags));
	EXPECT_VALUE(ring_produce(&producer, "ab", 2, 2, true), 2, "a mapped publish");
	close(writer);
	check(load_acquire(consumer.flags) & RINGBUFFER_EOF,
	      "RINGBUFFER_EOF when the last writer closes", "flags %#x",
	      load_relaxed(consumer.flags));
	writer = open(path, O_WRONLY | O_NONBLOCK);
	check(writer >= 0 && !(load_acquire(consumer.flags) & RINGBUFFER_EOF),
	      "RINGBUFFER_EOF clears when a new writer opens the FIFO", "flags %#x",
	      load_relaxed(consumer.flags));
	close(reader);
	check(load_acquire(consumer.flags) & RINGBUFFER_BROKEN,
	      "RINGBUFFER_BROKEN when the last reader closes", "flags %#x",
	      load_relaxed(consumer.flags));
	reader = open(path, O_RDONLY | O_NONBLOCK);
	check(!(load_acquire(consumer.flags) & RINGBUFFER_BROKEN),
	      "RINGBUFFER_BROKEN clears when a new reader opens", "flags %#x",
	      load_relaxed(consumer.flags));
	EXPECT_VALUE(read(reader, buf, sizeof(buf)), 2, "the data stayed in the ring");
	unlink(path);
}

static void test_exdev(void)
{
	struct ring producer;
	pid_t child;
	int p[2];

	make_pipe(p);
	if (ring_map(&producer, p[1], WRITE_SIDE, 4096))
		die("ringbuffer()");
	child = fork_helper();
	if (!child) {
		pid_t in_namespace;

		if (unshare(CLONE_NEWPID)) {
			skip("calls from another pid namespace", "unshare(CLONE_NEWPID) failed");
			_exit(0);
		}
		in_namespace = fork_helper();
		if (!in_namespace) {
			struct ring own;
			int q[2];
			long rc;

			EXPECT_FAILURE(ringbuffer_call(p[1], WRITE_SIDE, 4096, 0),
				       "ringbuffer() from another pid namespace fails with EXDEV",
				       EXDEV);
			EXPECT_FAILURE(sys_ringbuffer_wait(p[1], WRITE_SIDE, 0, &zero_timeout,
							   RINGBUFFER_WAIT_LOCK),
				       "RINGBUFFER_WAIT_LOCK from another pid namespace fails with "
				       "EXDEV", EXDEV);
			rc = sys_ringbuffer_wait(p[0], READ_SIDE, 0, &zero_timeout, 0);
			note("plain ringbuffer_wait() from another pid namespace: %ld %s", rc,
			     rc < 0 ? errno_name(errno) : "");
			EXPECT_VALUE(write(p[1], "n", 1), 1,
				     "write(2) from another pid namespace works");
			make_pipe(q);
			EXPECT_VALUE(ring_map(&own, q[1], WRITE_SIDE, 4096), 0,
				     "a ring created in the new namespace maps there");
			_exit(0);
		}
		_exit(wait_child(in_namespace));
	}
	EXPECT_VALUE(wait_child(child), 0, "the namespace child finished");
}

static void test_splice(void)
{
	static char buf[20000];
	char tmp_path[] = "/tmp/rst_client_spliceXXXXXX";
	struct iovec write_iov[2] = { { (void *)"ab", 2 }, { (void *)"cde", 3 } };
	char first[2], second[3];
	struct iovec read_iov[2] = { { first, 2 }, { second, 3 } };
	struct iovec vm_iov = { pattern, 5000 };
	struct ring producer, producer2;
	loff_t offset = 0;
	long done = 0, n;
	int p[2], q[2], file;

	make_pipe(p);
	make_pipe(q);
	if (ring_map(&producer, p[1], WRITE_SIDE, 65536) ||
	    ring_map(&producer2, q[1], WRITE_SIDE, 65536))
		die("ringbuffer()");
	file = mkstemp(tmp_path);
	unlink(tmp_path);
	if (write_full(file, pattern, 10000) != 10000)
		die("write file");
	while (done < 10000) {
		n = splice(file, &offset, p[1], NULL, 10000 - done, 0);
		if (n <= 0)
			break;
		done += n;
	}
	EXPECT_VALUE(done, 10000, "splice(file to ring pipe) moves 10000 bytes");
	EXPECT_VALUE(read_full(p[0], buf, 10000), 10000, "read(2) them back");
	check(!memcmp(buf, pattern, 10000), "the spliced data is intact", "it differs");
	n = vmsplice(p[1], &vm_iov, 1, 0);
	check(n > 0 && n <= 5000, "vmsplice() into a ring pipe returns what it moved",
	      "got %ld", n);
	if (n > 0) {
		EXPECT_VALUE(read_full(p[0], buf, n), n, "read(2) them back");
		check(!memcmp(buf, pattern, n), "the vmspliced data is intact", "it differs");
	}
	EXPECT_VALUE(write(p[1], pattern, 100), 100, "write(2) of 100 bytes");
	EXPECT_VALUE(tee(p[0], q[1], 100, 0), 100, "tee(ring pipe to ring pipe)");
	EXPECT_VALUE(read_full(q[0], buf, 100), 100, "read(2) the copy");
	check(!memcmp(buf, pattern, 100), "the tee'd data is intact", "it differs");
	EXPECT_VALUE(splice(p[0], NULL, q[1], NULL, 100, 0), 100, "splice(ring pipe to ring pipe)");
	EXPECT_VALUE(read_full(q[0], buf, 100), 100, "read(2) the spliced bytes");
	check(!memcmp(buf, pattern, 100), "the spliced data is intact", "it differs");
	EXPECT_VALUE(write(p[1], pattern, 300), 300, "write(2) of 300 bytes");
	offset = 0;
	EXPECT_VALUE(splice(p[0], NULL, file, &offset, 300, 0), 300, "splice(ring pipe to file)");
	EXPECT_VALUE(pread(file, buf, 300, 0), 300, "pread(2) the file");
	check(!memcmp(buf, pattern, 300), "the file has the data", "it differs");
	EXPECT_VALUE(writev(p[1], write_iov, 2), 5, "writev(2)");
	EXPECT_VALUE(readv(p[0], read_iov, 2), 5, "readv(2)");
	check(!memcmp(first, "ab", 2) && !memcmp(second, "cde", 3), "readv(2) gets the data",
	      "it differs");
	/* Calls on a side whose lock the caller holds: EDEADLK. */
	side_lock_take(&producer);
	offset = 0;
	EXPECT_FAILURE(splice(file, &offset, p[1], NULL, 10, 0),
		       "splice() into the pipe by the producer-lock holder fails with EDEADLK",
		       EDEADLK);
	side_lock_release(&producer);
}

static void test_notification(void)
{
	int p[2];

	if (pipe2(p, O_NOTIFICATION_PIPE)) {
		skip("notification pipes", "pipe2(O_NOTIFICATION_PIPE) failed");
		return;
	}
	EXPECT_FAILURE(ringbuffer_call(p[0], READ_SIDE, 4096, 0),
		       "ringbuffer() on a notification pipe fails with EOPNOTSUPP", EOPNOTSUPP);
	EXPECT_CANNOT_HAVE_RING(sys_ringbuffer_wait(p[0], READ_SIDE, 0, &zero_timeout, 0),
				"ringbuffer_wait() on a notification pipe fails (EOPNOTSUPP or "
				"no ring)");
	EXPECT_CANNOT_HAVE_RING(sys_ringbuffer_wakeup(p[1], WRITE_SIDE, 0),
				"ringbuffer_wakeup() on a notification pipe fails (EOPNOTSUPP or "
				"no ring)");
}

/* When the mapping fails, a ring the call created stays with the file. */
static void test_enomem(void)
{
	pid_t child;
	int p[2], q[2];

	make_pipe(p);
	child = fork_helper();
	if (!child) {
		unsigned long vm_kib = 0;
		struct rlimit limit;
		char line[256];
		FILE *f = fopen("/proc/self/status", "r");

		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "VmSize: %lu kB", &vm_kib) == 1)
				break;
		if (f)
			fclose(f);
		/* Room for 32 KiB more: less than any mapping of a ring. */
		limit.rlim_cur = limit.rlim_max = (vm_kib + 32) * 1024;
		if (!vm_kib || setrlimit(RLIMIT_AS, &limit))
			_exit(5);
		EXPECT_FAILURE(ringbuffer_call(p[1], WRITE_SIDE, 65536, 0),
			       "ringbuffer() without address space left fails with ENOMEM", ENOMEM);
		_exit(0);
	}
	EXPECT_VALUE(wait_child(child), 0, "the child without address space finished");
	EXPECT_FAILURE(sys_ringbuffer_wait(p[0], READ_SIDE, 0, &zero_timeout, 0),
		       "after ENOMEM the pipe has the ring the call created (ETIMEDOUT, not "
		       "EINVAL)", ETIMEDOUT);
	EXPECT_FAILURE(fcntl(p[1], F_SETFL, O_DIRECT),
		       "the pipe is in ring mode: F_SETFL O_DIRECT fails with EINVAL", EINVAL);

	make_pipe(q);
	child = fork_helper();
	if (!child) {
		struct rlimit limit = { 65536, 65536 };

		if (setrlimit(RLIMIT_MEMLOCK, &limit) || !become_nobody())
			_exit(5);
		if (mlockall(MCL_FUTURE)) {
			skip("ringbuffer() under mlockall(MCL_FUTURE) fails with EAGAIN",
			     "mlockall() failed");
			_exit(0);
		}
		EXPECT_FAILURE(ringbuffer_call(q[1], WRITE_SIDE, 65536, 0),
			       "ringbuffer() under mlockall(MCL_FUTURE) over RLIMIT_MEMLOCK fails "
			       "with EAGAIN", EAGAIN);
		_exit(0);
	}
	EXPECT_VALUE(wait_child(child), 0, "the mlockall() child finished");
	EXPECT_FAILURE(sys_ringbuffer_wait(q[0], READ_SIDE, 0, &zero_timeout, 0),
		       "after EAGAIN the pipe has the ring the call created", ETIMEDOUT);
}

/* ---------------------------------------------------------------------- */
/* Thread ids given again, areas unmapped one by one                       */
/* ---------------------------------------------------------------------- */

struct clone3_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	uint64_t set_tid, set_tid_size, cgroup;
};

/* fork(2) with a chosen pid, through clone3's set_tid; -1 and errno on failure. */
static pid_t fork_with_pid(pid_t wanted)
{
	struct clone3_args args = { 0 };
	pid_t tid[1] = { wanted }, pid;

	args.exit_signal = SIGCHLD;
	args.set_tid = (uintptr_t)tid;
	args.set_tid_size = 1;
	fflush(stdout);
	pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(60);
	}
	return pid;
}

/*
 * In a new pid namespace (so that the id can be chosen): a holder or a
 * keeper goes away holding the producer lock, and a new task gets its id.
 */
static void reuse_tid_of_gone_holder(bool keeper)
{
	const char *who = keeper ? "a keeper that exited" : "a holder that was killed";
	struct ring producer;
	struct channel up;
	pid_t gone, heir;
	int64_t start;
	int p[2];

	make_pipe(p);
	if (ring_map(&producer, p[1], WRITE_SIDE, 4096))
		die("ringbuffer()");
	if (keeper && !have_kept_locks(&producer))
		return;
	channel_init(&up);
	gone = fork_helper();
	if (!gone) {
		side_lock_take(&producer);
		publish_held(&producer, "X");
		if (keeper && sys_ringbuffer_wakeup(p[1], WRITE_SIDE, RINGBUFFER_KEEP_LOCK))
			_exit(4);
		channel_send(&up, 1);
		if (keeper)
			_exit(0);
		for (;;)
			pause();
	}
	channel_receive(&up, 10000);
	if (!keeper)
		kill(gone, SIGKILL);
	wait_child(gone);
	note("after %s (%d): producer_lock %u, producer_keeper %u", who, gone,
	     load_relaxed(producer.producer_lock),
	     producer.producer_keeper ? load_relaxed(producer.producer_keeper) : 0);
	heir = fork_with_pid(gone);
	if (heir < 0) {
		skip(text("a task given the id of %s", who), "clone3(set_tid) failed");
		return;
	}
	if (!heir) {
		uint32_t me = my_tid(), expected = 0;
		bool taken;

		if (me != (uint32_t)gone) {
			skip(text("a task given the id of %s", who), "the id was not given again");
			_exit(0);
		}
		if (load_relaxed(producer.producer_lock) == me) {
			/* It holds the lock as far as everybody else can tell ... */
			if (!keeper)
				EXPECT_FAILURE(sys_ringbuffer_wait(p[1], WRITE_SIDE, 0,
								   &zero_timeout,
								   RINGBUFFER_WAIT_LOCK),
					       "a task finding its own id in the word gets EDEADLK "
					       "from RINGBUFFER_WAIT_LOCK", EDEADLK);
			/* ... so it releases it, (5) and (3), and takes it again. */
			side_lock_release(&producer);
		}
		taken = atomic_compare_exchange_strong(producer.producer_lock, &expected, me);
		check(taken, text("a task given the id of %s releases the word and takes it", who),
		      "the word holds %u", load_relaxed(producer.producer_lock));
		if (taken)
			side_lock_release(&producer);
		_exit(0);
	}
	wait_child(heir);
	start = now_ms();
	EXPECT_VALUE(write(p[1], "Y", 1), 1,
		     text("write(2) works after the task given the id of %s let go", who));
	check(now_ms() - start < 5000, "without waiting for the 10 s limit", "%lld ms",
	      (long long)(now_ms() - start));
	ring_unmap(&producer);
	close(p[0]);
	close(p[1]);
}

static void test_tid_reuse(void)
{
	pid_t child = fork_helper();

	if (!child) {
		pid_t init;

		if (unshare(CLONE_NEWPID)) {
			skip("thread ids given again", "unshare(CLONE_NEWPID) failed");
			_exit(0);
		}
		init = fork_helper();
		if (!init) {
			reuse_tid_of_gone_holder(true);
			reuse_tid_of_gone_holder(false);
			_exit(0);
		}
		_exit(wait_child(init));
	}
	EXPECT_VALUE(wait_child(child), 0, "the namespace child finished");
}

/* munmap(2) of whole areas; F_SETPIPE_SZ works once all of them are gone. */
static void test_split(void)
{
	for (int unmap_last_first = 0; unmap_last_first <= 1; unmap_last_first++) {
		struct ring producer, again;
		struct area areas[MAPPING_PARTS];
		int p[2], n, first;
		size_t first_len;
		char buf[2];

		make_pipe(p);
		if (ring_map(&producer, p[1], WRITE_SIDE, 65536))
			die("ringbuffer()");
		n = mapping_areas(&producer, areas);
		first = unmap_last_first ? n - 1 : 0;
		first_len = areas[first].end - areas[first].start;
		EXPECT_VALUE(munmap((void *)areas[first].start, first_len), 0,
			     text("munmap() of area %d of %d works", first + 1, n));
		EXPECT_FAILURE(fcntl(p[0], F_SETPIPE_SZ, 1 << 20),
			       "F_SETPIPE_SZ fails with EBUSY while the other areas are mapped",
			       EBUSY);
		for (int i = 0; i < n; i++)
			if (i != first)
				munmap((void *)areas[i].start, areas[i].end - areas[i].start);
		EXPECT_VALUE(fcntl(p[0], F_SETPIPE_SZ, 1 << 19), 1 << 19,
			     text("F_SETPIPE_SZ works once every area is unmapped (area %d first)",
				  first + 1));
		check(ring_map(&again, p[1], WRITE_SIDE, 4096) == 0 && again.size == 1u << 19,
		      "a later ringbuffer() maps the new ring", "it does not");
		EXPECT_VALUE(write(p[1], "ab", 2), 2, "write(2) works");
		EXPECT_VALUE(read(p[0], buf, 2), 2, "read(2) works");
		ring_unmap(&again);
		close(p[0]);
		close(p[1]);
	}
}

/* ---------------------------------------------------------------------- */
/* Running the tests                                                       */
/* ---------------------------------------------------------------------- */

struct test_case {
	const char *name;
	void (*run)(void);
	unsigned int timeout_seconds;
};

static const struct test_case tests[] = {
	{ "args", test_args, 20 },
	{ "eperm", test_eperm, 20 },
	{ "map", test_map, 60 },
	{ "xfer_map_to_read", test_xfer_map_to_read, 240 },
	{ "xfer_write_to_map", test_xfer_write_to_map, 240 },
	{ "xfer_map_to_map", test_xfer_map_to_map, 240 },
	{ "multi_read", test_multi_read, 240 },
	{ "multi_mapped", test_multi_mapped, 240 },
	{ "wait_eof", test_wait_eof, 20 },
	{ "wait_futex", test_wait_futex, 60 },
	{ "wait_epipe", test_wait_epipe, 20 },
	{ "wait_misc", test_wait_misc, 20 },
	{ "wait_eintr", test_wait_eintr, 30 },
	{ "wait_min", test_wait_min, 20 },
	{ "eio", test_eio, 20 },
	{ "lock_basic", test_lock_basic, 20 },
	{ "lock_live_holder", test_lock_live_holder, 30 },
	{ "lock_consumer_nb", test_lock_consumer_nb, 20 },
	{ "lock_dead_holder", test_lock_dead_holder, 30 },
	{ "lock_bogus", test_lock_bogus, 30 },
	{ "lock_revoke", test_lock_revoke, 60 },
	{ "lock_revoke_stopped", test_lock_revoke_stopped, 60 },
	{ "lock_unvouched", test_lock_unvouched, 60 },
	{ "waitlock_holder_dies", test_waitlock_holder_dies, 30 },
	{ "lock_exec", test_lock_exec, 20 },
	{ "keep_basic", test_keep_basic, 20 },
	{ "keep_takeback_idle", test_keep_takeback_idle, 20 },
	{ "keep_takeback_busy", test_keep_takeback_busy, 30 },
	{ "keep_ebusy", test_keep_ebusy, 20 },
	{ "keep_exit", test_keep_exit, 30 },
	{ "keep_waitlock", test_keep_waitlock, 20 },
	{ "keep_sleep", test_keep_sleep, 40 },
	{ "keep_revoke_busy", test_keep_revoke_busy, 60 },
	{ "poll", test_poll, 30 },
	{ "poll_counts", test_poll_counts, 30 },
	{ "async", test_async, 20 },
	{ "legacy_sleepers", test_legacy_sleepers, 40 },
	{ "setpipe_sz", test_setpipe_sz, 30 },
	{ "capacity", test_capacity, 20 },
	{ "fifo", test_fifo, 20 },
	{ "exdev", test_exdev, 20 },
	{ "splice", test_splice, 20 },
	{ "notification", test_notification, 10 },
	{ "enomem", test_enomem, 20 },
	{ "tid_reuse", test_tid_reuse, 30 },
	{ "split", test_split, 20 },
};

#define TEST_COUNT	(sizeof(tests) / sizeof(tests[0]))

/*
 * Each test runs in a process of its own, in its own process group, under
 * alarm(): a test that hangs or crashes is reported and the others still run.
 */
static void run_test(const struct test_case *test)
{
	int64_t start = now_ms();
	int status;
	pid_t pid;

	current_test = test->name;
	printf("# %s\n", test->name);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		setpgid(0, 0);
		signal(SIGPIPE, SIG_DFL);
		alarm(test->timeout_seconds);
		test->run();
		fflush(stdout);
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	kill(-pid, SIGKILL);	/* helpers it left behind */
	if (WIFSIGNALED(status))
		check(false, "the test process finished", "killed by signal %d (%s)",
		      WTERMSIG(status), strsignal(WTERMSIG(status)));
	else if (WEXITSTATUS(status) && WEXITSTATUS(status) != EXIT_SETUP_FAILED)
		check(false, "the test process finished", "exit status %d", WEXITSTATUS(status));
	printf("# %s: %lld ms\n", test->name, (long long)(now_ms() - start));
}

static bool test_selected(const struct test_case *test, int argc, char **argv)
{
	if (argc < 2)
		return true;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], test->name))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	struct utsname system;

	for (int i = 1; i < argc; i++) {
		bool known = false;

		for (size_t t = 0; t < TEST_COUNT; t++)
			known |= !strcmp(argv[i], tests[t].name);
		if (!known) {
			fprintf(stderr, "usage: %s [test ...]\nunknown test: %s\ntests:", argv[0],
				argv[i]);
			for (size_t t = 0; t < TEST_COUNT; t++)
				fprintf(stderr, " %s", tests[t].name);
			fprintf(stderr, "\n");
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	report = mmap(NULL, sizeof(*report), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		      -1, 0);
	if (report == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	forced_ring_mode = read_ulong_file("/proc/sys/fs/pipe-ring-force") != 0;
	uname(&system);
	printf("# rst_client: kernel %s, uid %d%s\n", system.release, (int)getuid(),
	       forced_ring_mode ? ", forced ring mode (fs.pipe-ring-force)" : "");
	if (geteuid() != 0)
		printf("# not root: checks that need privileges will fail\n");
	pattern_init();
	signal(SIGPIPE, SIG_IGN);
	for (size_t t = 0; t < TEST_COUNT; t++)
		if (test_selected(&tests[t], argc, argv))
			run_test(&tests[t]);
	printf("1..%d\n", atomic_load(&report->last_number));
	printf("%d passed, %d failed\n", atomic_load(&report->passed),
	       atomic_load(&report->failed));
	return atomic_load(&report->failed) ? 1 : 0;
}
