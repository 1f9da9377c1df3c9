"""Runs a submission's builds and tests in a sandbox.

What a sandboxed process gets (Linux namespaces through util-linux's `unshare`,
then `setpriv` to drop every privilege before the command starts; where that
cannot start, through bubblewrap's `bwrap`, which some distributions allow where
they forbid other unprivileged namespaces):

- a root of its own: the system's programs and libraries (/usr, /etc, /opt,
  /bin, /lib*, /sbin) and /sys read-only; /proc of its own processes only;
  /dev with the null/zero/random devices and the NVIDIA device nodes; a
  private /tmp and /dev/shm (tmpfs, lost when it ends);
- the folders the harness names, read-only or writable (its scratch folder),
  at their usual paths; nothing else of the file system: not the lab, not the
  grading outputs, not the base build, not other submissions;
- no network (an empty network namespace), no view or signal of processes
  outside it, no capabilities (so no remounting, no new device nodes), and
  when the harness runs as root, the uid/gid of `nobody`;
- one process tree: when the command ends, every process it left behind
  (daemons, double forks, setsid) is killed with the namespace.

Where no sandbox can start (no util-linux, or a container that forbids
namespaces), `Sandbox.available` is False with the reason, and grading runs
without one, saying "not sandboxed" in every report.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

NOBODY = 65534
SYSTEM_DIRS = ["usr", "etc", "opt", "bin", "sbin", "lib", "lib32", "lib64", "libx32"]
DEVICES = ["null", "zero", "full", "random", "urandom", "tty"]
TMP_SIZE = "4g"  # the private /tmp of a build (nvcc's temporary files)
SHM_SIZE = "1g"
# A test's private /tmp and /dev/shm: memory, taken by whatever a test writes
# there; a test needs neither.
TEST_TMP_SIZE, TEST_SHM_SIZE = "512m", "256m"


def _bytes(size: str) -> int:
    """"512m" -> 536870912 (bwrap wants bytes where mount takes a suffix)."""
    return int(size[:-1]) << {"k": 10, "m": 20, "g": 30}[size[-1]]


class Sandbox:
    def __init__(self, enabled: bool = True, hidden: tuple[Path, ...] = (), tools: tuple[str, ...] = ("unshare", "bwrap")):
        """`hidden`: folders that must not be seen even where they lie inside a
        system folder the sandbox shows (the lab itself, the grading outputs).
        `tools`: the ways to try, in order."""
        self.hidden = tuple(Path(h).resolve() for h in hidden)
        self.root_dir: Path | None = None
        self.as_root = os.geteuid() == 0
        self.uid = NOBODY if self.as_root else os.geteuid()
        self.gid = NOBODY if self.as_root else os.getegid()
        self.tool = ""
        self.available, self.why = False, "turned off (SANDBOX=0)"
        if enabled:
            reasons = []
            for tool in tools:
                self.tool = tool
                self.available, why = self._probe()
                if self.available:
                    break
                reasons.append(why)
            self.why = "; ".join(reasons)

    # ------------------------------------------------------------ the command

    def wrap(self, cmd: list[str], cwd: Path, writable: list[Path] = (), readable: list[Path] = (),
             small_tmp: bool = False) -> list[str]:
        """`cmd` to run inside the sandbox in `cwd`; unchanged when none is available.
        `small_tmp`: a test's sizes of /tmp and /dev/shm, not a build's."""
        if not self.available:
            return cmd
        return self._command(cmd, cwd, writable, readable,
                             (TEST_TMP_SIZE, TEST_SHM_SIZE) if small_tmp else (TMP_SIZE, SHM_SIZE))

    def own(self, *paths: Path) -> None:
        """Hands folders to the sandbox's user (when the harness runs as root),
        so that a process inside may write them. (bwrap's user namespace maps
        its user to the harness's own, which owns them already.)"""
        if not (self.available and self.as_root) or self.tool == "bwrap":
            return
        for top in paths:
            os.chown(top, self.uid, self.gid)
            for root, dirs, files in os.walk(top):
                for name in dirs + files:
                    os.lchown(os.path.join(root, name), self.uid, self.gid)

    # ------------------------------------------------------------ inside

    def _command(self, cmd, cwd, writable, readable, sizes=(TMP_SIZE, SHM_SIZE)) -> list[str]:
        if self.tool == "bwrap":
            return self._bwrap(cmd, cwd, writable, readable, sizes)
        r = str(self.root_dir)
        q = shlex.quote
        tmp, shm = sizes
        lines = ["set -e", "mount --make-rprivate /", f"R={q(r)}",
                 'mount -t tmpfs -o size=16m,mode=755 lab-sandbox "$R"']
        for d in SYSTEM_DIRS:
            src = Path("/") / d
            if src.is_symlink():
                lines.append(f'ln -s {q(os.readlink(src))} "$R/{d}"')
            elif src.is_dir():
                lines += [f'mkdir "$R/{d}"', f'mount --rbind /{d} "$R/{d}"', f'mount -o remount,bind,ro "$R/{d}"']
        lines += ['mkdir "$R/dev" "$R/proc" "$R/sys" "$R/tmp"',
                  'mount -t tmpfs -o mode=755 lab-dev "$R/dev"',
                  'mkdir "$R/dev/shm"', f'mount -t tmpfs -o size={shm},mode=1777 lab-shm "$R/dev/shm"',
                  'mount -t proc proc "$R/proc"',
                  'mount --rbind /sys "$R/sys"', 'mount -o remount,bind,ro "$R/sys"',
                  f'mount -t tmpfs -o size={tmp},mode=1777 lab-tmp "$R/tmp"']
        for dev in DEVICES + sorted(p.name for p in Path("/dev").glob("nvidia*")):
            src = Path("/dev") / dev
            if src.is_dir():
                lines += [f'mkdir "$R/dev/{dev}"', f'mount --bind /dev/{dev} "$R/dev/{dev}"']
            elif src.exists():
                lines += [f': > "$R/dev/{dev}"', f'mount --bind /dev/{dev} "$R/dev/{dev}"']
        for h in self.hidden:  # the lab or the outputs may lie under a folder shown above
            lines.append(f'if [ -d "$R"{q(str(h))} ]; then mount -t tmpfs -o size=1m,mode=755 lab-hidden "$R"{q(str(h))}; fi')
        for path, mode in [(p, "ro") for p in readable] + [(p, "rw") for p in writable]:
            p = q(str(Path(path).resolve()))
            lines += [f'mkdir -p "$R"{p}', f'mount --bind {p} "$R"{p}']
            if mode == "ro":
                lines.append(f'mount -o remount,bind,ro "$R"{p}')
        groups = sorted({os.stat(p).st_gid for p in Path("/dev").glob("nvidia*")} - {0}) if self.as_root else []
        drop = ["setpriv", "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all"]
        if self.as_root:
            drop += [f"--reuid={self.uid}", f"--regid={self.gid}",
                     f"--groups={','.join(map(str, groups))}" if groups else "--clear-groups"]
        inner = ["/bin/sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", str(cwd), *cmd]
        lines.append('chroot "$R" ' + " ".join(q(a) for a in drop + inner))
        script = "\n".join(lines[:-1]) + "\nset +e\n" + lines[-1] + "\nexit $?\n"
        ns = ["unshare", "--mount", "--pid", "--fork", "--net", "--ipc", "--uts", "--kill-child"]
        if not self.as_root:
            ns.insert(1, "--map-root-user")
            ns.insert(1, "--user")
        return ns + ["--", "/bin/sh", str(self._script_file(script))]

    def _script_file(self, script: str) -> Path:
        """The script (or bwrap's arguments) in a file of its own, outside
        anything a sandbox shows: the sandbox's first process, whose command
        line every process inside can read, then names a file and nothing of
        the grading (its folders, the lab's, the outputs)."""
        folder = Path(str(self.root_dir or tempfile.gettempdir() + "/lab-sandbox") + "-scripts")
        if not folder.exists():
            folder.mkdir(mode=0o700, exist_ok=True)
            atexit.register(shutil.rmtree, folder, True)  # the harness's own, gone with it
        path = folder / (hashlib.sha256(script.encode()).hexdigest()[:24] + ".sh")
        if not path.exists():
            partial = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}")
            partial.write_text(script)
            os.replace(partial, path)
        return path

    def _bwrap(self, cmd, cwd, writable, readable, sizes=(TMP_SIZE, SHM_SIZE)) -> list[str]:
        """The same sandbox with bubblewrap: its own user namespace, so the uid
        inside is nobody's (as root) or the grader's, without capabilities."""
        args = ["bwrap", "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                "--uid", str(self.uid), "--gid", str(self.gid)]
        for d in SYSTEM_DIRS:
            src = Path("/") / d
            if src.is_symlink():
                args += ["--symlink", os.readlink(src), f"/{d}"]
            elif src.is_dir():
                args += ["--ro-bind", f"/{d}", f"/{d}"]
        tmp, shm = (str(_bytes(s)) for s in sizes)
        args += ["--ro-bind", "/sys", "/sys", "--proc", "/proc", "--dev", "/dev", "--size", tmp, "--tmpfs", "/tmp",
                 "--size", shm, "--tmpfs", "/dev/shm"]
        for node in sorted(Path("/dev").glob("nvidia*")):
            args += ["--dev-bind", str(node), str(node)]
        for h in self.hidden:
            if any(h.is_relative_to(Path("/") / d) for d in SYSTEM_DIRS if (Path("/") / d).is_dir()):
                args += ["--tmpfs", str(h)]
        for path in readable:
            args += ["--ro-bind", str(Path(path).resolve()), str(Path(path).resolve())]
        for path in writable:
            args += ["--bind", str(Path(path).resolve()), str(Path(path).resolve())]
        # A shell as the namespace's first process, so that a signal that ends
        # the command reads as 128 + N, as with unshare.
        args += ["--chdir", str(cwd)]
        # bwrap stays the namespace's first process: its options come from a
        # file (--args), so its command line shows the command and nothing of
        # the grading (its mounts, the folders it shows and hides).
        listed = self._script_file("\0".join(args[1:]) + "\0")
        return ["/bin/sh", "-c", 'listed="$1"; shift; exec bwrap --args 3 "$@" 3<"$listed"', "sh", str(listed),
                "/bin/sh", "-c", '"$@"; exit $?', "sh", *cmd]

    def _probe(self) -> tuple[bool, str]:
        needs = ("bwrap",) if self.tool == "bwrap" else ("unshare", "setpriv", "chroot", "mount")
        for tool in needs:
            if shutil.which(tool) is None:
                return False, f"{tool} is not installed"
        self.root_dir = Path(tempfile.mkdtemp(prefix="lab-sandbox-root-"))
        os.chmod(self.root_dir, 0o755)
        self.available = True
        try:
            r = subprocess.run(self._command(["/bin/true"], Path("/"), [], []), capture_output=True, timeout=60,
                               stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as err:
            self.available = False
            return False, f"the sandbox could not start: {err}"
        if r.returncode != 0:
            self.available = False
            text = (r.stderr or r.stdout).decode("utf-8", "replace").strip().splitlines()
            return False, f"{self.tool} could not start a sandbox here (" + (text[-1] if text else f"status {r.returncode}") + ")"
        return True, ""

    def describe(self) -> str:
        if self.available:
            who = "as nobody" if self.as_root and self.tool == "unshare" else "without privileges"
            return f"sandboxed ({self.tool}: read-only system, no network, own processes, {who})"
        return "NOT SANDBOXED: " + self.why
