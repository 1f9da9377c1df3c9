# GPU merge sort lab: every entry point. `make help` lists them.
#
#   make part1 && ./part1         the Part 1 demo (likewise part2, part3, extras)
#   make test                     all graders (GPU tests are skipped, and say so, without a GPU)
#   make sanitize                 compute-sanitizer memcheck, racecheck, synccheck on the GPU tests
#   IMPL=student make test        build and grade the student skeleton / your solution
#   ARCH=sm_90 DEBUG=1 ...        target GPU (default: the one in this machine, else sm_75); device debug build
#   make test EMULATE=1           the same graders on the CPU emulator (no GPU, no CUDA needed)

.DEFAULT_GOAL := help

# Builds run in parallel by default, on every core; `make -j1 ...`, or
# MAKEFLAGS=-jN in the environment, choose otherwise.
ifeq ($(filter -j% --jobs%,$(shell printenv MAKEFLAGS)),)
MAKEFLAGS += --jobs=$(shell nproc 2>/dev/null || echo 2)
endif

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

EMULATE ?= 0
comma := ,
ifeq ($(filter $(EMULATE),0 1),)
$(error EMULATE must be 0 or 1, not '$(EMULATE)')
endif
BUILD := $(if $(filter 1,$(EMULATE)),build/emu,build)

# ARCH=native (the default) is resolved here, once per make rather than by
# nvcc once per file (which, without a GPU, warns each time that it fell back
# to its default): the compute capability nvidia-smi reports for this machine's
# GPU. Without a visible GPU, sm_75: the oldest GPU the lab supports, whose PTX
# the binaries carry as well, so that a newer GPU's driver compiles it when
# they start. GPUs of several kinds, or a driver too old to say: native, which
# nvcc resolves itself. One line says which and why (not under make -s, nor
# for targets that build nothing). An emulated build compiles for no GPU.
ifeq ($(ARCH)$(EMULATE),native0)
GPU_CAPS := $(shell nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | grep -E '^[0-9]+\.[0-9]+$$' | sort -u)
ifeq ($(words $(GPU_CAPS)),1)
override ARCH := sm_$(subst .,,$(GPU_CAPS))
ARCH_WHY := this machine's GPU (compute capability $(GPU_CAPS), nvidia-smi)
else ifneq ($(GPU_CAPS),)
ARCH_WHY := nvcc builds for each GPU here (compute capabilities $(GPU_CAPS), nvidia-smi)
else ifneq ($(shell nvidia-smi -L 2>/dev/null | grep -c '^GPU '),0)
ARCH_WHY := nvidia-smi lists a GPU but not its compute capability, nvcc finds it
else
override ARCH := sm_75
ARCH_WHY := no GPU visible here, so the oldest the lab supports (newer GPUs run its PTX); ARCH=sm_XY names yours
endif
ifeq ($(MAKELEVEL)$(findstring s,$(filter-out --%,$(firstword -$(MAKEFLAGS)))),0)
ifneq ($(filter-out help help-instructors clean plots graded-inputs-%,$(or $(MAKECMDGOALS),help)),)
$(info building for ARCH=$(ARCH): $(ARCH_WHY))
endif
endif
endif

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
LINK = $(NVCC) -arch=$(ARCH)

# make test EMULATE=1 also compiles each part's kernel file with nvcc as the
# line above would (emulator/device_check.sh), where nvcc is here: for the
# oldest GPU the lab supports unless ARCH names one.
EMU_DEVICE_NVCC := $(NVCC)
EMU_DEVICE_ARCH ?= $(if $(filter native,$(ARCH)),sm_75,$(ARCH))
EMU_DEVICE_FLAGS := $(filter-out -arch=%,$(CUFLAGS)) -arch=$(EMU_DEVICE_ARCH)

# EMULATE=1: every file compiled by the host compiler (emulator/emu.hpp
# included first) from a copy in build/emu/src/ whose launches
# emulator/rewrite.py has turned into calls; the kernel files (.cu) with
# -fsanitize=thread, whose checks the emulator (emulator/emu_memcheck.cpp)
# answers itself.
# course:parts
# (make docs, from tests/course.ini: the parts, in order, and their folders)
PARTS := part1 part2 part3 extras
part1_DIR := part1_merge_path
part2_DIR := part2_batch
part3_DIR := part3_merge_sort
extras_DIR := extras_oddeven_bitonic
# /course:parts

ifeq ($(EMULATE),1)
EMU_SRC := $(BUILD)/src
EMU_DIRS := common tests emulator $(foreach p,$(PARTS),$($(p)_DIR))
EMU_SOURCES := $(shell find $(EMU_DIRS) -type f \( -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' -o -name '*.hpp' \
                                                  -o -name '*.h' -o -name '*.inc' \) 2>/dev/null)
# ... but the emulator's own files, compiled as they are (nothing reads a copy of them).
EMU_SOURCES := $(filter-out emulator/emu.hpp emulator/emu_%,$(EMU_SOURCES))
EMU_FLAGS := -std=c++17 -O2 -g -MMD -MP -Wall -Wextra -Wno-unknown-pragmas -pthread -include emulator/emu.hpp -Iemulator/include
NVCC := $(CXX)
# Kernel files at -O1: emulated as fast as at -O2 (the checks' calls take the
# time), and their debug information keeps each access on its own line, which
# the fault reports name.
EMU_KERNEL_FLAGS := -fsanitize=thread -O1
CUFLAGS := $(EMU_FLAGS) $(EMU_KERNEL_FLAGS)
# The debug information names files from the lab's folder ("./part1_merge_path/student.cu"),
# wherever the lab is: the emulator's fault reports read them. Left out of the flags stamp,
# so that a lab moved elsewhere does not rebuild.
EMU_DEBUG_MAP := -fdebug-prefix-map=$(CURDIR)=.
HOSTFLAGS := $(EMU_FLAGS) $(EMU_DEBUG_MAP)  # with the per-file defines below (bug gallery, network drawing)
LINK = $(CXX) -pthread
endif

# Every object depends on a stamp holding the compiler and its flags, rewritten
# only when they change: after `ARCH=sm_90` or `DEBUG=1` everything rebuilds
# (then again when they go back), where an object's date alone would say
# "up to date".
BUILD_FLAGS := $(BUILD)/flags.stamp
FLAGS_NOW := $(NVCC) $(CUFLAGS)
ifneq ($(FLAGS_NOW),$(shell cat $(BUILD_FLAGS) 2>/dev/null))
$(shell mkdir -p $(BUILD) && printf '%s\n' '$(FLAGS_NOW)' > $(BUILD_FLAGS))
endif

# Catch2: v3 (a library) or v2 (one header), where the distribution installs it.
CATCH2_V3 := $(wildcard /usr/include/catch2/catch_test_macros.hpp /usr/local/include/catch2/catch_test_macros.hpp)
CATCH2_V2 := $(wildcard /usr/include/catch2/catch.hpp /usr/local/include/catch2/catch.hpp)
CATCH_LIBS := $(if $(CATCH2_V3),-lCatch2)

# Objects every build shares go to build/obj; implementation objects to
# build/reference or build/student, so switching IMPL never mixes them and the
# two pattern rules below never match the same target.
OBJ := $(BUILD)/obj
# EMULATE=1: the emulator (emulator/emu_*.cpp) is linked into every program with them.
EMULATOR_OBJS := $(if $(filter 1,$(EMULATE)),$(patsubst %.cpp,$(OBJ)/%.o,$(wildcard emulator/emu_*.cpp)))
COMMON_OBJS := $(patsubst %.cpp,$(OBJ)/%.o,$(wildcard common/*.cpp)) $(EMULATOR_OBJS)
TEST_MAIN   := $(OBJ)/tests/main.o $(OBJ)/tests/trace.o $(OBJ)/tests/trace_canary.o $(OBJ)/tests/large_tier.o \
               $(OBJ)/tests/confine.o

# CUPTI (launch tracing in the graders) must come from the toolkit of the
# NVCC in use (its header's record types match its library's records), found
# from that nvcc itself, never from a CUDA_HOME the environment may set for
# another toolkit. Where a toolkit keeps it: NVIDIA's installers (lib64/ or
# extras/CUPTI/), Debian's and Ubuntu's packages (nvcc in
# lib/nvidia-cuda-toolkit/bin/, CUPTI in lib/<triplet>/ and include/), PyPI's
# wheels (nvidia/cu13/: lib/libcupti.so.13, no unversioned name).
NVCC_ROOT := $(abspath $(dir $(realpath $(shell command -v $(NVCC) 2>/dev/null)))/..)
CUPTI_DIRS := $(NVCC_ROOT)/lib64 $(NVCC_ROOT)/extras/CUPTI/lib64 $(NVCC_ROOT)/lib $(NVCC_ROOT)/targets/*/lib \
              $(NVCC_ROOT)/lib/*-linux-gnu $(NVCC_ROOT)/../*-linux-gnu
CUPTI_LIB := $(abspath $(firstword $(wildcard $(addsuffix /libcupti.so,$(CUPTI_DIRS))) \
                                   $(wildcard $(addsuffix /libcupti.so.*,$(CUPTI_DIRS)))))
CUPTI_INC := $(abspath $(dir $(firstword $(wildcard $(NVCC_ROOT)/extras/CUPTI/include/cupti.h \
                                                    $(NVCC_ROOT)/../../include/cupti.h))))
# The trace loads libcupti at run time (dlopen) from where this toolkit has it.
TEST_LIBS := $(CATCH_LIBS) -ldl
$(OBJ)/tests/trace.o: HOSTFLAGS += $(if $(CUPTI_INC),-I$(CUPTI_INC)) -DLAB_CUPTI_LIB='"$(or $(CUPTI_LIB),libcupti.so)"'

# ---------------------------------------------------------------- compile
ifeq ($(EMULATE),1)
$(EMU_SRC)/.stamp: $(EMU_SOURCES) emulator/rewrite.py
	@python3 emulator/rewrite.py $(EMU_SRC) $(EMU_SOURCES) && touch $@

$(EMU_SRC)/%: % emulator/rewrite.py
	@python3 emulator/rewrite.py $(EMU_SRC) $<
.PRECIOUS: $(EMU_SRC)/%

# The emulator's own files: the host compiler, no checks of their own.
$(EMULATOR_OBJS): $(OBJ)/emulator/%.o: emulator/%.cpp $(wildcard emulator/emu*.hpp) $(BUILD_FLAGS)
	@mkdir -p $(@D)
	$(CXX) -std=c++17 -O2 -g -Wall -Wextra $(EMU_DEBUG_MAP) -c $< -o $@

$(OBJ)/%.o: $(EMU_SRC)/%.cpp $(BUILD_FLAGS) | $(EMU_SRC)/.stamp
	@mkdir -p $(@D)
	$(CXX) $(HOSTFLAGS) -c $< -o $@

$(OBJ)/%.o: $(EMU_SRC)/%.cu $(BUILD_FLAGS) | $(EMU_SRC)/.stamp
	@mkdir -p $(@D)
	$(CXX) $(HOSTFLAGS) $(EMU_KERNEL_FLAGS) -x c++ -c $< -o $@

$(BUILD)/$(IMPL)/%.o: $(EMU_SRC)/%.cu $(BUILD_FLAGS) | $(EMU_SRC)/.stamp
	@mkdir -p $(@D)
	$(CXX) $(HOSTFLAGS) $(EMU_KERNEL_FLAGS) -x c++ -c $< -o $@

# The test runner compiles Catch2 v2 whole: with full debug information g++
# peaked at 757 MiB, within a hair of the 768 MB a Gradescope image builds in by
# default; with line tables only (-g1, the last -g wins), 589 MiB. No fault
# report reads it.
$(OBJ)/tests/main.o: HOSTFLAGS += -g1

# The device check: the object stays only when nvcc accepted the file (its
# .status and .log say what happened), so a refused file is tried again on
# every run; the tests run either way, and run-tests reports it.
EMU_DEVICE := $(BUILD)/device
EMU_DEVICE_STAMP := $(EMU_DEVICE)/flags.stamp
ifneq ($(EMU_DEVICE_NVCC) $(EMU_DEVICE_FLAGS),$(shell cat $(EMU_DEVICE_STAMP) 2>/dev/null))
$(shell mkdir -p $(EMU_DEVICE) && printf '%s\n' '$(EMU_DEVICE_NVCC) $(EMU_DEVICE_FLAGS)' > $(EMU_DEVICE_STAMP))
endif
$(EMU_DEVICE)/%.o: %.cu $(EMU_DEVICE_STAMP)
	@sh emulator/device_check.sh compile '$(EMU_DEVICE_NVCC)' $@ $< $(EMU_DEVICE_FLAGS)
else
$(OBJ)/%.o: %.cpp $(BUILD_FLAGS)
	@mkdir -p $(@D)
	$(NVCC) $(HOSTFLAGS) -c $< -o $@

$(OBJ)/%.o: %.cu $(BUILD_FLAGS)
	@mkdir -p $(@D)
	$(NVCC) $(CUFLAGS) -c $< -o $@

# Student objects list every header they include, system headers too (-MD):
# the grading harness checks that list, and a header can declare itself a
# system header (#pragma GCC system_header) to leave -MMD's.
$(BUILD)/$(IMPL)/%.o: %.cu $(BUILD_FLAGS)
	@mkdir -p $(@D)
	$(NVCC) $(if $(filter student,$(IMPL)),$(subst -MMD,-MD,$(CUFLAGS)),$(CUFLAGS)) -c $< -o $@

# The trace of the grading's judge: relayed from its graded process (tests/judge/).
$(OBJ)/judge/tests/trace.o: tests/trace.cpp $(BUILD_FLAGS)
	@mkdir -p $(@D)
	$(NVCC) $(HOSTFLAGS) -DLAB_JUDGE -c $< -o $@

# The graders as the harness links them with a submission: no expected answer
# computed in the process (LAB_GRADED, tests/test_env.hpp).
$(OBJ)/graded/%.o: %.cpp $(BUILD_FLAGS)
	@mkdir -p $(@D)
	$(NVCC) $(HOSTFLAGS) -DLAB_GRADED -c $< -o $@
endif

# ---------------------------------------------------------------- parts
# Each part, once: its folder, the shared objects every build of it links
# (argument checks, shapes), and the demo's own objects besides main.o.
part1_OBJS := small_merge_checks.o
part1_DEMO := drawing.o
part2_OBJS := batch_shape.o
part2_DEMO := drawing.o bench_peers.o
part3_OBJS := shapes.o
part3_DEMO := drawing.o gpu_runs.o bench_peers.o
extras_OBJS := checks.o
extras_DEMO := drawing.o gallery.o

# $(call graded_inputs,part): the lab's objects a graded test program links
# (everything but the student object).
graded_inputs = $(TEST_MAIN) $(OBJ)/graded/tests/test_$(1).o $(call objs,$(1),OBJS) $(COMMON_OBJS)

# The judge's objects (tests/judge/, judge.hpp): its trace relays the graded
# process's; and what a part's graded process links besides the student object.
JUDGE_OBJS := $(OBJ)/tests/judge/judge.o $(OBJ)/tests/judge/pcie.o $(OBJ)/tests/judge/shared_memory.o
JUDGE_MAIN := $(OBJ)/tests/main.o $(OBJ)/judge/tests/trace.o $(OBJ)/tests/trace_canary.o $(OBJ)/tests/large_tier.o \
              $(OBJ)/tests/confine.o
serve_inputs = $(OBJ)/tests/judge/serve.o $(OBJ)/tests/judge/serve_$(1).o $(OBJ)/tests/judge/shared_memory.o \
               $(OBJ)/tests/trace.o $(OBJ)/tests/trace_canary.o $(OBJ)/tests/confine.o $(call objs,$(1),OBJS) $(COMMON_OBJS)

# $(call objs,part,LIST): the objects of LIST in the part's folder.
objs = $(addprefix $(OBJ)/$($(1)_DIR)/,$($(1)_$(2)))
impl = $(BUILD)/$(IMPL)/$($(1)_DIR)/$(IMPL).o

# The extras' demo times Part 3's mergeSort and CUB next to its sorts, and
# runs the bug gallery where its instructor file is present.
BUG_GALLERY := $(wildcard extras_oddeven_bitonic/reference_bugs.cu)
extras_LINK := $(call impl,part3) $(call objs,part3,OBJS) $(OBJ)/part3_merge_sort/bench_peers.o \
               $(if $(BUG_GALLERY),$(OBJ)/extras_oddeven_bitonic/reference_bugs.o)
$(OBJ)/extras_oddeven_bitonic/gallery.o: HOSTFLAGS += $(if $(BUG_GALLERY),,-DLAB_NO_BUG_GALLERY)
# The extras' demo draws the bitonic network where its instructor file is
# present (in the student copy it would spell out X3).
NETWORK := $(wildcard extras_oddeven_bitonic/reference_network.cpp)
extras_LINK += $(if $(NETWORK),$(OBJ)/extras_oddeven_bitonic/reference_network.o)
$(OBJ)/extras_oddeven_bitonic/drawing.o: HOSTFLAGS += $(if $(NETWORK),-DLAB_BITONIC_NETWORK)

# The Part 2 demo also times the tuned batch kernels where their instructor
# file is present (the study's "tuned" rows); test_tuned tests them.
TUNED := $(wildcard part2_batch/reference_tuned.cu)
TUNED_OBJ := $(if $(TUNED),$(OBJ)/part2_batch/reference_tuned_merge.o $(OBJ)/part2_batch/reference_tuned_sort.o)
part2_LINK := $(TUNED_OBJ)

# The Part 3 demo also times the naive GPU merges where their instructor file
# is present (they hold a search, a merge and a sort: answers); main.cu says
# when they are left out.
NAIVE_PEERS := $(wildcard part3_merge_sort/reference_peers.cu)
part3_LINK := $(if $(NAIVE_PEERS),$(OBJ)/part3_merge_sort/reference_peers.o)

# The Part 3 demo also times the tuned merge sort (k-way passes) where its
# instructor file is present (the study's "Q6 tuned" rows); test_tuned tests it.
TUNED_SORT := $(wildcard part3_merge_sort/reference_tuned_sort.cu)
TUNED_SORT_OBJ := $(if $(TUNED_SORT),$(OBJ)/part3_merge_sort/reference_tuned_sort.o)
part3_LINK += $(TUNED_SORT_OBJ)

# Emulated demos print no timing tables: the CCCL peers (CUB, Thrust) and the
# naive GPU merges give way to the parts' stand-ins (*_emulated.cpp), which refuse.
ifeq ($(EMULATE),1)
part2_DEMO := $(patsubst bench_peers.o,bench_peers_emulated.o,$(part2_DEMO))
part3_DEMO := $(patsubst bench_peers.o,bench_peers_emulated.o,$(part3_DEMO))
part3_LINK := $(patsubst %/reference_peers.o,%/reference_peers_emulated.o,$(part3_LINK))
extras_LINK := $(patsubst %/bench_peers.o,%/bench_peers_emulated.o,$(extras_LINK))
endif

define part_rules
$(BUILD)/$(IMPL)/$(1): $(OBJ)/$($(1)_DIR)/main.o $(call objs,$(1),DEMO) $(call impl,$(1)) $(call objs,$(1),OBJS) $$($(1)_LINK) $$(COMMON_OBJS)
	$$(LINK) $$^ -o $$@ $$(LDFLAGS)

.PHONY: $(1)
$(1): $(BUILD)/$(IMPL)/$(1)
	@cp $$< $$@
	@echo "built ./$(1) ($$(IMPL)$(if $(filter 1,$(EMULATE)),$(comma) EMULATED on the CPU)); run it with ./$(1) (./$(1) --help for options)"

$(BUILD)/$(IMPL)/test_$(1): $$(TEST_MAIN) $(OBJ)/tests/test_$(1).o $(call impl,$(1)) $(call objs,$(1),OBJS) $$(COMMON_OBJS)
	$$(LINK) $$^ -o $$@ $$(TEST_LIBS)

# What grading runs (tests/grading/grade.py builds it after checking what the
# student object defines): the graders built without answers, the student
# object last, so that it wins no symbol the lab's code also defines.
$(BUILD)/graded/test_$(1): $$(call graded_inputs,$(1)) $(BUILD)/student/$($(1)_DIR)/student.o
	@mkdir -p $$(@D)
	$$(LINK) $$^ -o $$@ $$(TEST_LIBS)

# The harness checks the student object against exactly these (tests/grading/harness/symbols.py).
.PHONY: graded-inputs-$(1)
graded-inputs-$(1):
	@echo $$(call graded_inputs,$(1))

# The grading's judge (tests/judge/): the graders with every check, whose
# student functions are calls a graded process makes on arrays the judge owns.
$(BUILD)/judge/test_$(1): $$(JUDGE_MAIN) $(OBJ)/tests/test_$(1).o $(OBJ)/tests/judge/remote_$(1).o $(call objs,$(1),OBJS) \
                          $$(COMMON_OBJS) $$(JUDGE_OBJS)
	@mkdir -p $$(@D)
	$$(LINK) $$^ -o $$@ $$(TEST_LIBS)

# ... and its graded process: the student object, served (tests/judge/serve.cpp).
$(BUILD)/graded/serve_$(1): $$(call serve_inputs,$(1)) $(BUILD)/student/$($(1)_DIR)/student.o
	@mkdir -p $$(@D)
	$$(LINK) $$^ -o $$@ -ldl

.PHONY: serve-inputs-$(1)
serve-inputs-$(1):
	@echo $$(call serve_inputs,$(1))

# The same graders on the trusted host implementation (tests/oracle/): the
# grading harness compares every graded run's results with this one's.
$(BUILD)/oracle/test_$(1): $$(TEST_MAIN) $(OBJ)/tests/test_$(1).o $(OBJ)/tests/oracle/oracle_$(1).o $(call objs,$(1),OBJS) $$(COMMON_OBJS)
	@mkdir -p $$(@D)
	$$(LINK) $$^ -o $$@ $$(TEST_LIBS)
endef
$(foreach p,$(PARTS),$(eval $(call part_rules,$(p))))

# ---------------------------------------------------------------- tests
# With the trusted host's diagonal search (tests/oracle/oracle_part1.cpp), which
# the graders' Q1 answers come from: a host test checks it.
$(BUILD)/test_common: $(TEST_MAIN) $(OBJ)/tests/test_common.o $(OBJ)/tests/oracle/oracle_part1.o $(call objs,part1,OBJS) \
                      $(OBJ)/tests/judge/test_wire.o $(COMMON_OBJS)
	$(LINK) $^ -o $@ $(TEST_LIBS)

$(BUILD)/test_emulator: $(OBJ)/emulator/test_emulator.o $(EMULATOR_OBJS)
	$(LINK) $^ -o $@

# The lab's shared-memory and barrier idioms, one kernel each
# (emulator/idioms.cu): emulator/idioms.py checks what the emulator says of
# them (make test EMULATE=1) and what compute-sanitizer says (make sanitize)
# against emulator/idioms.tsv.
IDIOMS := $(BUILD)/idioms
$(IDIOMS): $(OBJ)/emulator/idioms.o $(EMULATOR_OBJS)
	$(LINK) $^ -o $@

# The tuned kernels' tests: Part 2's and Part 3's, each where its instructor file is present.
# Stripped: in the student copy, which has neither, the line's continuation
# alone would leave a space, which $(and ...) below takes for something.
TUNED_TESTS := $(strip $(if $(TUNED),$(OBJ)/tests/reference_test_tuned.o $(TUNED_OBJ) $(call objs,part2,OBJS)) \
               $(if $(TUNED_SORT),$(OBJ)/tests/reference_test_tuned_sort.o $(TUNED_SORT_OBJ) $(call objs,part3,OBJS)))
$(BUILD)/test_tuned: $(TEST_MAIN) $(TUNED_TESTS) $(COMMON_OBJS)
	$(LINK) $^ -o $@ $(TEST_LIBS)

# The launches tests/profile/compare_ncu.py profiles, on a GPU with Nsight
# Compute and with the emulator's profile (EMULATE=1): every part's kernels.
PROFILE_LAUNCHES := $(BUILD)/profile_launches
$(OBJ)/tests/profile/launches.o: HOSTFLAGS += $(foreach p,$(PARTS),-I$(if $(filter 1,$(EMULATE)),$(EMU_SRC)/)$($(p)_DIR))
$(PROFILE_LAUNCHES): $(OBJ)/tests/profile/launches.o $(foreach p,$(PARTS),$(call impl,$(p)) $(call objs,$(p),OBJS)) \
                     $(COMMON_OBJS)
	$(LINK) $^ -o $@ $(LDFLAGS)

.PHONY: profile-launches
profile-launches: $(PROFILE_LAUNCHES)

# PART=part1 builds and runs one part's graders alone (a compile error
# elsewhere then blocks nothing).
PART ?=
ifneq ($(filter-out $(PARTS),$(PART)),)
$(error PART must be one of: $(PARTS) (not '$(PART)'))
endif
TEST_PARTS := $(or $(PART),$(PARTS))
GPU_TEST_BINS := $(foreach p,$(TEST_PARTS),$(BUILD)/$(IMPL)/test_$(p)) \
                 $(if $(and $(TUNED_TESTS),$(filter part2 part3,$(TEST_PARTS))),$(BUILD)/test_tuned)
TEST_BINS := $(if $(filter 1,$(EMULATE)),$(BUILD)/test_emulator) $(BUILD)/test_common $(GPU_TEST_BINS)
# Emulated: the device check of the tested parts' kernel files (above).
DEVICE_CHECKS := $(if $(filter 1,$(EMULATE)),$(foreach p,$(TEST_PARTS),$(EMU_DEVICE)/$($(p)_DIR)/$(IMPL).o))
ORACLE_BINS := $(foreach p,$(PARTS),$(BUILD)/oracle/test_$(p))
JUDGE_BINS := $(foreach p,$(PARTS),$(BUILD)/judge/test_$(p))

.PHONY: test run-tests tests
test:
ifeq ($(CATCH2_V3)$(CATCH2_V2),)
	@sh tests/install_catch2.sh
	@$(MAKE) --no-print-directory run-tests ARCH=$(ARCH)
else
	@$(MAKE) --no-print-directory run-tests ARCH=$(ARCH)
endif

tests: $(TEST_BINS)

# Every binary runs even when one fails; the status says whether any did.
# Each writes its report into build/reports/, from which the last lines say
# what could not be checked here (no GPU), once.
# The test programs (and the harness's own tests) run at once, each into its
# own log, printed in order once all have ended; TEST_JOBS=1 runs them one by
# one, TEST_JOBS=all at once. By default they run at once unless the GPU has
# less than 1 GiB free per program (a small or shared GPU: every CUDA process
# holds a context of a few hundred MiB), and then one by one.
# JUNIT=folder also writes JUnit XML there, one file per test program
# (<program>.xml, emulated <program>-emulated.xml), from the same reports
# (tests/course/ci_report.py): a GPU test that did not run is <skipped>.
TEST_JOBS ?=
JUNIT ?=
# The instructors' tree (release.py is not in the student copy): only there
# does make test run the harness's own tests and the documents' check, which
# test the lab, not the student's work.
INSTRUCTOR_TREE := $(wildcard tests/course/release.py)
run-tests: $(TEST_BINS) $(DEVICE_CHECKS) $(if $(filter 1,$(EMULATE)),$(IDIOMS))
	@status=0; rm -rf $(BUILD)/reports; mkdir -p $(BUILD)/reports; \
	harness=$$( [ -z "$(TEST_ARGS)" ] && [ "$(EMULATE)" != 1 ] && [ -n "$(INSTRUCTOR_TREE)" ] && echo yes); \
	jobs="$(TEST_JOBS)"; \
	if [ -z "$$jobs" ] && [ "$(EMULATE)" != 1 ]; then \
	  free=$$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits 2>/dev/null | sort -n | head -1); \
	  : "-eq of free with itself: true only for a number (no nvidia-smi, no GPU: run at once)"; \
	  if [ "$$free" -eq "$$free" ] 2>/dev/null && [ "$$free" -lt $$((1024 * $(words $(TEST_BINS)))) ]; then \
	    jobs=1; echo "running the test programs one by one: the GPU has $$free MiB free (TEST_JOBS=all: at once)"; fi; \
	fi; \
	start() { if [ "$$jobs" = 1 ]; then "$$@"; echo $$? > $(BUILD)/reports/$$name.rc; \
	          else ( "$$@"; echo $$? > $(BUILD)/reports/$$name.rc ) & fi; }; \
	for t in $(TEST_BINS); do name=$$(basename $$t); \
	  start env LAB_REPORT=$(BUILD)/reports/$$name.jsonl ./$$t $(TEST_ARGS) > $(BUILD)/reports/$$name.out 2>&1; \
	done; \
	if [ -n "$$harness" ]; then name=harness; start python3 -m tests.grading.test_harness > $(BUILD)/reports/harness.out 2>&1; fi; \
	$(if $(filter 1,$(EMULATE)),name=idioms; start python3 emulator/idioms.py emulated $(IDIOMS) > $(BUILD)/reports/idioms.out 2>&1;) \
	[ "$$jobs" = 1 ] || echo "running $(words $(TEST_BINS)) test programs$${harness:+ and the harness's own tests} at once (TEST_JOBS=1: one by one) ..."; \
	wait; \
	for t in $(TEST_BINS); do name=$$(basename $$t); \
	  echo "==> $$t $(TEST_ARGS)"; cat $(BUILD)/reports/$$name.out; echo; \
	  [ "$$(cat $(BUILD)/reports/$$name.rc)" = 0 ] || status=1; \
	done; \
	if [ -f tests/course/unchecked.py ]; then python3 -m tests.course.unchecked $(BUILD)/reports/*.jsonl; echo; fi; \
	$(if $(JUNIT),python3 -m tests.course.ci_report junit '$(JUNIT)' $(BUILD)/reports $(if $(filter 1,$(EMULATE)),--emulated) || status=1;) \
	$(if $(DEVICE_CHECKS),sh emulator/device_check.sh report $(EMU_DEVICE_ARCH) $(EMU_DEVICE) $(DEVICE_CHECKS) || status=1; echo;) \
	$(if $(filter 1,$(EMULATE)),echo "==> the idioms against the GPU tools' table (emulator/idioms.tsv)"; cat $(BUILD)/reports/idioms.out; echo; \
	  [ "$$(cat $(BUILD)/reports/idioms.rc)" = 0 ] || status=1;) \
	if [ -n "$$harness" ]; then echo "==> the grading harness's own tests"; cat $(BUILD)/reports/harness.out; \
	  [ "$$(cat $(BUILD)/reports/harness.rc)" = 0 ] || status=1; fi; \
	$(if $(INSTRUCTOR_TREE),echo "==> the documents against the course table (tests/course.ini) and the committed results (results/*/*.csv); make docs rewrites them"; \
	python3 -m tests.course.docs --check || status=1;) exit $$status

# The course table (tests/course.ini) is the one place of the lab's facts:
# parts, questions, points, limits, trace rules, planted faults. make docs
# rewrites what the documents, the manifest and this Makefile restate of it,
# and (results/tables.py) the tables of measured results that the documents
# restate from results/<gpu>/*.csv.
.PHONY: docs
docs:
	@python3 -m tests.course.docs

# compute-sanitizer over the GPU tests; under it the tests sample their sizes,
# allocate arrays without guard zones and leave CUPTI off (common/gpu.hpp).
# A tag selects hidden tests too: the filter leaves out the [large] tier and
# the tuned test's [every-d] sweep, which sample no sizes.
SANITIZE_TOOLS := memcheck racecheck synccheck
SANITIZE_FILTER := [gpu]~[large]~[every-d]
.PHONY: sanitize
sanitize: $(GPU_TEST_BINS) $(IDIOMS)
	@command -v compute-sanitizer >/dev/null 2>&1 || { echo "make sanitize needs compute-sanitizer (CUDA toolkit, on the PATH) and a GPU: not found here" >&2; exit 1; }
	@status=0; for tool in $(SANITIZE_TOOLS); do for t in $(GPU_TEST_BINS); do \
	  echo "==> compute-sanitizer --tool $$tool $$t $(SANITIZE_FILTER)"; \
	  compute-sanitizer --tool $$tool --error-exitcode 99 ./$$t "$(SANITIZE_FILTER)" || status=1; \
	done; done; \
	echo "==> the idioms against the GPU tools' table (emulator/idioms.tsv)"; \
	python3 emulator/idioms.py gpu $(IDIOMS) || status=1; exit $$status

# ---------------------------------------------------------------- grading
# The harness (tests/grading/grade.py) takes only the manifest's student files
# into a pristine copy of the lab outside this tree, builds each part alone and
# runs every test case in its own sandboxed process; a test passes only when the
# results it read back equal those of the trusted build (build/oracle/,
# tests/oracle/) on the same seed, compared by the harness. See INSTRUCTORS.md
# (instructors' copy).
GRADE := python3 -m tests.grading.grade
GRADE_OPTS = $(if $(TIMEOUT),--timeout '$(TIMEOUT)') $(if $(TIMEOUT_SCALE),--timeout-scale '$(TIMEOUT_SCALE)') \
             $(if $(SANITIZE),--sanitize '$(SANITIZE)') $(if $(SEED),--seed '$(SEED)') \
             $(if $(NO_LARGE),--no-large '$(NO_LARGE)') $(if $(GRADE_PARTS),--parts '$(GRADE_PARTS)') \
             $(if $(BUILD_TIMEOUT),--build-timeout '$(BUILD_TIMEOUT)') $(if $(TIMING),--timing '$(TIMING)') \
             $(if $(BUDGET),--budget '$(BUDGET)') $(if $(SANDBOX),--sandbox '$(SANDBOX)') $(if $(JUDGE),--judge '$(JUDGE)') \
             $(if $(WORK_ROOT),--work-root '$(WORK_ROOT)') $(if $(SANITIZE_JOBS),--sanitize-jobs '$(SANITIZE_JOBS)') \
             $(if $(CASE_JOBS),--case-jobs '$(CASE_JOBS)') $(if $(PCIE),--pcie '$(PCIE)') $(if $(GPU_JOBS),--gpu-jobs '$(GPU_JOBS)') \
             $(if $(LEASE_WAIT),--lease-wait '$(LEASE_WAIT)') --arch '$(ARCH)'
# grade-all on a Slurm cluster: SCHEDULER=slurm, and (each optional)
# SLURM_PARTITION, SLURM_ACCOUNT, SLURM_TIME, SLURM_GRES (empty: no GPU
# request), SLURM_CPUS, SLURM_OPTS (more sbatch options), SLURM_WAIT=0.
SLURM_ARGS = $(if $(SCHEDULER),--scheduler '$(SCHEDULER)') \
             $(if $(SLURM_PARTITION),--slurm-partition '$(SLURM_PARTITION)') \
             $(if $(SLURM_ACCOUNT),--slurm-account '$(SLURM_ACCOUNT)') $(if $(SLURM_TIME),--slurm-time '$(SLURM_TIME)') \
             $(if $(filter undefined,$(origin SLURM_GRES)),,--slurm-gres '$(SLURM_GRES)') \
             $(if $(SLURM_CPUS),--slurm-cpus '$(SLURM_CPUS)') $(if $(SLURM_OPTS),--slurm-opts '$(SLURM_OPTS)') \
             $(if $(SLURM_WAIT),--slurm-wait '$(SLURM_WAIT)') $(if $(GRADE_BASE),--base '$(GRADE_BASE)')
GRADE_OUT ?= grade-results
GRADES ?= grades

.PHONY: grade grade-all gradescope grade-objects release
grade:
	@$(if $(filter 1,$(EMULATE)),echo "make grade runs on a GPU only: emulated runs (EMULATE=1) are never graded" >&2; exit 2)
	@$(GRADE) grade $(if $(SUBMISSION),--submission '$(SUBMISSION)') --out '$(GRADE_OUT)' $(GRADE_OPTS)

# A question's second hint (the idea), after a question: make hint Q=Q3 (YES=1: no question).
.PHONY: hint
hint:
	@python3 hints/show.py '$(Q)' $(if $(filter 1,$(YES)),--yes)

# A hand-in checked on any machine, no GPU needed: the files found, each part
# built, the emulated graders per question (Gradescope's feedback; no grade).
CHECK_OUT ?= check-results
.PHONY: check-submission
check-submission:
	@$(GRADE) check-submission $(if $(SUBMISSION),--submission '$(SUBMISSION)') --out '$(CHECK_OUT)' $(GRADE_OPTS)

grade-all:
	@$(if $(filter 1,$(EMULATE)),echo "make grade-all runs on a GPU only: emulated runs (EMULATE=1) are never graded" >&2; exit 2)
	@$(GRADE) grade-all --submissions '$(SUBMISSIONS)' --out '$(GRADES)' $(if $(REGRADE),--regrade '$(REGRADE)') $(GRADE_OPTS) $(SLURM_ARGS)

gradescope:
	@$(GRADE) gradescope --out dist/gradescope-autograder.zip

# Everything a submission's copy shares with the lab, and the trusted build of
# the graders, built once per grading run.
grade-objects: $(COMMON_OBJS) $(TEST_MAIN) $(BUILD)/test_common $(ORACLE_BINS) $(JUDGE_BINS) \
               $(foreach p,$(PARTS),$(call serve_inputs,$(p))) \
               $(foreach p,$(PARTS),$(OBJ)/tests/test_$(p).o $(OBJ)/graded/tests/test_$(p).o $(call objs,$(p),OBJS))

# Maintainers: the lab built with each toolkit in NVCCS for each GPU in ARCHS.
.PHONY: check-toolchains
check-toolchains:
	@if [ -x .ci/check-toolchains ]; then NVCCS='$(NVCCS)' ARCHS='$(ARCHS)' TARGETS='$(TARGETS)' UPDATE_README='$(UPDATE_README)' .ci/check-toolchains; \
	 else echo "check-toolchains is for the lab's maintainers (not in the student copy)"; fi

.PHONY: oracle
oracle: $(ORACLE_BINS)

# The student copy in dist/lab and dist/lab.tar.gz, then checked: it builds,
# and its graders fail exactly the questions' tests.
release:
	@if [ -f tests/course/release.py ]; then python3 -m tests.course.release --arch '$(ARCH)'; \
	 else echo "make release is for instructors: this is the student copy" >&2; exit 2; fi

# ---------------------------------------------------------------- benchmarks
# Every study of the lab in one run, CSVs into results/<gpu>/ (needs a GPU);
# then PNG figures from whatever CSVs are there (no GPU; needs matplotlib in
# PYTHON, e.g. PYTHON=/usr/bin/python3 where the distribution installed it).
# A build of the student files files its CSVs under results/mine/<gpu>/, so
# that the committed reference results stay as they are.
PYTHON ?= python3
BENCH_OUT ?= $(if $(filter student,$(IMPL)),results/mine,results)
# An emulated build has no timings worth filing: make bench refuses it before
# building anything.
.PHONY: bench plots
ifeq ($(EMULATE),1)
bench:
	@echo "make bench times the GPU: an emulated build (EMULATE=1) checks correctness only, its times mean nothing" >&2; exit 2
else
bench: $(PARTS)
	@$(PYTHON) -m results.bench --out '$(BENCH_OUT)' $(if $(RUNS),--runs '$(RUNS)')
endif

plots:
	@$(PYTHON) results/plot.py $(PLOTS)

# ---------------------------------------------------------------- misc
.PHONY: clean help
clean:
	rm -rf $(BUILD) $(PARTS) $(GRADE_OUT) $(GRADES) $(CHECK_OUT) .$(CHECK_OUT)-base dist

help:
	@echo "make part1|part2|part3|extras  build a part's demo as ./part1, ./part2, ./part3, ./extras"
	@echo "make test             build and run every grader (TEST_ARGS='[Q1]' picks tests, PART=part1 one part, JUNIT=dir JUnit XML)"
	@echo "make test EMULATE=1   the same graders on the CPU emulator (no GPU or CUDA needed; emulator/README.md)"
	@echo "make sanitize         compute-sanitizer memcheck, racecheck, synccheck on the GPU tests"
	@echo "make grade            grade this tree's student files (SUBMISSION=folder|archive grades another)"
	@echo "make hint Q=Q3        a question's second hint (the idea), after asking; the first is in the handout"
	@echo "make check-submission check a hand-in before the deadline, on any machine: files found, builds, emulated"
	@echo "                      graders per question (SUBMISSION=folder|archive; results in CHECK_OUT=check-results)"
	@echo "make bench            every timing study into results/<gpu>/*.csv (GPU; IMPL=student: results/mine/<gpu>/); RUNS=n"
	@echo "make plots            PNG figures from results/<gpu>/*.csv and results/mine/<gpu>/*.csv (no GPU; matplotlib)"
	@echo "make clean            remove build/ and the demo binaries"
	@echo "variables: $(HELP_IMPL)ARCH=native|sm_90|... (now $(ARCH)), DEBUG=1, EMULATE=1;"
	@echo "           a change of ARCH or DEBUG rebuilds everything (build/flags.stamp); builds use every core"
	@echo "           (make -j1 or MAKEFLAGS=-jN otherwise); make test runs its programs at once (TEST_JOBS=1: one by one; one by one by itself on a GPU with little free memory)"
	@$(if $(wildcard part1_merge_path/reference.cu),$(MAKE) --no-print-directory help-instructors)

HELP_IMPL := $(if $(wildcard part1_merge_path/reference.cu),IMPL=reference|student (now $(IMPL))$(comma) )
# The instructors' targets and variables (their copy has the reference files; a
# student's copy has none, and make help leaves these out).
.PHONY: help-instructors
help-instructors:
	@echo "make grade-all        grade a class: SUBMISSIONS=folder (one subfolder or archive each) into GRADES=grades"
	@echo "make oracle           the graders on the trusted host implementation, build/oracle/ (make grade builds it)"
	@echo "make gradescope       the Gradescope autograder zip in dist/"
	@echo "make release          the student copy in dist/lab and dist/lab.tar.gz, checked"
	@echo "make docs             rewrite what the documents, the manifest and the Makefile restate of tests/course.ini"
	@echo "make check-toolchains the lab built with each CUDA in NVCCS for each GPU in ARCHS, a table (UPDATE_README=1:"
	@echo "                      into README.md); .ci/fetch-cuda12 first fetches Debian's CUDA 12.4 without root"
	@echo "grading:   GRADE_OUT=dir TIMEOUT=s TIMEOUT_SCALE=x SANITIZE=0 SANITIZE_JOBS=n SEED=n NO_LARGE=1 GRADE_PARTS=part1,part2 TIMING=1"
	@echo "           BUDGET=s LEASE_WAIT=s WORK_ROOT=dir REGRADE=alice,bob GRADE_BASE=dir CASE_JOBS=n GPU_JOBS=n JUDGE=0 PCIE=0"
	@echo "slurm:     make grade-all SCHEDULER=slurm [SLURM_PARTITION=p SLURM_ACCOUNT=a SLURM_TIME=hh:mm:ss SLURM_GRES=gpu:1"
	@echo "           SLURM_CPUS=n SLURM_OPTS='...' SLURM_WAIT=0]: one array job, a task per submission (INSTRUCTORS.md, instructors' copy)"

ALL_OBJS := $(COMMON_OBJS) $(TEST_MAIN) $(OBJ)/tests/test_common.o $(OBJ)/tests/profile/launches.o \
            $(foreach p,$(PARTS),$(OBJ)/tests/test_$(p).o $(call impl,$(p)) $(call objs,$(p),OBJS) \
                                 $(call objs,$(p),DEMO) $(OBJ)/$($(p)_DIR)/main.o) $(extras_LINK) \
            $(TUNED_TESTS) $(part3_LINK) \
            $(foreach p,$(PARTS),$(OBJ)/tests/oracle/oracle_$(p).o) \
            $(JUDGE_OBJS) $(OBJ)/judge/tests/trace.o \
            $(foreach p,$(PARTS),$(OBJ)/tests/judge/remote_$(p).o $(OBJ)/tests/judge/serve_$(p).o) $(OBJ)/tests/judge/serve.o \
            $(OBJ)/tests/judge/test_wire.o
# Emulated: also the emulator's own test, and the device check.
EMU_OBJS := $(if $(filter 1,$(EMULATE)),$(OBJ)/emulator/test_emulator.o $(DEVICE_CHECKS))
-include $(ALL_OBJS:.o=.d) $(EMU_OBJS:.o=.d)
