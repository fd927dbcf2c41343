// SPDX-License-Identifier: MIT
/*
 * Parse "key=value" lines in place with the zero-copy API: rb_peek()
 * gives the data where it lies in the ring, rb_consume() drops the
 * complete lines parsed.  In fallback mode (no rings) it reads into a
 * buffer instead, with the same parser.
 *
 *   cc parse_in_place.c $(pkg-config --cflags --libs libringbuffer)
 */
#include <errno.h>
#include <libringbuffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LINES 5000

static long total;

/* Parse the complete lines of @p[0..len); return the bytes they take. */
static size_t parse(const char *p, size_t len, long *lines)
{
	size_t done = 0;

	for (;;) {
		const char *nl = memchr(p + done, '\n', len - done);
		const char *eq;

		if (!nl)
			return done;
		eq = memchr(p + done, '=', nl - (p + done));
		if (eq) {
			total += strtol(eq + 1, NULL, 10);
			(*lines)++;
		}
		done = nl + 1 - p;
	}
}

static int consumer(int fd)
{
	struct rb_ring *r = rb_open(fd, RB_READ, 65536);
	char buf[8192];
	size_t kept = 0;
	long lines = 0;

	if (!r)
		return perror("rb_open"), 1;
	for (;;) {
		size_t len, used;
		const char *p = rb_peek(r, SIZE_MAX, &len);

		if (p) {
			used = parse(p, len, &lines);
			rb_consume(r, used);
			if (!used && rb_wait(r, len + 1, -1) < 0)
				break;
			continue;
		}
		if (errno == EAGAIN) {
			if (rb_wait(r, 1, -1) <= 0)
				break;
			continue;
		}
		if (errno != ENOTSUP)
			break;	/* end of file (errno 0) or an error */
		/* Fallback mode: the same parser on a buffer. */
		ssize_t n = rb_read(r, buf + kept, sizeof(buf) - kept);

		if (n <= 0)
			break;
		kept += n;
		used = parse(buf, kept, &lines);
		memmove(buf, buf + used, kept - used);
		kept -= used;
	}
	rb_close(r);
	printf("parse_in_place: %ld lines, sum %ld\n", lines, total);
	/* The child ends with _exit(): flush what it printed. */
	fflush(stdout);
	return lines == LINES && total == (long)LINES * (LINES - 1) / 2 ? 0 : 1;
}

int main(void)
{
	int fds[2], status;
	FILE *out;
	pid_t pid;

	if (pipe(fds))
		return perror("pipe"), 1;
	pid = fork();
	if (pid == 0) {
		close(fds[1]);
		_exit(consumer(fds[0]));
	}
	close(fds[0]);
	/* The producer is an ordinary stdio program. */
	out = fdopen(fds[1], "w");
	for (int i = 0; i < LINES; i++)
		fprintf(out, "key%d=%d\n", i, i);
	fclose(out);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 1;
	return WEXITSTATUS(status);
}
