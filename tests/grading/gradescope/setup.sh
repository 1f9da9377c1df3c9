#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder's image
# (Ubuntu); run_autograder then runs once per submission in that image.
#
# Gradescope's runners have no GPU, so what a submission gets there is
# provisional feedback from the lab's CPU emulator (INSTRUCTORS.md,
# Gradescope); it is graded on a GPU after the deadline. What that needs, and
# so what this installs: make, g++, python3, Catch2 (the graders), util-linux
# and bubblewrap (the sandbox; where the container forbids namespaces, the
# feedback runs without one and says so). That is enough on every image and
# small enough to build quickly.
#
# A CUDA toolkit is optional: with nvcc, the feedback also compiles each
# kernel file for a GPU (a kernel calling a host function passes on the
# emulator and fails there), and an image that does get a GPU grades as make
# grade does. The distribution's nvidia-cuda-toolkit is installed only when it
# is a version the lab builds with (12.4 or later: Debian 13 has 12.4, while
# Ubuntu 24.04 has 12.0 and 22.04 11.5, which would refuse code a GPU build
# accepts and mislead students); a toolkit already in the image is used as it is.
#
# AUTOGRADER_ROOT: another root than /autograder (the lab's own tests use one);
# AUTOGRADER_NO_INSTALL=1: install nothing, use what is here. Arguments are
# passed on to grade.py autograder-setup (e.g. --parts part1, --gpu-base 0).
set -euo pipefail
root="${AUTOGRADER_ROOT:-/autograder}"
if [ "${AUTOGRADER_NO_INSTALL:-0}" != 1 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y make g++ python3 catch2 util-linux bubblewrap
    if ! command -v nvcc >/dev/null 2>&1; then
        candidate=$(apt-cache policy nvidia-cuda-toolkit 2>/dev/null | awk '/Candidate:/ { print $2 }')
        if [ -n "$candidate" ] && [ "$candidate" != "(none)" ] && dpkg --compare-versions "$candidate" ge 12.4; then
            echo "installing the distribution's CUDA toolkit $candidate (kernel files are then compiled for a GPU too)"
            apt-get install -y nvidia-cuda-toolkit
        else
            echo "no CUDA toolkit: the distribution's is ${candidate:-missing}, older than the lab's 12.4;" \
                 "feedback runs on the emulator and says that nvcc did not check the kernel files"
        fi
    fi
fi
command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -n 2
# The lab's own objects, built once here so that no submission waits for them
# (a few compilers at once, as many as the memory holds).
cd "$root/source/lab"
python3 -m tests.grading.grade autograder-setup --root "$root" "$@"
