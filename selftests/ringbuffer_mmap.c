// SPDX-License-Identifier: GPL-2.0
/*
 * The mapping that ringbuffer(2) makes: layout, permissions, sharing
 * between calls and processes, and lifetime.
 */
#include "ringbuffer_util.h"
#include "kselftest_harness.h"

FIXTURE(mmap) {
	int dev;
	long live_before;
};

FIXTURE_SETUP(mmap)
{
	self->live_before = rb_live_rings();
	ASSERT_GE(self->live_before, 0)
		TH_LOG("no /sys/kernel/debug/ringbuffer/live");
	self->dev = open(RBTEST_DEV, O_RDWR);
	ASSERT_GE(self->dev, 0);
}

FIXTURE_TEARDOWN(mmap)
{
	if (self->dev >= 0)
		close(self->dev);
}

static void check_header(struct __test_metadata *_metadata,
			 const struct rb_view *v, uint32_t asked)
{
	const struct ringbuffer_header *h = v->hdr;
	const struct ringbuffer_offsets *o = &h->offsets;
	long page = sysconf(_SC_PAGESIZE);
	const uint32_t words[] = { o->head, o->tail, o->producer_lock,
				   o->consumer_lock, o->flags,
				   o->read_waiters, o->write_waiters };

	EXPECT_EQ(RINGBUFFER_MAGIC, h->magic);
	EXPECT_EQ(RINGBUFFER_VERSION, h->version);
	EXPECT_GE(h->size, asked);
	EXPECT_GE(h->size, page);
	EXPECT_EQ(0, h->size & (h->size - 1));
	EXPECT_EQ(h->size - 1, h->mask);
	EXPECT_EQ(0, o->data % page);
	EXPECT_EQ((uint64_t)o->data + 2ULL * h->size, h->map_size);
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		EXPECT_EQ(0, words[i] % 4);
		EXPECT_LT(words[i], o->data);
	}
	/* Producer and consumer words never share a page. */
	EXPECT_NE(o->head / page, o->tail / page);
	EXPECT_EQ(o->head / page, o->producer_lock / page);
	EXPECT_EQ(o->tail / page, o->consumer_lock / page);
	EXPECT_NE(o->head / 64, o->producer_lock / 64);
}

TEST_F(mmap, header_layout)
{
	struct rb_view rd = { 0 }, wr = { 0 };

	ASSERT_EQ(0, rb_view_map(&rd, self->dev, RINGBUFFER_READ, 1));
	check_header(_metadata, &rd, 1);
	ASSERT_EQ(0, rb_view_map(&wr, self->dev, RINGBUFFER_WRITE, 65536));
	check_header(_metadata, &wr, 65536);
	EXPECT_EQ(65536, wr.size);
	rb_view_unmap(&rd);
	rb_view_unmap(&wr);
}

static void poke_child(void *addr)
{
	rb_poke(addr);
}

TEST_F(mmap, read_side_permissions)
{
	struct rb_view v = { 0 };

	ASSERT_EQ(0, rb_view_map(&v, self->dev, RINGBUFFER_READ, 4096));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.base));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.head));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.producer_lock));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.data));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.data + v.size));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.flags));
	EXPECT_EQ(0, rb_child_signal(poke_child, v.consumer_lock));
	/* Read-only parts cannot be made writable. */
	EXPECT_EQ(EACCES, FAILS_WITH(mprotect(v.data, v.size,
					      PROT_READ | PROT_WRITE)));
	EXPECT_EQ(EACCES, FAILS_WITH(mprotect(v.base, 4096,
					      PROT_READ | PROT_WRITE)));
	EXPECT_EQ(EACCES, FAILS_WITH(mprotect(v.base, 4096,
					      PROT_READ | PROT_EXEC)));
	rb_view_unmap(&v);
}

TEST_F(mmap, write_side_permissions)
{
	struct rb_view v = { 0 };

	ASSERT_EQ(0, rb_view_map(&v, self->dev, RINGBUFFER_WRITE, 4096));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.base));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.tail));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.consumer_lock));
	EXPECT_EQ(SIGSEGV, rb_child_signal(poke_child, v.write_waiters));
	EXPECT_EQ(0, rb_child_signal(poke_child, v.producer_lock));
	EXPECT_EQ(0, rb_child_signal(poke_child, v.data + v.size - 4));
	EXPECT_EQ(EACCES, FAILS_WITH(mprotect((char *)v.tail - ((uintptr_t)v.tail & 4095),
					      4096, PROT_READ | PROT_WRITE)));
	rb_view_unmap(&v);
}

TEST_F(mmap, data_mapped_twice)
{
	struct rb_view v = { 0 };

	ASSERT_EQ(0, rb_view_map(&v, self->dev, RINGBUFFER_WRITE, 8192));
	/* Not published (head stays put), so the device never reads it. */
	v.data[5] = 0x11;
	v.data[v.size + 77] = 0x22;
	v.data[v.size - 1] = 0x33;
	EXPECT_EQ(0x11, v.data[v.size + 5]);
	EXPECT_EQ(0x22, v.data[77]);
	EXPECT_EQ(0x33, v.data[2 * v.size - 1]);
	rb_view_unmap(&v);
}

TEST_F(mmap, second_call_maps_the_same_ring)
{
	struct rb_view a = { 0 }, b = { 0 }, r = { 0 };

	ASSERT_EQ(0, rb_view_map(&a, self->dev, RINGBUFFER_WRITE, 4096));
	ASSERT_EQ(0, rb_view_map(&b, self->dev, RINGBUFFER_WRITE, 16384));
	ASSERT_EQ(0, rb_view_map(&r, self->dev, RINGBUFFER_READ, 4096));
	EXPECT_NE(a.base, b.base);
	/* An existing ring is mapped as it is, whatever size is asked. */
	EXPECT_EQ(a.size, b.size);
	a.data[100] = 0x5c;
	EXPECT_EQ(0x5c, b.data[100]);
	/* The read side is another ring of the device. */
	EXPECT_NE(r.base, a.base);
	EXPECT_EQ(self->live_before + 2, rb_live_rings());
	rb_view_unmap(&a);
	rb_view_unmap(&b);
	rb_view_unmap(&r);
}

TEST_F(mmap, fork_inherits_and_child_maps_again)
{
	struct rb_view v = { 0 };
	int status;
	pid_t pid;

	ASSERT_EQ(0, rb_view_map(&v, self->dev, RINGBUFFER_WRITE, 4096));
	v.data[0] = 0x42;
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct rb_view mine = { 0 };

		if (v.data[0] != 0x42)
			_exit(1);
		v.data[1] = 0x43;	/* shared, not copied on write */
		if (rb_view_map(&mine, self->dev, RINGBUFFER_WRITE, 4096))
			_exit(2);
		if (mine.data[0] != 0x42)
			_exit(3);
		mine.data[2] = 0x44;
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0x43, v.data[1]);
	EXPECT_EQ(0x44, v.data[2]);
	rb_view_unmap(&v);
}

TEST_F(mmap, partial_unmap_mremap_mprotect_refused)
{
	size_t first_part;
	struct rb_view v = { 0 };
	char *data;
	void *to;

	ASSERT_EQ(0, rb_view_map(&v, self->dev, RINGBUFFER_WRITE, 16384));
	data = (char *)v.data;
	first_part = v.hdr->offsets.head & ~4095UL;
	EXPECT_EQ(EINVAL, FAILS_WITH(munmap(data + 4096, 4096)));
	EXPECT_EQ(EINVAL, FAILS_WITH(mprotect(data, 4096, PROT_READ)));
	EXPECT_EQ(MAP_FAILED, mremap(data, 2 * v.size, 4 * v.size, MREMAP_MAYMOVE));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(MAP_FAILED, mremap(data, 2 * v.size, v.size, 0));
	EXPECT_EQ(EINVAL, errno);
	/* Moving the read-only first part (header, consumer page) elsewhere. */
	to = mmap(NULL, first_part, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, to);
	EXPECT_EQ(MAP_FAILED, mremap(v.base, first_part, first_part,
				     MREMAP_MAYMOVE | MREMAP_FIXED, to));
	EXPECT_EQ(EINVAL, errno);
	munmap(to, first_part);
	EXPECT_EQ(RINGBUFFER_MAGIC, v.hdr->magic);
	/* Still whole and usable. */
	data[0] = 1;
	EXPECT_EQ(1, data[v.size]);
	EXPECT_EQ(0, rb_view_unmap(&v));
}

TEST_F(mmap, ring_outlives_fd_while_mapped)
{
	struct rb_view v = { 0 };

	ASSERT_EQ(0, rb_view_map(&v, self->dev, RINGBUFFER_WRITE, 4096));
	EXPECT_EQ(self->live_before + 1, rb_live_rings());
	close(self->dev);
	self->dev = -1;
	/* The file is gone, its ring is not. */
	EXPECT_EQ(self->live_before + 1, rb_live_rings());
	v.data[10] = 9;
	EXPECT_EQ(9, v.data[v.size + 10]);
	EXPECT_EQ(RINGBUFFER_MAGIC, v.hdr->magic);
	EXPECT_TRUE(atomic_load(v.flags) & RINGBUFFER_EOF);
	ASSERT_EQ(0, rb_view_unmap(&v));
	EXPECT_EQ(self->live_before, rb_live_rings());
}

TEST_F(mmap, ring_freed_with_fd_when_unmapped)
{
	struct rb_view v = { 0 };

	ASSERT_EQ(0, rb_view_map(&v, self->dev, RINGBUFFER_READ, 4096));
	ASSERT_EQ(0, rb_view_unmap(&v));
	EXPECT_EQ(self->live_before + 1, rb_live_rings());
	close(self->dev);
	self->dev = -1;
	EXPECT_EQ(self->live_before, rb_live_rings());
}

TEST_F(mmap, many_maps_leak_nothing)
{
	for (int i = 0; i < 200; i++) {
		struct rb_view v = { 0 };

		ASSERT_EQ(0, rb_view_map(&v, self->dev, i & 1, 4096));
		ASSERT_EQ(0, rb_view_unmap(&v));
	}
	close(self->dev);
	self->dev = -1;
	EXPECT_EQ(self->live_before, rb_live_rings());
}

TEST_F(mmap, exit_unmaps)
{
	int status;
	pid_t pid = fork();

	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int fd = open(RBTEST_DEV, O_RDWR);
		struct rb_view v = { 0 };

		/* No munmap, no close: exit must clean up. */
		_exit(fd < 0 || rb_view_map(&v, fd, RINGBUFFER_READ, 4096));
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(self->live_before, rb_live_rings());
}

TEST_HARNESS_MAIN
