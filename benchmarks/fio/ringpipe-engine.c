// SPDX-License-Identifier: GPL-2.0-only
/*
 * ringpipe-engine: an fio external I/O engine that moves fio's I/O through
 * a pipe, either on the pipe's shared ring (libringbuffer on both ends) or
 * with plain read(2)/write(2) on the same kind of pipe, so that job files
 * can compare the two side by side:
 *
 *	ioengine=external:benchmarks/fio/out/ringpipe-engine.so
 *	ringpipe_mode=ring		(or plain)
 *
 * At init the engine creates the pipe and forks a peer process: for
 * rw=write the peer drains what fio writes, for rw=read it produces what
 * fio reads, in blocks of the job's block size, with the same kind of
 * calls as fio's end.  fio's end is synchronous (FIO_SYNCIO); every block
 * moves whole, through as many calls as short reads and writes need.
 *
 * Teardown: cleanup closes fio's end, so the peer sees end of file (it
 * drains) or EPIPE (it produces) and exits; the engine reaps it, and
 * compares the bytes it moved with the peer's count.  If fio dies, the
 * same end of file or EPIPE ends the peer, and PR_SET_PDEATHSIG kills it
 * should it be stuck anyway.
 *
 * Built against the headers of the installed fio (see Makefile): fio
 * refuses an engine whose FIO_IOOPS_VERSION differs from its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fio.h"
#include "optgroup.h"

#include "libringbuffer.h"

#define RING_FORCE_SYSCTL	"/proc/sys/fs/pipe-ring-force"
/* The peer's wait for its own exit after fio's end is closed. */
#define PEER_EXIT_TIMEOUT_MS	10000

enum ringpipe_mode {
	RINGPIPE_RING,
	RINGPIPE_PLAIN,
};

struct ringpipe_options {
	void *pad;		/* fio takes an option at offset 0 as unset */
	unsigned int mode;
	unsigned int pipe_size;
	int peer_cpu;
	unsigned int verify;
};

static struct fio_option options[] = {
	{
		.name	= "ringpipe_mode",
		.lname	= "ringpipe mode",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct ringpipe_options, mode),
		.help	= "How both ends move data through the pipe",
		.def	= "ring",
		.posval	= {
			{ .ival = "ring", .oval = RINGPIPE_RING,
			  .help = "map the pipe's ring (libringbuffer)" },
			{ .ival = "plain", .oval = RINGPIPE_PLAIN,
			  .help = "read(2) and write(2) on the pipe" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "ringpipe_size",
		.lname	= "ringpipe pipe size",
		.type	= FIO_OPT_INT,
		.off1	= offsetof(struct ringpipe_options, pipe_size),
		.help	= "Pipe capacity and ring size in bytes (a power of two)",
		.def	= "1m",
		.minval	= 4096,
		.maxval	= 1U << 28,	/* RINGBUFFER_MAX_SIZE */
		.pow2	= 1,
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "ringpipe_peer_cpu",
		.lname	= "ringpipe peer CPU",
		.type	= FIO_OPT_INT,
		.off1	= offsetof(struct ringpipe_options, peer_cpu),
		.help	= "Pin the peer process to this CPU (-1: the job's CPUs)",
		.def	= "-1",
		.minval	= -1,
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "ringpipe_verify",
		.lname	= "ringpipe verify",
		.type	= FIO_OPT_BOOL,
		.off1	= offsetof(struct ringpipe_options, verify),
		.help	= "rw=read: check every byte read against the peer's sequence",
		.def	= "0",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= NULL,
	},
};

/* What the peer reports back, in a shared anonymous page. */
struct peer_report {
	_Atomic uint64_t bytes;
	_Atomic int error;
	_Atomic int mapped;
};

struct ringpipe {
	enum ringpipe_mode mode;
	int fio_dir;			/* DDIR_WRITE: fio writes, the peer drains */
	int fd;				/* fio's end */
	struct rb_ring *ring;		/* fio's side of the ring, ring mode */
	pid_t peer;
	int peer_pidfd;
	struct peer_report *report;
	uint64_t bytes;			/* moved by fio's end */
	int verify;
	sigset_t saved_mask;
	int mask_saved;
};

/* The stream's content when verifying: each 8-byte word is its index. */
static void fill_sequence(void *buf, size_t len, uint64_t pos)
{
	unsigned char *p = buf;

	for (size_t i = 0; i < len; i++) {
		uint64_t at = pos + i, word = at / 8;

		p[i] = (unsigned char)(word >> (8 * (at % 8)));
	}
}

static long check_sequence(const void *buf, size_t len, uint64_t pos)
{
	const unsigned char *p = buf;

	for (size_t i = 0; i < len; i++) {
		uint64_t at = pos + i, word = at / 8;

		if (p[i] != (unsigned char)(word >> (8 * (at % 8))))
			return (long)i;
	}
	return -1;
}

static ssize_t end_read(struct rb_ring *ring, int fd, void *buf, size_t len)
{
	return ring ? rb_read(ring, buf, len) : read(fd, buf, len);
}

static ssize_t end_write(struct rb_ring *ring, int fd, const void *buf, size_t len)
{
	return ring ? rb_write(ring, buf, len) : write(fd, buf, len);
}

/*
 * Move all @len bytes, however many calls short transfers take.  Returns
 * the bytes moved; on a shortfall @err holds the errno, or ENODATA for an
 * end of file in the middle of a read.
 */
static size_t move_all(struct rb_ring *ring, int fd, int dir, void *buf,
		       size_t len, int *err)
{
	size_t done = 0;

	*err = 0;
	while (done < len) {
		ssize_t n = dir == DDIR_WRITE ?
			end_write(ring, fd, (char *)buf + done, len - done) :
			end_read(ring, fd, (char *)buf + done, len - done);

		if (n > 0) {
			done += (size_t)n;
		} else if (n == 0) {
			*err = ENODATA;
			break;
		} else if (errno != EINTR) {
			*err = errno;
			break;
		}
	}
	return done;
}

static void close_other_fds(int keep)
{
	/* Other jobs' pipes (thread=1) must not stay open here: their
	 * peers would never see end of file. */
	if ((keep <= 3 || !syscall(SYS_close_range, 3, keep - 1, 0)) &&
	    !syscall(SYS_close_range, keep + 1, ~0U, 0))
		return;
	for (long fd = 3, max = sysconf(_SC_OPEN_MAX); fd < max; fd++)
		if (fd != keep)
			close((int)fd);
}

static void reset_signals(void)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	struct sigaction ign = { .sa_handler = SIG_IGN };
	sigset_t none;

	/* fio's handlers (SIGINT stops all jobs, ...) are not the peer's. */
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &dfl, NULL);
	/* EPIPE, not SIGPIPE, ends a producer whose reader has gone; an
	 * interrupt from the terminal is fio's to handle: the peer ends
	 * with fio's end of the pipe. */
	sigaction(SIGPIPE, &ign, NULL);
	sigaction(SIGINT, &ign, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

static void pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fprintf(stderr, "ringpipe: peer: cannot pin to CPU %d: %s\n",
			cpu, strerror(errno));
}

/*
 * The peer: drain (fio writes) or produce (fio reads) until fio's end
 * closes.  Runs in the forked child; reports through @report.
 */
static void __attribute__((noreturn))
peer_main(struct rb_ring *ring, int fd, int fio_dir, size_t block,
	  int verify, struct peer_report *report)
{
	unsigned char *buf = malloc(block);
	uint64_t pos = 0;
	int err = 0;

	if (!buf) {
		atomic_store_explicit(&report->error, ENOMEM, memory_order_relaxed);
		_exit(1);
	}
	memset(buf, 0x5a, block);
	for (int ended = 0; !ended;) {
		size_t n;

		if (fio_dir == DDIR_WRITE) {
			ssize_t got = end_read(ring, fd, buf, block);

			if (got == 0)
				break;		/* fio closed its end: done */
			if (got < 0) {
				if (errno == EINTR)
					continue;
				err = errno;
				break;
			}
			n = (size_t)got;
		} else {
			if (verify)
				fill_sequence(buf, block, pos);
			n = move_all(ring, fd, DDIR_WRITE, buf, block, &err);
			if (err == EPIPE) {
				err = 0;	/* fio closed its end: done */
				ended = 1;
			}
		}
		pos += n;
		/* Relaxed: the parent reads the counts only after it has
		 * reaped this process, which orders everything before. */
		atomic_store_explicit(&report->bytes, pos, memory_order_relaxed);
		if (err)
			break;
	}
	atomic_store_explicit(&report->error, err, memory_order_relaxed);
	_exit(err ? 1 : 0);
}

static int ring_force_value(void)
{
	FILE *f = fopen(RING_FORCE_SYSCTL, "re");
	int value = -1;

	if (!f)
		return -1;		/* a kernel without pipe rings */
	if (fscanf(f, "%d", &value) != 1)
		value = -1;
	fclose(f);
	return value;
}

static void ringpipe_teardown(struct thread_data *td, struct ringpipe *rp);

static int ringpipe_init(struct thread_data *td)
{
	struct ringpipe_options *o = td->eo;
	struct ringpipe *rp;
	struct rb_ring *peer_ring = NULL;
	int fds[2], fio_fd, peer_fd, force = ring_force_value();
	size_t block;
	sigset_t pipe_only;

	if (td_rw(td) || td_trim(td) || !(td_read(td) || td_write(td))) {
		log_err("ringpipe: rw must be read or write (one direction per pipe)\n");
		return 1;
	}
	if (td_random(td)) {
		log_err("ringpipe: a pipe has no offsets: use rw=read or rw=write\n");
		return 1;
	}
	if (o->verify && !td_read(td)) {
		log_err("ringpipe: ringpipe_verify checks reads; use rw=read\n");
		return 1;
	}

	rp = calloc(1, sizeof(*rp));
	if (!rp) {
		td_verror(td, ENOMEM, "calloc");
		return 1;
	}
	rp->mode = o->mode;
	rp->fio_dir = td_write(td) ? DDIR_WRITE : DDIR_READ;
	rp->verify = o->verify;
	rp->fd = -1;
	rp->peer = -1;
	rp->peer_pidfd = -1;
	td->io_ops_data = rp;

	rp->report = mmap(NULL, sizeof(*rp->report), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (rp->report == MAP_FAILED) {
		rp->report = NULL;
		td_verror(td, errno, "mmap");
		goto fail;
	}

	if (pipe2(fds, O_CLOEXEC)) {
		td_verror(td, errno, "pipe2");
		goto fail;
	}
	fio_fd = rp->fio_dir == DDIR_WRITE ? fds[1] : fds[0];
	peer_fd = rp->fio_dir == DDIR_WRITE ? fds[0] : fds[1];
	rp->fd = fio_fd;

	/* The same capacity in both modes.  A pipe already in ring mode
	 * (pipe-ring-force=1) refuses with EBUSY and keeps its ring. */
	if (fcntl(fio_fd, F_SETPIPE_SZ, (int)o->pipe_size) < 0 && errno != EBUSY) {
		log_err("ringpipe: F_SETPIPE_SZ %u: %s (see fs.pipe-max-size)\n",
			o->pipe_size, strerror(errno));
		td_verror(td, errno, "F_SETPIPE_SZ");
		close(peer_fd);
		goto fail;
	}

	if (rp->mode == RINGPIPE_RING) {
		rp->ring = rb_open(fio_fd, rp->fio_dir == DDIR_WRITE ? RB_WRITE : RB_READ,
				   o->pipe_size);
		if (rp->ring)
			peer_ring = rb_open(peer_fd, rp->fio_dir == DDIR_WRITE ?
					    RB_READ : RB_WRITE, o->pipe_size);
		if (!rp->ring || !peer_ring) {
			td_verror(td, errno, "rb_open");
			close(peer_fd);
			goto fail;
		}
		if (force >= 0 && !(rb_is_mapped(rp->ring) && rb_is_mapped(peer_ring))) {
			log_err("ringpipe: ring mode asked, but the kernel has pipe rings "
				"and the ring was not mapped (fio end %d, peer end %d)\n",
				rb_is_mapped(rp->ring), rb_is_mapped(peer_ring));
			td_verror(td, ENXIO, "rb_open");
			rb_close(peer_ring);
			close(peer_fd);
			goto fail;
		}
	}

	/* A write to a pipe whose peer died must fail this job with EPIPE,
	 * not kill fio with SIGPIPE. */
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	if (!pthread_sigmask(SIG_BLOCK, &pipe_only, &rp->saved_mask))
		rp->mask_saved = 1;

	block = td->o.max_bs[rp->fio_dir];
	rp->peer = fork();
	if (rp->peer < 0) {
		td_verror(td, errno, "fork");
		rb_close(peer_ring);
		close(peer_fd);
		goto fail;
	}
	if (rp->peer == 0) {
		pid_t fio_pid = getppid();

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != fio_pid)
			_exit(1);	/* fio died before the line above */
		reset_signals();
		rb_close(rp->ring);	/* only the peer's side here */
		close_other_fds(peer_fd);
		if (o->peer_cpu >= 0)
			pin_to_cpu(o->peer_cpu);
		atomic_store_explicit(&rp->report->mapped,
				      peer_ring && rb_is_mapped(peer_ring),
				      memory_order_relaxed);
		peer_main(peer_ring, peer_fd, rp->fio_dir, block, rp->verify,
			  rp->report);
	}
	rb_close(peer_ring);
	close(peer_fd);
	rp->peer_pidfd = (int)syscall(SYS_pidfd_open, rp->peer, 0);

	/* On stderr: a job process's log_info() text can be lost when fio
	 * writes its report to a file (--output). */
	if (rp->mode == RINGPIPE_RING)
		log_err("ringpipe: %s: mode=ring mapped=%d ring_size=%u asked=%u "
			"peer=%d pipe-ring-force=%d\n", td->o.name,
			rb_is_mapped(rp->ring), rb_size(rp->ring), o->pipe_size,
			(int)rp->peer, force);
	else	/* a pipe made in ring mode (forced) keeps its first size */
		log_err("ringpipe: %s: mode=plain mapped=0 pipe_size=%d asked=%u "
			"peer=%d pipe-ring-force=%d\n", td->o.name,
			fcntl(fio_fd, F_GETPIPE_SZ), o->pipe_size, (int)rp->peer,
			force);
	return 0;

fail:
	ringpipe_teardown(td, rp);
	td->io_ops_data = NULL;
	return 1;
}

static enum fio_q_status ringpipe_queue(struct thread_data *td, struct io_u *io_u)
{
	struct ringpipe *rp = td->io_ops_data;
	size_t len = io_u->xfer_buflen, done;
	int err;

	fio_ro_check(td, io_u);

	if (ddir_sync(io_u->ddir))
		return FIO_Q_COMPLETED;		/* a pipe has nothing to sync */
	if ((int)io_u->ddir != rp->fio_dir) {
		io_u->error = EINVAL;
		return FIO_Q_COMPLETED;
	}

	done = move_all(rp->ring, rp->fd, rp->fio_dir, io_u->xfer_buf, len, &err);
	if (rp->verify && done) {
		long bad = check_sequence(io_u->xfer_buf, done, rp->bytes);

		if (bad >= 0) {
			log_err("ringpipe: %s: wrong data at stream byte %llu\n",
				td->o.name, (unsigned long long)(rp->bytes + bad));
			err = EILSEQ;
		}
	}
	rp->bytes += done;
	if (err) {
		io_u->resid = len - done;
		io_u->error = err;
		if (err == ENODATA || err == EPIPE)
			log_err("ringpipe: %s: the peer ended the pipe early\n",
				td->o.name);
	}
	return FIO_Q_COMPLETED;
}

static int ringpipe_open_file(struct thread_data *td, struct fio_file *f)
{
	(void)td;
	(void)f;
	return 0;	/* the pipe belongs to the job, made at init */
}

static int ringpipe_close_file(struct thread_data *td, struct fio_file *f)
{
	(void)td;
	(void)f;
	return 0;
}

/* Wait for the peer's exit, which closing fio's end has asked for. */
static int reap_peer(struct ringpipe *rp, int *status)
{
	int killed = 0;

	if (rp->peer_pidfd >= 0) {
		struct pollfd p = { .fd = rp->peer_pidfd, .events = POLLIN };
		int n;

		do
			n = poll(&p, 1, PEER_EXIT_TIMEOUT_MS);
		while (n < 0 && errno == EINTR);
		if (n == 0) {
			kill(rp->peer, SIGKILL);
			killed = 1;
		}
	}
	while (waitpid(rp->peer, status, 0) < 0)
		if (errno != EINTR) {
			*status = 0;
			break;
		}
	return killed;
}

static void ringpipe_teardown(struct thread_data *td, struct ringpipe *rp)
{
	if (!rp)
		return;
	rb_close(rp->ring);
	if (rp->fd >= 0)
		close(rp->fd);
	if (rp->peer > 0) {
		int status = 0, killed = reap_peer(rp, &status);
		struct peer_report *rep = rp->report;
		uint64_t peer_bytes = atomic_load_explicit(&rep->bytes,
							   memory_order_relaxed);
		int peer_err = atomic_load_explicit(&rep->error,
						    memory_order_relaxed);

		if (killed)
			log_err("ringpipe: %s: peer %d did not exit within %d ms: killed\n",
				td->o.name, (int)rp->peer, PEER_EXIT_TIMEOUT_MS);
		else if (WIFSIGNALED(status))
			log_err("ringpipe: %s: peer %d was killed by signal %d\n",
				td->o.name, (int)rp->peer, WTERMSIG(status));
		else if (WEXITSTATUS(status) || peer_err)
			log_err("ringpipe: %s: peer %d failed: %s\n", td->o.name,
				(int)rp->peer, peer_err ? strerror(peer_err) : "exit status 1");
		/* Fio's writes all reached the peer; its reads all came from
		 * the peer, which wrote ahead of them. */
		else if (rp->fio_dir == DDIR_WRITE ? peer_bytes != rp->bytes :
						     peer_bytes < rp->bytes)
			log_err("ringpipe: %s: error: fio moved %llu bytes, the peer %llu\n",
				td->o.name, (unsigned long long)rp->bytes,
				(unsigned long long)peer_bytes);
		if (rp->mode == RINGPIPE_RING &&
		    !atomic_load_explicit(&rep->mapped, memory_order_relaxed) &&
		    ring_force_value() >= 0)
			log_err("ringpipe: %s: error: the peer's ring was not mapped\n",
				td->o.name);
	}
	if (rp->peer_pidfd >= 0)
		close(rp->peer_pidfd);
	if (rp->report)
		munmap(rp->report, sizeof(*rp->report));
	if (rp->mask_saved) {
		sigset_t pipe_only;
		struct timespec now = { 0, 0 };

		/* Drop a SIGPIPE left pending by a peer's death, so that
		 * unblocking it does not kill fio after the fact. */
		sigemptyset(&pipe_only);
		sigaddset(&pipe_only, SIGPIPE);
		while (sigtimedwait(&pipe_only, NULL, &now) == SIGPIPE)
			;
		pthread_sigmask(SIG_SETMASK, &rp->saved_mask, NULL);
	}
	free(rp);
}

static void ringpipe_cleanup(struct thread_data *td)
{
	ringpipe_teardown(td, td->io_ops_data);
	td->io_ops_data = NULL;
}

/* fio looks this symbol up by name after dlopen(). */
struct ioengine_ops ioengine = {
	.name			= "ringpipe",
	.version		= FIO_IOOPS_VERSION,
	.flags			= FIO_SYNCIO | FIO_DISKLESSIO | FIO_NOEXTEND |
				  FIO_NODISKUTIL | FIO_PIPEIO,
	.init			= ringpipe_init,
	.queue			= ringpipe_queue,
	.cleanup		= ringpipe_cleanup,
	.open_file		= ringpipe_open_file,
	.close_file		= ringpipe_close_file,
	.option_struct_size	= sizeof(struct ringpipe_options),
	.options		= options,
};
