# kernelbot: one Makefile for the binary, its tests and its installation.
#
#   make            build build/kernelbot (installs missing Debian packages first)
#   make test       unit, harness, fuzz-corpus and end-to-end tests (CI runs this)
#   make SANITIZE=address,undefined test
#   make lint       static analysis
#   make demo       build, then `kernelbot demo`: a sample repository, serve, a push, PRs
#   make install    PREFIX=/usr/local DESTDIR=
#   make device-bundle   the binary, its shared libraries and the harness in
#                        device-bundle/, to carry to a GPU machine

PREFIX ?= /usr/local
DESTDIR ?=
SYSTEMD_UNITDIR ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
CC ?= cc
SANITIZE ?=
WERROR ?= 1
BUILD ?= build/$(if $(SANITIZE),san,default)

PKGS := jansson yaml-0.1 libgit2 libcurl libsodium libmicrohttpd sqlite3 \
	libcrypto libsystemd libseccomp
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wvla -Wformat=2

# Recursive (=) on purpose: pkg-config runs when a recipe needs the flags,
# after the deps target has installed the packages that provide them.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS = $(shell pkg-config --libs $(PKGS))
OPT ?= -O2 -g
SAN_FLAGS = $(if $(SANITIZE),-fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all)
KB_CPPFLAGS = -I. -I$(BUILD)/gen -D_GNU_SOURCE -DKB_DATADIR='"$(PREFIX)/share/kernelbot"'
KB_CFLAGS = -std=c17 $(OPT) $(WARN) $(if $(filter 1,$(WERROR)),-Werror) \
	-pthread -fstack-protector-strong $(SAN_FLAGS) $(PKG_CFLAGS) $(CFLAGS)
# Full RELRO: the GOT read-only once loaded, so a candidate in the worker's
# process cannot hook the worker's calls through it (gpu/sandbox_seccomp.c).
KB_LDFLAGS = -pthread -Wl,-z,relro,-z,now $(SAN_FLAGS) $(LDFLAGS)
KB_LIBS = $(PKG_LIBS) -ldl -lm $(LDLIBS)

SRC_DIRS := common conf store gpu gitops pipeline webhooks coord cli
MAIN_SRC := cli/main.c
# Sources one level deep, plus pipeline's stage folders (pipeline/compiler/...).
LIB_SRCS := $(filter-out $(MAIN_SRC),$(wildcard $(addsuffix /*.c,$(SRC_DIRS)) pipeline/*/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
LIB := $(BUILD)/libkernelbot.a
BIN := $(BUILD)/kernelbot

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
TEST_HELPER_SRCS := $(wildcard tests/helpers/*.c)
TEST_HELPER_BINS := $(TEST_HELPER_SRCS:tests/helpers/%.c=$(BUILD)/tests/helpers/%)
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=$(BUILD)/tests/%)

.PHONY: all deps test test-unit test-gpu lint install install-data device-bundle clean fuzz \
	bench bench-gpu demo
.DEFAULT_GOAL := all

all: deps $(BIN)

deps:
	@sh scripts/install-deps.sh

$(BUILD)/obj/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(KB_CPPFLAGS) $(KB_CFLAGS) -MMD -MP -c -o $@ $<

# Python files compiled in as C string literals (pipeline/report/report_py.c).
$(BUILD)/gen/%.py.inc: %.py
	@mkdir -p $(dir $@)
	sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $< > $@

$(BUILD)/obj/pipeline/report/report_py.o: $(BUILD)/gen/pipeline/report/loader.py.inc \
	$(BUILD)/gen/pipeline/report/test_kernel.py.inc

$(LIB): $(LIB_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

$(BIN): $(BUILD)/obj/$(MAIN_SRC:.c=.o) $(LIB)
	$(CC) $(KB_LDFLAGS) -o $@ $^ $(KB_LIBS)

$(BUILD)/tests/%: tests/unit/%.c tests/unit/t.h $(LIB) | deps
	@mkdir -p $(dir $@)
	$(CC) $(KB_CPPFLAGS) $(KB_CFLAGS) $(KB_LDFLAGS) -o $@ $< $(LIB) $(KB_LIBS)

# Helpers may call into the library (a worker calling sandbox_lockdown()).
$(BUILD)/tests/helpers/%: tests/helpers/%.c $(LIB) | deps
	@mkdir -p $(dir $@)
	$(CC) $(KB_CPPFLAGS) $(KB_CFLAGS) $(KB_LDFLAGS) -o $@ $< $(LIB) $(KB_LIBS)

test: all $(UNIT_BINS) $(TEST_HELPER_BINS) $(FUZZ_BINS)
	@BUILD=$(BUILD) sh tests/run.sh

test-unit: all $(UNIT_BINS) $(TEST_HELPER_BINS)
	@BUILD=$(BUILD) sh tests/run.sh unit

# Fuzz targets linked with the corpus replay driver: `make test` replays
# tests/fuzz/corpus/NAME/ through each (no libFuzzer needed).
$(BUILD)/tests/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(wildcard tests/fuzz/*.h) $(LIB) | deps
	@mkdir -p $(dir $@)
	$(CC) $(KB_CPPFLAGS) $(KB_CFLAGS) $(KB_LDFLAGS) -o $@ $< tests/fuzz/replay.c $(LIB) $(KB_LIBS)

# Real libFuzzer binaries in build/fuzz/ (clang is installed for this
# target only). libFuzzer adds what it finds to the first directory it is
# given, so give it a scratch copy: build/fuzz/fuzz_github NEW_DIR tests/fuzz/corpus/github
FUZZ_FLAGS := -fsanitize=fuzzer,address,undefined -fno-omit-frame-pointer -O1 -g
fuzz:
	@sh scripts/install-deps.sh clang
	$(MAKE) BUILD=build/fuzz CC=clang WERROR=0 OPT="-O1 -g" \
		CFLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer" build/fuzz/libkernelbot.a
	for t in $(FUZZ_SRCS:tests/fuzz/%.c=%); do \
		clang $(KB_CPPFLAGS) -std=c17 $(FUZZ_FLAGS) $(PKG_CFLAGS) -o build/fuzz/$$t \
			tests/fuzz/$$t.c build/fuzz/libkernelbot.a $(KB_LIBS) -pthread || exit 1; \
	done
	@echo "fuzz: run e.g. mkdir -p /tmp/c && build/fuzz/fuzz_github -max_total_time=60 /tmp/c tests/fuzz/corpus/github"

# The webhook intake benchmark (docs/BENCHMARKS.md).
$(BUILD)/bench/loadgen: bench/loadgen.c $(LIB) | deps
	@mkdir -p $(dir $@)
	$(CC) $(KB_CPPFLAGS) $(KB_CFLAGS) $(KB_LDFLAGS) -o $@ $< $(LIB) $(KB_LIBS)

bench: all $(BUILD)/bench/loadgen
	BUILD=$(BUILD) sh bench/webhook.sh $(BENCH_ARGS)

# On a GPU host: the evaluator's CUDA exploit suite and the 01 problem end
# to end; the graph compiler's kernels for the 16 development problems
# judged by the evaluator (tests/gpu/compiler-gpu.sh); their kept scratch
# under several streams and graph capture (scratch-gpu.sh); the
# coordinator, the PR's drop-in module, its reproduce command and the LLM proposer on CUDA. No build step: a GPU
# host without the build dependencies runs a carried device-bundle/ (see
# tests/gpu/eval-gpu.sh). Every script runs; any failure fails the target.
test-gpu:
	rc=0; for t in eval-gpu compiler-gpu scratch-gpu coord-gpu report-gpu repro-gpu llm-gpu profile-gpu; do \
		sh tests/gpu/$$t.sh || rc=1; done; exit $$rc

# On a GPU host: evaluator throughput and repeatability (docs/BENCHMARKS.md).
bench-gpu:
	sh bench/eval_throughput.sh

lint: deps
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability \
		--inline-suppr --std=c11 -D_GNU_SOURCE -I. \
		--include=/usr/include/jansson.h $(SRC_DIRS)
	for f in $(wildcard scripts/*.sh tests/*.sh tests/e2e/*.sh tests/gpu/*.sh tests/compiler/*.sh bench/*.sh); do \
		sh -n "$$f" || exit 1; done
	/usr/bin/python3 -m compileall -q gpu/harness pipeline/report >/dev/null
	sh scripts/check-layers.sh

install: all install-data
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/kernelbot
	$(call copy_harness,$(DESTDIR)$(PREFIX)/share/kernelbot/harness)
	$(call copy_prompts,$(DESTDIR)$(PREFIX)/share/kernelbot/prompts)

# The whole loop on examples/ (kernelbot demo): builds first, like `make test`.
DEMO_ARGS ?=
demo: all
	$(BIN) demo $(DEMO_ARGS)

# Everything but the binary (no build needed): the systemd units with
# PREFIX filled in, sysusers.d and tmpfiles.d entries, the examples the demo
# uses, the documentation the units point to.
install-data:
	install -d $(DESTDIR)$(SYSTEMD_UNITDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(TMPFILESDIR) \
		$(DESTDIR)$(PREFIX)/share/doc/kernelbot $(DESTDIR)$(PREFIX)/share/kernelbot
	for u in systemd/*.service; do \
		sed 's|@PREFIX@|$(PREFIX)|g' "$$u" >"$(DESTDIR)$(SYSTEMD_UNITDIR)/$${u#systemd/}" && \
		chmod 0644 "$(DESTDIR)$(SYSTEMD_UNITDIR)/$${u#systemd/}" || exit 1; done
	install -m 0644 systemd/kernelbot.sysusers $(DESTDIR)$(SYSUSERSDIR)/kernelbot.conf
	install -m 0644 systemd/kernelbot.tmpfiles $(DESTDIR)$(TMPFILESDIR)/kernelbot.conf
	install -m 0644 README.md kernelbot.example.yml $(DESTDIR)$(PREFIX)/share/doc/kernelbot/
	rm -rf $(DESTDIR)$(PREFIX)/share/kernelbot/examples
	cp -R examples $(DESTDIR)$(PREFIX)/share/kernelbot/examples

# The harness's Python files, package folders included, without caches.
copy_harness = cd gpu/harness && find . -name '*.py' -not -path '*/__pycache__/*' | \
	while read -r f; do install -D -m 0644 "$$f" "$(abspath $(1))/$$f" || exit 1; done

# The LLM prompt templates (pipeline/prompts/, docs/llm.md).
copy_prompts = install -d "$(abspath $(1))" && \
	install -m 0644 pipeline/prompts/*.md pipeline/prompts/*.txt "$(abspath $(1))/"

# The GPU machine lacks libgit2, libsodium, libmicrohttpd and the rest:
# bundle the binary with every non-libc library it links.
device-bundle: all
	rm -rf device-bundle
	mkdir -p device-bundle/lib device-bundle/include
	cp $(BIN) device-bundle/kernelbot
	cp -r /usr/include/dlpack device-bundle/include/
	$(call copy_harness,device-bundle/harness)
	$(call copy_prompts,device-bundle/prompts)
	ldd $(BIN) | awk '$$3 ~ /^\// { print $$3 }' | \
		grep -Ev '/(libc|libm|libdl|libpthread|librt|libresolv|ld-linux[^/]*)\.so' | \
		xargs -r -I{} cp -L {} device-bundle/lib/
	printf '%s\n' 'd=$$(cd "$$(dirname "$$0")" 2>/dev/null && pwd)' \
		'export LD_LIBRARY_PATH="$$d/lib$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}"' \
		'exec "$$d/kernelbot" "$$@"' > device-bundle/run
	chmod +x device-bundle/run
	(git describe --always --dirty 2>/dev/null || echo unknown) > device-bundle/COMMIT
	@echo "device-bundle: $$(ls device-bundle/lib | wc -l) libraries; run device-bundle/run CMD"

clean:
	rm -rf build device-bundle

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
