#!/usr/bin/env bash
# Gradescope runs this once while it builds the autograder image (Ubuntu).
# The lab needs make, python3, Catch2 and a CUDA toolkit (nvcc, with CUPTI and
# compute-sanitizer); the image must run on a machine with an NVIDIA GPU. The
# grading sandbox uses util-linux or bubblewrap; where the container forbids
# namespaces, grading runs without one and its results say so.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y make python3 catch2 util-linux bubblewrap
if ! command -v nvcc >/dev/null 2>&1; then
    echo "no nvcc in the image: installing the distribution's CUDA toolkit"
    apt-get install -y nvidia-cuda-toolkit
fi
nvcc --version
