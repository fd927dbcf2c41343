// SPDX-License-Identifier: GPL-2.0
/*
 * splice(2), tee(2), sendfile(2), copy_file_range(2) and vmsplice(2)
 * between every pair of {ring-mode pipe, plain pipe, regular file, unix
 * socket, /dev/null, /dev/zero}: with and without SPLICE_F_NONBLOCK,
 * lengths 0, 100 and 1 MiB, offsets on the file, input prefilled or at end
 * of file or empty.  Each case runs once with plain pipes and once with
 * ring-mode pipes, each in a child with a deadline, and records the result
 * (bytes or errno), what reached the output and what stayed in the input.
 * A ring pipe must give exactly what a plain pipe gives, and never hang.
 * Under sysctl fs.pipe-ring-force=1 both runs use rings: then the check is
 * that nothing hangs and no data is lost or duplicated.
 *
 * Output: one TAP line per case, then "N passed, N failed".
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ringbuffer_util.h"

#define PREFILL		5000
#define DEADLINE	10	/* seconds per call, under QEMU TCG */

enum kind { RING, PLAIN, FILE_, SOCK, DEVNULL, DEVZERO, NR_KINDS };
static const char *const kind_name[] = {
	"ring", "pipe", "file", "socket", "null", "zero",
};

enum call { SPLICE, SPLICE_OFF, TEE, SENDFILE, COPY_FILE_RANGE, VMSPLICE_TO,
	    VMSPLICE_FROM, NR_CALLS };
static const char *const call_name[] = {
	"splice", "splice+offset", "tee", "sendfile", "copy_file_range",
	"vmsplice-to-pipe", "vmsplice-from-pipe",
};

/* The input's state before the call. */
enum input { FULL, AT_EOF, EMPTY_OPEN, NR_INPUTS };
static const char *const input_name[] = { "prefilled", "at-eof", "empty" };

static const size_t lens[] = { 0, 100, 1 << 20 };

struct outcome {
	long ret;		/* bytes, or -errno; -1000 - signal; -2000 hang */
	long out_bytes;		/* what reached the output */
	uint32_t out_sum;	/* and its checksum */
	long in_left;		/* what is left in the input, -1 if unknown */
};

struct endpoint {
	enum kind kind;
	int fd;		/* the end the call uses */
	int peer;	/* the other end (pipe, socket), or -1 */
};

static uint8_t pattern[PREFILL];
static char tmpdir[] = "/tmp/rbmatrixXXXXXX";

static uint32_t sum(const uint8_t *p, size_t n, uint32_t s)
{
	for (size_t i = 0; i < n; i++)
		s = s * 31 + p[i];
	return s;
}

static int make_pipe(int fds[2], bool ring)
{
	if (pipe(fds))
		return -1;
	return ring ? convert_pipe(fds[1], RINGBUFFER_WRITE, 65536) : 0;
}

/* Set up @kind as the input of a call (@in) or its output. */
static int endpoint_open(struct endpoint *e, enum kind kind, bool in,
			 enum input state, bool ring_pipes, int n)
{
	char path[64];
	int fds[2];

	e->kind = kind;
	e->peer = -1;
	switch (kind) {
	case RING:
	case PLAIN:
		if (make_pipe(fds, kind == RING && ring_pipes))
			return -1;
		if (in) {
			if (state == FULL &&
			    write(fds[1], pattern, PREFILL) != PREFILL)
				return -1;
			e->fd = fds[0];
			e->peer = fds[1];
			if (state != EMPTY_OPEN) {
				close(fds[1]);
				e->peer = -1;
			}
		} else {
			e->fd = fds[1];
			e->peer = fds[0];
		}
		return 0;
	case FILE_:
		snprintf(path, sizeof(path), "%s/f%d-%d", tmpdir, n, in);
		e->fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (e->fd < 0)
			return -1;
		unlink(path);
		if (in && state == FULL) {
			if (write(e->fd, pattern, PREFILL) != PREFILL)
				return -1;
			lseek(e->fd, 0, SEEK_SET);
		}
		return 0;
	case SOCK:
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds))
			return -1;
		e->fd = fds[0];
		e->peer = fds[1];
		if (in && state == FULL &&
		    write(fds[1], pattern, PREFILL) != PREFILL)
			return -1;
		if (in && state == AT_EOF)
			shutdown(fds[1], SHUT_WR);
		return 0;
	case DEVNULL:
		e->fd = open("/dev/null", O_RDWR);
		return e->fd < 0 ? -1 : 0;
	case DEVZERO:
		e->fd = open("/dev/zero", O_RDWR);
		return e->fd < 0 ? -1 : 0;
	default:
		return -1;
	}
}

/* What reached output @e: drain it without blocking. */
static void drain_output(struct endpoint *e, struct outcome *o)
{
	static uint8_t buf[1 << 16];
	int fd = -1;
	ssize_t n;

	o->out_bytes = 0;
	o->out_sum = 0;
	switch (e->kind) {
	case RING:
	case PLAIN:
	case SOCK:
		fd = e->peer;
		fcntl(fd, F_SETFL, O_NONBLOCK);
		break;
	case FILE_:
		fd = e->fd;
		lseek(fd, 0, SEEK_SET);
		break;
	default:
		return;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		o->out_bytes += n;
		o->out_sum = sum(buf, n, o->out_sum);
	}
}

static long input_left(struct endpoint *e)
{
	int avail = -1;

	switch (e->kind) {
	case RING:
	case PLAIN:
	case SOCK:
		if (ioctl(e->fd, FIONREAD, &avail))
			return -1;
		return avail;
	case FILE_:
		return PREFILL - lseek(e->fd, 0, SEEK_CUR);
	default:
		return -1;
	}
}

static long do_call(enum call call, struct endpoint *in, struct endpoint *out,
		    size_t len, unsigned int flags)
{
	static uint8_t ubuf[1 << 20];
	loff_t off_in = 7, off_out = 3;
	long ret = -1;

	switch (call) {
	case SPLICE:
		ret = splice(in->fd, NULL, out->fd, NULL, len, flags);
		break;
	case SPLICE_OFF:
		ret = splice(in->fd, in->kind == FILE_ ? &off_in : NULL,
			     out->fd, out->kind == FILE_ ? &off_out : NULL,
			     len, flags);
		break;
	case TEE:
		ret = tee(in->fd, out->fd, len, flags);
		break;
	case SENDFILE:
		ret = sendfile(out->fd, in->fd, NULL, len);
		break;
	case COPY_FILE_RANGE:
		ret = copy_file_range(in->fd, NULL, out->fd, NULL, len, 0);
		break;
	case VMSPLICE_TO: {
		struct iovec iov = { ubuf, len };

		memset(ubuf, 0x5a, len);
		ret = vmsplice(out->fd, &iov, 1, flags);
		break;
	}
	case VMSPLICE_FROM: {
		struct iovec iov = { ubuf, len };

		ret = vmsplice(in->fd, &iov, 1, flags);
		if (ret > 0 && out->kind != DEVNULL && out->kind != DEVZERO &&
		    write(out->fd, ubuf, ret) != ret)
			ret = -1;
		break;
	}
	default:
		break;
	}
	return ret < 0 ? -errno : ret;
}

/* Run one case in a child; the outcome comes back through @shared. */
static void run_case(enum call call, enum kind ki, enum kind ko, enum input st,
		     size_t len, unsigned int flags, bool ring, int n,
		     struct outcome *shared)
{
	int status;
	pid_t pid;

	memset(shared, 0, sizeof(*shared));
	pid = fork();
	if (pid == 0) {
		struct endpoint in, out;

		signal(SIGPIPE, SIG_IGN);
		alarm(DEADLINE);
		if (endpoint_open(&in, ki, true, st, ring, n) ||
		    endpoint_open(&out, ko, false, st, ring, n))
			_exit(3);
		shared->ret = do_call(call, &in, &out, len, flags);
		drain_output(&out, shared);
		shared->in_left = input_left(&in);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		shared->ret = -3000;
		return;
	}
	if (WIFSIGNALED(status))
		shared->ret = WTERMSIG(status) == SIGALRM ? -2000 :
			      -1000 - WTERMSIG(status);
	else if (WEXITSTATUS(status))
		shared->ret = -4000 - WEXITSTATUS(status);
}

static bool call_applies(enum call call, enum kind ki, enum kind ko)
{
	bool pi = ki == RING || ki == PLAIN, po = ko == RING || ko == PLAIN;

	switch (call) {
	case VMSPLICE_TO:
		return ki == PLAIN && po;	/* the input does not matter */
	case VMSPLICE_FROM:
		return pi && (ko == PLAIN || ko == DEVNULL);
	case TEE:
		return pi || po;
	case SPLICE_OFF:
		return ki == FILE_ || ko == FILE_;
	default:
		return true;
	}
}

/*
 * What must hold whatever the kernel: bytes returned are bytes that
 * arrived, and taken from a consuming input exactly once.
 */
static bool consistent(enum call call, enum kind ki, enum kind ko,
		       enum input st, const struct outcome *o)
{
	bool drainable = ko == RING || ko == PLAIN || ko == SOCK || ko == FILE_;
	bool countable = ki == RING || ki == PLAIN || ki == SOCK || ki == FILE_;
	long taken;

	if (o->ret < 0)
		return o->ret > -1000;
	if (drainable && call != VMSPLICE_TO && !(call == SPLICE_OFF && ko == FILE_) &&
	    ki != DEVNULL && o->out_bytes != o->ret)
		return false;
	if (call == VMSPLICE_TO || !countable || st != FULL)
		return true;
	taken = call == TEE || (call == SPLICE_OFF && ki == FILE_) ? 0 : o->ret;
	return o->in_left == PREFILL - taken;
}

static void describe(char *buf, size_t size, const struct outcome *o)
{
	if (o->ret == -2000)
		snprintf(buf, size, "HANG");
	else if (o->ret <= -1000)
		snprintf(buf, size, "child failed (%ld)", o->ret);
	else if (o->ret < 0)
		snprintf(buf, size, "%s, out %ld, left %ld", strerror(-o->ret),
			 o->out_bytes, o->in_left);
	else
		snprintf(buf, size, "%ld, out %ld (%08x), left %ld", o->ret,
			 o->out_bytes, o->out_sum, o->in_left);
}

int main(void)
{
	struct outcome *res = mmap(NULL, 2 * sizeof(*res), PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	bool forced = forced_ring_mode();
	int pass = 0, fail = 0, n = 0;

	if (res == MAP_FAILED || !mkdtemp(tmpdir)) {
		printf("Bail out! setup: %s\n", strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 7 + 1);
	printf("TAP version 13\n# forced ring mode: %s\n", forced ? "yes" : "no");
	for (int call = 0; call < NR_CALLS; call++)
	for (int ki = 0; ki < NR_KINDS; ki++)
	for (int ko = 0; ko < NR_KINDS; ko++) {
		if (!call_applies(call, ki, ko))
			continue;
		for (int st = 0; st < NR_INPUTS; st++)
		for (int l = 0; l < 3; l++)
		for (int nb = 0; nb < 2; nb++) {
			unsigned int flags = nb ? SPLICE_F_NONBLOCK : 0;
			bool pipe_in = ki == RING || ki == PLAIN || ki == SOCK;
			char a[160], b[160];
			bool ok;

			bool has_flags = call != SENDFILE && call != COPY_FILE_RANGE;

			/* An empty input with a writer blocks by design. */
			if (st == EMPTY_OPEN && (!nb || !pipe_in || !has_flags))
				continue;
			if (nb && !has_flags)
				continue;
			/* So does an endless input into a socket nobody reads. */
			if (ki == DEVZERO && ko == SOCK && lens[l] > PREFILL)
				continue;
			if (st != FULL && !pipe_in && ki != FILE_)
				continue;
			n++;
			run_case(call, ki, ko, st, lens[l], flags, false, n, &res[0]);
			run_case(call, ki, ko, st, lens[l], flags, true, n, &res[1]);
			describe(a, sizeof(a), &res[0]);
			describe(b, sizeof(b), &res[1]);
			ok = res[1].ret != -2000 && res[1].ret > -1000 &&
			     consistent(call, ki, ko, st, &res[1]);
			/*
			 * How much of a long vmsplice fits depends on how
			 * the user pages fall into pipe buffers; a ring fits
			 * its size.  Both are partial counts of vmsplice(2).
			 */
			if (call == VMSPLICE_TO && res[0].ret > 0 && res[1].ret > 0)
				ok = ok && res[1].ret <= 65536 &&
				     res[0].in_left == res[1].in_left;
			else
				ok = ok && !memcmp(&res[0], &res[1], sizeof(res[0]));
			printf("%s %d %s %s->%s %s len=%zu%s\n", ok ? "ok" : "not ok",
			       n, call_name[call], kind_name[ki], kind_name[ko],
			       input_name[st], lens[l], nb ? " nonblock" : "");
			if (!ok)
				printf("#   plain pipes: %s\n#   ring pipes:  %s\n", a, b);
			ok ? pass++ : fail++;
		}
	}
	printf("1..%d\n", n);
	rmdir(tmpdir);
	printf("%d passed, %d failed\n", pass, fail);
	return fail ? 1 : 0;
}
