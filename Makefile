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

# The selftests are the series' tools/testing/selftests/ringbuffer/, built
# and installed with the kernel's kselftest makefiles into KSELFTEST, where
# selftests/run finds them and the kselftest runner.
KSELFTEST := $(CURDIR)/selftests/out/kselftest
# Where the kselftest build keeps its objects (lib.mk's OUTPUT).
KSELFTEST_BUILD := $(RINGPIPE_CACHE)/headers/kselftest/ringbuffer
# The installed uapi header, once `make headers` made it: a prerequisite
# of what is compiled against it, so that a change of the ABI rebuilds.
UAPI_HEADER = $(wildcard $(HEADERS)/linux/ringbuffer.h)

# User space needs a C compiler and libc, nothing else: the uapi header is
# copied in userspace/include (make check compares it with the series)
# and the system call numbers are in userspace/include/ringbuffer-syscalls.h.
# CC, CPPFLAGS, CFLAGS and LDFLAGS are the builder's (a distribution's
# hardening flags reach every object and link); -Werror only where the
# project's own runs ask for it (WERROR=1, the default for check, demo,
# bench and soak).
CFLAGS ?= -O2 -g
WERROR ?= $(if $(filter check demo bench soak,$(MAKECMDGOALS)),1,0)
US_CPPFLAGS := -D_GNU_SOURCE -Iuserspace/include $(CPPFLAGS)
US_CFLAGS := -std=gnu11 -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) $(CFLAGS)
LIB_SRC := userspace/libringbuffer.c
LIB_HDRS := userspace/libringbuffer.h userspace/libringbuffer-internal.h \
	userspace/include/linux/ringbuffer.h userspace/include/ringbuffer-syscalls.h
LIB_CFLAGS := $(US_CPPFLAGS) $(US_CFLAGS) -fPIC
LIB_MAP := userspace/libringbuffer.map
SANITIZE := -fsanitize=address,undefined -fno-omit-frame-pointer
SHIM_DEPS := userspace/ringpipe-shim.c $(LIB_SRC) $(LIB_HDRS)
# Test programs run in the VM, under the shim or beside it.
SHIM_TESTS := test_shim records stdio_mix
SHIM_TEST_BINS := $(addprefix userspace/tests/out/,$(SHIM_TESTS))

# make install: a distribution's layout by default.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
LIB_VERSION := 0.3.0
MANPAGES := $(wildcard userspace/man/*.[123])
# Each function of libringbuffer.h gets a man page that points to
# libringbuffer(3), so that "man rb_read" works.
open_paren := (
LIB_FUNCS := $(shell sed -n 's/^[a-z].*[ *]\(rb_[a-z_]*\)$(open_paren).*/\1/p' \
	userspace/libringbuffer.h)

.PHONY: help deps tree patches kernel kernel-debug headers selftests check cross-build \
	userspace-guest-tests check-uapi hostbench \
	demo bench soak checkpatch series-build clean userspace test-userspace install uninstall

help:
	@echo "make demo          build, boot the ring-buffer kernel and show it at work"
	@echo "make check         all tests (debug kernel in a VM); ends with 'N passed, N failed'"
	@echo "make bench         the benchmarks, patched and unpatched kernel: benchmarks/RESULTS.md"
	@echo "make soak          ten minutes of mixed traffic, stressors and kills (debug kernel)"
	@echo "make deps          install the Debian packages the project needs"
	@echo "make tree          set up the kernel tree ($(RINGPIPE_CACHE)/linux-*) from kernel-patches/"
	@echo "make patches       write the kernel tree's commits back to kernel-patches/"
	@echo "make kernel        build the release kernel"
	@echo "make kernel-debug  build the debug kernel (KASAN, lockdep, KFENCE, ...)"
	@echo "make selftests     build the selftests"
	@echo "make userspace     build libringbuffer, the shim, ringpipe and the tests in place"
	@echo "make install       install them (PREFIX=$(PREFIX), DESTDIR=...)"
	@echo "make test-userspace  run the library tests on the host under ASan/UBSan"
	@echo "make checkpatch    run checkpatch.pl --strict on every patch of the series"
	@echo "make cross-build   compile the ring code and syscall tables for arm64"
	@echo "make series-build  build every prefix of the series (release config): bisectable"
	@echo "make hostbench     the library's copy path against read/write and an SPSC ring, host CPUs"

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
	@echo "  KSFT    tools/testing/selftests/ringbuffer -> selftests/out/kselftest"
	@rm -rf $(KSELFTEST)
	@# lib.mk rebuilds a test when its source changes, not the uapi header.
	@find $(KSELFTEST_BUILD) -maxdepth 1 -type f \
		! -newer $(HEADERS)/linux/ringbuffer.h -delete 2>/dev/null || true
	@$(MAKE) -s -C $(TREE)/tools/testing/selftests TARGETS=ringbuffer \
		O=$(RINGPIPE_CACHE)/headers KSFT_INSTALL_PATH=$(KSELFTEST) \
		USERCFLAGS=-Werror install >$(RINGPIPE_CACHE)/kselftest-build.log 2>&1 || \
		{ cat $(RINGPIPE_CACHE)/kselftest-build.log; exit 1; }
	@$(MAKE) -s selftests/out/rst_client

# A client of the ABI written from ringbuffer.rst alone, with nothing else
# of the project: it checks that the kernel does what the document says.
selftests/out/rst_client: selftests/rst_client/rst_client.c selftests/rst_client/rst_client.h \
		$(UAPI_HEADER)
	@mkdir -p $(@D)
	@echo "  CC      $@"
	@$(CC) $(CFLAGS_COMMON) -isystem $(HEADERS) -o $@ $< -lpthread

userspace:
	@$(MAKE) -s userspace/libringbuffer.a userspace/libringbuffer.so \
		userspace/ringpipe-shim.so userspace/ringpipe \
		userspace/tests/out/test_libringbuffer \
		userspace/tests/out/test_libringbuffer-sanitized

# The shim's tests run in the VM and use the kselftest harness of the tree.
userspace-guest-tests: headers
	@$(MAKE) -s $(SHIM_TEST_BINS)

# The copy of the uapi header must be the series' own.
check-uapi: tree
	@cmp userspace/include/linux/ringbuffer.h \
		$(TREE)/include/uapi/linux/ringbuffer.h && \
		echo "check-uapi: userspace/include/linux/ringbuffer.h matches the series"

userspace/libringbuffer.o: $(LIB_SRC) $(LIB_HDRS)
	@echo "  CC      $@"
	@$(CC) $(LIB_CFLAGS) -c -o $@ $<

userspace/libringbuffer.a: userspace/libringbuffer.o
	@echo "  AR      $@"
	@rm -f $@ && ar rcs $@ $<

userspace/libringbuffer.so: userspace/libringbuffer.o $(LIB_MAP)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,libringbuffer.so.0 \
		-Wl,--version-script=$(LIB_MAP) -o $@ $< -lpthread

# The shim carries its own copy of the library, none of it exported: only
# the functions it interposes are visible.
userspace/ringpipe-shim.so: $(SHIM_DEPS)
	@echo "  LD      $@"
	@$(CC) $(LIB_CFLAGS) $(LDFLAGS) -fvisibility=hidden -shared -o $@ \
		userspace/ringpipe-shim.c $(LIB_SRC) -ldl -lpthread

# In the checkout, ringpipe preloads the shim beside it; installed, the
# installed one.
userspace/ringpipe: userspace/ringpipe.in Makefile
	@echo "  GEN     $@"
	@sed -e 's|@SHIM@|"$(CURDIR)/userspace/ringpipe-shim.so"|' \
		-e 's|@VERSION@|$(LIB_VERSION)|' $< >$@ && chmod +x $@

userspace/tests/out/%: userspace/tests/%.c userspace/tests/shim_util.h $(UAPI_HEADER)
	@mkdir -p $(@D)
	@echo "  CC      $@"
	@$(CC) $(SELFTEST_CFLAGS) -isystem $(HEADERS) \
		-isystem $(TREE)/tools/testing/selftests -o $@ $< -lpthread

userspace/tests/out/test_libringbuffer: userspace/tests/test_libringbuffer.c userspace/tests/fake_ring.h $(LIB_SRC) $(LIB_HDRS)
	@mkdir -p $(@D)
	@echo "  CC      $@"
	@$(CC) $(US_CPPFLAGS) $(US_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_SRC) -lpthread

userspace/tests/out/test_libringbuffer-sanitized: userspace/tests/test_libringbuffer.c userspace/tests/fake_ring.h $(LIB_SRC) $(LIB_HDRS)
	@mkdir -p $(@D)
	@echo "  CC      $@ (ASan, UBSan)"
	@$(CC) $(US_CPPFLAGS) $(US_CFLAGS) -O1 $(SANITIZE) $(LDFLAGS) -o $@ $< $(LIB_SRC) -lpthread

# On the host, whose kernel has no rings: the fallback and the ring logic.
test-userspace: userspace
	@userspace/tests/out/test_libringbuffer-sanitized

check: deps selftests userspace userspace-guest-tests
	@ci/check

demo: deps userspace userspace-guest-tests
	@ci/demo

bench: deps userspace userspace-guest-tests
	@benchmarks/run

# Not part of make check: ten minutes (SOAK_SECONDS) in forced ring mode.
SOAK_SECONDS ?= 600
soak: deps selftests userspace userspace-guest-tests
	@ci/vm-run --debug --timeout $$(($(SOAK_SECONDS) + 600)) -- \
		selftests/soak.sh $(SOAK_SECONDS)

# checkpatch's SPDX check needs Debian's python3 (python3-ply, python3-git).
checkpatch: tree
	@cd $(TREE) && for p in $(CURDIR)/kernel-patches/[0-9][0-9][0-9][0-9]-*.patch; do \
		case $$p in */0000-cover-letter.patch) continue ;; esac; \
		PATH=/usr/bin:$$PATH scripts/checkpatch.pl --strict --quiet "$$p" || exit 1; \
	done && echo "checkpatch: all patches clean"

cross-build: deps
	@ci/cross-build

# Not part of make check (half an hour the first time): every prefix of
# the series builds, warning-free.
series-build: deps
	@ci/series-build

# The library's copy path on the host's CPUs (benchmarks/hostbench.c):
# a benchmark, not a test.
hostbench: benchmarks/out/hostbench
	@benchmarks/out/hostbench

benchmarks/out/hostbench: benchmarks/hostbench.c userspace/tests/fake_ring.h $(LIB_SRC) $(LIB_HDRS)
	@mkdir -p $(@D)
	@echo "  CC      $@"
	@$(CC) $(US_CPPFLAGS) $(US_CFLAGS) -O2 $(LDFLAGS) -o $@ $< $(LIB_SRC) -lpthread

install: userspace
	@echo "  INSTALL $(DESTDIR)$(PREFIX)"
	@install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/ringpipe \
		$(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man2 $(DESTDIR)$(MANDIR)/man3
	@install -m 644 userspace/libringbuffer.h $(DESTDIR)$(INCLUDEDIR)/
	@install -m 644 userspace/libringbuffer.a $(DESTDIR)$(LIBDIR)/
	@install -m 755 userspace/libringbuffer.so $(DESTDIR)$(LIBDIR)/libringbuffer.so.$(LIB_VERSION)
	@ln -sf libringbuffer.so.$(LIB_VERSION) $(DESTDIR)$(LIBDIR)/libringbuffer.so.0
	@ln -sf libringbuffer.so.0 $(DESTDIR)$(LIBDIR)/libringbuffer.so
	@install -m 755 userspace/ringpipe-shim.so $(DESTDIR)$(LIBDIR)/ringpipe/
	@sed -e 's|@SHIM@|"$(LIBDIR)/ringpipe/ringpipe-shim.so"|' \
		-e 's|@VERSION@|$(LIB_VERSION)|' userspace/ringpipe.in \
		>$(DESTDIR)$(BINDIR)/ringpipe && chmod 755 $(DESTDIR)$(BINDIR)/ringpipe
	@sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(LIB_VERSION)|' \
		userspace/libringbuffer.pc.in >$(DESTDIR)$(PKGCONFIGDIR)/libringbuffer.pc
	@for m in $(MANPAGES); do \
		sed 's|/usr/local/lib/ringpipe/|$(LIBDIR)/ringpipe/|' $$m \
			>$(DESTDIR)$(MANDIR)/man$${m##*.}/$${m##*/} && \
		chmod 644 $(DESTDIR)$(MANDIR)/man$${m##*.}/$${m##*/} || exit 1; \
	done
	@for f in $(LIB_FUNCS); do \
		echo '.so man3/libringbuffer.3' >$(DESTDIR)$(MANDIR)/man3/$$f.3 || exit 1; \
	done

uninstall:
	rm -f $(DESTDIR)$(INCLUDEDIR)/libringbuffer.h $(DESTDIR)$(LIBDIR)/libringbuffer.* \
		$(DESTDIR)$(PKGCONFIGDIR)/libringbuffer.pc $(DESTDIR)$(BINDIR)/ringpipe
	rm -rf $(DESTDIR)$(LIBDIR)/ringpipe
	for m in $(notdir $(MANPAGES)); do rm -f $(DESTDIR)$(MANDIR)/man$${m##*.}/$$m; done
	for f in $(LIB_FUNCS); do rm -f $(DESTDIR)$(MANDIR)/man3/$$f.3; done

clean:
	rm -rf selftests/out .vm userspace/tests/out userspace/*.o userspace/*.a userspace/*.so \
		userspace/ringpipe
