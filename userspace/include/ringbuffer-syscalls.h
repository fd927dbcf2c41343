/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * The numbers of ringbuffer(2), ringbuffer_wait(2) and ringbuffer_wakeup(2),
 * in one place, for C libraries whose <sys/syscall.h> predates them.  They
 * follow mseal(2) in every table of the kernel series (patch 0002).
 */
#ifndef RINGBUFFER_SYSCALLS_H
#define RINGBUFFER_SYSCALLS_H

#include <sys/syscall.h>

#ifndef __NR_ringbuffer
# if defined(__alpha__)
#  define RINGBUFFER_NR_BASE	573
# elif defined(__mips__)
#  include <asm/unistd.h>
#  define RINGBUFFER_NR_BASE	(__NR_Linux + 463)
# else
#  define RINGBUFFER_NR_BASE	463
# endif
# define __NR_ringbuffer	(RINGBUFFER_NR_BASE + 0)
# define __NR_ringbuffer_wait	(RINGBUFFER_NR_BASE + 1)
# define __NR_ringbuffer_wakeup	(RINGBUFFER_NR_BASE + 2)
#endif

#endif /* RINGBUFFER_SYSCALLS_H */
