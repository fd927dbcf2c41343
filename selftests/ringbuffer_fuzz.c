// SPDX-License-Identifier: GPL-2.0
/*
 * A deterministic fuzzer of ringbuffer(2), ringbuffer_wait(2) and
 * ringbuffer_wakeup(2), and of munmap/mprotect/mremap/madvise/msync/mlock
 * on the mappings they make.  The targets are pipes (fresh, in ring mode,
 * at end of file, broken, packet mode, notification), FIFOs opened every
 * way, the test device, regular files, a directory, /dev/null, sockets,
 * eventfds, memfds, O_PATH and epoll fds, an fd received from another
 * process, closed, negative and huge fd numbers.  Arguments are random
 * or on a boundary.
 *
 * Each call's result is checked against an oracle built from the man
 * pages: the arguments it breaks give the set of errnos it may fail with
 * (exactly one errno when it breaks one rule, success when it breaks
 * none).  After every operation on a mapping, /proc/self/maps must still
 * show the ring's areas whole, never writable where they are read-only,
 * never executable.  At the end every ring is gone again, and the
 * kmemleak scan of selftests/run must be clean.
 *
 * The seed and the number of calls are fixed (RB_SEED and RB_SCALE
 * override them) and printed with a count of every result.
 */
#include <stdarg.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "reliability.h"
#include "kselftest_harness.h"

#define FUZZ_SEED	0x5eed0f1bULL
#define FUZZ_CALLS	1500
#define NOBODY_CALLS	400
#define MAX_MAPS	24
#define CREATE_CAP	(1U << 20)	/* root creates rings of at most this */
#define WAIT_CUT_MS	10		/* a blocking wait is interrupted after */

enum kind {
	K_PIPE_R, K_PIPE_W,		/* in ring mode */
	K_FRESH_R, K_FRESH_W,		/* no ring yet */
	K_EOF_R,			/* ring mode, no writer left */
	K_BROKEN_W,			/* ring mode, no reader left */
	K_PACKET_R, K_PACKET_W,		/* O_DIRECT */
	K_NOTIF_R,			/* O_NOTIFICATION_PIPE */
	K_FIFO_R, K_FIFO_W, K_FIFO_RW,
	K_DEV_RW, K_DEV_R, K_DEV_W,
	K_PASSED_R,			/* received over SCM_RIGHTS */
	K_FILE, K_DIR, K_NULL, K_SOCKET, K_EVENTFD, K_MEMFD, K_OPATH, K_EPOLL,
	K_CLOSED, K_NEGATIVE, K_HUGE, K_FOREIGN,
	NR_KINDS
};

static const char *const kind_name[NR_KINDS] = {
	"pipe-r", "pipe-w", "fresh-r", "fresh-w", "eof-r", "broken-w",
	"packet-r", "packet-w", "notif-r", "fifo-r", "fifo-w", "fifo-rw",
	"dev-rw", "dev-r", "dev-w", "passed-r", "file", "dir", "null",
	"socket", "eventfd", "memfd", "opath", "epoll", "closed", "negative",
	"huge", "foreign",
};

/*
 * What the oracle knows about a target.  @obj names the object whose
 * rings the target shares (one pipe for both ends, one device file per
 * side), so that a ring created through one end is known at the other.
 */
struct target {
	int fd;
	enum kind kind;
	bool ring_file;		/* the file type has ring support */
	bool refuses;		/* but refuses to create one (notification, packet) */
	bool pipe_like;		/* rings at least the pipe's 64 KiB */
	bool readable, writable;
	int obj[2];		/* index into objs[], per side; -1 none */
};

struct object {
	bool has_ring;
	uint32_t size;		/* 0 while unknown */
};

struct mapping {
	char *base;
	size_t len;
	unsigned int rw;
	uint32_t size;
	bool zapped;		/* madvise took the pages: do not touch */
};

enum call {
	C_RB, C_WAIT, C_WAKE, C_MUNMAP, C_MPROTECT, C_MREMAP, C_MADVISE,
	C_MSYNC, C_MLOCK, C_STORE, C_FORK, NR_CALLS
};

static const char *const call_name[NR_CALLS] = {
	"ringbuffer", "ringbuffer_wait", "ringbuffer_wakeup", "munmap",
	"mprotect", "mremap", "madvise", "msync", "mlock", "store", "fork",
};

#define NR_ERRNO 140
struct fuzz {
	struct rng rng;
	bool nobody;
	struct target t[NR_KINDS];
	struct object objs[NR_KINDS * 2];
	int nr_objs;
	struct mapping maps[MAX_MAPS];
	int nr_maps;
	char *scratch;		/* PROT_NONE area, mremap's MREMAP_FIXED target */
	size_t scratch_len;
	uint64_t *addr_rw;	/* a zeroed __u64 in a page of its own */
	void *addr_ro;		/* readable, not writable */
	void *addr_gone;	/* unmapped */
	char fifo[64];
	pid_t passer;
	int passer_sock;	/* closing it lets the passer go */
	long max_size;		/* pipe-max-size */
	unsigned long counts[NR_CALLS][NR_ERRNO + 1];
	unsigned long calls, bad;
};

static int errno_slot(int e)
{
	return e > 0 && e < NR_ERRNO ? e : NR_ERRNO;
}

static void count(struct fuzz *f, enum call c, long ret, int err)
{
	f->counts[c][ret < 0 ? errno_slot(err) : 0]++;
	f->calls++;
}

static void report_bad(struct fuzz *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* What the fuzzer is doing, for a crash report. */
static char last_op[160];
static void note_op(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note_op(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_op, sizeof(last_op), fmt, ap);
	va_end(ap);
}

static void crash_report(int sig, siginfo_t *si, void *uc)
{
	char msg[300];
	int n;

	(void)uc;
	n = snprintf(msg, sizeof(msg), "# fuzzer got signal %d at %p during: %s\n",
		     sig, si->si_addr, last_op);
	(void)!write(1, msg, n);
	_exit(3);
}

static void report_bad(struct fuzz *f, const char *fmt, ...)
{
	va_list ap;

	if (f->bad++ < 20) {
		va_start(ap, fmt);
		printf("# UNEXPECTED (call %lu): ", f->calls);
		vprintf(fmt, ap);
		printf("\n");
		va_end(ap);
	}
}

/* The errnos a call may fail with, as a bit set. */
typedef unsigned __int128 errset;
#define E(e)	((errset)1 << (e))

static bool in_set(errset s, int e)
{
	return e > 0 && e < 128 && (s & E(e));
}

/* The names of the errnos in @s, for messages. */
static const char *set_names(errset s)
{
	static char buf[256];
	int n = 0;

	buf[0] = 0;
	for (int e = 1; e < 128 && n < (int)sizeof(buf) - 20; e++)
		if (s & E(e))
			n += snprintf(buf + n, sizeof(buf) - n, "%s%s", n ? "|" : "",
				      strerrorname_np(e));
	return n ? buf : "none (must succeed)";
}

static int new_object(struct fuzz *f)
{
	f->objs[f->nr_objs] = (struct object){ 0 };
	return f->nr_objs++;
}

static void set_target(struct fuzz *f, enum kind k, int fd, bool ring_file,
		       bool readable, bool writable, int obj_r, int obj_w)
{
	f->t[k] = (struct target){ .fd = fd, .kind = k, .ring_file = ring_file,
				   .readable = readable, .writable = writable,
				   .obj = { obj_r, obj_w } };
	f->t[k].pipe_like = k < K_DEV_RW || k == K_PASSED_R;
}

/* Give @obj a ring, as any successful ringbuffer() does. */
static int ring_up(int fd, unsigned int rw)
{
	return convert_pipe(fd, rw, 65536);
}

/* A child that sends us the read end of a pipe in ring mode, then leaves. */
static int receive_passed_fd(struct fuzz *f)
{
	int sv[2], fd = -1;
	char c = 0, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &c, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -1;
	f->passer = fork();
	if (f->passer == 0) {
		int p[2];

		close(sv[0]);
		if (pipe(p) || ring_up(p[1], RINGBUFFER_WRITE))
			_exit(1);
		/* Fd 1000 is open here and nowhere else. */
		if (dup2(p[1], 1000) != 1000)
			_exit(1);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &p[0], sizeof(int));
		/* Keep the write end until the fuzzer is done: no EOF. */
		if (sendmsg(sv[1], &msg, 0) != 1)
			_exit(2);
		(void)!read(sv[1], &c, 1);
		_exit(0);
	}
	close(sv[1]);
	if (recvmsg(sv[0], &msg, 0) == 1 && (cm = CMSG_FIRSTHDR(&msg)))
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	f->passer_sock = sv[0];
	return fd;
}

static int setup_targets(struct fuzz *f)
{
	int p[2], o, fd;
	char dir[] = "/tmp/rb-fuzz-XXXXXX";

	f->nr_objs = 0;
	if (pipe(p) || ring_up(p[0], RINGBUFFER_READ))
		return -1;
	o = new_object(f);
	f->objs[o].has_ring = true;
	set_target(f, K_PIPE_R, p[0], true, true, false, o, o);
	set_target(f, K_PIPE_W, p[1], true, false, true, o, o);

	if (pipe(p))
		return -1;
	o = new_object(f);
	if (forced_ring_mode())
		f->objs[o].has_ring = true;
	set_target(f, K_FRESH_R, p[0], true, true, false, o, o);
	set_target(f, K_FRESH_W, p[1], true, false, true, o, o);

	if (pipe(p) || ring_up(p[0], RINGBUFFER_READ))
		return -1;
	close(p[1]);
	o = new_object(f);
	f->objs[o].has_ring = true;
	set_target(f, K_EOF_R, p[0], true, true, false, o, o);

	if (pipe(p) || ring_up(p[1], RINGBUFFER_WRITE))
		return -1;
	close(p[0]);
	o = new_object(f);
	f->objs[o].has_ring = true;
	set_target(f, K_BROKEN_W, p[1], true, false, true, o, o);

	if (pipe2(p, O_DIRECT))
		return -1;
	o = new_object(f);
	set_target(f, K_PACKET_R, p[0], true, true, false, o, o);
	set_target(f, K_PACKET_W, p[1], true, false, true, o, o);
	/* A ring cannot keep packets apart: no ring for either end. */
	f->t[K_PACKET_R].refuses = true;
	f->t[K_PACKET_W].refuses = true;

	/* O_NOTIFICATION_PIPE is O_EXCL; its write end is not needed. */
	if (pipe2(p, O_EXCL))
		return -1;
	close(p[1]);
	o = new_object(f);
	set_target(f, K_NOTIF_R, p[0], true, true, false, o, o);
	f->t[K_NOTIF_R].refuses = true;

	snprintf(f->fifo, sizeof(f->fifo), "/tmp/rb-fuzz-fifo-%d", getpid());
	unlink(f->fifo);
	if (mkfifo(f->fifo, 0666))
		return -1;
	o = new_object(f);
	fd = open(f->fifo, O_RDONLY | O_NONBLOCK);
	set_target(f, K_FIFO_R, fd, true, true, false, o, o);
	fd = open(f->fifo, O_WRONLY | O_NONBLOCK);
	set_target(f, K_FIFO_W, fd, true, false, true, o, o);
	fd = open(f->fifo, O_RDWR);
	set_target(f, K_FIFO_RW, fd, true, true, true, o, o);
	if (forced_ring_mode())
		f->objs[o].has_ring = true;

	fd = open(RBTEST_DEV, O_RDWR);
	set_target(f, K_DEV_RW, fd, true, true, true, new_object(f), new_object(f));
	fd = open(RBTEST_DEV, O_RDONLY);
	set_target(f, K_DEV_R, fd, true, true, false, new_object(f), -1);
	fd = open(RBTEST_DEV, O_WRONLY);
	set_target(f, K_DEV_W, fd, true, false, true, -1, new_object(f));

	fd = receive_passed_fd(f);
	o = new_object(f);
	f->objs[o].has_ring = true;
	set_target(f, K_PASSED_R, fd, true, true, false, o, o);

	if (!mkdtemp(dir))
		return -1;
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	set_target(f, K_DIR, fd, false, true, false, -1, -1);
	rmdir(dir);
	strcpy(dir, "/tmp/rb-fuzz-XXXXXX");
	fd = mkstemp(dir);
	unlink(dir);
	set_target(f, K_FILE, fd, false, true, true, -1, -1);
	set_target(f, K_NULL, open("/dev/null", O_RDWR), false, true, true, -1, -1);
	set_target(f, K_SOCKET, socket(AF_UNIX, SOCK_STREAM, 0), false, true,
		   true, -1, -1);
	set_target(f, K_EVENTFD, eventfd(0, EFD_NONBLOCK), false, true, true,
		   -1, -1);
	set_target(f, K_MEMFD, memfd_create("rb-fuzz", 0), false, true, true,
		   -1, -1);
	/* fdget() does not see O_PATH files: EBADF, as for a closed fd. */
	set_target(f, K_OPATH, open("/tmp", O_PATH), false, false, false, -1, -1);
	set_target(f, K_EPOLL, epoll_create1(0), false, false, false, -1, -1);
	/* Closed, and high enough that no later open reuses it. */
	close(900);
	set_target(f, K_CLOSED, 900, false, false, false, -1, -1);
	set_target(f, K_NEGATIVE, -1, false, false, false, -1, -1);
	set_target(f, K_HUGE, INT32_MAX, false, false, false, -1, -1);
	/* A number that is open only in our parent's test child: not ours. */
	set_target(f, K_FOREIGN, 1000, false, false, false, -1, -1);

	for (int k = 0; k < NR_KINDS; k++)
		if (f->t[k].fd < 0 && k != K_NEGATIVE)
			return -1;
	return 0;
}

static bool fd_valid(const struct target *t)
{
	return t->kind != K_OPATH && t->kind < K_CLOSED;
}

static bool may_side(const struct target *t, unsigned int rw)
{
	return rw == RINGBUFFER_READ ? t->readable : t->writable;
}

static struct object *obj_of(struct fuzz *f, const struct target *t,
			     unsigned int rw)
{
	return rw <= 1 && t->obj[rw] >= 0 ? &f->objs[t->obj[rw]] : NULL;
}

/*
 * The address argument of ringbuffer(): what it points to decides
 * EFAULT (unreadable or unwritable, found before any ring is made) and
 * EINVAL (not zero).
 */
enum addr_kind { A_OK, A_MISALIGNED, A_NONZERO, A_NULL, A_GONE, A_RO,
		 A_KERNEL, NR_ADDR };

static uint64_t *pick_addr(struct fuzz *f, enum addr_kind a)
{
	switch (a) {
	case A_OK:
		*f->addr_rw = 0;
		return f->addr_rw;
	case A_MISALIGNED:
		memset((char *)f->addr_rw + 11, 0, sizeof(uint64_t));
		return (uint64_t *)((char *)f->addr_rw + 11);
	case A_NONZERO:
		*f->addr_rw = 0x1000;
		return f->addr_rw;
	case A_NULL:
		return NULL;
	case A_GONE:
		return f->addr_gone;
	case A_RO:
		return f->addr_ro;
	default:
		return (uint64_t *)0xffff888000000000ULL;
	}
}

static uint32_t pick_size(struct fuzz *f)
{
	static const uint32_t edges[] = {
		0, 1, 2, 3, 4095, 4096, 4097, 8192, 12288, 65536, 65535,
		1U << 20, 1U << 27, RINGBUFFER_MAX_SIZE,
		RINGBUFFER_MAX_SIZE + 1, RINGBUFFER_MAX_SIZE << 1, 1U << 31,
		UINT32_MAX, 0x80000001,
	};

	if (rng_chance(&f->rng, 60))
		return edges[rng_below(&f->rng, sizeof(edges) / sizeof(edges[0]))];
	if (rng_chance(&f->rng, 50))
		return 1U << rng_below(&f->rng, 32);
	return (uint32_t)rng_next(&f->rng);
}

static unsigned int pick_rw(struct fuzz *f)
{
	static const unsigned int odd[] = { 2, 3, UINT32_MAX, 0x80000000, 256 };

	if (rng_chance(&f->rng, 85))
		return rng_below(&f->rng, 2);
	return odd[rng_below(&f->rng, 5)];
}

static unsigned int pick_flags(struct fuzz *f, unsigned int valid)
{
	if (rng_chance(&f->rng, 80))
		return rng_chance(&f->rng, 80) ? 0 : valid;
	return rng_chance(&f->rng, 50) ? 1U << rng_below(&f->rng, 32)
				       : (uint32_t)rng_next(&f->rng);
}

/*
 * Most random calls break several rules at once; a third of them start
 * from a valid target and side instead, so that calls that succeed, and
 * calls that break exactly one rule, are common too.
 */
static struct target *pick_target(struct fuzz *f, unsigned int *rw, bool *careful)
{
	struct target *t;

	*careful = rng_chance(&f->rng, 35);
	if (!*careful) {
		*rw = pick_rw(f);
		return &f->t[rng_below(&f->rng, NR_KINDS)];
	}
	do {
		t = &f->t[rng_below(&f->rng, K_PASSED_R + 1)];
		*rw = rng_below(&f->rng, 2);
	} while (!t->ring_file || t->refuses || !may_side(t, *rw));
	return t;
}

static bool size_valid(uint32_t size)
{
	return size && !(size & (size - 1)) && size <= RINGBUFFER_MAX_SIZE;
}

/* Check the header of a fresh mapping and keep the mapping, or drop it. */
static void keep_mapping(struct fuzz *f, uint64_t addr, unsigned int rw,
			 uint32_t asked, struct object *o, bool created)
{
	const struct ringbuffer_header *h = (void *)(uintptr_t)addr;
	uint32_t size = h->size;

	if (h->magic != RINGBUFFER_MAGIC || h->version != RINGBUFFER_VERSION ||
	    !size || (size & (size - 1)) || h->mask != size - 1 ||
	    h->map_size != (uint64_t)h->offsets.data + 2ULL * size)
		report_bad(f, "bad header at %#llx", (unsigned long long)addr);
	if (created && size < asked)
		report_bad(f, "ring of %u bytes for a request of %u", size, asked);
	if (o && o->size && o->size != size)
		report_bad(f, "ring size changed from %u to %u", o->size, size);
	if (o)
		o->size = size;
	if (f->nr_maps == MAX_MAPS || rng_chance(&f->rng, 30)) {
		if (munmap((void *)(uintptr_t)addr, h->map_size))
			report_bad(f, "munmap of a whole ring: %s", strerror(errno));
		return;
	}
	f->maps[f->nr_maps++] = (struct mapping){
		(char *)(uintptr_t)addr, h->map_size, rw, size, false };
}

static void fuzz_ringbuffer(struct fuzz *f)
{
	unsigned int rw;
	bool careful, creates;
	struct target *t = pick_target(f, &rw, &careful);
	unsigned int flags = careful ? 0 : pick_flags(f, 0);
	enum addr_kind a = careful ? A_OK : rng_below(&f->rng, NR_ADDR);
	uint32_t size = careful ? 1U << (10 + rng_below(&f->rng, 11)) : pick_size(f);
	struct object *o;
	errset allowed = 0;
	uint64_t *addrp;
	long ret;
	int err;

	if (careful && rng_chance(&f->rng, 50)) {
		/* Break exactly one rule. */
		switch (rng_below(&f->rng, 6)) {
		case 0: flags = 1U << rng_below(&f->rng, 32); break;
		case 1: rw = 2 + rng_below(&f->rng, 100); break;
		case 2: size = pick_size(f) | 3; break;
		case 3: a = A_GONE + rng_below(&f->rng, 3); break;
		case 4: a = A_NONZERO; break;
		default: t = &f->t[K_CLOSED + rng_below(&f->rng, 4)]; break;
		}
	} else if (!careful && rng_chance(&f->rng, 40)) {
		a = A_OK;
	}
	o = obj_of(f, t, rw);
	if (a == A_RO && !(t->ring_file && rw <= 1 && may_side(t, rw)))
		a = A_GONE;
	creates = o && !o->has_ring;
	/* Root may create big rings; keep them small enough for the VM. */
	if (creates && !f->nobody && size_valid(size) && size > CREATE_CAP)
		size = CREATE_CAP >> rng_below(&f->rng, 9);
	addrp = pick_addr(f, a);

	if (flags || rw > 1)
		allowed |= E(EINVAL);
	if (!size_valid(size))
		allowed |= E(EINVAL);
	if (a == A_NULL || a == A_GONE || a == A_KERNEL)
		allowed |= E(EFAULT);
	if (a == A_NONZERO)
		allowed |= E(EINVAL);
	if (!fd_valid(t))
		allowed |= E(EBADF);
	else if (!t->ring_file)
		allowed |= E(EOPNOTSUPP);
	else if (rw <= 1 && !may_side(t, rw))
		allowed |= E(EBADF);
	if (!allowed && creates && t->refuses)
		allowed |= E(EOPNOTSUPP);
	/* Above pipe-max-size, counted as the kernel rounds it. */
	if (!allowed && creates && f->nobody &&
	    (size > (t->pipe_like ? 65536U : 4096U) ? size :
	     (t->pipe_like ? 65536U : 4096U)) > (unsigned long)f->max_size)
		allowed |= E(EPERM);
	/* An unwritable address fails before the file makes a ring. */
	if (a == A_RO)
		allowed |= E(EFAULT);

	errno = 0;
	ret = sys_ringbuffer(t->fd, rw, size, addrp, flags);
	err = errno;
	count(f, C_RB, ret, err);
	if (ret == 0) {
		uint64_t addr;

		memcpy(&addr, a == A_MISALIGNED ? (char *)f->addr_rw + 11 :
		       (char *)f->addr_rw, sizeof(addr));
		if (allowed)
			report_bad(f, "ringbuffer(%s, %u, %u, addr kind %d, %#x) "
				   "succeeded", kind_name[t->kind], rw, size, a, flags);
		if (o)
			o->has_ring = true;
		keep_mapping(f, addr, rw, size, o, creates);
		return;
	}
	if (!allowed ? true : !in_set(allowed, err))
		report_bad(f, "ringbuffer(%s, %u, %u, addr kind %d, %#x) = %s, "
			   "allowed %s", kind_name[t->kind], rw, size, a, flags,
			   strerror(err), set_names(allowed));
}

enum ts_kind { T_NULL, T_ZERO, T_NS, T_MS, T_HUGE, T_NEG_SEC, T_NEG_NS,
	       T_BIG_NS, T_GONE, T_KERNEL, T_MISALIGNED, NR_TS };

static void fuzz_wait(struct fuzz *f)
{
	unsigned int rw;
	bool careful;
	struct target *t = pick_target(f, &rw, &careful);
	unsigned int flags = careful ? (rng_chance(&f->rng, 30) ? RINGBUFFER_WAIT_LOCK : 0)
				     : pick_flags(f, RINGBUFFER_WAIT_LOCK);
	struct object *o = obj_of(f, t, rw);
	enum ts_kind tk = careful ? rng_below(&f->rng, T_HUGE + 1) :
				    rng_below(&f->rng, NR_TS);
	struct timespec ts[2] = { { 0, 0 } }, *tp = &ts[0];
	uint32_t min;
	errset allowed = 0;
	bool lock = flags == RINGBUFFER_WAIT_LOCK;
	long ret;
	int err;

	switch (rng_below(&f->rng, 6)) {
	case 0: min = 0; break;
	case 1: min = 1; break;
	case 2: min = o && o->size ? o->size : 4096; break;
	case 3: min = o && o->size ? o->size + 1 : 65537; break;
	case 4: min = UINT32_MAX; break;
	default: min = rng_below(&f->rng, 70000); break;
	}
	if (lock && rng_chance(&f->rng, 70))
		min = 0;
	switch (tk) {
	case T_NULL: tp = NULL; break;
	case T_ZERO: break;
	case T_NS: ts[0].tv_nsec = 1; break;
	case T_MS: ts[0].tv_nsec = 1000000; break;
	case T_HUGE: ts[0].tv_sec = INT64_MAX; ts[0].tv_nsec = 999999999; break;
	case T_NEG_SEC: ts[0].tv_sec = -1; break;
	case T_NEG_NS: ts[0].tv_nsec = -1; break;
	case T_BIG_NS: ts[0].tv_nsec = 1000000000; break;
	case T_GONE: tp = f->addr_gone; break;
	case T_KERNEL: tp = (struct timespec *)0xffff888000000000ULL; break;
	default:
		tp = (struct timespec *)((char *)f->addr_rw + 24 + 1);
		memset(tp, 0, sizeof(*tp));
		break;
	}

	if ((flags & ~RINGBUFFER_WAIT_LOCK) || rw > 1)
		allowed |= E(EINVAL);
	if ((flags & RINGBUFFER_WAIT_LOCK) && min)
		allowed |= E(EINVAL);
	if (tk == T_GONE || tk == T_KERNEL)
		allowed |= E(EFAULT);
	if (tk == T_NEG_SEC || tk == T_NEG_NS || tk == T_BIG_NS)
		allowed |= E(EINVAL);
	if (!fd_valid(t))
		allowed |= E(EBADF);
	else if (!t->ring_file)
		allowed |= E(EOPNOTSUPP);
	else if (rw <= 1 && !may_side(t, rw))
		allowed |= E(EBADF);
	else if (o && !o->has_ring)
		allowed |= E(EINVAL);
	else if (o && (!o->size || min > o->size))
		allowed |= o->size ? E(EINVAL) : 0;
	if (!allowed) {
		/* A valid wait ends one of these ways, or with data or space. */
		allowed = E(ETIMEDOUT) | E(EINTR) | E(EIO);
		if (rw == RINGBUFFER_WRITE && !lock)
			allowed |= E(EPIPE);
		if (o && !o->size)
			allowed |= E(EINVAL);	/* min above a size not known */
	} else {
		allowed |= 1;	/* marks "must fail" */
	}

	interrupt_after_ms(WAIT_CUT_MS);
	errno = 0;
	ret = sys_ringbuffer_wait(t->fd, rw, min, tp, flags);
	err = errno;
	interrupt_cancel();
	count(f, C_WAIT, ret, err);
	if (ret >= 0) {
		uint32_t size = o && o->size ? o->size : RINGBUFFER_MAX_SIZE;
		uint32_t need = min ? min : 1;

		if (allowed & 1)
			report_bad(f, "ringbuffer_wait(%s, %u, %u, ts %d, %#x) = %ld, "
				   "must fail", kind_name[t->kind], rw, min, tk, flags, ret);
		else if (ret > (long)size || (lock && ret) ||
			 (!lock && rw == RINGBUFFER_WRITE && ret < need))
			report_bad(f, "ringbuffer_wait(%s, %u, %u) = %ld, ring of %u",
				   kind_name[t->kind], rw, min, ret, size);
		return;
	}
	if (!in_set(allowed & ~(errset)1, err))
		report_bad(f, "ringbuffer_wait(%s, %u, %u, ts %d, %#x) = %s, "
			   "allowed %s", kind_name[t->kind], rw, min, tk, flags,
			   strerror(err), set_names(allowed));
}

static void fuzz_wakeup(struct fuzz *f)
{
	unsigned int rw;
	bool careful;
	struct target *t = pick_target(f, &rw, &careful);
	unsigned int flags = careful ? (rng_chance(&f->rng, 30) ? RINGBUFFER_WAKE_LOCK :
					rng_chance(&f->rng, 10) ? RINGBUFFER_KEEP_LOCK : 0)
				     : pick_flags(f, RINGBUFFER_WAKE_LOCK | RINGBUFFER_KEEP_LOCK);
	struct object *o = obj_of(f, t, rw);
	bool may_keep = false;
	errset allowed = 0;
	long ret;
	int err;

	if ((flags & ~(RINGBUFFER_WAKE_LOCK | RINGBUFFER_KEEP_LOCK)) ||
	    flags == (RINGBUFFER_WAKE_LOCK | RINGBUFFER_KEEP_LOCK) || rw > 1)
		allowed |= E(EINVAL);
	if (!fd_valid(t))
		allowed |= E(EBADF);
	else if (!t->ring_file)
		allowed |= E(EOPNOTSUPP);
	else if (rw <= 1 && !may_side(t, rw))
		allowed |= E(EBADF);
	else if (o && !o->has_ring)
		allowed |= E(EINVAL);
	/* Kept only by the holder of the word, which a scribble may make us. */
	if (!allowed && flags == RINGBUFFER_KEEP_LOCK) {
		allowed = E(EPERM) | E(EBUSY);
		may_keep = true;
	}

	errno = 0;
	ret = sys_ringbuffer_wakeup(t->fd, rw, flags);
	err = errno;
	count(f, C_WAKE, ret, err);
	if (ret == 0 ? allowed != 0 && !may_keep : !in_set(allowed, err))
		report_bad(f, "ringbuffer_wakeup(%s, %u, %#x) = %ld %s, allowed %s",
			   kind_name[t->kind], rw, flags, ret, ret ? strerror(err) : "",
			   set_names(allowed));
}

/*
 * The areas of a mapping, from /proc/self/maps: each must be one whole
 * area of the layout (header; consumer page; producer page; data, as
 * ringbuffer(2) lays them out for the side), never writable where the
 * side may not write, never executable.  Returns the bytes still mapped.
 */
static size_t check_areas(struct fuzz *f, struct mapping *m)
{
	const struct ringbuffer_header *h = (const void *)m->base;
	unsigned long lo = (unsigned long)m->base, hi = lo + m->len;
	unsigned long page = 4096, cuts[4];
	size_t mapped = 0;
	char line[512];
	FILE *maps = fopen("/proc/self/maps", "r");
	int nr_cuts;

	(void)h;
	/* Area boundaries, as page offsets of the mapping. */
	if (m->rw == RINGBUFFER_READ) {
		cuts[0] = 0; cuts[1] = 1; cuts[2] = 2; cuts[3] = m->len / page;
		nr_cuts = 4;
	} else {
		cuts[0] = 0; cuts[1] = 2; cuts[2] = m->len / page;
		nr_cuts = 3;
	}
	if (!maps)
		return m->len;
	while (fgets(line, sizeof(line), maps)) {
		unsigned long s, e, first, last;
		char perms[8];
		bool whole = false, may_write;

		if (sscanf(line, "%lx-%lx %7s", &s, &e, perms) != 3 ||
		    e <= lo || s >= hi)
			continue;
		mapped += e - s;
		first = (s - lo) / page;
		last = (e - lo) / page;
		for (int i = 0; i + 1 < nr_cuts; i++)
			if (cuts[i] == first && cuts[i + 1] == last)
				whole = true;
		/* Writable: the consumer page (READ) or producer and data (WRITE). */
		may_write = m->rw == RINGBUFFER_READ ? first == 1 : first == 2;
		if (s < lo || e > hi || !whole)
			report_bad(f, "ring area %lx-%lx split or grown (ring %lx-%lx)",
				   s, e, lo, hi);
		if ((perms[1] == 'w' && !may_write) || perms[2] == 'x')
			report_bad(f, "ring area %lx-%lx is %s", s, e, perms);
		if (perms[3] != 's')
			report_bad(f, "ring area %lx-%lx is not shared: %s", s, e, perms);
	}
	fclose(maps);
	return mapped;
}

/* Page-aligned (mostly) subrange of a mapping, sometimes on area edges. */
static void pick_range(struct fuzz *f, struct mapping *m, char **addr,
		       size_t *len)
{
	size_t pages = m->len / 4096, a, b;
	size_t edges[] = { 0, 1, 2, 3, 3 + m->size / 4096, pages };

	if (rng_chance(&f->rng, 50)) {
		a = edges[rng_below(&f->rng, 6)];
		b = edges[rng_below(&f->rng, 6)];
	} else {
		a = rng_below(&f->rng, pages + 1);
		b = rng_below(&f->rng, pages + 1);
	}
	if (a > b) {
		size_t x = a;

		a = b;
		b = x;
	}
	*addr = m->base + a * 4096;
	*len = (b - a) * 4096;
	if (rng_chance(&f->rng, 5))
		*addr += 1 + rng_below(&f->rng, 4095);
	if (rng_chance(&f->rng, 5))
		*len += 1 + rng_below(&f->rng, 4095);
}

static void drop_mapping(struct fuzz *f, int i)
{
	f->maps[i] = f->maps[--f->nr_maps];
}

static void fuzz_mapping_op(struct fuzz *f, enum call c)
{
	static const int advice[] = {
		MADV_NORMAL, MADV_RANDOM, MADV_SEQUENTIAL, MADV_WILLNEED,
		MADV_DONTNEED, MADV_FREE, MADV_REMOVE, MADV_DONTFORK,
		MADV_DOFORK, MADV_MERGEABLE, MADV_UNMERGEABLE, MADV_HUGEPAGE,
		MADV_NOHUGEPAGE, MADV_DONTDUMP, MADV_DODUMP, MADV_WIPEONFORK,
		MADV_KEEPONFORK, MADV_COLD, MADV_PAGEOUT, MADV_POPULATE_READ,
		MADV_POPULATE_WRITE, 1000,
	};
	int i = rng_below(&f->rng, f->nr_maps);
	struct mapping *m = &f->maps[i];
	errset allowed;
	char *addr;
	size_t len;
	long ret;
	int err, adv = 0, prot = 0;

	pick_range(f, m, &addr, &len);
	note_op("%s(%p, %zu) on ring %p+%zu side %u zapped %d", call_name[c], addr,
		len, m->base, m->len, m->rw, m->zapped);
	errno = 0;
	switch (c) {
	case C_MUNMAP:
		allowed = E(EINVAL);
		ret = munmap(addr, len);
		break;
	case C_MPROTECT:
		prot = rng_below(&f->rng, 8);
		allowed = E(EINVAL) | E(EACCES) | E(ENOMEM);
		ret = mprotect(addr, len, prot);
		break;
	case C_MREMAP: {
		size_t new_len = rng_chance(&f->rng, 50) ? len :
			4096 * rng_below(&f->rng, m->len / 4096 + 4);
		int fl = (int)rng_below(&f->rng, 8);	/* MAYMOVE, FIXED, DONTUNMAP */
		void *to = f->scratch + 4096 * rng_below(&f->rng, 8);

		/*
		 * MREMAP_FIXED unmaps the target range before it looks at the
		 * source: the target is always inside the scratch area, which
		 * is made whole again afterwards.
		 */
		if (new_len > f->scratch_len - 8 * 4096)
			new_len = f->scratch_len - 8 * 4096;
		allowed = E(EINVAL) | E(EFAULT) | E(ENOMEM);
		ret = (long)mremap(addr, len, new_len, fl, to);
		err = errno;
		if (ret != -1 && ((char *)ret != addr || new_len != len))
			report_bad(f, "mremap(%p, %zu, %zu, %#x) moved or resized "
				   "a ring to %#lx", addr, len, new_len, fl, ret);
		if (ret != -1)
			ret = 0;
		if (mmap(f->scratch, f->scratch_len, PROT_NONE, MAP_PRIVATE |
			 MAP_ANONYMOUS | MAP_FIXED, -1, 0) != f->scratch)
			report_bad(f, "cannot restore the scratch area");
		errno = err;
		break;
	}
	case C_MADVISE:
		adv = advice[rng_below(&f->rng, sizeof(advice) / sizeof(advice[0]))];
		/* ENODEV: MADV_REMOVE on a file that is not a regular one. */
		allowed = E(EINVAL) | E(EAGAIN) | E(ENOMEM) | E(EPERM) |
			  E(EFAULT) | E(EOPNOTSUPP) | E(EBADF) | E(EIO) |
			  E(EACCES) | E(ENODEV);
		ret = madvise(addr, len, adv);
		break;
	case C_MSYNC:
		allowed = E(EINVAL) | E(ENOMEM) | E(EBUSY);
		ret = msync(addr, len, (int[]){ MS_ASYNC, MS_SYNC, MS_INVALIDATE,
			    MS_SYNC | MS_INVALIDATE }[rng_below(&f->rng, 4)]);
		break;
	default:
		allowed = E(EINVAL) | E(ENOMEM) | E(EAGAIN) | E(EPERM);
		ret = rng_chance(&f->rng, 50) ? mlock(addr, len) : munlock(addr, len);
		break;
	}
	err = errno;
	count(f, c, ret, err);
	if (ret != 0 && !in_set(allowed, err))
		report_bad(f, "%s(%p, %zu) on a ring: %s", call_name[c], addr, len,
			   strerror(err));
	/*
	 * Pages zapped by madvise raise SIGBUS from now on; an area left out
	 * of fork or protected may not be there to read: do not touch.
	 * Like mprotect, madvise may have acted on part of the range before
	 * it failed.
	 */
	if (c == C_MADVISE && adv != MADV_NORMAL && adv != MADV_RANDOM &&
	    adv != MADV_SEQUENTIAL && adv != MADV_WILLNEED)
		m->zapped = true;
	/* A failed mprotect may have changed the areas before the one it failed on. */
	if ((c == C_MPROTECT || c == C_MLOCK) && len)
		m->zapped = true;
	if (!check_areas(f, m)) {
		drop_mapping(f, i);
		return;
	}
	/*
	 * Whole areas may be unmapped.  What is left goes too, before
	 * anything else can be mapped into the hole and be hit by a later
	 * operation on this range.
	 */
	if (c == C_MUNMAP && ret == 0 && len) {
		munmap(m->base, m->len);
		drop_mapping(f, i);
	}
}

/* A store of a random value into a word or byte this side may write. */
static void fuzz_store(struct fuzz *f)
{
	struct mapping *m = &f->maps[rng_below(&f->rng, f->nr_maps)];
	const struct ringbuffer_offsets *off;
	uint32_t v = (uint32_t)rng_next(&f->rng);

	count(f, C_STORE, 0, 0);
	if (m->zapped)
		return;
	note_op("store into ring %p+%zu side %u", m->base, m->len, m->rw);
	off = &((const struct ringbuffer_header *)m->base)->offsets;
	if (m->rw == RINGBUFFER_READ) {
		uint32_t o = rng_chance(&f->rng, 50) ? off->tail : off->consumer_lock;

		atomic_store((_Atomic uint32_t *)(m->base + o), v);
	} else if (rng_chance(&f->rng, 50)) {
		uint32_t o = rng_chance(&f->rng, 50) ? off->head : off->producer_lock;

		atomic_store((_Atomic uint32_t *)(m->base + o), v);
	} else {
		m->base[off->data + rng_below(&f->rng, 2 * m->size)] = (char)v;
	}
}

/* A child inherits every mapping: it reads the headers, writes nothing. */
static void fuzz_fork(struct fuzz *f)
{
	pid_t pid = fork();
	int res;

	if (pid == 0) {
		for (int i = 0; i < f->nr_maps; i++)
			if (!f->maps[i].zapped &&
			    ((struct ringbuffer_header *)f->maps[i].base)->magic !=
			    RINGBUFFER_MAGIC)
				_exit(1);
		_exit(0);
	}
	res = child_result(pid, 60);
	count(f, C_FORK, res ? -1 : 0, EIO);
	if (res)
		report_bad(f, "forked child saw the mappings wrong: %d", res);
}

static void fuzz_run(struct fuzz *f, unsigned long calls)
{
	for (unsigned long i = 0; i < calls; i++) {
		unsigned int r = rng_below(&f->rng, 100);

		note_op("call %lu, choice %u", i, r);
		if (f->nr_maps == 0 && r >= 60)
			r = rng_below(&f->rng, 60);
		if (r < 30)
			fuzz_ringbuffer(f);
		else if (r < 45)
			fuzz_wait(f);
		else if (r < 60)
			fuzz_wakeup(f);
		else if (r < 68)
			fuzz_mapping_op(f, C_MUNMAP);
		else if (r < 75)
			fuzz_mapping_op(f, C_MPROTECT);
		else if (r < 81)
			fuzz_mapping_op(f, C_MREMAP);
		else if (r < 87)
			fuzz_mapping_op(f, C_MADVISE);
		else if (r < 89)
			fuzz_mapping_op(f, C_MSYNC);
		else if (r < 91)
			fuzz_mapping_op(f, C_MLOCK);
		else if (r < 99)
			fuzz_store(f);
		else
			fuzz_fork(f);
		/* Now and then new fresh pipes, so that creation is fuzzed on. */
		if (i % 200 == 199) {
			int p[2];

			if (!pipe(p)) {
				int o = new_object(f);

				close(f->t[K_FRESH_R].fd);
				close(f->t[K_FRESH_W].fd);
				f->objs[o].has_ring = forced_ring_mode();
				set_target(f, K_FRESH_R, p[0], true, true, false, o, o);
				set_target(f, K_FRESH_W, p[1], true, false, true, o, o);
			}
		}
		if (f->nr_objs > NR_KINDS * 2 - 2)
			f->nr_objs = NR_KINDS * 2 - 2;	/* never reached: 2 per 200 */
	}
}

static void fuzz_summary(struct fuzz *f, uint64_t seed, const char *who)
{
	char line[1024];

	printf("# fuzz as %s: seed %#llx, %lu calls, %lu unexpected\n", who,
	       (unsigned long long)seed, f->calls, f->bad);
	for (int c = 0; c < NR_CALLS; c++) {
		int n = snprintf(line, sizeof(line), "#   %-17s", call_name[c]);

		for (int e = 0; e <= NR_ERRNO; e++) {
			if (!f->counts[c][e])
				continue;
			n += snprintf(line + n, sizeof(line) - n, " %s %lu",
				      e == 0 ? "ok" : e == NR_ERRNO ? "other" :
				      strerrorname_np(e), f->counts[c][e]);
			if (n >= (int)sizeof(line) - 40)
				break;
		}
		printf("%s\n", line);
	}
	fflush(stdout);
}

static int fuzz_setup_memory(struct fuzz *f)
{
	char *pages = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (pages == MAP_FAILED)
		return -1;
	f->addr_rw = (uint64_t *)pages;
	memset(pages, 0, 4096);
	f->addr_ro = pages + 4096;
	f->addr_gone = pages + 2 * 4096;
	if (mprotect(f->addr_ro, 4096, PROT_READ) || munmap(f->addr_gone, 4096))
		return -1;
	f->scratch_len = 2 * CREATE_CAP + 64 * 4096;
	f->scratch = mmap(NULL, f->scratch_len, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return f->scratch == MAP_FAILED ? -1 : 0;
}

static void fuzz_release(struct fuzz *f)
{
	for (int i = 0; i < f->nr_maps; i++)
		munmap(f->maps[i].base, f->maps[i].len);
	f->nr_maps = 0;
	for (int k = 0; k < NR_KINDS; k++)
		if (f->t[k].fd >= 3 && k < K_CLOSED)
			close(f->t[k].fd);
	close(f->passer_sock);
	if (f->passer > 0)
		wait_child(f->passer, 30, NULL);
	unlink(f->fifo);
}

/* The whole run in one process; returns the number of unexpected results. */
static unsigned long fuzz_process(uint64_t seed, unsigned long calls, bool nobody)
{
	struct fuzz *f = calloc(1, sizeof(*f));
	unsigned long bad;

	if (!f)
		return 1;
	{
		static char altstack[65536];
		stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
		struct sigaction sa = { .sa_sigaction = crash_report,
					.sa_flags = SA_SIGINFO | SA_ONSTACK };

		sigaltstack(&ss, NULL);

		sigaction(SIGSEGV, &sa, NULL);
		sigaction(SIGBUS, &sa, NULL);
	}
	signal(SIGPIPE, SIG_IGN);
	note_op("setup");
	f->rng.state = seed;
	f->max_size = sysctl_read(SYSCTL_MAX_SIZE);
	/* Files are opened as root (the test device is root's), used as nobody. */
	if (fuzz_setup_memory(f) || setup_targets(f)) {
		printf("# fuzz: setup failed: %s\n", strerror(errno));
		return 1;
	}
	if (nobody && become_nobody()) {
		printf("# fuzz: cannot become nobody: %s\n", strerror(errno));
		return 1;
	}
	f->nobody = nobody;
	fuzz_run(f, calls);
	fuzz_summary(f, seed, nobody ? "nobody" : "root");
	bad = f->bad;
	fuzz_release(f);
	free(f);
	return bad;
}

FIXTURE(fuzzer) {
	long live_before;
};

FIXTURE_SETUP(fuzzer)
{
	self->live_before = rb_live_rings();
	ASSERT_LE(0, self->live_before) TH_LOG("no /sys/kernel/debug/ringbuffer/live");
}

FIXTURE_TEARDOWN(fuzzer)
{
}

static unsigned long fuzz_in_child(uint64_t seed, unsigned long calls, bool nobody)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(fuzz_process(seed, calls, nobody) ? 1 : 0);
	return child_result(pid, 500);
}

TEST_F_TIMEOUT(fuzzer, as_root, 400)
{
	EXPECT_EQ(0, fuzz_in_child(rel_seed(FUZZ_SEED), rel_scale(FUZZ_CALLS), false));
	EXPECT_TRUE(rings_back_to(self->live_before, 20))
		TH_LOG("%ld rings left, %ld before", rb_live_rings(), self->live_before);
}

TEST_F_TIMEOUT(fuzzer, as_nobody, 400)
{
	EXPECT_EQ(0, fuzz_in_child(rel_seed(FUZZ_SEED + 1), rel_scale(NOBODY_CALLS),
				   true));
	EXPECT_TRUE(rings_back_to(self->live_before, 20))
		TH_LOG("%ld rings left, %ld before", rb_live_rings(), self->live_before);
}

TEST_HARNESS_MAIN
