#include "device/cuda_rtc.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <type_traits>
#include <cstdlib>
#include <mutex>

#include "core/error.h"

namespace kg::device::cuda_rtc {
namespace {

// The few driver API types and values kgtrain uses, as cuda.h defines them (a stable ABI since CUDA 4).
using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUstream = void*;
using CUdeviceptr = unsigned long long;
constexpr int kAttrCcMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrCcMinor = 76;

// The driver, opened once; the _v2 names are what cuda.h maps the plain ones to.
struct CuDriver {
  void* handle = nullptr;
  std::string why;
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t*, CUdevice) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void**, void**) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream) = nullptr;

  template <class F>
  bool bind(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(handle, name));
    if (!f) why = std::string("libcuda.so.1 lacks ") + name;
    return f != nullptr;
  }

  CuDriver() {
    handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* e = dlerror();
      why = std::string("no NVIDIA driver (") + (e ? e : "libcuda.so.1 not found") + ")";
      return;
    }
    const bool ok =
        bind(cuInit, "cuInit") && bind(cuDriverGetVersion, "cuDriverGetVersion") && bind(cuDeviceGet, "cuDeviceGet") &&
        bind(cuDeviceGetName, "cuDeviceGetName") && bind(cuDeviceGetAttribute, "cuDeviceGetAttribute") &&
        bind(cuDeviceTotalMem, "cuDeviceTotalMem_v2") && bind(cuGetErrorName, "cuGetErrorName") &&
        bind(cuGetErrorString, "cuGetErrorString") && bind(cuCtxGetCurrent, "cuCtxGetCurrent") &&
        bind(cuCtxSetCurrent, "cuCtxSetCurrent") && bind(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
        bind(cuModuleLoadData, "cuModuleLoadData") && bind(cuModuleUnload, "cuModuleUnload") &&
        bind(cuModuleGetFunction, "cuModuleGetFunction") && bind(cuLaunchKernel, "cuLaunchKernel") &&
        bind(cuMemsetD8Async, "cuMemsetD8Async");
    if (!ok) return;
    const CUresult rc = cuInit(0);
    if (rc != 0) why = "the NVIDIA driver did not initialise (" + error_text(rc) + ")";
  }
  bool ok() const { return handle && why.empty(); }

  std::string error_text(CUresult rc) const {
    const char *name = nullptr, *text = nullptr;
    if (cuGetErrorName) cuGetErrorName(rc, &name);
    if (cuGetErrorString) cuGetErrorString(rc, &text);
    return std::string(name ? name : "CUDA error " + std::to_string(rc)) + (text ? std::string(": ") + text : "");
  }
};

const CuDriver& cu_driver() {
  static const CuDriver d;
  return d;
}

const CuDriver& checked_cu_driver() {
  const CuDriver& d = cu_driver();
  KG_CHECK(d.ok(), DeviceError, "CUDA kernels: ", d.why);
  return d;
}

#define KG_CU(call, ...)                                                                               \
  do {                                                                                                 \
    const CUresult kg_cu_rc = (call);                                                                  \
    KG_CHECK(kg_cu_rc == 0, DeviceError, __VA_ARGS__, ": ", checked_cu_driver().error_text(kg_cu_rc)); \
  } while (0)

// The paths of the shared objects loaded in this process whose file name starts with `prefix`.
std::vector<std::string> loaded_objects(const std::string& prefix) {
  struct Ctx {
    const std::string* prefix;
    std::vector<std::string> out;
  } ctx{&prefix, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* p) {
        auto* c = static_cast<Ctx*>(p);
        const std::string path = info->dlpi_name ? info->dlpi_name : "";
        const auto slash = path.rfind('/');
        if (path.compare(slash == std::string::npos ? 0 : slash + 1, c->prefix->size(), *c->prefix) == 0)
          c->out.push_back(path);
        return 0;
      },
      &ctx);
  return ctx.out;
}

std::string folder_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

int driver_version(std::string* why) {
  const CuDriver& d = cu_driver();
  int v = 0;
  if (!d.ok() || d.cuDriverGetVersion(&v) != 0) {
    if (why) *why = d.ok() ? "cuDriverGetVersion failed" : d.why;
    return 0;
  }
  return v;
}

GpuInfo gpu_info(int ordinal) {
  const CuDriver& d = checked_cu_driver();
  CUdevice dev = 0;
  KG_CU(d.cuDeviceGet(&dev, ordinal), "cuda:", ordinal);
  GpuInfo g;
  char name[256] = {0};
  KG_CU(d.cuDeviceGetName(name, sizeof(name) - 1, dev), "cuda:", ordinal, " name");
  g.name = name;
  KG_CU(d.cuDeviceGetAttribute(&g.cc_major, kAttrCcMajor, dev), "cuda:", ordinal, " compute capability");
  KG_CU(d.cuDeviceGetAttribute(&g.cc_minor, kAttrCcMinor, dev), "cuda:", ordinal, " compute capability");
  size_t mem = 0;
  KG_CU(d.cuDeviceTotalMem(&mem, dev), "cuda:", ordinal, " memory");
  g.total_memory = static_cast<int64_t>(mem);
  return g;
}

// ---- NVRTC ----

struct Nvrtc::Api {
  using Prog = void*;
  int (*nvrtcVersion)(int*, int*) = nullptr;
  int (*nvrtcGetNumSupportedArchs)(int*) = nullptr;
  int (*nvrtcGetSupportedArchs)(int*) = nullptr;
  int (*nvrtcCreateProgram)(Prog*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  int (*nvrtcDestroyProgram)(Prog*) = nullptr;
  int (*nvrtcCompileProgram)(Prog, int, const char* const*) = nullptr;
  int (*nvrtcGetProgramLogSize)(Prog, size_t*) = nullptr;
  int (*nvrtcGetProgramLog)(Prog, char*) = nullptr;
  int (*nvrtcGetCUBINSize)(Prog, size_t*) = nullptr;
  int (*nvrtcGetCUBIN)(Prog, char*) = nullptr;
  int (*nvrtcGetPTXSize)(Prog, size_t*) = nullptr;
  int (*nvrtcGetPTX)(Prog, char*) = nullptr;
  const char* (*nvrtcGetErrorString)(int) = nullptr;
};

Nvrtc::~Nvrtc() = default;  // the library stays loaded: kernels compiled by it may still be in use

std::shared_ptr<const Nvrtc> Nvrtc::open(const std::string& path_or_soname) {
  // A path as an absolute one: NVRTC 12 opens its builtins library (libnvrtc-builtins.so.12.8) beside the path it
  // was opened by, which a relative path no longer names once the process has changed its folder.
  std::string path = path_or_soname;
  if (path.find('/') != std::string::npos) {
    char* real = realpath(path.c_str(), nullptr);
    if (real) {
      path = real;
      std::free(real);
    }
  }
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    throw DeviceError("cannot open NVRTC " + path + ": " + (e ? e : "not found"));
  }
  std::shared_ptr<Nvrtc> n(new Nvrtc());
  n->handle_ = h;
  n->path_ = path;
  n->api_ = std::make_unique<Api>();
  Api& a = *n->api_;
  std::string missing;
  auto bind = [&](auto& f, const char* name) {
    f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(h, name));
    if (!f) missing += std::string(missing.empty() ? "" : ", ") + name;
  };
  // Each Api member by its own name.
#define KG_NVRTC_BIND(fn) bind(a.fn, #fn)
  KG_NVRTC_BIND(nvrtcVersion);
  KG_NVRTC_BIND(nvrtcGetNumSupportedArchs);
  KG_NVRTC_BIND(nvrtcGetSupportedArchs);
  KG_NVRTC_BIND(nvrtcCreateProgram);
  KG_NVRTC_BIND(nvrtcDestroyProgram);
  KG_NVRTC_BIND(nvrtcCompileProgram);
  KG_NVRTC_BIND(nvrtcGetProgramLogSize);
  KG_NVRTC_BIND(nvrtcGetProgramLog);
  KG_NVRTC_BIND(nvrtcGetCUBINSize);
  KG_NVRTC_BIND(nvrtcGetCUBIN);
  KG_NVRTC_BIND(nvrtcGetPTXSize);
  KG_NVRTC_BIND(nvrtcGetPTX);
  KG_NVRTC_BIND(nvrtcGetErrorString);
#undef KG_NVRTC_BIND
  KG_CHECK(missing.empty(), DeviceError, "NVRTC ", path, " lacks ", missing, " (kgtrain needs NVRTC 11.2 or newer)");
  return n;
}

std::shared_ptr<const Nvrtc> Nvrtc::find(std::string* why) {
  static std::mutex mu;
  static std::shared_ptr<const Nvrtc> found;
  std::lock_guard<std::mutex> lock(mu);
  if (found) return found;
  std::vector<std::string> tries;
  if (const char* env = std::getenv("KG_NVRTC"); env && *env) tries.push_back(env);
  for (const auto& p : loaded_objects("libnvrtc.so.")) tries.push_back(p);
  const auto cudart = loaded_objects("libcudart.so.");
  for (const auto& rt : cudart) {
    const std::string major = rt.substr(rt.rfind("libcudart.so.") + 13, 2);
    const std::string so = "libnvrtc.so." + major.substr(0, major.find('.'));
    tries.push_back(so);
    tries.push_back(folder_of(rt) + "/" + so);                       // nvidia/cu13/lib: one folder for all
    tries.push_back(folder_of(rt) + "/../../cuda_nvrtc/lib/" + so);  // nvidia/cuda_runtime/lib -> cuda_nvrtc/lib
  }
  if (cudart.empty()) tries.push_back("libnvrtc.so");
  tries.push_back("/usr/local/cuda/lib64/libnvrtc.so");
  std::string errors;
  for (const auto& t : tries) {
    try {
      found = open(t);
      return found;
    } catch (const DeviceError& e) {
      errors += std::string(errors.empty() ? "" : "; ") + e.what();
    }
  }
  if (why) *why = "no NVRTC found (" + errors + "); set KG_NVRTC to a libnvrtc.so path";
  return nullptr;
}

int Nvrtc::version() const {
  int major = 0, minor = 0;
  api_->nvrtcVersion(&major, &minor);
  return major * 1000 + minor * 10;
}

std::vector<int> Nvrtc::archs() const {
  int n = 0;
  if (api_->nvrtcGetNumSupportedArchs(&n) != 0 || n <= 0) return {};
  std::vector<int> v(static_cast<size_t>(n));
  if (api_->nvrtcGetSupportedArchs(v.data()) != 0) return {};
  std::sort(v.begin(), v.end());
  return v;
}

Program Nvrtc::compile(const std::string& source, const std::string& name, int sm) const {
  const std::vector<int> known = archs();
  KG_CHECK(!known.empty(), DeviceError, "NVRTC ", path_, " lists no GPU architectures");
  Program p;
  if (std::find(known.begin(), known.end(), sm) != known.end()) {
    p.target = "sm_" + std::to_string(sm);
    p.sass = true;
  } else {
    int below = 0;
    for (int a : known)
      if (a < sm) below = a;
    KG_CHECK(below > 0, DeviceError, "NVRTC ", version() / 1000, ".", version() % 1000 / 10, " (", path_,
             ") cannot compile for sm_", sm, ": it supports sm_", known.front(), " to sm_", known.back());
    p.target = "compute_" + std::to_string(below);  // PTX: the driver compiles it for the newer GPU
  }
  const Api& a = *api_;
  Api::Prog prog = nullptr;
  int rc = a.nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  KG_CHECK(rc == 0, DeviceError, "NVRTC could not create ", name, ": ", a.nvrtcGetErrorString(rc));
  struct Destroy {
    const Api& a;
    Api::Prog& p;
    ~Destroy() { a.nvrtcDestroyProgram(&p); }
  } destroy{a, prog};
  const std::string arch = "--gpu-architecture=" + p.target;
  const char* opts[] = {arch.c_str(), "--std=c++17"};
  rc = a.nvrtcCompileProgram(prog, 2, opts);
  if (rc != 0) {
    size_t n = 0;
    a.nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    if (n) a.nvrtcGetProgramLog(prog, log.data());
    throw DeviceError("NVRTC " + path_ + " failed to compile " + name + " for " + p.target + ": " +
                      a.nvrtcGetErrorString(rc) + "\n" + log);
  }
  size_t n = 0;
  if (p.sass) {
    a.nvrtcGetCUBINSize(prog, &n);
    p.image.resize(n);
    rc = a.nvrtcGetCUBIN(prog, p.image.data());
  } else {
    a.nvrtcGetPTXSize(prog, &n);
    p.image.resize(n);
    rc = a.nvrtcGetPTX(prog, p.image.data());
  }
  KG_CHECK(rc == 0 && n > 0, DeviceError, "NVRTC produced no ", p.sass ? "cubin" : "PTX", " for ", name);
  return p;
}

// ---- modules and launches ----

Module::Module(int ordinal, const Program& program) : ordinal_(ordinal) {
  const CuDriver& d = checked_cu_driver();
  // The primary context, which LibTorch's runtime uses, current on this thread (the runtime makes it current when
  // it sets the device; a thread that has not touched the device gets it here).
  CUcontext ctx = nullptr;
  KG_CU(d.cuCtxGetCurrent(&ctx), "cuda:", ordinal, ": no current context");
  if (!ctx) {
    CUdevice dev = 0;
    KG_CU(d.cuDeviceGet(&dev, ordinal), "cuda:", ordinal);
    KG_CU(d.cuDevicePrimaryCtxRetain(&ctx, dev), "cuda:", ordinal, ": primary context");
    KG_CU(d.cuCtxSetCurrent(ctx), "cuda:", ordinal, ": primary context");
  }
  KG_CU(d.cuModuleLoadData(&module_, program.image.data()), "cuda:", ordinal, ": the driver cannot load kgtrain's ",
        program.target, " kernels");
}

Module::~Module() {
  if (module_ && cu_driver().ok()) cu_driver().cuModuleUnload(module_);
}

void* Module::function(const char* name) const {
  CUfunction f = nullptr;
  KG_CU(checked_cu_driver().cuModuleGetFunction(&f, module_, name), "kernel ", name);
  return f;
}

void Module::launch(void* fn, const char* name, unsigned grid_x, unsigned grid_y, unsigned block_x, unsigned block_y,
                    void* stream, void** args) const {
  KG_CU(checked_cu_driver().cuLaunchKernel(fn, grid_x, grid_y, 1, block_x, block_y, 1, 0, stream, args, nullptr),
        "cuda:", ordinal_, ": kernel ", name, " <<<(", grid_x, ",", grid_y, "), (", block_x, ",", block_y,
        ")>>> did not launch");
}

void Module::zero_async(void* ptr, size_t bytes, void* stream) const {
  KG_CU(checked_cu_driver().cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(ptr), 0, bytes, stream), "cuda:", ordinal_,
        ": zeroing ", bytes, " bytes");
}

#undef KG_CU

}  // namespace kg::device::cuda_rtc
