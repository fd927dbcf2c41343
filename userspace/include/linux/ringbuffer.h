/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * Ring buffers shared between the kernel and user space, attached to an
 * open file: ringbuffer(2), ringbuffer_wait(2), ringbuffer_wakeup(2).
 * Documentation/userspace-api/ringbuffer.rst describes the protocol.
 */
#ifndef _UAPI_LINUX_RINGBUFFER_H
#define _UAPI_LINUX_RINGBUFFER_H

#include <linux/types.h>

/* Which side of the ring a call is about: the @rw argument. */
#define RINGBUFFER_READ		0	/* the consumer: reads data, moves tail */
#define RINGBUFFER_WRITE	1	/* the producer: writes data, moves head */

#define RINGBUFFER_MAGIC	0x52696e67	/* "Ring" */
#define RINGBUFFER_VERSION	2

/* Largest data area ringbuffer(2) accepts, in bytes. */
#define RINGBUFFER_MAX_SIZE	(1U << 28)

/*
 * End states, in the word at ringbuffer_header.offsets.flags.  Only the
 * kernel writes them.  A bit clears only if the side comes back, which
 * the file type documents (a named FIFO opened again).
 */
#define RINGBUFFER_EOF		(1U << 0)	/* no producer is left */
#define RINGBUFFER_BROKEN	(1U << 1)	/* no consumer is left */

/* ringbuffer_wait(2) flags */
#define RINGBUFFER_WAIT_LOCK	(1U << 0)	/* for the side's lock word */
#define RINGBUFFER_WAIT_FUTEX	(1U << 1)	/* arm the side's futex word */
/* ringbuffer_wakeup(2) flags */
#define RINGBUFFER_WAKE_LOCK	(1U << 0)	/* who waits for the side's lock */
#define RINGBUFFER_KEEP_LOCK	(1U << 1)	/* keep the lock held, see the doc */

/*
 * Lock words: 0 when free, else the thread id of the holder (in the pid
 * namespace of the ring's creator) or RINGBUFFER_LOCK_KERNEL.  The holder
 * vouches for its word in the held word of its mapping's own page.
 */
#define RINGBUFFER_LOCK_KERNEL	(1U << 30)

/*
 * Where each word lives, as byte offsets from the start of the mapping.
 * Every word is a naturally aligned __u32, except the positions head64 and
 * tail64, __u64 words whose low halves head and tail point to (0 on a
 * 32-bit kernel, which keeps only those).  User space must use these
 * offsets rather than fixed ones, so that the layout can change.
 */
struct ringbuffer_offsets {
	__u32	head;		/* bytes ever produced, low 32 bits */
	__u32	tail;		/* bytes ever consumed, low 32 bits */
	__u32	producer_lock;	/* producer page, see the documentation */
	__u32	consumer_lock;	/* consumer page, see the documentation */
	__u32	flags;		/* RINGBUFFER_EOF, RINGBUFFER_BROKEN */
	__u32	read_waiters;	/* tasks asleep until there is data */
	__u32	write_waiters;	/* tasks asleep until there is space */
	__u32	data;		/* the data area, mapped twice in a row */
	__u32	producer_lock_waiters;	/* tasks asleep until it is free */
	__u32	consumer_lock_waiters;
	__u32	producer_keeper;	/* who keeps the producer lock; header */
	__u32	consumer_keeper;
	__u32	producer_busy;	/* the keeper is copying; own page */
	__u32	consumer_busy;
	__u32	read_wait_min;	/* least data a sleeper waits for; header */
	__u32	write_wait_min;	/* least space a sleeper waits for */
	__u32	producer_held;	/* who holds the lock word; own page */
	__u32	consumer_held;
	__u32	head64;		/* all 64 bits of head: a __u64; producer page */
	__u32	tail64;		/* ... of tail; consumer page */
	__u32	resv[2];
	__u32	read_futex;	/* changes when data may be there; header */
	__u32	write_futex;	/* changes when space may be there */
};

/*
 * The first page of the mapping.  It is read-only for everybody and does
 * not change once ringbuffer(2) returned, except for the words that
 * @offsets points into it.
 */
struct ringbuffer_header {
	__u32	magic;		/* RINGBUFFER_MAGIC */
	__u32	version;	/* RINGBUFFER_VERSION */
	__u32	size;		/* bytes in the data area, a power of two */
	__u32	mask;		/* size - 1 */
	__u64	map_size;	/* bytes mapped by ringbuffer(2), for munmap(2) */
	struct ringbuffer_offsets offsets;
};

#endif /* _UAPI_LINUX_RINGBUFFER_H */
