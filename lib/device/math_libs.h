// Which BLAS, LAPACK and oneDNN LibTorch actually runs with: Debian's LibTorch calls whatever the system's
// libblas.so.3 / liblapack.so.3 alternatives point at (the unoptimised reference BLAS unless an optimised one is
// installed); a PyPI LibTorch carries MKL and oneDNN inside libtorch_cpu.
#pragma once
#include <string>

namespace kg::device {

struct MathLib {
  std::string name;  // "OpenBLAS 0.3.21 (openmp)", "reference BLAS (Netlib)", "MKL 2024.2 (inside LibTorch)", "none"
  std::string path;  // the file loaded ("" when it is part of LibTorch or absent)
};

struct MathLibs {
  MathLib blas, lapack;
  std::string onednn;           // "oneDNN 2.7.3", or "" when LibTorch was built without it
  std::string cpu_capability;   // LibTorch's vectorised kernels: "AVX512", "AVX2", ... ("" when not reported)
  bool reference_blas = false;  // the Netlib reference BLAS: matrix products 10-25x slower than an optimised one
  std::string torch_version;    // the LibTorch loaded at run time (its build settings' TORCH_VERSION; "" if absent)
  std::string torch_cuda;       // its CUDA_VERSION ("13.0"; "" for a CPU-only LibTorch)
};

// The loaded LibTorch as pip names its builds: "2.11.0+cu130", "2.10.0+cu128"; without CUDA the bare version.
std::string torch_build_name();

// What this process has loaded; computed once.
const MathLibs& math_libs();
// "OpenBLAS 0.3.21 (openmp), oneDNN 2.7.3": one phrase for device descriptions and fit's header.
std::string math_libs_brief();
// The lines `kgtrain --version` prints (BLAS, LAPACK, oneDNN, CPU kernels).
std::string math_libs_text();
// A warning when LibTorch calls the reference BLAS, else "".
std::string reference_blas_warning();

// Classifies a loaded BLAS/LAPACK file by its resolved path (Debian's alternatives folders: blas/, lapack/,
// openblas-pthread/, openblas-openmp/, blis-openmp/, atlas/, ...). Exposed for tests.
std::string classify_math_library(const std::string& resolved_path, bool lapack);

}  // namespace kg::device
