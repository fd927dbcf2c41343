// SPDX-License-Identifier: MIT
/*
 * An event loop: epoll(7) tells when a pipe end is readable, and
 * rb_read() on the O_NONBLOCK end takes what is there from the ring (or,
 * without rings, with read(2)).  A ring-mode pipe is pollable like any
 * other.
 *
 *   cc epoll_loop.c $(pkg-config --cflags --libs libringbuffer)
 */
#include <errno.h>
#include <fcntl.h>
#include <libringbuffer.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#define BYTES (1 << 20)

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	long got = 0, events = 0;
	int fds[2], ep, status;
	struct rb_ring *r;
	char buf[4096];
	pid_t pid;

	if (pipe(fds))
		return perror("pipe"), 1;
	pid = fork();
	if (pid == 0) {
		struct rb_ring *w;

		close(fds[0]);
		w = rb_open(fds[1], RB_WRITE, 65536);
		for (long sent = 0; w && sent < BYTES; sent += sizeof(buf))
			if (rb_write(w, buf, sizeof(buf)) != sizeof(buf))
				_exit(1);
		_exit(w ? 0 : 1);
	}
	close(fds[1]);
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	r = rb_open(fds[0], RB_READ, 65536);
	ep = epoll_create1(0);
	if (!r || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev))
		return perror("setup"), 1;
	for (;;) {
		ssize_t n = rb_read(r, buf, sizeof(buf));

		if (n > 0) {
			got += n;
			continue;
		}
		if (n == 0)
			break;	/* end of file */
		if (errno != EAGAIN)
			return perror("rb_read"), 1;
		if (epoll_wait(ep, &ev, 1, -1) < 0 && errno != EINTR)
			return perror("epoll_wait"), 1;
		events++;
	}
	rb_close(r);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return 1;
	printf("epoll_loop: %ld bytes after %s\n", got,
	       events ? "waiting for readiness" : "no wait");
	return got == BYTES ? 0 : 1;
}
