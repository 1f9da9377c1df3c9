# GPU merge sort lab: every entry point. `make help` lists them.
#
#   make part1 && ./part1         the Part 1 demo (likewise part2, part3)
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
TEST_MAIN   := $(BUILD)/tests/main.o $(BUILD)/tests/trace.o $(BUILD)/tests/large_tier.o

# CUPTI (launch tracing in the graders) ships with the CUDA toolkit; where it
# lives differs between installs.
CUDA_HOME ?= $(abspath $(dir $(shell command -v $(NVCC)))/..)
CUPTI_INC := $(firstword $(wildcard $(CUDA_HOME)/extras/CUPTI/include))
CUPTI_LIB := $(firstword $(wildcard $(CUDA_HOME)/lib64/libcupti.so $(CUDA_HOME)/lib/libcupti.so \
               $(CUDA_HOME)/extras/CUPTI/lib64/libcupti.so $(CUDA_HOME)/targets/*/lib/libcupti.so))
TEST_LIBS := $(CATCH_LIBS) $(if $(CUPTI_LIB),-L$(dir $(CUPTI_LIB)) -Xlinker -rpath=$(dir $(CUPTI_LIB))) -lcupti
$(BUILD)/tests/trace.o: HOSTFLAGS += $(if $(CUPTI_INC),-I$(CUPTI_INC))

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

# ---------------------------------------------------------------- parts
# Each part: its implementation object (reference or student), the objects
# every build of it links, and the demo's own extra objects.
PART1_IMPL := $(BUILD)/$(IMPL)/part1_merge_path/$(IMPL).o
PART1_OBJS := $(BUILD)/part1_merge_path/small_merge_checks.o
PART1_DEMO :=
PART2_IMPL := $(BUILD)/$(IMPL)/part2_batch/$(IMPL).o
PART2_OBJS := $(BUILD)/part2_batch/batch_shape.o
PART2_DEMO := $(BUILD)/part2_batch/bench_peers.o
PART3_IMPL := $(BUILD)/$(IMPL)/part3_merge_sort/$(IMPL).o
PART3_OBJS := $(BUILD)/part3_merge_sort/shapes.o
PART3_DEMO := $(BUILD)/part3_merge_sort/bench_peers.o

define part_rules
$(BUILD)/$(IMPL)/$(1): $(BUILD)/$(2)/main.o $$($(3)_DEMO) $$($(3)_IMPL) $$($(3)_OBJS) $$(COMMON_OBJS)
	$$(NVCC) $$(CUFLAGS) $$^ -o $$@ $$(LDFLAGS)

.PHONY: $(1)
$(1): $(BUILD)/$(IMPL)/$(1)
	@cp $$< $$@
	@echo "built ./$(1) ($$(IMPL)); run it with ./$(1) (./$(1) --help for options)"

$(BUILD)/$(IMPL)/test_$(1): $$(TEST_MAIN) $(BUILD)/tests/test_$(1).o $$($(3)_IMPL) $$($(3)_OBJS) $$(COMMON_OBJS)
	$$(NVCC) $$(CUFLAGS) $$^ -o $$@ $$(TEST_LIBS)
endef

$(eval $(call part_rules,part1,part1_merge_path,PART1))
$(eval $(call part_rules,part2,part2_batch,PART2))
$(eval $(call part_rules,part3,part3_merge_sort,PART3))
PARTS := part1 part2 part3

# ---------------------------------------------------------------- tests
$(BUILD)/test_common: $(TEST_MAIN) $(BUILD)/tests/test_common.o $(COMMON_OBJS)
	$(NVCC) -arch=$(ARCH) $^ -o $@ $(TEST_LIBS)

GPU_TEST_BINS := $(foreach p,$(PARTS),$(BUILD)/$(IMPL)/test_$(p))
TEST_BINS := $(BUILD)/test_common $(GPU_TEST_BINS)

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
	done; \
	if [ -z "$(TEST_ARGS)" ] && [ -f tests/grading/test_harness.py ]; then \
	  echo "==> the grading harness's own tests"; python3 tests/grading/test_harness.py || status=1; \
	fi; exit $$status

# compute-sanitizer over the GPU tests, sampled sizes (LAB_QUICK) to keep it short.
SANITIZE_TOOLS := memcheck racecheck synccheck
.PHONY: sanitize
sanitize: $(GPU_TEST_BINS)
	@status=0; for tool in $(SANITIZE_TOOLS); do for t in $(GPU_TEST_BINS); do \
	  echo "==> compute-sanitizer --tool $$tool $$t [gpu]"; \
	  LAB_QUICK=1 LAB_TRACE=0 compute-sanitizer --tool $$tool --error-exitcode 99 ./$$t "[gpu]" || status=1; \
	done; done; exit $$status

# ---------------------------------------------------------------- grading
# The harness (tests/grading/grade.py) takes only the manifest's student files
# into a pristine copy of the lab, builds each part alone and runs every test
# case in its own process. See README.md, For instructors.
GRADE := python3 tests/grading/grade.py
GRADE_OPTS = $(if $(TIMEOUT),--timeout '$(TIMEOUT)') $(if $(TIMEOUT_SCALE),--timeout-scale '$(TIMEOUT_SCALE)') \
             $(if $(SANITIZE),--sanitize '$(SANITIZE)') $(if $(SEED),--seed '$(SEED)') \
             $(if $(NO_LARGE),--no-large '$(NO_LARGE)') $(if $(GRADE_PARTS),--parts '$(GRADE_PARTS)') \
             $(if $(BUILD_TIMEOUT),--build-timeout '$(BUILD_TIMEOUT)') --arch '$(ARCH)'
GRADE_OUT ?= grade-results
GRADES ?= grades

.PHONY: grade grade-all gradescope grade-objects release
grade:
	@$(GRADE) grade $(if $(SUBMISSION),--submission '$(SUBMISSION)') --out '$(GRADE_OUT)' $(GRADE_OPTS)

grade-all:
	@$(GRADE) grade-all --submissions '$(SUBMISSIONS)' --out '$(GRADES)' $(GRADE_OPTS)

gradescope:
	@$(GRADE) gradescope --out dist/gradescope-autograder.zip

# Everything a submission's copy shares with the lab, built once per grading run.
grade-objects: $(COMMON_OBJS) $(TEST_MAIN) $(BUILD)/test_common \
               $(foreach p,$(PARTS),$(BUILD)/tests/test_$(p).o) $(PART1_OBJS) $(PART2_OBJS) $(PART3_OBJS)

# The student copy in dist/lab and dist/lab.tar.gz, then checked: it builds,
# and its graders fail exactly the questions' tests.
release:
	@python3 tests/grading/release.py --arch '$(ARCH)'

# ---------------------------------------------------------------- misc
.PHONY: clean help
clean:
	rm -rf $(BUILD) $(PARTS) $(GRADE_OUT) $(GRADES) dist

help:
	@echo "make part1|part2|part3  build a part's demo as ./part1, ./part2, ./part3"
	@echo "make test             build and run every grader (TEST_ARGS='[Q1]' picks tests)"
	@echo "make sanitize         compute-sanitizer memcheck, racecheck, synccheck on the GPU tests"
	@echo "make grade            grade this tree's student files (SUBMISSION=folder|archive grades another)"
	@echo "make grade-all        grade a class: SUBMISSIONS=folder (one subfolder or archive each) into GRADES=grades"
	@echo "make gradescope       the Gradescope autograder zip in dist/"
	@echo "make release          the student copy in dist/lab and dist/lab.tar.gz, checked"
	@echo "make clean            remove build/ and the demo binaries"
	@echo "variables: IMPL=reference|student (now $(IMPL)), ARCH=native|sm_90|... (now $(ARCH)), DEBUG=1"
	@echo "grading:   GRADE_OUT=dir TIMEOUT=s TIMEOUT_SCALE=x SANITIZE=1 SEED=n NO_LARGE=1 GRADE_PARTS=part1,part2"

ALL_OBJS := $(COMMON_OBJS) $(TEST_MAIN) $(BUILD)/tests/test_common.o \
            $(foreach p,$(PARTS),$(BUILD)/tests/test_$(p).o) \
            $(foreach P,PART1 PART2 PART3,$($(P)_IMPL) $($(P)_OBJS) $($(P)_DEMO)) \
            $(BUILD)/part1_merge_path/main.o $(BUILD)/part2_batch/main.o $(BUILD)/part3_merge_sort/main.o
-include $(ALL_OBJS:.o=.d)
