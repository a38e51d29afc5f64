"""The wheel's launcher (python/kgtrain/_launcher.py) against an installed wheel: run by scripts/check_wheel.sh inside
the fresh root, `python -m unittest test_launcher` with the venv's python. Each case changes one fact the launcher
reads (the glibc it sees, the recorded build, the torch folder) and checks the refusal: exit 2 and what it says."""
import io
import os
import subprocess
import sys
import unittest
from contextlib import redirect_stderr
from unittest import mock

import kgtrain
from kgtrain import _build, _launcher


class LauncherTest(unittest.TestCase):
    def refused(self, **patches):
        err = io.StringIO()
        with mock.patch.multiple(_build, **patches):
            with redirect_stderr(err), self.assertRaises(SystemExit) as cm:
                _launcher.main(["--version"])
        self.assertEqual(cm.exception.code, 2)
        return err.getvalue()

    def test_environment_is_fine_here(self):
        self.assertIsNone(kgtrain.check_environment())

    def test_too_old_glibc(self):
        msg = self.refused(GLIBC_MIN=(2, 99))
        self.assertIn("needs glibc 2.99 or newer", msg)

    def test_other_torch_minor(self):
        msg = self.refused(TORCH_VERSION="1.13.1", TORCH_VERSION_BASE="1.13.1", TORCH_MINOR=(1, 13))
        self.assertIn("was built for torch 1.13.x (against 1.13.1)", msg)
        root, version = _launcher._installed_torch()
        rel = _launcher._release(version)
        # The wheel to install instead names the installed torch's minor, as make_wheel.py names wheels.
        self.assertIn(f"install kgtrain-{_build.KGTRAIN_VERSION.split('+')[0]}+pt{rel[0]}{rel[1]} instead", msg)
        self.assertIn("--find-links", msg)

    def test_another_patch_release_of_the_minor_is_fine(self):
        root, version = _launcher._installed_torch()
        rel = _launcher._release(version)
        with mock.patch.multiple(_build, TORCH_VERSION=f"{rel[0]}.{rel[1]}.97+cu126", TORCH_VERSION_BASE="x"):
            self.assertIsNone(kgtrain.check_environment())

    def test_cuda_build_outside_the_wheels_majors(self):
        msg = self.refused(CUDA_MAJORS=(11,))
        self.assertIn("runs with CUDA 11 builds of torch", msg)

    def test_cpu_only_torch(self):
        with mock.patch.object(_launcher, "_cuda_of", return_value=None):
            msg = self.refused(CUDA=True)
        self.assertIn("is a CPU-only build", msg)

    def test_torch_without_a_library_the_binary_links(self):
        msg = self.refused(TORCH_LIBS=list(_build.TORCH_LIBS) + ["libtorch_imaginary.so"])
        self.assertIn("lacks libtorch_imaginary.so", msg)

    def test_no_torch(self):
        err = io.StringIO()
        with mock.patch.object(_launcher.importlib.util, "find_spec", return_value=None):
            with redirect_stderr(err), self.assertRaises(SystemExit) as cm:
                _launcher.main(["--version"])
        self.assertEqual(cm.exception.code, 2)
        self.assertIn("torch is not installed", err.getvalue())

    def test_run_raises_with_the_message_and_code(self):
        with self.assertRaises(kgtrain.KgtrainError) as cm:
            kgtrain.run(["fit", "no_such_recipe.toml"], echo=False)
        self.assertEqual(cm.exception.returncode, 2)
        self.assertIn("no_such_recipe.toml", cm.exception.message)
        self.assertEqual(kgtrain.run(["fit", "no_such_recipe.toml"], check=False, echo=False), 2)

    def test_run_streams_and_returns_zero(self):
        out = io.StringIO()
        with mock.patch.object(sys, "stdout", out):
            self.assertEqual(kgtrain.run(["--version"]), 0)
        self.assertTrue(out.getvalue().startswith("kgtrain "))

    def test_command_exit_code_passes_through(self):
        rc = subprocess.run(["kgtrain", "fit", "no_such_recipe.toml"], capture_output=True).returncode
        self.assertEqual(rc, 2)
        rc = subprocess.run([sys.executable, "-m", "kgtrain", "--version"], capture_output=True).returncode
        self.assertEqual(rc, 0)


if __name__ == "__main__":
    unittest.main()
