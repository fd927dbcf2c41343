// SPDX-License-Identifier: GPL-2.0
/*
 * records: a plain read(2)/write(2) program that moves small records
 * through a pipe, for the shim's tests and the demo.  It knows nothing of
 * rings; under ringpipe(1) its calls are served from the ring.
 *
 *   records write COUNT SIZE   write COUNT records of SIZE bytes to stdout,
 *                              one write(2) each
 *   records read SIZE          read records of SIZE bytes from stdin, one
 *                              read(2) each, check that none is lost, torn
 *                              or out of order, and report the throughput
 */
#include <stdlib.h>
#include <time.h>

#include "shim_util.h"

#define MAX_RECORD	65536

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int usage(void)
{
	fprintf(stderr, "usage: records write COUNT SIZE | records read SIZE\n"
		"  (SIZE from 8 to %d bytes)\n", MAX_RECORD);
	return 2;
}

static long parse(const char *s, long min, long max)
{
	char *end;
	long v = strtol(s, &end, 10);

	return *s && !*end && v >= min && v <= max ? v : -1;
}

static int do_write(long count, size_t size)
{
	static unsigned char rec[MAX_RECORD];

	for (long seq = 0; seq < count; seq++) {
		record_fill(rec, size, 0, (uint32_t)seq);
		if (write_full(1, rec, size)) {
			perror("records: write");
			return 1;
		}
	}
	return 0;
}

static int do_read(size_t size)
{
	static unsigned char rec[MAX_RECORD];
	struct record_hdr h;
	uint64_t n = 0;
	double start = 0, elapsed;

	for (;;) {
		ssize_t got = read_full(0, rec, size);

		if (got < 0) {
			perror("records: read");
			return 1;
		}
		if (!got)
			break;
		if (!n)
			start = now();
		if ((size_t)got != size || !record_ok(rec, size, &h) ||
		    h.writer || h.seq != (uint32_t)n) {
			fprintf(stderr, "records: record %llu is bad (%zd bytes, "
				"writer %u, seq %u)\n", (unsigned long long)n, got,
				h.writer, h.seq);
			return 1;
		}
		n++;
	}
	elapsed = n ? now() - start : 0;
	printf("records: %llu records of %zu bytes in %.3f s: %.2f MiB/s\n",
	       (unsigned long long)n, size, elapsed,
	       elapsed > 0 ? n * size / elapsed / (1 << 20) : 0.0);
	return 0;
}

int main(int argc, char **argv)
{
	long count, size;

	if (argc == 4 && !strcmp(argv[1], "write")) {
		count = parse(argv[2], 0, 1L << 40);
		size = parse(argv[3], 8, MAX_RECORD);
		if (count < 0 || size < 0)
			return usage();
		return do_write(count, size);
	}
	if (argc == 3 && !strcmp(argv[1], "read")) {
		size = parse(argv[2], 8, MAX_RECORD);
		if (size < 0)
			return usage();
		return do_read(size);
	}
	return usage();
}
