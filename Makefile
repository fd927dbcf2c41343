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

SELFTESTS := ringbuffer_errors ringbuffer_mmap ringbuffer_device ringbuffer_pipe ringbuffer_pipe_compat ringbuffer_splice_matrix ringbuffer_fuzz ringbuffer_hostile ringbuffer_privsep ringbuffer_faults ringbuffer_limits ringbuffer_death
SELFTEST_BINS := $(addprefix selftests/out/,$(SELFTESTS))

LIB_SRC := userspace/libringbuffer.c
LIB_HDRS := userspace/libringbuffer.h userspace/libringbuffer-internal.h
LIB_CFLAGS := $(CFLAGS_COMMON) -fPIC -fvisibility=default -isystem $(HEADERS)
SANITIZE := -fsanitize=address,undefined -fno-omit-frame-pointer
SHIM_DEPS := userspace/ringpipe-shim.c $(LIB_SRC) $(LIB_HDRS)
# Test programs run in the VM, under the shim or beside it.
SHIM_TESTS := test_shim records
SHIM_TEST_BINS := $(addprefix userspace/tests/out/,$(SHIM_TESTS))

# make install: a distribution's layout by default.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
LIB_VERSION := 0.1.0
MANPAGES := $(wildcard userspace/man/*.[123])

.PHONY: help deps tree patches kernel kernel-debug headers selftests check cross-build \
	demo bench soak checkpatch clean userspace test-userspace install uninstall

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
		userspace/ringpipe-shim.so userspace/ringpipe \
		userspace/tests/out/test_libringbuffer \
		userspace/tests/out/test_libringbuffer-sanitized $(SHIM_TEST_BINS)

userspace/libringbuffer.o: $(LIB_SRC) $(LIB_HDRS)
	@echo "  CC      $@"
	@$(CC) $(LIB_CFLAGS) -c -o $@ $<

userspace/libringbuffer.a: userspace/libringbuffer.o
	@echo "  AR      $@"
	@rm -f $@ && ar rcs $@ $<

userspace/libringbuffer.so: userspace/libringbuffer.o
	@echo "  LD      $@"
	@$(CC) -shared -Wl,-soname,libringbuffer.so.0 -o $@ $< -lpthread

# The shim carries its own copy of the library, none of it exported: only
# the functions it interposes are visible.
userspace/ringpipe-shim.so: $(SHIM_DEPS)
	@echo "  LD      $@"
	@$(CC) $(LIB_CFLAGS) -fvisibility=hidden -shared -o $@ \
		userspace/ringpipe-shim.c $(LIB_SRC) -ldl -lpthread

# In the checkout, ringpipe preloads the shim beside it; installed, the
# installed one.
userspace/ringpipe: userspace/ringpipe.in
	@echo "  GEN     $@"
	@sed 's|@SHIM@|"$(CURDIR)/userspace/ringpipe-shim.so"|' $< >$@ && chmod +x $@

userspace/tests/out/%: userspace/tests/%.c userspace/tests/shim_util.h
	@mkdir -p $(@D)
	@echo "  CC      $@"
	@$(CC) $(SELFTEST_CFLAGS) -isystem $(HEADERS) \
		-isystem $(TREE)/tools/testing/selftests -o $@ $< -lpthread

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

demo: deps userspace
	@ci/demo

bench: deps userspace
	@benchmarks/run

# Not part of make check: ten minutes (SOAK_SECONDS) in forced ring mode.
SOAK_SECONDS ?= 600
soak: deps selftests userspace
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
	@sed 's|@SHIM@|"$(LIBDIR)/ringpipe/ringpipe-shim.so"|' userspace/ringpipe.in \
		>$(DESTDIR)$(BINDIR)/ringpipe && chmod 755 $(DESTDIR)$(BINDIR)/ringpipe
	@sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(LIB_VERSION)|' \
		userspace/libringbuffer.pc.in >$(DESTDIR)$(PKGCONFIGDIR)/libringbuffer.pc
	@for m in $(MANPAGES); do \
		install -m 644 $$m $(DESTDIR)$(MANDIR)/man$${m##*.}/ || exit 1; \
	done

uninstall:
	rm -f $(DESTDIR)$(INCLUDEDIR)/libringbuffer.h $(DESTDIR)$(LIBDIR)/libringbuffer.* \
		$(DESTDIR)$(PKGCONFIGDIR)/libringbuffer.pc $(DESTDIR)$(BINDIR)/ringpipe
	rm -rf $(DESTDIR)$(LIBDIR)/ringpipe
	for m in $(notdir $(MANPAGES)); do rm -f $(DESTDIR)$(MANDIR)/man$${m##*.}/$$m; done

clean:
	rm -rf selftests/out .vm userspace/tests/out userspace/*.o userspace/*.a userspace/*.so \
		userspace/ringpipe
