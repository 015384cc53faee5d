# vitmae — build, test, demo, bench.
# `make` builds ./vitmae; `make test` builds and runs every test (normal build, then ASan+UBSan);
# `make demo` trains on Fashion-MNIST; `make bench` measures speed.
# Sources are found by wildcard: src/<layer>/*.c is the program (src/cmd/main.c holds main; the layers
# are listed in SRC_DIRS, lowest first), tests/test_*.c are test programs (each links the program's
# objects), tools/*.c are developer tools.

CC       ?= cc
PKGS     := libpng zlib libdeflate libjpeg libcjson libexif libwebp libwebpdemux cairo fontconfig ompi-c
# -mprefer-vector-width=512: GCC's tuning for the AVX-512 Intel CPUs keeps loops it vectorises at 256
# bits; full-width vectors make the elementwise kernels (GELU, LayerNorm, ...) faster there. Each
# element gets the same operations either way, so results are unchanged (docs/performance.md, "Intel
# Xeon: the transposed product's B in place, full-width vectors"). No effect on CPUs without AVX-512.
ARCH     ?= -march=native -mprefer-vector-width=512
OPT      ?= -O3 $(ARCH)
# -Wno-format-truncation where the compiler has it (gcc; clang would warn that it does not know it).
WARN     := -Wall -Wextra -Wno-unused-parameter \
            $(shell $(CC) -Werror -Wno-format-truncation -x c -c /dev/null -o /dev/null 2>/dev/null && echo -Wno-format-truncation)
STD      := -std=c11 -D_GNU_SOURCE -fopenmp -fno-math-errno -ffp-contract=off
# -fno-math-errno: sqrtf and friends inline and vectorise (nothing reads errno after math). It is
# not the fast-math family: IEEE results are unchanged. -ffp-contract=off: no a * b + c fused into one
# FMA unless the code says so (gcc's rule in ISO C mode already; clang's default fuses), so gcc and
# clang builds give bitwise the same results (docs/design.md, "Determinism").
# Warnings are errors for tests and CI (`make test` sets WERROR=1).
WERROR   ?= 0
ifeq ($(WERROR),1)
WARN     += -Werror
endif
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS   = $(STD) $(OPT) $(WARN) $(PKG_CFLAGS) -Isrc
LDLIBS   = $(PKG_LIBS) -lm -fopenmp

# GCC's `undefined` group leaves out float-cast-overflow (a float converted to an integer type that cannot
# hold it, e.g. `(int)1e10` or `(long)NaN`: undefined behaviour in C11 6.3.1.4); it is named here, in the
# sanitizer list and in the list that aborts instead of printing and going on.
SAN_CHECKS = address,undefined,float-cast-overflow
SAN_CFLAGS = $(STD) -O1 -g -fno-omit-frame-pointer -fsanitize=$(SAN_CHECKS) \
              -fno-sanitize-recover=undefined,float-cast-overflow $(ARCH) $(WARN) $(PKG_CFLAGS) -Isrc
SAN_LDLIBS = -fsanitize=$(SAN_CHECKS) $(LDLIBS)

SRC_DIRS  := src/kernels src/kernels/x86 src/core src/io src/data src/dist src/infer src/viz src/cmd
MAIN_SRC  := src/cmd/main.c
LIB_SRC   := $(filter-out $(MAIN_SRC),$(foreach d,$(SRC_DIRS),$(wildcard $(d)/*.c)))
HDRS      := $(foreach d,$(SRC_DIRS),$(wildcard $(d)/*.h))
TEST_SRC  := $(wildcard tests/test_*.c)
TOOL_SRC  := $(wildcard tools/*.c)

OBJ       := $(LIB_SRC:src/%.c=build/obj/%.o)
TESTS     := $(TEST_SRC:tests/%.c=build/tests/%)
# tests/fault_shim.c: the tests' fault shim for LD_PRELOAD, build/tools/fault.so (docs/testing.md); it
# defines the C library's names, so it lives with the tests, not among the tools that use src/.
TOOLS     := $(TOOL_SRC:tools/%.c=build/tools/%) build/tools/fault.so
SAN_OBJ   := $(LIB_SRC:src/%.c=build/san/obj/%.o)
SAN_TESTS := $(TEST_SRC:tests/%.c=build/san/tests/%)

DEPS_STAMP := build/.deps-ok
# `make V=1` prints whole commands.
Q := $(if $(V),,@)

.PHONY: all test test-fast test-san test-san-part test-full test-deps build-san test-parity parity-sweep train-parity demo finetune-demo bench bench-data fixtures clean deps fuzz fmnist \
        valgrind tsan build-fast mutate gallery-check install uninstall FORCE
all: vitmae $(TOOLS)

# The version (`vitmae --version`, and "vitmae_version" in checkpoints and config.json): `git describe
# --always --dirty` when this folder is the top of a git checkout, else VERSION (a copy of the source
# without git, or inside another project's repository). Only src/core/version.c holds it; build/version.txt
# is rewritten only when the text changes, so a commit or an edit rebuilds that one object and relinks,
# and a make with nothing changed does nothing (`make -q` says it is up to date, `make -n` lists nothing:
# the file is out of date only when its text differs). Characters other than letters, digits and ._+- are
# dropped.
VERSION  := 0.1.0
GIT_VERSION   := $(shell p=$$(git rev-parse --show-prefix 2>/dev/null) && [ -z "$$p" ] && git describe --always --dirty 2>/dev/null)
BUILD_VERSION := $(or $(shell printf '%s' '$(subst ','',$(or $(GIT_VERSION),$(VERSION)))' | tr -cd 'A-Za-z0-9._+-'),unknown)
VERSION_OBJS  := $(foreach d,build/obj build/san/obj build/fuzz/obj build/vg/obj build/tsan/obj,$(d)/core/version.o)
$(VERSION_OBJS): VERSION_DEFS = -DVITMAE_VERSION='"$(BUILD_VERSION)"'
$(VERSION_OBJS): build/version.txt
ifneq ($(shell cat build/version.txt 2>/dev/null),$(BUILD_VERSION))
build/version.txt: FORCE
endif
build/version.txt:
	@mkdir -p build
	@echo '$(BUILD_VERSION)' > $@
FORCE:

# `make install` copies the one file vitmae needs, the binary, to $(DESTDIR)$(PREFIX)/bin (it reads
# nothing else of this folder at run time); `make uninstall` removes it.
PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
install: vitmae
	install -d '$(DESTDIR)$(BINDIR)'
	install -m 755 vitmae '$(DESTDIR)$(BINDIR)/vitmae'
uninstall:
	rm -f '$(DESTDIR)$(BINDIR)/vitmae'

# Installs missing Debian packages (when root) or prints the exact command (when not).
$(DEPS_STAMP): tools/install-deps.sh
	@mkdir -p build
	@sh tools/install-deps.sh build
	@touch $@
deps: $(DEPS_STAMP)

build/obj/%.o: src/%.c $(HDRS) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC $@"
	$(Q)$(CC) $(CFLAGS) $(VERSION_DEFS) -c $< -o $@
build/libvitmae.a: $(OBJ)
	@rm -f $@
	$(Q)ar rcs $@ $^
vitmae: $(MAIN_SRC) build/libvitmae.a
	@echo "  CC $@"
	$(Q)$(CC) $(CFLAGS) $< build/libvitmae.a $(LDLIBS) -o $@
# tests/test_alloc_fail.c fails chosen allocations of the program's code: the linker sends the library's
# calls of these functions to the test's own (__wrap_malloc, ...), which call the real ones (__real_malloc).
ALLOC_WRAP := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=stat
build/tests/test_alloc_fail build/san/tests/test_alloc_fail: TEST_LDFLAGS = $(ALLOC_WRAP)
# tests/test_step_alloc.c counts the allocations of the program's code during training steps.
STEP_ALLOC_WRAP := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=aligned_alloc
build/tests/test_step_alloc build/san/tests/test_step_alloc: TEST_LDFLAGS = $(STEP_ALLOC_WRAP)
build/tests/%: tests/%.c build/libvitmae.a $(wildcard tests/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC $@"
	$(Q)$(CC) $(CFLAGS) -Itests $< build/libvitmae.a $(LDLIBS) $(TEST_LDFLAGS) -o $@
build/tools/fault.so: tests/fault_shim.c
	@mkdir -p $(dir $@)
	@echo "  CC $@"
	$(Q)$(CC) -std=c11 -O2 -fPIC -shared $(WARN) $< -o $@ -ldl
build/tools/%: tools/%.c build/libvitmae.a
	@mkdir -p $(dir $@)
	@echo "  CC $@"
	$(Q)$(CC) $(CFLAGS) $< build/libvitmae.a $(LDLIBS) -o $@

build/san/obj/%.o: src/%.c $(HDRS) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC $@"
	$(Q)$(CC) $(SAN_CFLAGS) $(VERSION_DEFS) -c $< -o $@
build/san/libvitmae.a: $(SAN_OBJ)
	@rm -f $@
	$(Q)ar rcs $@ $^
build/san/vitmae: $(MAIN_SRC) build/san/libvitmae.a
	@echo "  CC $@"
	$(Q)$(CC) $(SAN_CFLAGS) $< build/san/libvitmae.a $(SAN_LDLIBS) -o $@
build/san/tests/%: tests/%.c build/san/libvitmae.a $(wildcard tests/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC $@"
	$(Q)$(CC) $(SAN_CFLAGS) -Itests $< build/san/libvitmae.a $(SAN_LDLIBS) $(TEST_LDFLAGS) -o $@
# A fuzz replay (tests/test_fuzz_<name>.c) includes its target and tests/fuzz/replay.h: rebuilt when
# either changes, or `make test` would replay the target as it was (docs/testing.md, "Fuzzing").
$(filter build/tests/test_fuzz_%,$(TESTS)): build/tests/test_fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.h
$(filter build/san/tests/test_fuzz_%,$(SAN_TESTS)): build/san/tests/test_fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.h

# `make test`: every test on the optimised build, then the sanitizer pass over every test program and
# the command-line tests in SAN_CLI; `make test-san` runs every test under the sanitizers, `make
# test-full` both whole passes (docs/testing.md, "Running": what each pass covers, and why make test
# takes a part). tests/cli_formats.sh compares our decoders with PIL (python3-pil, python3-numpy),
# tests/cli_atomic.sh watches checkpoint writes with strace: installed when root, else the tests say
# they were skipped.
# The command-line tests whose subject is what the sanitizers see best: every command's allocation
# failures (leaks on the failure paths), the decoders and the folder scan fed broken files, hostile
# checkpoint headers, failed and partial writes, memory limits.
SAN_CLI := tests/cli_fault.sh tests/cli_formats.sh tests/cli_data.sh tests/cli_info.sh \
           tests/cli_diskfull.sh tests/cli_memory.sh tests/cli_atomic.sh tests/cli_gallery.sh
SAN_ENV  = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
           LSAN_OPTIONS='suppressions="$(CURDIR)/tests/lsan.supp":print_suppressions=0' VITMAE_SANITIZED=1
# Both builds first, TEST_BUILD_JOBS compilers at once (the CI machine's 2 cores), unless the caller gave
# make a -j of its own: compiled one file at a time, they took 172 of a fresh clone's 879 s of CI on the
# Zen 5 of the eighty-fourth session (docs/testing.md, "Running").
TEST_BUILD_JOBS ?= 2
TEST_BUILD = @$(MAKE) --no-print-directory WERROR=1 $(if $(filter -j%,$(MAKEFLAGS)),,-j$(TEST_BUILD_JOBS)) build-fast build-san
test: test-deps
	$(TEST_BUILD)
	@$(MAKE) --no-print-directory WERROR=1 test-fast
	@$(MAKE) --no-print-directory WERROR=1 test-san-part
	@echo "make test: passed; the sanitizers ran over the test programs and $(words $(SAN_CLI)) of the $(words $(wildcard tests/cli_*.sh)) command-line tests (make test-san runs every test under them; docs/testing.md, \"Running\")"
test-full: test-deps
	$(TEST_BUILD)
	@$(MAKE) --no-print-directory WERROR=1 test-fast
	@$(MAKE) --no-print-directory WERROR=1 test-san
test-deps:
	@sh tools/install-deps.sh build python3-pil python3-numpy strace 2>/dev/null || \
	  echo "vitmae: test: python3-pil / python3-numpy / strace missing; cli_formats.sh / cli_atomic.sh will be skipped"

build-fast: vitmae $(TOOLS) $(TESTS)
test-fast: build-fast
	@sh tests/run.sh build/tests ./vitmae build/tools

build-san: vitmae $(TOOLS) build/san/vitmae $(SAN_TESTS)
test-san: build-san
	@$(SAN_ENV) sh tests/run.sh build/san/tests build/san/vitmae build/tools
# tests/run.sh passes over a name it cannot find: a SAN_CLI entry renamed or gone stops the pass here
# instead of leaving the sanitizers off that test unsaid.
test-san-part: build-san
	$(if $(filter-out $(wildcard $(SAN_CLI)),$(SAN_CLI)),$(error SAN_CLI names a test that is not there: $(filter-out $(wildcard $(SAN_CLI)),$(SAN_CLI))))
	@$(SAN_ENV) sh tests/run.sh build/san/tests build/san/vitmae build/tools $(SAN_TESTS) $(SAN_CLI)

# libFuzzer targets tests/fuzz/fuzz_<name>.c, built with clang (installed by tools/install-deps.sh when
# missing) and run one at a time, FUZZ_SECONDS each, niced, over a working corpus in build/fuzz/corpus/<name>
# seeded from tests/fuzz/corpus/<name>. Crashes land in build/fuzz/artifacts/. One target:
# `make fuzz FUZZ_TARGETS=image FUZZ_SECONDS=60`. The fuzz build has no OpenMP (pragmas ignored).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 600
FUZZERS      := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_TARGETS ?= $(FUZZERS)
FUZZ_FLAGS   ?= -rss_limit_mb=2048 -timeout=10 -close_fd_mask=3
FUZZ_CFLAGS   = -std=c11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined \
                -fno-sanitize-recover=undefined $(filter-out -Wno-format-truncation,$(WARN)) -Wno-unknown-pragmas $(PKG_CFLAGS) -Isrc
FUZZ_OBJ     := $(LIB_SRC:src/%.c=build/fuzz/obj/%.o)

build/fuzz/.deps-ok: tools/install-deps.sh
	@mkdir -p build/fuzz
	@sh tools/install-deps.sh build clang libclang-rt-14-dev
	@touch $@
build/fuzz/obj/%.o: src/%.c $(HDRS) | build/fuzz/.deps-ok $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(VERSION_DEFS) -c $< -o $@
build/fuzz/libvitmae.a: $(FUZZ_OBJ)
	@rm -f $@
	ar rcs $@ $^
# No -fopenmp, but the kernels call the OpenMP runtime (omp_get_thread_num, omp_get_wtime, ...): gcc's
# libgomp answers those calls as for one thread (without it no target linked).
build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c build/fuzz/libvitmae.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< build/fuzz/libvitmae.a $(PKG_LIBS) -lm -lgomp -o $@

# Every target runs its time, also after one crashed; then the run fails naming each that crashed and
# the input that crashed it (libFuzzer's "Test unit written to ..."), or its log when it wrote none.
fuzz: $(FUZZ_TARGETS:%=build/fuzz/fuzz_%)
	@mkdir -p build/fuzz/artifacts
	@crashed=; for n in $(FUZZ_TARGETS); do \
	  mkdir -p build/fuzz/corpus/$$n; \
	  echo "fuzz $$n: $(FUZZ_SECONDS) s"; \
	  if nice -n 10 build/fuzz/fuzz_$$n -max_total_time=$(FUZZ_SECONDS) $(FUZZ_FLAGS) -print_final_stats=1 \
	    -artifact_prefix=build/fuzz/artifacts/$$n- build/fuzz/corpus/$$n tests/fuzz/corpus/$$n \
	    > build/fuzz/$$n.log 2>&1; then \
	    grep -E '^stat::number_of_executed_units|^#[0-9]+ *DONE' build/fuzz/$$n.log | tail -n 2; \
	  else tail -n 60 build/fuzz/$$n.log; crashed="$$crashed $$n"; fi; \
	done; \
	[ -z "$$crashed" ] || { echo "make fuzz: these targets crashed:"; for n in $$crashed; do \
	  unit=$$(sed -n 's/.*Test unit written to //p' build/fuzz/$$n.log | tail -n 1); \
	  echo "  $$n: $${unit:-no crash file (see build/fuzz/$$n.log)}"; done; exit 1; }

# valgrind (memcheck) on a short train / reconstruct / attention / finetune / classify / embed / probe,
# with a binary built without -march=native (valgrind does not emulate AVX-512) at -O1 -g. A minute or
# two; not part of `make test`.
VG_OBJ := $(LIB_SRC:src/%.c=build/vg/obj/%.o)
build/vg/obj/%.o: src/%.c $(HDRS) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(STD) -O1 -g $(WARN) $(PKG_CFLAGS) -Isrc $(VERSION_DEFS) -c $< -o $@
build/vg/vitmae: $(MAIN_SRC) $(VG_OBJ)
	$(CC) $(STD) -O1 -g $(WARN) $(PKG_CFLAGS) -Isrc $^ $(LDLIBS) -o $@
valgrind: build/vg/vitmae $(TOOLS)
	@sh tools/install-deps.sh build valgrind
	sh tests/valgrind.sh build/vg/vitmae build/tools

# ThreadSanitizer (clang, LLVM's OpenMP runtime and its Archer tool, which tells TSan what OpenMP's
# barriers and forks order) on short runs of every command at 2, 3 and 4 threads and on the test programs
# that run threads (tests/tsan.sh): no data race between threads. A few minutes; not part of `make test`.
# Its training run must end bitwise equal to ./vitmae's (gcc -O3 or whatever built it): STD's
# -ffp-contract=off makes the results the compiler's to keep.
TSAN_CC     ?= clang
TSAN_CFLAGS  = $(STD) -O1 -g -fno-omit-frame-pointer -fsanitize=thread $(ARCH) \
               $(filter-out -Wno-format-truncation,$(WARN)) $(PKG_CFLAGS) -Isrc
TSAN_OBJ    := $(LIB_SRC:src/%.c=build/tsan/obj/%.o)
TSAN_TESTS  := test_loader test_dataset test_ops test_gemm test_model test_optim test_dist test_probe test_recon test_classifier test_npy
build/tsan/.deps-ok: tools/install-deps.sh
	@mkdir -p build/tsan
	@sh tools/install-deps.sh build clang libclang-rt-14-dev libomp-14-dev
	@touch $@
build/tsan/obj/%.o: src/%.c $(HDRS) | build/tsan/.deps-ok $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC $@"
	$(Q)$(TSAN_CC) $(TSAN_CFLAGS) $(VERSION_DEFS) -c $< -o $@
build/tsan/libvitmae.a: $(TSAN_OBJ)
	@rm -f $@
	$(Q)ar rcs $@ $^
build/tsan/vitmae: $(MAIN_SRC) build/tsan/libvitmae.a
	$(Q)$(TSAN_CC) $(TSAN_CFLAGS) $< build/tsan/libvitmae.a $(PKG_LIBS) -lm -fopenmp -fsanitize=thread -o $@
build/tsan/tests/%: tests/%.c build/tsan/libvitmae.a $(wildcard tests/*.h)
	@mkdir -p $(dir $@)
	$(Q)$(TSAN_CC) $(TSAN_CFLAGS) -Itests $< build/tsan/libvitmae.a $(PKG_LIBS) -lm -fopenmp -fsanitize=thread -o $@
tsan: build/tsan/vitmae vitmae $(TSAN_TESTS:%=build/tsan/tests/%) $(TOOLS)
	sh tests/tsan.sh build/tsan/vitmae ./vitmae build/tools build/tsan/tests $(TSAN_TESTS)

# Fashion-MNIST as PNG folders in datasets/fashion-mnist/{train,test}/<class>/ (once; a stamp file).
fmnist: build/tools/fmnist2png
	@sh datasets/fashion-mnist.sh

# The demo: Fashion-MNIST -> a tiny MAE trained for about 5 minutes -> test scores, kNN and linear-probe
# accuracy of its frozen features beside raw pixels (a few minutes more), reconstruction panels and
# attention maps under demo/ (tools/demo.sh says where). DEMO_STEPS=N to train longer.
DEMO_STEPS ?= 1000
demo: deps vitmae $(TOOLS) fmnist
	@sh tools/demo.sh $(DEMO_STEPS)

# Fine-tuning: the demo's pretrained encoder and a from-scratch model of the same shape, the same recipe
# and budget (FT_STEPS steps of 64 images each), on Fashion-MNIST; prints both test accuracies
# (tools/finetune_demo.sh). Runs `make demo`'s pretraining first when demo/run has no checkpoint.
FT_STEPS ?= 600
finetune-demo: deps vitmae $(TOOLS) fmnist
	@sh tools/finetune_demo.sh $(FT_STEPS)

# The picture pages in a real browser: headless Chromium (Debian's chromium, installed when missing
# and root) renders demo/'s pages (after `make demo`; else a small gallery from the test fixtures),
# saves screenshots in build/gallery/screenshots/, and fails when any picture does not load.
# GALLERY=DIR_OR_PAGE... checks other pages. Not part of `make test` (Chromium is large).
gallery-check: vitmae $(TOOLS)
	@sh tools/install-deps.sh build chromium
	@sh tools/gallery_check.sh $(GALLERY)

# Speed: vitmae bench (1 and 2 threads) against PyTorch, a table for each of the bench config (tiny32),
# the small preset and ViT-B/16 at 224 (tools/bench.sh; BENCH_ROWS picks). PyTorch
# (python3-torch) and OpenBLAS (Debian's torch calls the system BLAS; the netlib default is ~50x
# slower, which would make the comparison meaningless) are installed when root, else a note.
bench: vitmae build/tools/bench_data
	@sh tools/install-deps.sh build python3-torch libopenblas0-pthread || \
	  echo "vitmae: bench: PyTorch / OpenBLAS missing; the table may lack torch or show a slow torch"
	@sh tools/install-deps.sh build gnome-backgrounds || \
	  echo "vitmae: bench: Debian's wallpapers (gnome-backgrounds) missing; the data pipeline part needs BENCH_DATA=DIR"
	@sh tools/bench.sh ./vitmae
	@sh tools/bench_pipeline.sh ./vitmae build/tools/bench_data

# Decode throughput on a folder of images, one core, by size class (full decode, working image,
# store read; docs/data.md): `make bench-data BENCH_DATA=DIR BENCH_IMG=64`.
BENCH_DATA ?= /usr/share/backgrounds
BENCH_IMG  ?= 64
bench-data: build/tools/bench_data
	build/tools/bench_data $(BENCH_DATA) --img $(BENCH_IMG) --limit 300

# Mutation testing (not part of `make test`): each one-line mutant of tests/mutants.txt is planted in a
# scratch copy of the tree and the optimised suite runs against it until a test fails; prints KILLED /
# SURVIVED per mutant, the score, the survivors and the time. `make mutate MUTANTS="name ..."` runs some.
mutate: build-fast
	@sh tools/mutate.sh tests/mutants.txt

# Parity fixtures from the PyTorch reference (needs Debian's python3-torch, and python3-torchvision for
# view_timm; `make test` does not).
fixtures:
	/usr/bin/python3 tools/reference.py tests/fixtures
	/usr/bin/python3 tools/reference_recon.py tests/fixtures
	/usr/bin/python3 tools/reference_attention.py tests/fixtures
	/usr/bin/python3 tools/reference_probe.py tests/fixtures
	/usr/bin/python3 tools/reference_classifier.py tests/fixtures
	/usr/bin/python3 tools/reference_posembed.py tests/fixtures
	/usr/bin/python3 tools/reference_resize.py tests/fixtures
	/usr/bin/python3 tools/reference_randaug.py tests/fixtures

# The PyTorch parity test alone.
test-parity: build/tests/test_parity
	VITMAE_ROOT="$(CURDIR)" build/tests/test_parity

# PyTorch parity over PARITY_SWEEP_COUNT random model configurations drawn from PARITY_SWEEP_SEED
# (tools/parity_sweep.py; docs/testing.md, "PyTorch parity"). Needs /usr/bin/python3 with torch; run on
# demand, not part of `make test` (40 configurations: a few minutes on 2 cores).
PARITY_SWEEP_COUNT ?= 40
PARITY_SWEEP_SEED  ?= 1
parity-sweep: build/tests/test_parity vitmae
	/usr/bin/python3 tools/parity_sweep.py --count $(PARITY_SWEEP_COUNT) --seed $(PARITY_SWEEP_SEED)

# `vitmae train` itself against PyTorch at the edges (batch 1, odd sizes, mask extremes, norm-pix, clip):
# tools/train_parity.py; docs/testing.md, "PyTorch parity". Needs /usr/bin/python3 with torch; on demand
# (about 30 s on 2 cores).
train-parity: vitmae
	/usr/bin/python3 tools/train_parity.py

clean:
	rm -rf build vitmae
