// SPDX-License-Identifier: MIT
/*
 * Fixed-size records through a pipe with libringbuffer: the parent
 * writes them, a child reads and checks them.  On a kernel without
 * rings the library falls back to read(2) and write(2): same output.
 *
 *   cc records.c $(pkg-config --cflags --libs libringbuffer)
 */
#include <libringbuffer.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define RECORDS 10000

struct record {
	uint64_t seq;
	char text[24];
};

static int reader(int fd)
{
	struct rb_ring *r = rb_open(fd, RB_READ, 65536);
	struct record rec;
	uint64_t want = 0;
	size_t have = 0;
	ssize_t n;

	if (!r)
		return perror("rb_open"), 1;
	/* A byte stream: a record may arrive in pieces. */
	while ((n = rb_read(r, (char *)&rec + have, sizeof(rec) - have)) > 0) {
		have += n;
		if (have < sizeof(rec))
			continue;
		have = 0;
		if (rec.seq != want++ || strcmp(rec.text, "hello, ring") != 0) {
			fprintf(stderr, "record %llu is wrong\n",
				(unsigned long long)want - 1);
			return 1;
		}
	}
	rb_close(r);
	if (n < 0 || want != RECORDS)
		return fprintf(stderr, "got %llu records\n",
			       (unsigned long long)want), 1;
	printf("records: %d received in order\n", RECORDS);
	/* The child ends with _exit(): flush what it printed. */
	fflush(stdout);
	return 0;
}

int main(void)
{
	int fds[2], status;
	struct rb_ring *w;
	pid_t pid;

	if (pipe(fds))
		return perror("pipe"), 1;
	pid = fork();
	if (pid == 0) {
		close(fds[1]);
		_exit(reader(fds[0]));
	}
	close(fds[0]);
	w = rb_open(fds[1], RB_WRITE, 65536);
	if (!w)
		return perror("rb_open"), 1;
	for (uint64_t i = 0; i < RECORDS; i++) {
		struct record rec = { .seq = i, .text = "hello, ring" };

		if (rb_write(w, &rec, sizeof(rec)) != sizeof(rec))
			return perror("rb_write"), 1;
	}
	rb_close(w);
	close(fds[1]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 1;
	return WEXITSTATUS(status);
}
