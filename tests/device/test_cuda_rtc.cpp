// kgtrain's CUDA kernels through NVRTC and the driver (device/cuda_rtc.h, model/bn_act_cuda.h). Compiling needs no
// GPU: KG_TEST_NVRTC lists NVRTC libraries (colon-separated; CI passes torch 2.11's libnvrtc.so.13 and the older
// torch's libnvrtc.so.12), and each must compile the fused BatchNorm kernels to SASS for the T4, A100, A10/L4, L40
// and H100 (sm_75/80/86/89/90) and to PTX for a GPU newer than it knows. That case is tagged [nvrtc] only, outside
// the ctest entries: .ci/run runs it with both libraries (kgtrain_tests "[nvrtc]"); without KG_TEST_NVRTC it says
// it skipped. Without a driver (this machine) every entry that needs one must fail with a message, never crash.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/strings.h"
#include "device/cuda_rtc.h"
#include "bn_act_kernels_src.h"
#include "model/bn_act_cuda.h"
#include "support/gpu.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::device::cuda_rtc::Nvrtc;

const char* const kKernelNames[] = {
    "kg_stats_f32",          "kg_finalize_f32",      "kg_forward_f32",   "kg_backward_sums_f32",
    "kg_backward_f32",       "kg_stats_bf16",        "kg_finalize_bf16", "kg_forward_bf16",
    "kg_backward_sums_bf16", "kg_backward_bf16",     "kg_stats_f16",     "kg_finalize_f16",
    "kg_forward_f16",        "kg_backward_sums_f16", "kg_backward_f16",  "kg_coeffs"};

std::vector<std::string> nvrtc_paths() {
  std::vector<std::string> out;
  const char* env = std::getenv("KG_TEST_NVRTC");
  if (!env) return out;
  for (const auto& p : kg::split(env, ':'))
    if (!p.empty()) out.push_back(p);
  return out;
}

}  // namespace KG_UNITY_ID
}  // namespace

using namespace KG_UNITY_ID;

TEST_CASE("NVRTC compiles the fused BatchNorm kernels for every GPU generation", "[nvrtc]") {
  const auto paths = nvrtc_paths();
  if (paths.empty()) {
    WARN(KG_TEST_SKIPPED_MARKER ": KG_TEST_NVRTC names no NVRTC library");
    return;
  }
  for (const auto& path : paths) {
    INFO("NVRTC " << path);
    const auto nvrtc = Nvrtc::open(path);
    const int v = nvrtc->version();
    CHECK(v >= 12000);
    const auto archs = nvrtc->archs();
    REQUIRE(!archs.empty());
    for (int sm : {75, 80, 86, 89, 90}) {
      INFO("sm_" << sm);
      const auto p = nvrtc->compile(kg::model::cuda::kBnActKernelsSource, "bn_act_kernels.cu", sm);
      CHECK(p.sass);
      CHECK(p.target == "sm_" + std::to_string(sm));
      REQUIRE(p.image.size() > 4);
      CHECK(p.image.compare(0, 4,
                            "\x7f"
                            "ELF") == 0);  // a cubin is an ELF file
      for (const char* k : kKernelNames) CHECK(p.image.find(k) != std::string::npos);
    }
    // A GPU newer than this NVRTC knows: PTX of the newest architecture it has, which the driver compiles.
    const auto ptx = nvrtc->compile(kg::model::cuda::kBnActKernelsSource, "bn_act_kernels.cu", 990);
    CHECK_FALSE(ptx.sass);
    CHECK(ptx.target == "compute_" + std::to_string(archs.back()));
    CHECK(ptx.image.find(".target sm_" + std::to_string(archs.back())) != std::string::npos);
    for (const char* k : kKernelNames) CHECK(ptx.image.find(std::string(".entry ") + k) != std::string::npos);
    // Older than every architecture it supports (a Kepler GPU): a clear error, no compile attempt.
    try {
      nvrtc->compile(kg::model::cuda::kBnActKernelsSource, "bn_act_kernels.cu", 35);
      FAIL("sm_35 compiled");
    } catch (const kg::DeviceError& e) {
      CHECK_THAT(e.what(), Catch::Contains("cannot compile for sm_35") &&
                               Catch::Contains("it supports sm_" + std::to_string(archs.front())));
    }
    // Source NVRTC rejects: its log reaches the message.
    try {
      nvrtc->compile("extern \"C\" __global__ void k() { undeclared_name = 1; }", "broken.cu", 80);
      FAIL("broken source compiled");
    } catch (const kg::DeviceError& e) {
      CHECK_THAT(e.what(),
                 Catch::Contains("failed to compile broken.cu for sm_80") && Catch::Contains("undeclared_name"));
    }
  }
}

TEST_CASE("cuda_rtc: a missing NVRTC or driver is an error that says so", "[unit]") {
  try {
    Nvrtc::open("/nonexistent/libnvrtc.so.12");
    FAIL("opened a missing library");
  } catch (const kg::DeviceError& e) {
    CHECK_THAT(e.what(), Catch::Contains("cannot open NVRTC /nonexistent/libnvrtc.so.12"));
  }
  if (kg::device::cuda_available()) return;  // the rest is about a machine without a GPU
  std::string why;
  const int v = kg::device::cuda_rtc::driver_version(&why);
  if (v == 0) {
    CHECK_FALSE(why.empty());
    try {
      kg::device::cuda_rtc::gpu_info(0);
      FAIL("described a GPU without a driver");
    } catch (const kg::DeviceError& e) {
      CHECK_THAT(e.what(), Catch::Contains("CUDA kernels: "));
    }
  }
  // The fused BatchNorm's probe: not ready, with a reason, and asked twice gives the same answer.
  std::string why1, why2;
  CHECK_FALSE(kg::model::cuda::kernels_ready(0, &why1));
  CHECK_FALSE(kg::model::cuda::kernels_ready(0, &why2));
  CHECK_FALSE(why1.empty());
  CHECK(why1 == why2);
}

TEST_CASE("the fused BatchNorm kernels load and launch on this GPU", "[gpu]") {
  KG_REQUIRE_GPU();
  std::string why;
  INFO(why);
  REQUIRE(kg::model::cuda::kernels_ready(0, &why));
  const auto g = kg::device::cuda_rtc::gpu_info(0);
  CHECK(g.sm() >= 50);
  CHECK(g.total_memory > 0);
  CHECK_FALSE(g.name.empty());
}
