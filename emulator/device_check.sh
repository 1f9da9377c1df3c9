#!/bin/sh
# The device check of `make test EMULATE=1`: each part's kernel file compiled
# by nvcc for a GPU, as the real build compiles it, into a throwaway object.
# The emulator builds kernels with the host compiler, which accepts code that
# nvcc refuses (a host-only function called from a kernel); graded builds use
# nvcc, and a file it refuses scores 0 there.
#
#   sh emulator/device_check.sh compile NVCC OBJECT SOURCE FLAGS...
#       one file; OBJECT exists afterwards only when nvcc accepted SOURCE.
#       Beside it: OBJECT's stem .status (ok, failed, no-nvcc, or no-arch: this
#       nvcc knows no such GPU) and .log (what nvcc said). Exits 0 whatever
#       nvcc says: the tests run anyway.
#   sh emulator/device_check.sh report ARCH OUT OBJECT...
#       what the compiles said, one line per part (nvcc's words under a
#       failure); exits 1 when nvcc refused a file. OUT is the folder under
#       which each OBJECT mirrors its source's path.
set -u

case "${1:-}" in
compile)
    nvcc=$2 object=$3 source=$4
    shift 4
    stem=${object%.o}
    mkdir -p "$(dirname "$object")"
    rm -f "$object" "$stem.log"
    if ! command -v "$nvcc" >/dev/null 2>&1; then
        echo no-nvcc > "$stem.status"
    elif "$nvcc" "$@" -c "$source" -o "$object" > "$stem.log" 2>&1; then
        echo ok > "$stem.status"
    elif grep -q 'Unsupported gpu architecture' "$stem.log"; then
        echo no-arch > "$stem.status"
    else
        rm -f "$object"
        echo failed > "$stem.status"
    fi
    exit 0
    ;;
report)
    arch=$2 out=$3
    shift 3
    status=0 accepted="" missing=""
    echo "==> each part's kernel file compiled for a GPU, as a GPU build does (nvcc -arch=$arch -c): the emulator's compiler accepts code nvcc refuses"
    for object in "$@"; do
        stem=${object%.o}
        source=${stem#"$out"/}.cu
        folder=${source%/*}
        part=${folder%%_*}  # a part's folder starts with its name (tests/course.ini)
        case $(cat "$stem.status" 2>/dev/null) in
        ok)
            accepted="$accepted ${part:-$folder}"
            if [ -s "$stem.log" ]; then
                echo "nvcc compiles $source, with warnings:"
                sed '/^[[:space:]]*$/d; s/^/    /' "$stem.log"
            fi
            ;;
        failed)
            status=1
            echo "FAILED: nvcc does not compile $source (a GPU build of ${part:-$folder} fails, and grading gives it 0); nvcc said:"
            sed '/^[[:space:]]*$/d; s/^/    /' "$stem.log"
            ;;
        no-arch)
            missing="NOT CHECKED: this nvcc knows no GPU $arch (EMU_DEVICE_ARCH=sm_NN names another)"
            ;;
        *)
            missing="NOT CHECKED: no nvcc here, so nothing compiled the kernels for a GPU (a host function called from a kernel passes emulated, fails there)"
            ;;
        esac
    done
    if [ -n "$missing" ]; then
        echo "$missing"
    elif [ -n "$accepted" ]; then
        echo "nvcc compiles the kernel files of:$accepted"
    fi
    exit $status
    ;;
*)
    sed -n '2,16p' "$0" >&2
    exit 2
    ;;
esac
