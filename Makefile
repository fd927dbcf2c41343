# SPDX-License-Identifier: GPL-2.0
#
# ringpipe: every entry point.  `make help` lists them.

SHELL := /bin/bash
export RINGPIPE_CACHE ?= $(HOME)/.cache/ringpipe
HEADERS := $(RINGPIPE_CACHE)/headers/usr/include
TREE = $(shell ci/kernel-tree path)

CC ?= cc
CFLAGS_COMMON := -std=gnu11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE
# The kselftest harness is not -Wextra clean: it is included as a system
# header, and its setjmp-based bail-out trips -Wclobbered.
SELFTEST_CFLAGS := $(CFLAGS_COMMON) -Wno-clobbered

SELFTESTS := ringbuffer_errors ringbuffer_mmap ringbuffer_device ringbuffer_pipe
SELFTEST_BINS := $(addprefix selftests/out/,$(SELFTESTS))

LIB_SRC := userspace/libringbuffer.c
LIB_HDRS := userspace/libringbuffer.h userspace/libringbuffer-internal.h
LIB_CFLAGS := $(CFLAGS_COMMON) -fPIC -fvisibility=default -isystem $(HEADERS)
SANITIZE := -fsanitize=address,undefined -fno-omit-frame-pointer

.PHONY: help deps tree patches kernel kernel-debug headers selftests check \
	demo checkpatch clean userspace test-userspace

help:
	@echo "make demo          build, boot the ring-buffer kernel and show it at work"
	@echo "make check         all tests (debug kernel in a VM); ends with 'N passed, N failed'"
	@echo "make deps          install the Debian packages the project needs"
	@echo "make tree          set up the kernel tree ($(RINGPIPE_CACHE)/linux-*) from kernel-patches/"
	@echo "make patches       write the kernel tree's commits back to kernel-patches/"
	@echo "make kernel        build the release kernel"
	@echo "make kernel-debug  build the debug kernel (KASAN, lockdep, KFENCE, ...)"
	@echo "make selftests     build the selftests"
	@echo "make userspace     build libringbuffer and its tests in place"
	@echo "make test-userspace  run the library tests on the host under ASan/UBSan"
	@echo "make checkpatch    run checkpatch.pl --strict on every patch of the series"

deps:
	@ci/deps

tree: deps
	@ci/kernel-tree setup >/dev/null

patches: deps
	@ci/kernel-tree export

kernel: deps
	@ci/kernel-build release

kernel-debug: deps
	@ci/kernel-build debug

# The user-space API headers of the patched tree, for everything built here.
headers: tree
	@mkdir -p $(RINGPIPE_CACHE)/headers
	@$(MAKE) -s -C $(TREE) O=$(RINGPIPE_CACHE)/headers headers_install >/dev/null

selftests: headers
	@$(MAKE) -s $(SELFTEST_BINS)

selftests/out/%: selftests/%.c selftests/ringbuffer_util.h $(HEADERS)/linux/ringbuffer.h
	@mkdir -p selftests/out
	@echo "  CC      $@"
	@$(CC) $(SELFTEST_CFLAGS) -isystem $(HEADERS) \
		-isystem $(TREE)/tools/testing/selftests -o $@ $< -lpthread

userspace: headers
	@$(MAKE) -s userspace/libringbuffer.a userspace/libringbuffer.so \
		userspace/tests/out/test_libringbuffer \
		userspace/tests/out/test_libringbuffer-sanitized

userspace/libringbuffer.o: $(LIB_SRC) $(LIB_HDRS)
	@echo "  CC      $@"
	@$(CC) $(LIB_CFLAGS) -c -o $@ $<

userspace/libringbuffer.a: userspace/libringbuffer.o
	@echo "  AR      $@"
	@rm -f $@ && ar rcs $@ $<

userspace/libringbuffer.so: userspace/libringbuffer.o
	@echo "  LD      $@"
	@$(CC) -shared -Wl,-soname,libringbuffer.so.0 -o $@ $< -lpthread

userspace/tests/out/test_libringbuffer: userspace/tests/test_libringbuffer.c $(LIB_SRC) $(LIB_HDRS)
	@mkdir -p $(@D)
	@echo "  CC      $@"
	@$(CC) $(CFLAGS_COMMON) -isystem $(HEADERS) -o $@ $< $(LIB_SRC) -lpthread

userspace/tests/out/test_libringbuffer-sanitized: userspace/tests/test_libringbuffer.c $(LIB_SRC) $(LIB_HDRS)
	@mkdir -p $(@D)
	@echo "  CC      $@ (ASan, UBSan)"
	@$(CC) $(CFLAGS_COMMON) -O1 $(SANITIZE) -isystem $(HEADERS) -o $@ $< $(LIB_SRC) -lpthread

# On the host, whose kernel has no rings: the fallback and the ring logic.
test-userspace: userspace
	@userspace/tests/out/test_libringbuffer-sanitized

check: deps selftests userspace
	@ci/check

demo: deps selftests
	@ci/demo

# checkpatch's SPDX check needs Debian's python3 (python3-ply, python3-git).
checkpatch: tree
	@cd $(TREE) && for p in $(CURDIR)/kernel-patches/[0-9][0-9][0-9][0-9]-*.patch; do \
		case $$p in */0000-cover-letter.patch) continue ;; esac; \
		PATH=/usr/bin:$$PATH scripts/checkpatch.pl --strict --quiet "$$p" || exit 1; \
	done && echo "checkpatch: all patches clean"

clean:
	rm -rf selftests/out .vm userspace/tests/out userspace/*.o userspace/*.a userspace/*.so
