# GPU merge sort lab: every entry point. `make help` lists them.
#
#   make part1 && ./part1         the Part 1 demo
#   make test                     all graders (GPU tests are skipped, and say so, without a GPU)
#   make sanitize                 compute-sanitizer memcheck, racecheck, synccheck on the GPU tests
#   IMPL=student make test        build and grade the student skeleton / your solution
#   ARCH=sm_90 DEBUG=1 ...        target GPU (default: the one in this machine); device debug build

NVCC  ?= nvcc
ARCH  ?= native
DEBUG ?= 0

# reference where the instructor files exist, student otherwise (the student release)
IMPL ?= $(if $(wildcard part1_merge_path/reference.cu),reference,student)
ifeq ($(filter $(IMPL),reference student),)
$(error IMPL must be 'reference' or 'student', not '$(IMPL)')
endif
ifeq ($(IMPL),reference)
ifeq ($(wildcard part1_merge_path/reference.cu),)
$(error IMPL=reference, but this copy has no reference files (a student release): use IMPL=student)
endif
endif

BUILD := build
HOSTFLAGS := -std=c++17 -MMD -MP -Xcompiler -Wall,-Wextra
ifeq ($(DEBUG),1)
HOSTFLAGS += -g -O0 -DLAB_SYNC_LAUNCHES
DEVFLAGS  := -G
else
HOSTFLAGS += -O3
DEVFLAGS  := -lineinfo
endif
CUFLAGS := $(HOSTFLAGS) $(DEVFLAGS) -arch=$(ARCH)
LDFLAGS :=

# Catch2: v3 (a library) or v2 (one header), where the distribution installs it.
CATCH2_V3 := $(wildcard /usr/include/catch2/catch_test_macros.hpp /usr/local/include/catch2/catch_test_macros.hpp)
CATCH2_V2 := $(wildcard /usr/include/catch2/catch.hpp /usr/local/include/catch2/catch.hpp)
CATCH_LIBS := $(if $(CATCH2_V3),-lCatch2)

COMMON_OBJS := $(patsubst %.cpp,$(BUILD)/%.o,$(wildcard common/*.cpp))
TEST_MAIN   := $(BUILD)/tests/main.o

# ---------------------------------------------------------------- compile
$(BUILD)/%.o: %.cpp
	@mkdir -p $(@D)
	$(NVCC) $(HOSTFLAGS) -c $< -o $@

# demo drivers do not depend on IMPL
$(BUILD)/%.o: %.cu
	@mkdir -p $(@D)
	$(NVCC) $(CUFLAGS) -c $< -o $@

# implementation files, one object per IMPL so switching never mixes them
$(BUILD)/$(IMPL)/%.o: %.cu
	@mkdir -p $(@D)
	$(NVCC) $(CUFLAGS) -c $< -o $@

# ---------------------------------------------------------------- Part 1
PART1_IMPL := $(BUILD)/$(IMPL)/part1_merge_path/$(IMPL).o

$(BUILD)/$(IMPL)/part1: $(BUILD)/part1_merge_path/main.o $(PART1_IMPL) $(COMMON_OBJS)
	$(NVCC) $(CUFLAGS) $^ -o $@ $(LDFLAGS)

.PHONY: part1
part1: $(BUILD)/$(IMPL)/part1
	@cp $< $@
	@echo "built ./part1 ($(IMPL)); run it with ./part1 (./part1 --help for options)"

# ---------------------------------------------------------------- tests
$(BUILD)/test_common: $(TEST_MAIN) $(BUILD)/tests/test_common.o $(COMMON_OBJS)
	$(NVCC) $^ -o $@ $(CATCH_LIBS)

$(BUILD)/$(IMPL)/test_part1: $(TEST_MAIN) $(BUILD)/tests/test_part1.o $(PART1_IMPL) $(COMMON_OBJS)
	$(NVCC) $(CUFLAGS) $^ -o $@ $(CATCH_LIBS)

TEST_BINS := $(BUILD)/test_common $(BUILD)/$(IMPL)/test_part1
GPU_TEST_BINS := $(BUILD)/$(IMPL)/test_part1

.PHONY: test run-tests tests
test:
ifeq ($(CATCH2_V3)$(CATCH2_V2),)
	@sh tests/install_catch2.sh
	@$(MAKE) --no-print-directory run-tests
else
	@$(MAKE) --no-print-directory run-tests
endif

tests: $(TEST_BINS)

# Every binary runs even when one fails; the status says whether any did.
run-tests: $(TEST_BINS)
	@status=0; for t in $(TEST_BINS); do \
	  echo "==> $$t $(TEST_ARGS)"; ./$$t $(TEST_ARGS) || status=1; echo; \
	done; exit $$status

# compute-sanitizer over the GPU tests, sampled sizes (LAB_QUICK) to keep it short.
SANITIZE_TOOLS := memcheck racecheck synccheck
.PHONY: sanitize
sanitize: $(GPU_TEST_BINS)
	@status=0; for tool in $(SANITIZE_TOOLS); do for t in $(GPU_TEST_BINS); do \
	  echo "==> compute-sanitizer --tool $$tool $$t [gpu]"; \
	  LAB_QUICK=1 compute-sanitizer --tool $$tool --error-exitcode 99 ./$$t "[gpu]" || status=1; \
	done; done; exit $$status

# ---------------------------------------------------------------- misc
.PHONY: clean help
clean:
	rm -rf $(BUILD) part1

help:
	@echo "make part1            build the Part 1 demo as ./part1"
	@echo "make test             build and run every grader (TEST_ARGS='[Q1]' picks tests)"
	@echo "make sanitize         compute-sanitizer memcheck, racecheck, synccheck on the GPU tests"
	@echo "make clean            remove build/ and the demo binaries"
	@echo "variables: IMPL=reference|student (now $(IMPL)), ARCH=native|sm_90|... (now $(ARCH)), DEBUG=1"

ALL_OBJS := $(COMMON_OBJS) $(TEST_MAIN) $(BUILD)/tests/test_common.o $(BUILD)/tests/test_part1.o \
            $(BUILD)/part1_merge_path/main.o $(PART1_IMPL)
-include $(ALL_OBJS:.o=.d)
