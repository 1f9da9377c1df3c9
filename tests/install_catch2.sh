#!/bin/sh
# Called by `make test` when no Catch2 is found: installs the distribution's
# package where it can, otherwise prints the command to run.
pkg_cmd="apt-get install -y catch2"
if command -v apt-get >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        echo "Catch2 not found: installing the distribution's package ($pkg_cmd)"
        apt-get install -y catch2 || { apt-get update && apt-get install -y catch2; }
        exit $?
    fi
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        echo "Catch2 not found: installing the distribution's package (sudo $pkg_cmd)"
        sudo apt-get install -y catch2 || { sudo apt-get update && sudo apt-get install -y catch2; }
        exit $?
    fi
fi
echo "Catch2 (v2 or v3) is not installed. Install it, then run make test again:" >&2
echo "  Debian/Ubuntu: sudo $pkg_cmd" >&2
echo "  Fedora:        sudo dnf install catch-devel" >&2
echo "  macOS:         brew install catch2" >&2
exit 1
