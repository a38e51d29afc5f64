// The NVML GPU monitor against a fake libnvidia-ml (tests/support/fake_nvml.cpp), and its absence.
#include <catch2/catch.hpp>

#include <filesystem>
#include <thread>

#include "device/nvml.h"
#include "support/fixtures.h"
#include "test_paths.h"
#include "train/trainer_rig.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

TEST_CASE("NVML monitor: samples utilization and memory in the background", "[unit][device][nvml]") {
  kg::device::NvmlMonitor m(0, 0.01, KGTRAIN_FAKE_NVML);
  REQUIRE(m.available());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto s = m.take();
  CHECK(s.samples >= 2);
  CHECK(s.util_mean >= 40);
  CHECK(s.util_mean <= 60);
  CHECK(s.util_max == 60);
  CHECK(s.memory_used_max == (int64_t{2} << 30));
  CHECK(s.memory_total == (int64_t{16} << 30));
  auto again = m.take();  // a take() right after reads one sample on the spot
  CHECK(again.samples >= 1);
}

TEST_CASE("NVML monitor: no library, or no such device, is no monitor", "[unit][device][nvml]") {
  kg::device::NvmlMonitor none(0, 0.5, "libkgtrain-no-such-nvml.so");
  CHECK_FALSE(none.available());
  CHECK_THAT(none.why(), Catch::Contains("NVML not found"));
  CHECK(none.take().samples == 0);
  kg::device::NvmlMonitor second(1, 0.5, KGTRAIN_FAKE_NVML);
  CHECK_FALSE(second.available());
  CHECK_THAT(second.why(), Catch::Contains("no device 1"));
}

TEST_CASE("gpu_monitor callback: per-epoch utilization in the epoch report", "[integration][device][nvml][trainer]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 32, 4);
  std::filesystem::create_directories(dir / "r");
  kg::test::Rig r(ds.root, dir / "r",
                  {"train.epochs=2", "train.batch_size=8",
                   std::string("gpu_monitor.library=\"") + KGTRAIN_FAKE_NVML + "\"", "gpu_monitor.interval_s=0.01"},
                  24);
  r.trainer->fit();
  const auto& h = r.trainer->state().history;
  REQUIRE(h.size() == 2);
  for (auto& e : h) {
    REQUIRE(e.contains("gpu_util_pct"));
    CHECK(e["gpu_util_pct"].get<double>() >= 40);
    CHECK(e["gpu_mem_used_gib"].get<double>() == Approx(2.0));
  }
  kg::test::TempDir d2;
  auto ds2 = kg::test::make_tiny_dataset(d2, 32, 4);
  std::filesystem::create_directories(d2 / "r");
  kg::test::Rig off(ds2.root, d2 / "r", {"train.epochs=1", "train.batch_size=8", "gpu_monitor.library=\"nope.so\""},
                    24);
  off.trainer->fit();
  CHECK_FALSE(off.trainer->state().history[0].contains("gpu_util_pct"));
}

}  // namespace KG_UNITY_ID
}  // namespace
