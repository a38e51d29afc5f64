// Device choices per hardware (fake descriptions of a T4, a P100, an A100, CPUs with and without
// native bf16) and the settings reaching LibTorch's global context.
#include <catch2/catch.hpp>

#include <cstdlib>

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include "core/error.h"
#include "device/backend.h"
#include "device/device.h"
#include "support/fixtures.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::device::DeviceDescription;
using kg::device::DeviceOptions;
using kg::device::Precision;

namespace {
DeviceDescription gpu(const std::string& name, int major, int minor) {
  DeviceDescription d;
  d.type = c10::kCUDA;
  d.name = name;
  d.cc_major = major;
  d.cc_minor = minor;
  d.total_memory = int64_t{16} << 30;
  d.native_bf16 = d.tf32 = major >= 8;
  return d;
}
DeviceDescription cpu(bool bf16) {
  DeviceDescription d;
  d.name = "cpu";
  d.native_bf16 = bf16;
  return d;
}
// Restores LibTorch's global flags after a test changes them.
struct ContextGuard {
  bool det = at::globalContext().deterministicAlgorithms(), bench = at::globalContext().benchmarkCuDNN(),
       tf32_blas = at::globalContext().allowTF32CuBLAS(), tf32_dnn = at::globalContext().allowTF32CuDNN(),
       det_dnn = at::globalContext().deterministicCuDNN();
  int threads = at::get_num_threads();
  ~ContextGuard() {
    auto& c = at::globalContext();
    c.setDeterministicAlgorithms(det, false);
    c.setBenchmarkCuDNN(bench);
    c.setAllowTF32CuBLAS(tf32_blas);
    c.setAllowTF32CuDNN(tf32_dnn);
    c.setDeterministicCuDNN(det_dnn);
    at::set_num_threads(threads);
  }
};
}  // namespace

TEST_CASE("device.precision = auto per device (Lightning's 16-mixed / bf16-mixed choice)", "[device][unit]") {
  using kg::device::choose_precision;
  CHECK(choose_precision("auto", gpu("NVIDIA A100-SXM4-40GB", 8, 0)) == Precision::bf16);
  CHECK(choose_precision("auto", gpu("NVIDIA H100 80GB HBM3", 9, 0)) == Precision::bf16);
  CHECK(choose_precision("auto", gpu("Tesla T4", 7, 5)) == Precision::fp16);
  CHECK(choose_precision("auto", gpu("Tesla P100-PCIE-16GB", 6, 0)) == Precision::fp16);
  CHECK(choose_precision("auto", gpu("Tesla K80", 3, 7)) == Precision::fp32);
  CHECK(choose_precision("auto", cpu(true)) == Precision::bf16);
  CHECK(choose_precision("auto", cpu(false)) == Precision::fp32);
  // Explicit choices the hardware can run pass through.
  CHECK(choose_precision("fp16", gpu("Tesla T4", 7, 5)) == Precision::fp16);
  CHECK(choose_precision("bf16", gpu("NVIDIA A100", 8, 0)) == Precision::bf16);
  CHECK(choose_precision("bf16", cpu(false)) == Precision::bf16);  // emulated, slow, but correct
  CHECK(choose_precision("fp32", gpu("Tesla T4", 7, 5)) == Precision::fp32);
}

TEST_CASE("device.precision the device cannot run is a clear recipe error", "[device][unit]") {
  using kg::device::choose_precision;
  CHECK_THROWS_AS(choose_precision("bf16", gpu("Tesla T4", 7, 5)), kg::ConfigError);
  CHECK_THROWS_WITH(
      choose_precision("bf16", gpu("Tesla T4", 7, 5)),
      Catch::Contains("Tesla T4") && Catch::Contains("7.5") && Catch::Contains("fp16") && Catch::Contains("Ampere"));
  CHECK_THROWS_WITH(choose_precision("fp16", cpu(true)), Catch::Contains("CUDA") && Catch::Contains("bf16"));
  CHECK_THROWS_WITH(choose_precision("fp8", cpu(true)), Catch::Contains("device.precision"));
}

TEST_CASE("device plan: TF32, cuDNN benchmark and deterministic per hardware", "[device][unit]") {
  DeviceOptions o;  // defaults: tf32 and cudnn_benchmark on
  auto a100 = kg::device::plan(o, gpu("NVIDIA A100", 8, 0));
  CHECK(a100.tf32);
  CHECK(a100.cudnn_benchmark);
  CHECK(a100.device.is_cuda());
  CHECK_THAT(a100.description, Catch::Contains("cuda:0 NVIDIA A100") && Catch::Contains("tf32"));
  auto t4 = kg::device::plan(o, gpu("Tesla T4", 7, 5));
  CHECK_FALSE(t4.tf32);  // no TF32 tensor cores before Ampere
  CHECK(t4.cudnn_benchmark);
  auto c = kg::device::plan(o, cpu(false));
  CHECK_FALSE(c.tf32);
  CHECK_FALSE(c.cudnn_benchmark);
  CHECK(c.device.is_cpu());
  o.deterministic = true;
  auto det = kg::device::plan(o, gpu("NVIDIA A100", 8, 0));
  CHECK_FALSE(det.cudnn_benchmark);  // benchmark picks algorithms by timing: not reproducible
  CHECK_FALSE(det.tf32);
  CHECK(det.deterministic);
  o = DeviceOptions{};
  o.precision = "fp16";
  o.loss_scale_init = 1024;
  o.loss_scale_growth_interval = 7;
  auto fp16 = kg::device::plan(o, gpu("Tesla T4", 7, 5));
  CHECK(fp16.precision == Precision::fp16);
  auto sc = fp16.make_scaler();
  CHECK(sc.enabled());
  CHECK(sc.scale() == 1024);
  CHECK_FALSE(a100.make_scaler().enabled());
  CHECK(a100.make_scaler().scale() == 1.0);
}

TEST_CASE("device settings reach LibTorch's global context", "[device][unit]") {
  ContextGuard restore;
  DeviceOptions o;
  o.threads = 1;
  auto info = kg::device::plan(o, gpu("NVIDIA A100", 8, 0));
  kg::device::apply(info);
  auto& ctx = at::globalContext();
  CHECK(ctx.allowTF32CuBLAS());
  CHECK(ctx.allowTF32CuDNN());
  CHECK(ctx.benchmarkCuDNN());
  CHECK_FALSE(ctx.deterministicAlgorithms());
  CHECK(at::get_num_threads() == 1);

  o.deterministic = true;
  o.threads = 2;
  ::unsetenv("CUBLAS_WORKSPACE_CONFIG");
  kg::device::apply(kg::device::plan(o, gpu("NVIDIA A100", 8, 0)));
  CHECK(ctx.deterministicAlgorithms());
  CHECK(ctx.deterministicCuDNN());
  CHECK_FALSE(ctx.benchmarkCuDNN());
  CHECK_FALSE(ctx.allowTF32CuBLAS());
  CHECK(at::get_num_threads() == 2);
  REQUIRE(std::getenv("CUBLAS_WORKSPACE_CONFIG") != nullptr);
  CHECK(std::string(std::getenv("CUBLAS_WORKSPACE_CONFIG")) == ":4096:8");
  ::unsetenv("CUBLAS_WORKSPACE_CONFIG");
}

TEST_CASE("device setup through the recipe: cpu, auto, and CUDA absent", "[device][integration]") {
  ContextGuard restore;
  kg::test::TempDir dir;
  auto opts = [&](const std::vector<std::string>& args) {
    std::string f = dir.write("d.toml", "[device]\nthreads = 1\n");
    return (kg::test::resolve_recipe({f}, args)).get<kg::device::DeviceOptions>();
  };
  auto info = kg::device::setup(opts({"device.name=cpu"}));
  CHECK(info.device.is_cpu());
  CHECK_THAT(info.description, Catch::StartsWith("cpu (1 threads"));
  auto a = kg::device::setup(opts({"device.name=auto"}));
  CHECK(a.device.is_cuda() == kg::device::cuda_available());
  if (!kg::device::cuda_available()) {
    CHECK_THROWS_AS(kg::device::setup(opts({"device.name=cuda:1"})), kg::DeviceError);
    CHECK_THROWS_WITH(kg::device::setup(opts({"device.name=cuda"})), Catch::Contains("CUDA is not available"));
    CHECK_THROWS_AS(kg::device::setup(opts({"device.name=cpu", "device.precision=fp16"})), kg::ConfigError);
  }
  // Registered backends: cuda first (auto prefers it), cpu always available.
  auto bs = kg::device::backends();
  REQUIRE(bs.size() >= 2);
  CHECK(bs.front()->name() == "cuda");
  CHECK(kg::device::find_backend("cpu")->available());
  auto mem = kg::device::find_backend("cpu")->memory(0);
  CHECK(mem.available);
  CHECK(mem.peak_reserved >= mem.reserved);
  CHECK(mem.reserved > 0);
}

}  // namespace KG_UNITY_ID
}  // namespace
