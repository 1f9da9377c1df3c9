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
  at their usual paths, and the CUDA toolkit in use where it lies outside the
  system's folders (toolkit_dirs), read-only; nothing else of the file system: not the lab, not the
  grading outputs, not the base build, not other submissions;
- no network (an empty network namespace), no view or signal of processes
  outside it, no capabilities (so no remounting, no new device nodes), and
  when the harness runs as root, the uid/gid of `nobody`;
- one process tree: when the command ends, every process it left behind
  (daemons, double forks, setsid) is killed with the namespace;
- limits (`Limits`: BUILD, TEST, SANITIZED): host memory (its /tmp and
  /dev/shm included), processes and threads, the size of a file, in a cgroup v2
  of its own where the harness can make one (`Cgroups`), else as rlimits; the
  GPU nodes of the grading's one GPU only, none for a build.

Where no sandbox can start (no util-linux, or a container that forbids
namespaces), `Sandbox.available` is False with the reason, and grading runs
without one, saying "not sandboxed" in every report.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import secrets
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

NOBODY = 65534
SYSTEM_DIRS = ["usr", "etc", "opt", "bin", "sbin", "lib", "lib32", "lib64", "libx32"]
DEVICES = ["null", "zero", "full", "random", "urandom", "tty"]


def toolkit_dirs(env=None) -> list[Path]:
    """The CUDA toolkit of the NVCC in use (the environment's NVCC, else the
    nvcc on its PATH) when it lies outside the system's folders, which every
    sandbox shows anyway: a toolkit unpacked without root (.ci/fetch-cuda12),
    PyPI's wheels in a virtual environment, a cluster's module in a shared
    folder. Shown read-only, or a build inside could not find its compiler.
    Its root is the folder above nvcc's bin/ (NVIDIA's layout and the wheels'
    alike)."""
    env = os.environ if env is None else env
    name = env.get("NVCC") or "nvcc"
    folders = [""] if "/" in name else [d for d in env.get("PATH", "").split(os.pathsep) if d]
    found = next((Path(d) / name for d in folders if os.access(Path(d) / name, os.X_OK)), None)
    if found is None or not found.is_file():
        return []
    root = found.resolve().parent.parent
    system = [Path("/") / d for d in SYSTEM_DIRS]
    if root == Path("/") or any(root.is_relative_to(s.resolve()) for s in system if s.exists()):
        return []
    return [root]


@dataclass(frozen=True)
class Limits:
    """What one sandboxed command may take, all its processes together."""
    what: str
    memory: int  # bytes of host memory, its private /tmp and /dev/shm included (tmpfs is memory)
    tasks: int  # processes and threads
    file_size: int  # bytes: the largest file it may write (RLIMIT_FSIZE)
    tmp: str  # its private /tmp (tmpfs)
    shm: str  # its private /dev/shm (tmpfs)
    gpu: bool  # whether it sees the grading's GPU


# Measured on the reference through make grade on an H200: a test process holds
# 0.25 GiB and 5 threads; a build of a part's student.cu under 1 GiB. The limits
# leave several times that; what passes them is a bomb, not a solution.
BUILD = Limits("build", memory=6 << 30, tasks=512, file_size=256 << 20, tmp="2g", shm="64m", gpu=False)
TEST = Limits("test", memory=4 << 30, tasks=64, file_size=64 << 20, tmp="512m", shm="256m", gpu=True)
SANITIZED = Limits("sanitized test", memory=8 << 30, tasks=256, file_size=64 << 20, tmp="512m", shm="256m", gpu=True)
# Without a cgroup, processes are limited per user (RLIMIT_NPROC counts every
# process of the sandbox's user on the machine, not of one sandbox): a limit
# against a fork bomb, not a share.
NPROC_WITHOUT_CGROUP = 4096


def describe_bytes(n: int) -> str:
    return f"{n >> 30} GiB" if n >= 1 << 30 and n % (1 << 30) == 0 else f"{n >> 20} MiB"


def size_bytes(size: str) -> int:
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
        self.cgroups = Cgroups()
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

    def wrap(self, cmd: list[str], cwd: Path, limits: Limits, writable: list[Path] = (),
             readable: list[Path] = (), gpu: list[str] | None = None) -> list[str]:
        """`cmd` to run inside the sandbox in `cwd`, with the private /tmp and
        /dev/shm of `limits` and the GPU nodes `gpu` (names under /dev, from
        gpu_nodes; None: every NVIDIA node) where limits.gpu; unchanged when no
        sandbox is available. The other limits are the Box's."""
        if not self.available:
            return cmd
        nodes = _nvidia_nodes() if gpu is None else [n for n in gpu if os.path.exists(f"/dev/{n}")]
        return self._command(cmd, cwd, writable, readable, (limits.tmp, limits.shm), nodes if limits.gpu else [])

    def box(self, limits: Limits) -> "Box":
        """The limits of one command (sandboxed or not): made before it starts,
        closed after it ends."""
        return Box(self.cgroups, limits)

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

    def _command(self, cmd, cwd, writable, readable, sizes, nodes) -> list[str]:
        readable = list(readable) + [d for d in toolkit_dirs() if d not in readable]
        if self.tool == "bwrap":
            return self._bwrap(cmd, cwd, writable, readable, sizes, nodes)
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
                  # ... and every mount under it (a remount is not recursive:
                  # /sys/fs/cgroup would stay writable, and with it a test's limits)
                  'for m in $(awk -v top="$R/sys/" \'index($5, top) == 1 { print $5 }\' /proc/self/mountinfo); do '
                  'mount -o remount,bind,ro "$m"; done',
                  f'mount -t tmpfs -o size={tmp},mode=1777 lab-tmp "$R/tmp"']
        for dev in DEVICES + nodes:
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
        groups = sorted({os.stat(f"/dev/{n}").st_gid for n in nodes} - {0}) if self.as_root else []
        drop = ["setpriv", "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all"]
        if self.as_root:
            drop += [f"--reuid={self.uid}", f"--regid={self.gid}",
                     f"--groups={','.join(map(str, groups))}" if groups else "--clear-groups"]
        inner = ["/bin/sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", str(cwd), *cmd]
        lines.append('chroot "$R" ' + " ".join(q(a) for a in drop + inner))
        script = "\n".join(lines[:-1]) + "\nset +e\n" + lines[-1] + "\nexit $?\n"
        ns = ["unshare", "--mount", "--pid", "--fork", "--net", "--ipc", "--uts", "--cgroup", "--kill-child"]
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

    def _bwrap(self, cmd, cwd, writable, readable, sizes, nodes) -> list[str]:
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
        tmp, shm = (str(size_bytes(s)) for s in sizes)
        args += ["--ro-bind", "/sys", "/sys", "--proc", "/proc", "--dev", "/dev", "--size", tmp, "--tmpfs", "/tmp",
                 "--size", shm, "--tmpfs", "/dev/shm"]
        for node in nodes:
            args += ["--dev-bind", f"/dev/{node}", f"/dev/{node}"]
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
        # Only a mount point (each sandbox mounts its own tmpfs there, in its
        # own mount namespace): empty, and gone with the harness.
        atexit.register(_remove_empty, self.root_dir)
        self.available = True
        try:
            r = subprocess.run(self._command(["/bin/true"], Path("/"), [], [], (TEST.tmp, TEST.shm), []),
                               capture_output=True, timeout=60,
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
        limits = ("limits in a cgroup" if self.cgroups.root else
                  f"limits as rlimits ({self.cgroups.why}: memory per process, processes per user)")
        if self.available:
            who = "as nobody" if self.as_root and self.tool == "unshare" else "without privileges"
            return f"sandboxed ({self.tool}: read-only system, no network, own processes, {who}; {limits})"
        return f"NOT SANDBOXED: {self.why} ({limits})"


def _remove_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):
        folder.rmdir()


def _nvidia_nodes(dev: Path = Path("/dev")) -> list[str]:
    return sorted(p.name for p in dev.glob("nvidia*"))


def gpu_nodes(uuid: str, driver: Path = Path("/proc/driver/nvidia/gpus"), dev: Path = Path("/dev")) -> list[str] | None:
    """The names under /dev a sandbox shows for the GPU `uuid` (GPU-...): the
    driver's shared nodes (nvidiactl, nvidia-uvm, nvidia-caps, ...) and that
    GPU's own nvidia<minor>, not the other GPUs'. None where the driver does
    not say which node is that GPU's (every node is then shown)."""
    for info in driver.glob("*/information"):
        try:
            fields = dict(line.split(":", 1) for line in info.read_text().splitlines() if ":" in line)
        except OSError:
            continue
        if uuid and fields.get("GPU UUID", "").strip() == uuid:
            minor = fields.get("Device Minor", "").strip()
            if not minor.isdigit():
                return None
            return [n for n in _nvidia_nodes(dev) if not n[len("nvidia"):].isdigit()] + [f"nvidia{minor}"]
    return None


class CgroupError(OSError):
    pass


class Cgroups:
    """A cgroup v2 folder of the harness's, under which each command gets one of
    its own with its limits (Box). Made where the harness may: as root, or in a
    subtree delegated to its user, at the nearest ancestor of its own cgroup
    that hands its children the memory and pids controllers (its own cgroup
    holds processes, so it cannot). `root` is None, with `why`, where none can
    be made; the limits are then rlimits."""
    MOUNT = Path("/sys/fs/cgroup")

    def __init__(self):
        self.root: Path | None = None
        self.why = ""
        self._next = 0
        self._lock = threading.Lock()
        try:
            self.root = self._make()
            atexit.register(self.close)
        except OSError as err:
            self.why = str(err) if isinstance(err, CgroupError) else f"no cgroup of its own can be made here ({err})"

    def child(self) -> Path:
        with self._lock:
            self._next += 1
            return self.root / f"run{self._next}"

    def _make(self) -> Path:
        lines = [ln for ln in Path("/proc/self/cgroup").read_text().splitlines() if ln.startswith("0::")]
        if not lines or not (self.MOUNT / "cgroup.controllers").exists():
            raise CgroupError("no cgroup v2 hierarchy at /sys/fs/cgroup")
        own = self.MOUNT / lines[0][3:].lstrip("/")
        candidates = [c for c in [own.parent, *own.parent.parents] if c.is_relative_to(self.MOUNT)] if own != self.MOUNT \
            else [own]
        for parent in candidates:
            try:
                if not {"memory", "pids"} <= set((parent / "cgroup.subtree_control").read_text().split()):
                    continue
                top = parent / f"lab-grading-{os.getpid()}-{secrets.token_hex(3)}"
                top.mkdir()
            except OSError:
                continue
            try:
                (top / "cgroup.subtree_control").write_text("+memory +pids")
                trial = top / "trial"
                trial.mkdir()
                (trial / "memory.max").write_text(str(64 << 20))
                (trial / "pids.max").write_text("8")
                r = subprocess.run(_enter(trial) + ["/bin/true"], capture_output=True, timeout=30)
                _remove(trial)
                if r.returncode == 0:
                    return top
            except (OSError, subprocess.SubprocessError):
                pass
            _remove(top)
        raise CgroupError("no cgroup v2 subtree with the memory and pids controllers is writable here")

    def close(self) -> None:
        if self.root is not None and self.root.exists():
            for child in self.root.iterdir():
                if child.is_dir():
                    _remove(child)
            _remove(self.root)


def _enter(cgroup: Path) -> list[str]:
    """A prefix that moves the command into `cgroup` before it starts (a shell
    that writes its own pid there, then becomes the command)."""
    return ["/bin/sh", "-c", 'echo $$ > "$1/cgroup.procs" || exit 125; shift; exec "$@"', "sh", str(cgroup)]


def _remove(cgroup: Path) -> None:
    """Ends whatever is still in a cgroup, then removes it."""
    for _ in range(100):
        try:
            if (cgroup / "cgroup.kill").exists():
                (cgroup / "cgroup.kill").write_text("1")
            else:
                for pid in (cgroup / "cgroup.procs").read_text().split():
                    try:
                        os.kill(int(pid), 9)
                    except ProcessLookupError:
                        pass
            cgroup.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.05)


class Box:
    """The limits of one command: a cgroup of its own (memory, processes and
    threads) where Cgroups has a root, rlimits always (file size, no core
    files; memory per process and processes per user where there is no
    cgroup). `prefix` goes before the command; close() says which limit, if
    any, stopped it, and removes the cgroup with anything left in it."""

    def __init__(self, cgroups: Cgroups, limits: Limits):
        self.limits = limits
        self.cgroup: Path | None = None
        self.peak_memory = 0
        self.prefix: list[str] = []
        if cgroups.root is not None:
            try:
                self.cgroup = cgroups.child()
                self.cgroup.mkdir()
                for name, value in (("memory.max", limits.memory), ("memory.swap.max", 0), ("memory.oom.group", 1),
                                    ("pids.max", limits.tasks)):
                    if (self.cgroup / name).exists():
                        (self.cgroup / name).write_text(str(value))
                self.prefix = _enter(self.cgroup)
            except OSError:
                self.cgroup = None  # the rlimits below still hold
        if shutil.which("prlimit"):
            self.prefix += ["prlimit", f"--fsize={limits.file_size}", "--core=0", f"--data={limits.memory}"]
            if self.cgroup is None:
                self.prefix.append(f"--nproc={NPROC_WITHOUT_CGROUP}")
            self.prefix.append("--")

    def close(self) -> str:
        """"" or what the command ran into: its memory or its process limit."""
        if self.cgroup is None:
            return ""
        hit = []
        try:  # the kills it counts happened before its command ended; _remove ends the rest
            events = _keyed(self.cgroup / "memory.events")
            if events.get("oom_kill", 0) or events.get("oom_group_kill", 0):
                hit.append(f"it ran out of its {describe_bytes(self.limits.memory)} of host memory (its processes, "
                           "/tmp and /dev/shm together) and was killed")
            if _keyed(self.cgroup / "pids.events").get("max", 0):
                hit.append(f"it reached its limit of {self.limits.tasks} processes and threads")
            peak = self.cgroup / "memory.peak"
            self.peak_memory = int(peak.read_text()) if peak.exists() else 0
        except (OSError, ValueError):
            pass
        _remove(self.cgroup)
        return "; ".join(hit)


def _keyed(path: Path) -> dict[str, int]:
    try:
        return {k: int(v) for k, v in (line.split() for line in path.read_text().splitlines() if line.strip())}
    except (OSError, ValueError):
        return {}
