// SPDX-License-Identifier: GPL-2.0
/*
 * Death in the middle.  Ring writers and readers of a pipe are killed
 * with SIGKILL at seeded points of the protocol: before taking the side
 * lock, holding it, with a record half copied, after publishing but
 * before unlocking, after unlocking, asleep in ringbuffer_wait(2) for
 * space or data, asleep waiting for the lock, and asleep in a legacy
 * read(2) or write(2).  The survivors must see every published record
 * whole and nothing of the rest, find the lock free again, and keep
 * using the pipe, to the end of file.
 *
 * Then under load: steady ring and legacy writers and readers, while
 * ring writers and readers come and go, each killed once it has done a
 * seeded number of records.  No record is torn, duplicated or reordered;
 * a record is missing only if a reader died holding it; every writer's
 * published records arrive.
 *
 * Records are those of userspace/tests/shim_util.h: a writer id and a
 * sequence number, then bytes that depend on both.
 */
#include "reliability.h"
#include "kselftest_harness.h"

#define RING_SIZE	65536
#define DEATH_SEED	0xdea7ULL
#define KILL_ROUNDS	40		/* per side */
#define SURVIVOR_ID	99
#define NR_RINGBUFFER_WAIT 464		/* __NR_ringbuffer_wait on x86-64 and others */

static const size_t rec_sizes[] = { 16, 64, 100, 512, 4096 };

enum phase {
	BEFORE_LOCK,		/* self-kill, lock not taken */
	HOLDING_LOCK,		/* self-kill, lock taken */
	MID_COPY,		/* self-kill, half a record copied, not published */
	PUBLISHED_LOCKED,	/* self-kill, published, lock still held */
	AFTER_UNLOCK,		/* self-kill, published and unlocked */
	ASLEEP_RING,		/* killed asleep in ringbuffer_wait(2) */
	ASLEEP_LOCK,		/* killed asleep waiting for the lock */
	ASLEEP_LEGACY,		/* killed asleep in read(2)/write(2): full or empty */
	ASLEEP_LEGACY_LOCK,	/* killed asleep in read(2)/write(2) for the lock */
	NR_PHASES
};

static const char *const phase_name[NR_PHASES] = {
	"before-lock", "holding-lock", "mid-copy", "published-locked",
	"after-unlock", "asleep-ringbuffer_wait", "asleep-wait-lock",
	"asleep-legacy", "asleep-legacy-lock",
};

static uint32_t gettid32(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

/* The victim tells the parent where it is: before sleeping, or ready. */
static void tell(int fd)
{
	if (write(fd, "!", 1) != 1)
		_exit(90);
}

static bool hear(int fd, unsigned int secs)
{
	char c;
	ssize_t n;

	interrupt_after_ms(secs * 1000);
	n = read(fd, &c, 1);
	interrupt_cancel();
	return n == 1;
}

struct round {
	enum phase phase;
	unsigned int k;		/* records before the kill point */
	size_t size;
	bool ring_survivor;	/* the survivor uses the ring, not read/write */
};

static struct round pick_round(struct rng *rng)
{
	struct round r;

	r.phase = rng_below(rng, NR_PHASES);
	r.k = rng_below(rng, 12);
	r.size = rec_sizes[rng_below(rng, sizeof(rec_sizes) / sizeof(rec_sizes[0]))];
	r.ring_survivor = rng_chance(rng, 50);
	return r;
}

/* Publish one record through the ring, by the protocol, under the lock. */
static void ring_put(struct rb_view *v, const uint8_t *rec, size_t size)
{
	if (rb_pipe_write(v, rec, size) != (long)size)
		_exit(91);
}

/*
 * The writer victim: k whole records, then the phase.  The parent holds
 * the producer lock for the two lock phases once told we are ready.
 */
static void writer_victim(int wr, const struct round *r, int tellfd, int gofd)
{
	static uint8_t rec[4096];
	struct rb_view v;
	uint32_t head, tail, free_word = 0;
	unsigned int seq = 0;

	if (rb_view_map(&v, wr, RINGBUFFER_WRITE, RING_SIZE))
		_exit(92);
	for (; seq < r->k; seq++) {
		record_fill(rec, r->size, 1, seq);
		ring_put(&v, rec, r->size);
	}
	record_fill(rec, r->size, 1, seq);
	switch (r->phase) {
	case BEFORE_LOCK:
		break;
	case HOLDING_LOCK:
	case MID_COPY:
	case PUBLISHED_LOCKED:
		/* Acquire: pairs with the last holder's release. */
		while (!atomic_compare_exchange_weak_explicit(v.producer_lock,
				&free_word, gettid32(), memory_order_acquire,
				memory_order_relaxed))
			free_word = 0;
		if (r->phase == HOLDING_LOCK)
			break;
		head = atomic_load_explicit(v.head, memory_order_relaxed);
		/* Acquire: the consumer is done with the space below tail. */
		tail = atomic_load_explicit(v.tail, memory_order_acquire);
		if (v.size - (head - tail) < r->size)
			_exit(93);
		memcpy(v.data + (head & v.mask), rec,
		       r->phase == MID_COPY ? r->size / 2 : r->size);
		if (r->phase == PUBLISHED_LOCKED)
			/* Release: the record is there before head says so. */
			atomic_store_explicit(v.head, head + r->size, memory_order_release);
		break;
	case AFTER_UNLOCK:
		ring_put(&v, rec, r->size);
		break;
	case ASLEEP_RING:
		/* Fill the ring, then sleep for room for one more. */
		for (;; seq++) {
			head = atomic_load_explicit(v.head, memory_order_relaxed);
			tail = atomic_load_explicit(v.tail, memory_order_acquire);
			if (v.size - (head - tail) < r->size)
				break;
			record_fill(rec, r->size, 1, seq);
			ring_put(&v, rec, r->size);
		}
		tell(tellfd);
		sys_ringbuffer_wait(wr, RINGBUFFER_WRITE, r->size, NULL, 0);
		_exit(94);
	case ASLEEP_LOCK:
		tell(tellfd);
		if (!hear(gofd, 60))
			_exit(95);
		rb_side_lock(&v);
		_exit(96);
	case ASLEEP_LEGACY:
		for (;; seq++) {
			head = atomic_load_explicit(v.head, memory_order_relaxed);
			tail = atomic_load_explicit(v.tail, memory_order_acquire);
			if (v.size - (head - tail) < r->size)
				break;
			record_fill(rec, r->size, 1, seq);
			ring_put(&v, rec, r->size);
		}
		record_fill(rec, r->size, 1, seq);
		tell(tellfd);
		(void)!write(wr, rec, r->size);
		_exit(97);
	default:
		tell(tellfd);
		if (!hear(gofd, 60))
			_exit(95);
		(void)!write(wr, rec, r->size);
		_exit(98);
	}
	kill(getpid(), SIGKILL);
	_exit(99);
}

/* The reader victim: k records, then the phase. */
static void reader_victim(int rd, const struct round *r, int tellfd, int gofd)
{
	static uint8_t buf[4096];
	struct record_hdr h;
	struct rb_view v;
	uint32_t head, tail;

	if (rb_view_map(&v, rd, RINGBUFFER_READ, RING_SIZE))
		_exit(92);
	for (unsigned int seq = 0; seq < r->k; seq++) {
		if (rb_pipe_read(&v, buf, r->size) != (long)r->size ||
		    !record_ok(buf, r->size, &h) || h.seq != seq)
			_exit(93);
	}
	switch (r->phase) {
	case BEFORE_LOCK:
		break;
	case HOLDING_LOCK:
	case MID_COPY:
	case PUBLISHED_LOCKED:
		if (rb_side_lock(&v))
			_exit(94);
		if (r->phase == HOLDING_LOCK)
			break;
		tail = atomic_load_explicit(v.tail, memory_order_relaxed);
		/* Acquire: the record is there once head says so. */
		head = atomic_load_explicit(v.head, memory_order_acquire);
		if (head - tail < r->size)
			_exit(95);
		memcpy(buf, v.data + (tail & v.mask), r->size);
		if (r->phase == PUBLISHED_LOCKED)
			/* Release: done reading before the space goes back. */
			atomic_store_explicit(v.tail, tail + r->size, memory_order_release);
		break;
	case AFTER_UNLOCK:
		if (rb_pipe_read(&v, buf, r->size) != (long)r->size)
			_exit(96);
		break;
	case ASLEEP_RING:
		tell(tellfd);
		sys_ringbuffer_wait(rd, RINGBUFFER_READ, r->size, NULL, 0);
		_exit(97);
	case ASLEEP_LOCK:
		tell(tellfd);
		if (!hear(gofd, 60))
			_exit(98);
		rb_side_lock(&v);
		_exit(97);
	case ASLEEP_LEGACY:
		tell(tellfd);
		(void)!read(rd, buf, r->size);
		_exit(97);
	default:
		tell(tellfd);
		if (!hear(gofd, 60))
			_exit(98);
		(void)!read(rd, buf, r->size);
		_exit(97);
	}
	kill(getpid(), SIGKILL);
	_exit(99);
}

/* The records the survivor must find after a writer died. */
static unsigned int writer_expected(const struct round *r)
{
	switch (r->phase) {
	case PUBLISHED_LOCKED:
	case AFTER_UNLOCK:
		return r->k + 1;
	case ASLEEP_RING:
	case ASLEEP_LEGACY:
		return RING_SIZE / r->size;
	default:
		return r->k;
	}
}

/* Read one record of @size, through the ring or read(2); -1 at EOF. */
static int survivor_read(int rd, struct rb_view *v, bool ring, uint8_t *buf,
			 size_t size)
{
	long n;

	interrupt_after_ms(30000);
	n = ring ? rb_pipe_read(v, buf, size) : read(rd, buf, size);
	interrupt_cancel();
	if (n == 0)
		return -1;
	return n == (long)size ? 0 : -2;
}

/*
 * Waiters of a side are counted in the header; a task killed asleep must
 * not stay counted.  The counts fall back to 0 once it has exited.
 */
static bool waiters_gone(struct rb_view *v)
{
	return !atomic_load(v->read_waiters) && !atomic_load(v->write_waiters) &&
	       !atomic_load(v->producer_lock_waiters) &&
	       !atomic_load(v->consumer_lock_waiters);
}

/* After the victim: read what must be there, write and read one more, EOF. */
static int survivor(int rd, int wr, struct rb_view *rv, struct rb_view *wv,
		    const struct round *r, unsigned int first, unsigned int expected,
		    unsigned int writer)
{
	static uint8_t buf[4096];
	struct record_hdr h;
	int avail = -1;

	for (unsigned int seq = first; seq < expected; seq++) {
		if (survivor_read(rd, rv, r->ring_survivor, buf, r->size))
			return 1;
		if (!record_ok(buf, r->size, &h) || h.writer != writer || h.seq != seq)
			return 2;
	}
	if (ioctl(rd, FIONREAD, &avail) || avail)
		return 3;	/* something half made became visible */
	record_fill(buf, r->size, SURVIVOR_ID, 0);
	interrupt_after_ms(30000);
	if ((r->ring_survivor ? rb_pipe_write(wv, buf, r->size) :
	     write(wr, buf, r->size)) != (long)r->size) {
		interrupt_cancel();
		return 4;	/* the dead holder's lock was not reclaimed */
	}
	interrupt_cancel();
	memset(buf, 0, r->size);
	if (survivor_read(rd, rv, r->ring_survivor, buf, r->size) ||
	    !record_ok(buf, r->size, &h) || h.writer != SURVIVOR_ID)
		return 5;
	if (!waiters_gone(rv))
		return 6;
	return 0;
}

/* Wait until the victim sleeps where its phase says, then kill it. */
static int kill_when_asleep(pid_t pid, const struct round *r, bool legacy_read)
{
	long nr = r->phase == ASLEEP_RING || r->phase == ASLEEP_LOCK ?
		  NR_RINGBUFFER_WAIT : legacy_read ? 0 : 1;
	const char *wchan = r->phase == ASLEEP_LOCK || r->phase == ASLEEP_LEGACY_LOCK ?
			    "rb_wait_lock" : NULL;
	bool asleep = task_asleep_in(pid, wchan, nr, 30);
	char state = task_state(pid);

	kill(pid, SIGKILL);
	if (!asleep)
		return 1;
	/* Never uninterruptible; it may be awake between two looks at a lock. */
	return state == 'D' ? 2 : 0;
}

struct death_stats {
	unsigned long rounds[NR_PHASES];
	unsigned long records, bytes;
};

static void print_stats(const char *who, uint64_t seed, const struct death_stats *s)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "# %s killed, seed %#llx:", who,
			 (unsigned long long)seed);

	for (int p = 0; p < NR_PHASES; p++)
		n += snprintf(line + n, sizeof(line) - n, " %s %lu", phase_name[p],
			      s->rounds[p]);
	printf("%s; survivors checked %lu records, %lu bytes\n", line, s->records,
	       s->bytes);
	fflush(stdout);
}


/* Take the side lock of @v as the parent, by the protocol. */
static void parent_lock(struct rb_view *v)
{
	uint32_t free_word = 0;

	/* Acquire: pairs with the release of the last holder. */
	while (!atomic_compare_exchange_weak_explicit(rb_lock_word(v), &free_word,
			gettid32(), memory_order_acquire, memory_order_relaxed))
		free_word = 0;
}

static bool lock_phase(enum phase p)
{
	return p == ASLEEP_LOCK || p == ASLEEP_LEGACY_LOCK;
}

static bool asleep_phase(enum phase p)
{
	return p >= ASLEEP_RING;
}

/*
 * One pipe, one victim on side @rw killed at its round's point, then
 * the survivor.  Returns 0 or a code naming what went wrong.
 */
static int death_round(const struct round *r, unsigned int rw,
		       struct death_stats *st)
{
	static uint8_t rec[4096];
	struct rb_view rv = { 0 }, wv = { 0 };
	unsigned int first = 0, expected = 0, written = 0;
	int fds[2], tellp[2], gop[2], res = 0, status;
	struct rb_view *own = rw == RINGBUFFER_WRITE ? &wv : &rv;
	pid_t pid;

	if (pipe(fds) || pipe(tellp) || pipe(gop))
		return 50;
	if (rb_view_map(&rv, fds[0], RINGBUFFER_READ, RING_SIZE) ||
	    rb_view_map(&wv, fds[1], RINGBUFFER_WRITE, RING_SIZE))
		return 51;
	if (rw == RINGBUFFER_READ) {
		/* What the reader victim finds: k records, or a few more. */
		written = r->phase == ASLEEP_RING || r->phase == ASLEEP_LEGACY ?
			  r->k : r->k + 5;
		for (unsigned int seq = 0; seq < written; seq++) {
			record_fill(rec, r->size, 1, seq);
			if (write(fds[1], rec, r->size) != (ssize_t)r->size)
				return 52;
		}
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 53;
	if (pid == 0) {
		close(tellp[0]);
		close(gop[1]);
		rb_view_unmap(&rv);
		rb_view_unmap(&wv);
		if (rw == RINGBUFFER_WRITE) {
			close(fds[0]);
			writer_victim(fds[1], r, tellp[1], gop[0]);
		} else {
			close(fds[1]);
			reader_victim(fds[0], r, tellp[1], gop[0]);
		}
		_exit(89);
	}
	close(tellp[1]);
	close(gop[0]);
	if (asleep_phase(r->phase)) {
		if (!hear(tellp[0], 60))
			res = 54;
		if (!res && lock_phase(r->phase)) {
			parent_lock(own);
			if (write(gop[1], "g", 1) != 1)
				res = 55;
		}
		if (!res && kill_when_asleep(pid, r, rw == RINGBUFFER_READ))
			res = 56;
	}
	if (wait_child(pid, 60, &status))
		res = res ? res : 57;
	else if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		res = res ? res : 58 + 100 * (WIFEXITED(status) ? WEXITSTATUS(status) : 0);
	if (lock_phase(r->phase))
		rb_side_unlock(own);
	if (!res) {
		if (rw == RINGBUFFER_WRITE) {
			expected = writer_expected(r);
		} else {
			first = r->phase == PUBLISHED_LOCKED || r->phase == AFTER_UNLOCK ?
				r->k + 1 : r->k;
			expected = written;
		}
		res = survivor(fds[0], fds[1], &rv, &wv, r, first, expected, 1);
	}
	st->rounds[r->phase]++;
	st->records += expected - first + 1;
	st->bytes += (expected - first + 1) * r->size;
	rb_view_unmap(&rv);
	rb_view_unmap(&wv);
	close(fds[0]);
	close(fds[1]);
	close(tellp[0]);
	close(gop[1]);
	return res;
}

static void kill_rounds(struct __test_metadata *_metadata, unsigned int rw,
			uint64_t seed)
{
	struct rng rng = { seed };
	struct death_stats st = { 0 };
	unsigned int rounds = rel_scale(KILL_ROUNDS);

	signal(SIGPIPE, SIG_IGN);
	for (unsigned int i = 0; i < rounds; i++) {
		struct round r = pick_round(&rng);
		int res = death_round(&r, rw, &st);

		ASSERT_EQ(0, res) TH_LOG("round %u: %s, k %u, records of %zu, %s survivor",
					 i, phase_name[r.phase], r.k, r.size,
					 r.ring_survivor ? "ring" : "legacy");
	}
	print_stats(rw == RINGBUFFER_WRITE ? "writers" : "readers", seed, &st);
}

FIXTURE(death) {
	long live_before;
};

FIXTURE_SETUP(death)
{
	self->live_before = rb_live_rings();
	ASSERT_LE(0, self->live_before);
}

FIXTURE_TEARDOWN(death)
{
}

TEST_F_TIMEOUT(death, writers_killed_at_seeded_points, 200)
{
	kill_rounds(_metadata, RINGBUFFER_WRITE, rel_seed(DEATH_SEED));
	EXPECT_TRUE(rings_back_to(self->live_before, 30));
}

TEST_F_TIMEOUT(death, readers_killed_at_seeded_points, 200)
{
	kill_rounds(_metadata, RINGBUFFER_READ, rel_seed(DEATH_SEED + 1));
	EXPECT_TRUE(rings_back_to(self->live_before, 30));
}

/*
 * Under load.  State shared by every process of the test: what each
 * writer published, what became of each record, and what went wrong.
 */
#define LOAD_WRITERS	48		/* ids: 0, 1 steady; 2... victims */
#define LOAD_SEQS	65536
#define STEADY_RECORDS	LOAD_SEQS	/* at most; they stop when told */
#define LOAD_VICTIMS	16

enum { REC_NONE, REC_IN_FLIGHT, REC_SEEN };

struct load_shared {
	_Atomic uint32_t published[LOAD_WRITERS];
	_Atomic uint32_t progress[LOAD_VICTIMS];
	_Atomic uint8_t state[LOAD_WRITERS][LOAD_SEQS];
	_Atomic uint32_t torn, duplicate, reordered, out_of_range, seen;
	_Atomic bool stop;	/* steady writers: enough */
};

static bool record_sane(struct load_shared *sh, const uint8_t *rec, size_t size,
			struct record_hdr *h)
{
	if (!record_ok(rec, size, h)) {
		atomic_fetch_add(&sh->torn, 1);
		return false;
	}
	if (h->writer >= LOAD_WRITERS || h->seq >= LOAD_SEQS) {
		atomic_fetch_add(&sh->out_of_range, 1);
		return false;
	}
	return true;
}

static void record_seen(struct load_shared *sh, const struct record_hdr *h,
			uint32_t *last)
{
	if (atomic_exchange(&sh->state[h->writer][h->seq], REC_SEEN) == REC_SEEN)
		atomic_fetch_add(&sh->duplicate, 1);
	/* One reader sees each writer's records in the order written. */
	if (last[h->writer] != UINT32_MAX && h->seq <= last[h->writer])
		atomic_fetch_add(&sh->reordered, 1);
	last[h->writer] = h->seq;
	atomic_fetch_add(&sh->seen, 1);
}

/*
 * A writer: at most @count records, through the ring or write(2); a
 * steady one (@victim < 0) stops early when told.
 */
static void load_writer(struct load_shared *sh, int wr, unsigned int id,
			uint32_t count, bool ring, size_t size, int victim)
{
	static uint8_t rec[4096];
	struct rb_view v = { 0 };

	if (ring && rb_view_map(&v, wr, RINGBUFFER_WRITE, RING_SIZE))
		_exit(10);
	for (uint32_t seq = 0; seq < count; seq++) {
		if (victim < 0 && atomic_load(&sh->stop))
			break;
		record_fill(rec, size, id, seq);
		if ((ring ? rb_pipe_write(&v, rec, size) : write(wr, rec, size)) !=
		    (long)size)
			_exit(11);
		atomic_store(&sh->published[id], seq + 1);
		if (victim >= 0)
			atomic_store(&sh->progress[victim], seq + 1);
	}
	_exit(0);
}

/*
 * A reader until end of file.  Through the ring it marks a record in
 * flight before it gives the space back and seen after, so that a record
 * lost with a dead reader can be told from one lost by the pipe.
 */
static void load_reader(struct load_shared *sh, int rd, bool ring, size_t size,
			int victim)
{
	static uint32_t last[LOAD_WRITERS];
	static uint8_t rec[4096];
	struct record_hdr h;
	struct rb_view v = { 0 };

	memset(last, 0xff, sizeof(last));
	if (ring && rb_view_map(&v, rd, RINGBUFFER_READ, RING_SIZE))
		_exit(10);
	for (uint32_t n = 1;; n++) {
		if (ring) {
			uint32_t head, tail;

			if (rb_side_lock(&v))
				_exit(11);
			tail = atomic_load_explicit(v.tail, memory_order_relaxed);
			/* Acquire: the records below head are there. */
			head = atomic_load_explicit(v.head, memory_order_acquire);
			if (head - tail > v.size || (head - tail) % size)
				atomic_fetch_add(&sh->torn, 1);
			if (head - tail < size) {
				rb_side_unlock(&v);
				/* Full fence: the flags load below sees EOF set after the last publish. */
				atomic_thread_fence(memory_order_seq_cst);
				if (sys_ringbuffer_wait(rd, RINGBUFFER_READ, size, NULL, 0) < (long)size &&
				    atomic_load(v.flags) & RINGBUFFER_EOF &&
				    atomic_load(v.head) == atomic_load(v.tail))
					_exit(0);
				n--;
				continue;
			}
			memcpy(rec, v.data + (tail & v.mask), size);
			if (record_sane(sh, rec, size, &h))
				atomic_store(&sh->state[h.writer][h.seq], REC_IN_FLIGHT);
			/* Release: done reading before the space goes back. */
			atomic_store_explicit(v.tail, tail + size, memory_order_release);
			rb_side_unlock(&v);
			if (h.writer < LOAD_WRITERS && h.seq < LOAD_SEQS)
				record_seen(sh, &h, last);
		} else {
			ssize_t got = read(rd, rec, size);

			if (got == 0)
				_exit(0);
			if (got != (ssize_t)size) {
				atomic_fetch_add(&sh->torn, 1);
				_exit(12);
			}
			if (record_sane(sh, rec, size, &h))
				record_seen(sh, &h, last);
		}
		if (victim >= 0)
			atomic_store(&sh->progress[victim], n);
	}
}

/*
 * Two steady writers (ring, write(2)) and two steady readers (ring,
 * read(2)); victims are ring writers and ring readers, each killed once
 * it has done a seeded number of records, or after a while if it cannot
 * get there (asleep, most likely).  One legacy task per side: see
 * RELIABILITY.md.
 */
TEST_F_TIMEOUT(death, kill_loop_under_load, 300)
{
	uint64_t seed = rel_seed(DEATH_SEED + 2);
	struct rng rng = { seed };
	struct load_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	size_t size = (size_t[]){ 32, 64, 256 }[rng_below(&rng, 3)];
	unsigned int victims = rel_scale(LOAD_VICTIMS), reader_kills = 0;
	unsigned int writer_kills = 0, next_writer = 2, missing = 0, late = 0;
	pid_t steady[4], readers_left[2];
	int fds[2];
	uint8_t rec[4096];

	ASSERT_NE(MAP_FAILED, sh);
	if (victims > LOAD_VICTIMS)
		victims = LOAD_VICTIMS;
	signal(SIGPIPE, SIG_IGN);
	ASSERT_EQ(0, pipe(fds));
	ASSERT_EQ(0, convert_pipe(fds[0], RINGBUFFER_READ, RING_SIZE));
	fflush(stdout);
	for (int i = 0; i < 2; i++) {
		steady[i] = fork();
		ASSERT_LE(0, steady[i]);
		if (steady[i] == 0) {
			close(fds[0]);
			load_writer(sh, fds[1], i, STEADY_RECORDS, i == 0, size, -1);
		}
		steady[2 + i] = fork();
		ASSERT_LE(0, steady[2 + i]);
		if (steady[2 + i] == 0) {
			close(fds[1]);
			load_reader(sh, fds[0], i == 0, size, -1);
		}
		readers_left[i] = steady[2 + i];
	}
	for (unsigned int k = 0; k < victims; k++) {
		bool writer = rng_chance(&rng, 50) && next_writer < LOAD_WRITERS;
		uint32_t target = 1 + rng_below(&rng, 60);
		double end;
		pid_t pid;
		int st;

		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			if (writer) {
				close(fds[0]);
				load_writer(sh, fds[1], next_writer, LOAD_SEQS, true,
					    size, k);
			}
			close(fds[1]);
			load_reader(sh, fds[0], true, size, k);
		}
		/* A seeded point of its life, measured in records. */
		end = rb_now() + 3;
		while (atomic_load(&sh->progress[k]) < target && rb_now() < end)
			sched_yield();
		late += atomic_load(&sh->progress[k]) < target;
		kill(pid, SIGKILL);
		ASSERT_EQ(0, wait_child(pid, 30, &st));
		if (writer) {
			next_writer++;
			writer_kills++;
		} else {
			reader_kills++;
		}
	}
	atomic_store(&sh->stop, true);
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(0, child_result(steady[i], 120)) TH_LOG("steady writer %d", i);
	}
	/* The pipe is still whole: one more record through write(2), then EOF. */
	record_fill(rec, size, LOAD_WRITERS - 1, 0);
	EXPECT_EQ((ssize_t)size, write(fds[1], rec, size));
	close(fds[1]);
	close(fds[0]);
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(0, child_result(readers_left[i], 120)) TH_LOG("steady reader %d", i);
	}

	EXPECT_EQ(0, atomic_load(&sh->torn));
	EXPECT_EQ(0, atomic_load(&sh->duplicate));
	EXPECT_EQ(0, atomic_load(&sh->reordered));
	EXPECT_EQ(0, atomic_load(&sh->out_of_range));
	EXPECT_EQ(REC_SEEN, atomic_load(&sh->state[LOAD_WRITERS - 1][0]));
	/* Every published record arrived, but those a dead reader held. */
	for (unsigned int w = 0; w < next_writer; w++) {
		uint32_t published = atomic_load(&sh->published[w]);

		for (uint32_t seq = 0; seq < LOAD_SEQS; seq++) {
			uint8_t state = atomic_load(&sh->state[w][seq]);

			if (seq < published && state != REC_SEEN)
				missing++;
			/* One past what was counted: published, then killed. */
			EXPECT_FALSE(seq > published && state != REC_NONE)
				TH_LOG("writer %u record %u seen, never published", w, seq);
		}
	}
	EXPECT_LE(missing, reader_kills);
	printf("# seed %#llx, records of %zu: %u ring writers and %u ring readers "
	       "killed (%u before their seeded point), %u records (%llu bytes) "
	       "seen, %u lost with dead readers, none torn, duplicated or "
	       "reordered\n", (unsigned long long)seed, size, writer_kills,
	       reader_kills, late, atomic_load(&sh->seen),
	       (unsigned long long)atomic_load(&sh->seen) * size, missing);
	munmap(sh, sizeof(*sh));
	EXPECT_TRUE(rings_back_to(self->live_before, 30));
}

TEST_HARNESS_MAIN
