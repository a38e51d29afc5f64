"""Finds the kgtrain binary, checks that the installed torch is one it was built for, and runs it.

The binary links libtorch/libc10 (and libtorch_cuda) of the installed `torch` package through its RPATH
($ORIGIN/../../torch/lib). A torch of another minor there would fail at load time with an undefined symbol, so
torch's version and CUDA build are compared first, from torch/version.py, without importing torch (which takes
seconds). One wheel serves every patch release and every CUDA build (cu126, cu128, cu130) of its torch minor: the
binary links no CUDA library of a particular CUDA major.
Exit codes are kgtrain's own (docs/commands.md): 2 for a wrong environment, as for a bad recipe.
"""
import importlib.util
import os
import re
import signal
import subprocess
import sys

EXIT_CONFIG = 2
_HERE = os.path.dirname(os.path.abspath(__file__))


class KgtrainError(RuntimeError):
    """kgtrain exited with a non-zero code; `message` holds its error lines, `returncode` its exit code."""

    def __init__(self, returncode, message, args=()):
        self.returncode = returncode
        self.message = message
        self.args_run = list(args)
        super().__init__(f"kgtrain {' '.join(self.args_run)} failed with exit code {returncode}: {message}")


def binary_path():
    return os.path.join(_HERE, "bin", "kgtrain")


def _build_info():
    try:
        from . import _build
    except ImportError:
        return None
    return _build


def _installed_torch():
    """(package folder, version string) of the importable torch, without importing it; (None, None) if absent."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None, None
    root = list(spec.submodule_search_locations)[0]
    version = None
    try:
        with open(os.path.join(root, "version.py"), encoding="utf-8") as f:
            m = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", f.read(), re.M)
            version = m.group(1) if m else None
    except OSError:
        pass
    return root, version


def _cuda_of(root):
    """torch/version.py's `cuda` ('12.8', '13.0'; None for a CPU-only build), or '?' when unreadable."""
    try:
        with open(os.path.join(root, "version.py"), encoding="utf-8") as f:
            m = re.search(r"^cuda\s*(?::[^=]*)?=\s*(?:['\"]([^'\"]*)['\"]|None)", f.read(), re.M)
    except OSError:
        return "?"
    if not m:
        return "?"
    return m.group(1)


def _wheel_for(release):
    """The name of the kgtrain wheel for a torch release: kgtrain-0.1.0+pt210 for torch 2.10.x."""
    b = _build_info()
    base = b.KGTRAIN_VERSION.split("+")[0] if b else "X"
    return f"kgtrain-{base}+pt{release[0]}{release[1]}"


def _release(version):
    """'2.11.0+cu130' -> (2, 11, 0): the part that decides ABI compatibility of LibTorch's C++ symbols."""
    return tuple(int(x) for x in re.findall(r"\d+", version.split("+")[0])[:3])


def _glibc():
    try:
        name = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        return None
    m = re.match(r"glibc (\d+)\.(\d+)", name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def check_environment():
    """None when the binary can run here, else the reason (one paragraph, for an error line)."""
    b = _build_info()
    exe = binary_path()
    if b is None or not os.access(exe, os.X_OK):
        return (f"no kgtrain binary at {exe}: this is a source checkout of the Python package, not an installed "
                "wheel (build one with: bash scripts/build_wheel.sh; then pip install dist/kgtrain-*.whl)")
    glibc = _glibc()
    if glibc is not None and glibc < tuple(b.GLIBC_MIN):
        return (f"this kgtrain wheel needs glibc {b.GLIBC_MIN[0]}.{b.GLIBC_MIN[1]} or newer, and this system has "
                f"{glibc[0]}.{glibc[1]}: build kgtrain from source here (README: Build from source)")
    root, version = _installed_torch()
    minor = tuple(getattr(b, "TORCH_MINOR", _release(b.TORCH_VERSION)[:2]))
    built = f"torch {minor[0]}.{minor[1]}.x"
    folder = ("pip install --no-index --find-links DIR kgtrain picks it from a folder holding kgtrain's wheels "
              "(docs/install.md)")
    if root is None:
        return (f"torch is not installed in this Python ({sys.executable}); this kgtrain wheel "
                f"({_wheel_for(minor)}) runs on {built}: pip install 'torch>={minor[0]}.{minor[1]},"
                f"<{minor[0]}.{minor[1] + 1}', or the kgtrain wheel for the torch you will install; {folder}")
    how = (f"install the kgtrain wheel for your torch; {folder}, or build it: TORCH=<major.minor> bash "
           "scripts/build_wheel.sh")
    if version is None:
        return f"cannot read the version of the torch at {root} (no version.py): {how}"
    rel = _release(version)
    if rel[:2] != minor:
        return (f"this kgtrain wheel ({_wheel_for(minor)}) was built for {built} (against {b.TORCH_VERSION}), but "
                f"torch {version} is installed at {root}; their C++ libraries are not compatible: install "
                f"{_wheel_for(rel)} instead ({folder})")
    cuda = _cuda_of(root)
    majors = tuple(getattr(b, "CUDA_MAJORS", ()))
    if b.CUDA and cuda is None:
        return (f"torch {version} at {root} is a CPU-only build, and this kgtrain wheel ({_wheel_for(minor)}) runs on "
                f"torch's CUDA builds (it links libtorch_cuda.so): install torch {minor[0]}.{minor[1]} with CUDA "
                f"(a cu126, cu128 or cu130 build), or build kgtrain from source against this torch")
    if b.CUDA and cuda not in (None, "?") and majors and int(cuda.split(".")[0]) not in majors:
        return (f"torch {version} at {root} is built with CUDA {cuda}, and this kgtrain wheel "
                f"({_wheel_for(minor)}, built against {b.TORCH_VERSION}) runs with CUDA "
                f"{' or '.join(str(m) for m in majors)} builds of torch: install such a torch, or build kgtrain "
                f"against this one (TORCH={minor[0]}.{minor[1]} bash scripts/build_wheel.sh)")
    lib = os.path.join(root, "lib")
    missing = [n for n in b.TORCH_LIBS if not os.path.exists(os.path.join(lib, n))]
    if missing:
        return (f"the installed torch {version} at {root} lacks {', '.join(missing)}, which this kgtrain wheel "
                f"({_wheel_for(minor)}, built against torch {b.TORCH_VERSION}{' with CUDA' if b.CUDA else ''}) links: "
                f"{how}")
    return None


def main(argv=None):
    """The `kgtrain` command: checks, then replaces this process by the binary (its exit code, signals and
    terminal are the binary's own)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    problem = check_environment()
    if problem:
        sys.stderr.write(f"kgtrain: error: {problem}\n")
        sys.exit(EXIT_CONFIG)
    exe = binary_path()
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(exe, [exe] + argv)


def _error_lines(tail):
    lines = [ln for ln in tail if "error" in ln.lower()]
    return "\n".join(lines[-5:] if lines else tail[-10:]).strip() or "(no output)"


def run(args, check=True, cwd=None, env=None, echo=True):
    """Runs `kgtrain ARGS...`, streaming its output into the notebook cell (or this process's stdout).

    Returns the exit code; with check=True (the default) a non-zero exit raises KgtrainError carrying kgtrain's
    error message, so a notebook's Run-All stops at a failed step. Ctrl-C / "interrupt kernel" reaches kgtrain as
    SIGINT (it saves its state and exits 130) before KeyboardInterrupt is raised here.
    """
    if isinstance(args, str):
        import shlex
        args = shlex.split(args)
    args = [os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in args]
    problem = check_environment()
    if problem:
        if check:
            raise KgtrainError(EXIT_CONFIG, problem, args)
        sys.stderr.write(f"kgtrain: error: {problem}\n")
        return EXIT_CONFIG
    proc = subprocess.Popen([binary_path()] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=cwd,
                            env=env, bufsize=0)
    tail, pending = [], b""
    try:
        while True:
            chunk = proc.stdout.read(4096)
            if not chunk:
                break
            if echo:
                sys.stdout.write(chunk.decode("utf-8", "replace"))
                sys.stdout.flush()
            pending += chunk
            *done, pending = re.split(rb"[\r\n]", pending)
            tail = (tail + [d.decode("utf-8", "replace") for d in done if d.strip()])[-200:]
        rc = proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        proc.wait()
        raise
    if pending.strip():
        tail.append(pending.decode("utf-8", "replace"))
    if rc != 0 and check:
        raise KgtrainError(rc, _error_lines(tail), args)
    return rc
