"""kgtrain from Python: the `kgtrain` command on PATH, `python -m kgtrain ...`, and `kgtrain.run([...])`.

The package holds one C++ binary (bin/kgtrain) that links the LibTorch of the installed `torch` package by RPATH.
`run` is for notebooks: a `!kgtrain ...` cell ignores the exit code, so Run-All goes on after a failed fit;
`kgtrain.run(["fit", "recipe.toml"])` streams the output into the cell and raises KgtrainError when kgtrain fails.
"""
from ._launcher import KgtrainError, binary_path, check_environment, run

__all__ = ["KgtrainError", "binary_path", "check_environment", "run", "__version__"]

try:
    from ._build import KGTRAIN_VERSION as __version__
except ImportError:  # a source checkout, not an installed wheel
    __version__ = "0+source"
