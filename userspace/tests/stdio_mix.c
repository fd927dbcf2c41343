// SPDX-License-Identifier: GPL-2.0
/*
 * stdio_mix: what a program sees of stdio on a pipe, printed so that a run
 * under ringpipe(1) can be compared byte for byte with a plain one
 * (pipelines.sh).  It knows nothing of rings.
 *
 *   stdio_mix write   stdout: fileno, stdio data interleaved with write(2)
 *                     on the same fd, a fork with unflushed data, line
 *                     buffering set with setvbuf(), many small puts and
 *                     printf calls, data left for exit to flush
 *   stdio_mix read    stdin: fileno, fgets, getc/ungetc, fread, getline,
 *                     feof and ferror at the end; prints what it read
 *   stdio_mix epipe   stdout once its reader is gone: a flush fails with
 *                     EPIPE (SIGPIPE ignored) and ferror() says so
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int do_write(void)
{
	pid_t pid;

	printf("fileno %d\n", fileno(stdout));
	fflush(stdout);
	/* Buffered "A", then "B" straight to the fd: B comes out first. */
	printf("A");
	if (write(STDOUT_FILENO, "B", 1) != 1)
		return 1;
	fflush(stdout);
	printf("\n");
	/* Unflushed data at a fork goes out twice, once at each exit. */
	printf("forked ");
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0)
		exit(0);
	waitpid(pid, NULL, 0);
	printf("\n");
	fflush(stdout);
	/* Line buffered: each line before the write(2) that follows it. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < 3; i++) {
		printf("line %d\n", i);
		if (write(STDOUT_FILENO, "raw\n", 4) != 4)
			return 1;
	}
	setvbuf(stdout, NULL, _IOFBF, 0);
	for (int i = 0; i < 20000; i++) {
		if (i % 3 == 0)
			puts("puts");
		else if (i % 3 == 1)
			printf("printf %d\n", i);
		else
			fputc('c', stdout), putchar('\n');
	}
	fputs("no newline, flushed by exit", stdout);
	return ferror(stdout);
}

static int do_read(void)
{
	char line[64], buf[4096], *big = NULL;
	size_t cap = 0, total = 0, lines = 0;
	ssize_t n;
	int c;

	printf("fileno %d\n", fileno(stdin));
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	printf("first line: %s", line);
	c = getc(stdin);
	ungetc(c, stdin);
	printf("next char: %c, again: %c\n", c, getc(stdin));
	total = fread(buf, 1, 100, stdin);
	printf("fread: %zu\n", total);
	while ((n = getline(&big, &cap, stdin)) > 0) {
		total += n;
		lines++;
	}
	printf("getline: %zu lines, %zu bytes in all\n", lines, total);
	printf("feof %d ferror %d\n", feof(stdin) != 0, ferror(stdin) != 0);
	free(big);
	return 0;
}

static int do_epipe(void)
{
	struct pollfd p = { .fd = STDOUT_FILENO, .events = POLLOUT };
	int ret, err;

	signal(SIGPIPE, SIG_IGN);
	/* Wait for the reader to be gone: POLLERR on the write end. */
	while (poll(&p, 1, -1) >= 0 && !(p.revents & POLLERR))
		usleep(1000);
	fputs("lost", stdout);
	errno = 0;
	ret = fflush(stdout);
	err = errno;
	fprintf(stderr, "fflush %d, EPIPE %d, ferror %d\n", ret, err == EPIPE,
		ferror(stdout) != 0);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "write"))
		return do_write();
	if (argc == 2 && !strcmp(argv[1], "read"))
		return do_read();
	if (argc == 2 && !strcmp(argv[1], "epipe"))
		return do_epipe();
	fprintf(stderr, "usage: stdio_mix write|read|epipe\n");
	return 2;
}
