/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the programs that test the ringpipe shim: fixed-size records
 * whose contents say who wrote them and in which order, so that a reader
 * can tell a lost, torn, repeated or reordered record from a good one.
 */
#ifndef SHIM_UTIL_H
#define SHIM_UTIL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct record_hdr {
	uint32_t writer;
	uint32_t seq;
};

/* Fill @rec (@size >= 8 bytes) as record @seq of @writer. */
static inline void record_fill(void *rec, size_t size, uint32_t writer, uint32_t seq)
{
	struct record_hdr h = { writer, seq };
	unsigned char *p = rec;

	memcpy(p, &h, sizeof(h));
	for (size_t i = sizeof(h); i < size; i++)
		p[i] = (unsigned char)(writer * 31 + seq * 7 + i);
}

/* Whether @rec is a whole record; its header in @h. */
static inline int record_ok(const void *rec, size_t size, struct record_hdr *h)
{
	const unsigned char *p = rec;

	memcpy(h, p, sizeof(*h));
	for (size_t i = sizeof(*h); i < size; i++)
		if (p[i] != (unsigned char)(h->writer * 31 + h->seq * 7 + i))
			return 0;
	return 1;
}

/* read(2) until @len bytes or end of file; bytes read, -1 on error. */
static inline ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, (char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (!n)
			break;
		done += n;
	}
	return done;
}

/* write(2) all of @len bytes; 0, or -1 on error. */
static inline int write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		done += n;
	}
	return 0;
}

#endif /* SHIM_UTIL_H */
