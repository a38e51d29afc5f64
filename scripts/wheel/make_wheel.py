#!/usr/bin/env python3
"""Assembles kgtrain's wheel before auditwheel grafts the libraries in (scripts/build_wheel.sh calls it).

  make_wheel.py --binary BUILD/kgtrain --torch-root SITE/torch --out DIR [--glibc 2.35] [--plat linux_x86_64]

The wheel holds the Python package (python/kgtrain), the binary as kgtrain/bin/kgtrain with RUNPATH
$ORIGIN/../../torch/lib, the shipped recipes, and kgtrain/_build.py (the torch it was built against, the torch
libraries it links, the glibc it needs). The `kgtrain` command is a console script (kgtrain._launcher:main) that
checks torch before it execs the binary.

One wheel per torch minor: its version carries the minor as a local version (0.1.0+pt211 for torch 2.11.x) and it
requires torch>=2.11,<2.12, so `pip install --no-index --find-links DIR kgtrain` picks, from a folder holding the
wheels of every minor, the one the installed torch satisfies, and leaves torch alone. The binary must link no
CUDA library of a particular CUDA major (it reaches the driver and NVRTC by dlopen: lib/device/cuda_rtc.h), so one
wheel serves every CUDA build of its torch minor (cu126, cu128, cu130); this script refuses a binary that does.
Prints the wheel's path.
"""
import argparse
import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def needed(path):
    out = subprocess.run(["readelf", "-d", path], check=True, capture_output=True, text=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


# Libraries whose soname or symbol versions name a CUDA major (libcudart.so.13, cudaGetLastError@libcudart.so.13):
# a binary linking one runs with only one CUDA build of torch.
CUDA_SPECIFIC = re.compile(r"^lib(cudart|cublas|cublasLt|cudnn|cufft|curand|cusolver|cusparse|nvrtc|nvJitLink|nccl|"
                           r"nvToolsExt|cupti)[.]so")


def cuda_ties(path):
    """The CUDA-major-specific libraries `path` links, and its undefined symbols that carry a CUDA library's
    version (e.g. cudaGetLastError@libcudart.so.13): what would tie it to one CUDA build of torch."""
    libs = [n for n in needed(path) if CUDA_SPECIFIC.match(n)]
    out = subprocess.run(["readelf", "--dyn-syms", "-W", path], check=True, capture_output=True, text=True).stdout
    syms = sorted({m.group(1) for m in re.finditer(r"\bUND\s+(\S+@lib(?:cudart|cublas|nvrtc|cudnn)\S*)", out)})
    return libs, syms


def torch_version(torch_root):
    with open(os.path.join(torch_root, "version.py"), encoding="utf-8") as f:
        return re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", f.read(), re.M).group(1)


def kgtrain_version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        return re.search(r"project\(kgtrain VERSION ([0-9.]+)", f.read()).group(1)


def record_line(root, rel):
    with open(os.path.join(root, rel), "rb") as f:
        data = f.read()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{rel},sha256={digest},{len(data)}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--torch-root", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--glibc", default="2.17", help="the glibc the repaired wheel needs (from its platform tag)")
    ap.add_argument("--plat", default="linux_x86_64")
    a = ap.parse_args()

    tv = torch_version(a.torch_root)
    base = tv.split("+")[0]
    major, minor = (int(x) for x in base.split(".")[:2])
    version = f"{kgtrain_version()}+pt{major}{minor}"
    libs = needed(a.binary)
    torch_lib = os.path.join(a.torch_root, "lib")
    torch_libs = [n for n in libs if os.path.exists(os.path.join(torch_lib, n))]
    cuda = "libtorch_cuda.so" in torch_libs
    tied_libs, tied_syms = cuda_ties(a.binary)
    if tied_libs or tied_syms:
        sys.exit(f"make_wheel: {a.binary} is tied to one CUDA build of torch: it links {tied_libs or 'nothing CUDA'}"
                 f" and uses {tied_syms[:8] or 'no versioned CUDA symbol'}; kgtrain reaches CUDA through LibTorch, "
                 "c10 and lib/device/cuda_rtc.h only")
    rpath = ["$ORIGIN/../../torch/lib"]

    stage = tempfile.mkdtemp(prefix="kgtrain-wheel-")
    try:
        pkg = os.path.join(stage, "kgtrain")
        shutil.copytree(os.path.join(ROOT, "python", "kgtrain"), pkg,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "_build.py"))
        shutil.copytree(os.path.join(ROOT, "recipes"), os.path.join(pkg, "recipes"))
        os.makedirs(os.path.join(pkg, "bin"))
        exe = os.path.join(pkg, "bin", "kgtrain")
        shutil.copy2(a.binary, exe)
        subprocess.run(["strip", "--strip-unneeded", exe], check=True)
        subprocess.run(["patchelf", "--set-rpath", ":".join(rpath), exe], check=True)
        glibc = tuple(int(x) for x in a.glibc.split("."))
        with open(os.path.join(pkg, "_build.py"), "w", encoding="utf-8") as f:
            f.write("# Written by scripts/wheel/make_wheel.py: what this wheel's binary was built against.\n"
                    f"KGTRAIN_VERSION = {version!r}\nTORCH_VERSION = {tv!r}\nTORCH_VERSION_BASE = {base!r}\n"
                    f"TORCH_MINOR = {(major, minor)!r}\n"
                    "# The CUDA builds of that torch minor the binary runs with: it links no CUDA library of its own.\n"
                    f"CUDA_MAJORS = {(12, 13) if cuda else ()!r}\n"
                    f"TORCH_LIBS = {torch_libs!r}\nCUDA = {cuda!r}\nGLIBC_MIN = {glibc!r}\n")
        dist = os.path.join(stage, f"kgtrain-{version}.dist-info")
        os.makedirs(dist)
        with open(os.path.join(dist, "METADATA"), "w", encoding="utf-8") as f:
            f.write("Metadata-Version: 2.1\nName: kgtrain\n"
                    f"Version: {version}\nSummary: Train image models for Kaggle competitions from one C++ binary\n"
                    f"Requires-Python: >=3.8\nRequires-Dist: torch>={major}.{minor},<{major}.{minor + 1}\n")
        with open(os.path.join(dist, "WHEEL"), "w", encoding="utf-8") as f:
            f.write(f"Wheel-Version: 1.0\nGenerator: kgtrain make_wheel.py\nRoot-Is-Purelib: false\n"
                    f"Tag: py3-none-{a.plat}\n")
        with open(os.path.join(dist, "entry_points.txt"), "w", encoding="utf-8") as f:
            f.write("[console_scripts]\nkgtrain = kgtrain._launcher:main\n")
        files = []
        for top, _, names in os.walk(stage):
            for n in names:
                files.append(os.path.relpath(os.path.join(top, n), stage))
        files.sort()
        record = f"kgtrain-{version}.dist-info/RECORD"
        lines = [record_line(stage, r) for r in files] + [f"{record},,"]
        with open(os.path.join(stage, record), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        os.makedirs(a.out, exist_ok=True)
        path = os.path.join(a.out, f"kgtrain-{version}-py3-none-{a.plat}.whl")
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
            for r in files + [record]:
                info = zipfile.ZipInfo.from_file(os.path.join(stage, r), r)
                info.compress_type = zipfile.ZIP_DEFLATED
                with open(os.path.join(stage, r), "rb") as f:
                    z.writestr(info, f.read(), compresslevel=9)
        print(path)
    finally:
        shutil.rmtree(stage)


if __name__ == "__main__":
    sys.exit(main())
