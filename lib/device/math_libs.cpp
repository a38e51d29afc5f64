#include "device/math_libs.h"

#include <dlfcn.h>
#include <link.h>

#include <climits>
#include <cstdlib>
#include <sstream>
#include <vector>

#include <ATen/Version.h>

#include "core/strings.h"

namespace kg::device {
namespace {

// The loaded shared objects' paths, as the dynamic linker opened them.
std::vector<std::string> loaded_objects() {
  std::vector<std::string> out;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name && *info->dlpi_name)
          static_cast<std::vector<std::string>*>(data)->push_back(info->dlpi_name);
        return 0;
      },
      &out);
  return out;
}

std::string base_name(const std::string& p) { return p.substr(p.find_last_of('/') + 1); }

std::string resolved(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

// A symbol of one loaded library (not of whichever object happens to define it first).
void* symbol_of(const std::string& path, const char* name) {
  void* h = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return nullptr;
  void* s = dlsym(h, name);
  dlclose(h);
  return s;
}

// "OpenBLAS 0.3.21 (openmp, Zen kernels)" from the library's own functions; the folder's name otherwise.
std::string openblas_name(const std::string& path, const std::string& folder) {
  std::string version = "OpenBLAS", mode, core;
  if (auto cfg = reinterpret_cast<const char* (*)()>(symbol_of(path, "openblas_get_config"))) {
    std::istringstream words(cfg());
    std::string w1, w2;
    words >> w1 >> w2;
    if (w1 == "OpenBLAS" && !w2.empty()) version += " " + w2;
  }
  if (auto par = reinterpret_cast<int (*)()>(symbol_of(path, "openblas_get_parallel"))) {
    const int p = par();
    mode = p == 0 ? "serial" : p == 1 ? "pthread" : p == 2 ? "openmp" : "";
  } else if (starts_with(folder, "openblas-")) {
    mode = folder.substr(9);
  }
  if (auto cn = reinterpret_cast<char* (*)()>(symbol_of(path, "openblas_get_corename"))) core = cn();
  std::vector<std::string> notes;
  if (!mode.empty()) notes.push_back(mode);
  if (!core.empty()) notes.push_back(core + " kernels");
  return notes.empty() ? version : version + " (" + join(notes, ", ") + ")";
}

// One "  - ..." line of at::show_config() that contains `key`, without the key; "" when absent.
std::string config_line(const std::string& config, const std::string& key) {
  std::istringstream in(config);
  for (std::string line; std::getline(in, line);) {
    auto at = line.find(key);
    if (at != std::string::npos) return trim(line.substr(at + key.size()));
  }
  return "";
}

// "BLAS_INFO=mkl, ..." -> "mkl".
std::string build_setting(const std::string& config, const std::string& key) {
  auto at = config.find(key + "=");
  if (at == std::string::npos) return "";
  auto start = at + key.size() + 1, end = config.find_first_of(", \n", start);
  return config.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

struct DnnlVersion {  // dnnl_version_t (oneDNN 1.x-3.x)
  int major, minor, patch;
  const char* hash;
};

MathLibs detect() {
  MathLibs m;
  const std::string config = at::show_config();
  std::string blas_path, lapack_path, engine_path;
  for (const auto& obj : loaded_objects()) {
    const std::string b = base_name(obj);
    if (starts_with(b, "libopenblas") && engine_path.empty()) engine_path = obj;
    const bool blas = starts_with(b, "libblas.so") || starts_with(b, "libopenblas") || starts_with(b, "libblis") ||
                      starts_with(b, "libmkl_rt");
    if (blas && blas_path.empty()) blas_path = obj;
    if (starts_with(b, "liblapack.so") && lapack_path.empty()) lapack_path = obj;
  }
  const std::string mkl = config_line(config, "Math Kernel Library Version");
  const std::string mkl_name =
      "MKL" + (mkl.empty() ? std::string() : " " + mkl.substr(0, mkl.find_first_of("- "))) + " (inside LibTorch)";
  // LibTorch built with MKL (PyPI's wheels) links it statically: a libblas.so.3 in the process then belongs to
  // someone else (OpenCV's core loads one) and is not what matrix products run on.
  auto pick = [&](MathLib& lib, const std::string& info, const std::string& loaded, bool lapack) {
    if (info == "mkl") {
      lib.name = mkl_name;
    } else if (!loaded.empty()) {
      lib.path = resolved(loaded);
      lib.name = classify_math_library(lib.path, lapack);
    } else {
      lib.name = info.empty() ? "none found" : info + " (inside LibTorch)";
    }
  };
  pick(m.blas, build_setting(config, "BLAS_INFO"), blas_path, false);
  pick(m.lapack, build_setting(config, "LAPACK_INFO"), lapack_path, true);
  m.reference_blas = starts_with(m.blas.name, "reference");
  // Debian's openblas-*/libblas.so.3 is a thin wrapper over libopenblas.so.0, which the loader finds through its own
  // alternative: the engine doing the work can be another build (pthread under an openmp wrapper). Name the engine.
  auto name_openblas = [&](MathLib& lib) {
    if (lib.path.empty() || !starts_with(lib.name, "OpenBLAS")) return;
    const std::string engine = engine_path.empty() ? lib.path : resolved(engine_path);
    lib.name = openblas_name(engine, base_name(engine.substr(0, engine.find_last_of('/'))));
    if (engine != lib.path) lib.path += " -> " + engine;
  };
  name_openblas(m.blas);
  name_openblas(m.lapack);
  if (auto v = reinterpret_cast<const DnnlVersion* (*)()>(dlsym(RTLD_DEFAULT, "dnnl_version"))) {
    const DnnlVersion* d = v();
    m.onednn = "oneDNN " + std::to_string(d->major) + "." + std::to_string(d->minor) + "." + std::to_string(d->patch);
  } else {
    std::string line = config_line(config, "MKL-DNN v");  // "3.7.1 (Git Hash ...)"
    if (!line.empty())
      m.onednn = "oneDNN " + line.substr(0, line.find(' '));
    else if (build_setting(config, "USE_MKLDNN") == "ON")
      m.onednn = "oneDNN";
  }
  m.cpu_capability = config_line(config, "CPU capability usage:");
  m.torch_version = build_setting(config, "TORCH_VERSION");
  m.torch_cuda = build_setting(config, "CUDA_VERSION");
  return m;
}

}  // namespace

std::string torch_build_name() {
  const MathLibs& m = math_libs();
  std::string v = m.torch_version.empty() ? "(version unknown)" : m.torch_version;
  if (!m.torch_cuda.empty()) {
    std::string digits;
    for (char c : m.torch_cuda.substr(0, m.torch_cuda.find('.', m.torch_cuda.find('.') + 1)))
      if (c != '.') digits += c;
    v += "+cu" + digits;
  }
  return v;
}

std::string classify_math_library(const std::string& path, bool lapack) {
  const auto slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos || slash == 0 ? "" : base_name(path.substr(0, slash));
  const std::string file = base_name(path);
  // Debian/Ubuntu alternatives: /usr/lib/<triplet>/blas/libblas.so.3 and lapack/liblapack.so.3 are Netlib's.
  if (folder == "blas" || folder == "lapack") return lapack ? "reference LAPACK (Netlib)" : "reference BLAS (Netlib)";
  if (starts_with(folder, "openblas") || starts_with(file, "libopenblas")) return "OpenBLAS";
  if (starts_with(folder, "blis") || starts_with(file, "libblis"))
    return "BLIS (" + (folder.empty() ? file : folder) + ")";
  if (starts_with(folder, "atlas")) return "ATLAS";
  if (file.find("mkl") != std::string::npos || folder.find("mkl") != std::string::npos) return "MKL";
  return file;
}

const MathLibs& math_libs() {
  static const MathLibs libs = detect();
  return libs;
}

std::string math_libs_brief() {
  const auto& m = math_libs();
  std::string s = "BLAS " + m.blas.name;
  if (!m.onednn.empty()) s += ", " + m.onednn;
  return s;
}

std::string math_libs_text() {
  const auto& m = math_libs();
  auto with_path = [](const MathLib& l) { return l.name + (l.path.empty() ? "" : " (" + l.path + ")"); };
  std::string s = "BLAS: " + with_path(m.blas) + "\nLAPACK: " + with_path(m.lapack) + "\n";
  s += m.onednn.empty() ? "oneDNN: not built into this LibTorch\n" : m.onednn + "\n";
  if (!m.cpu_capability.empty()) s += "CPU kernels: " + m.cpu_capability + "\n";
  return s;
}

std::string reference_blas_warning() {
  const auto& m = math_libs();
  if (!m.reference_blas) return "";
  return "warning: LibTorch is calling the reference BLAS (" + m.blas.path +
         ", Netlib's unoptimised code): matrix products — linear layers, attention, convnext — run 10-25x slower "
         "than with an optimised BLAS. Install one: apt-get install libopenblas0-openmp (scripts/setup.sh does), "
         "or select it with update-alternatives --config libblas.so.3-x86_64-linux-gnu";
}

}  // namespace kg::device
