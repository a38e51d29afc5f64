// The `gpu_monitor` callback: GPU utilization and memory per epoch from NVML, the numbers competitors
// otherwise watch nvidia-smi for ("is the GPU starving?"). Sampled in the background during the
// epoch; written to metrics.jsonl (gpu_util_pct, gpu_util_max_pct, gpu_mem_used_gib) and the log.
// Where NVML is absent (no NVIDIA driver) it does nothing.
#include <memory>

#include "config/sections.h"
#include "core/strings.h"
#include "device/nvml.h"
#include "train/trainer.h"

namespace kg::train {
namespace {

// Recipe section [gpu_monitor]; each field's doc is in gpu_monitor_fields() below and docs/reference.md.
struct GpuMonitorOptions {
  bool enabled = true;
  double interval_s = 0.5;
  std::string library = "libnvidia-ml.so.1";
};

class GpuMonitor : public Callback {
 public:
  explicit GpuMonitor(GpuMonitorOptions o) : o_(std::move(o)) {}
  std::string name() const override { return "gpu_monitor"; }
  int order() const override { return 20; }  // before the epoch's line and metrics.jsonl are written
  void on_fit_start(Trainer& t) override {
    const int index = t.device().is_cuda() && t.device().has_index() ? t.device().index() : 0;
    mon_ = std::make_unique<device::NvmlMonitor>(index, o_.interval_s, o_.library);
    if (!mon_->available()) mon_.reset();
  }
  void on_epoch_begin(Trainer&) override {
    if (mon_) mon_->take();  // validation and saving of the previous epoch are not this epoch's
  }
  void on_epoch_end(Trainer& t, EpochReport& r) override {
    if (!mon_) return;
    auto s = mon_->take();
    if (s.samples == 0) return;
    const double gib = 1024.0 * 1024.0 * 1024.0;
    r.values["gpu_util_pct"] = s.util_mean;
    r.values["gpu_util_max_pct"] = s.util_max;
    r.values["gpu_mem_used_gib"] = static_cast<double>(s.memory_used_max) / gib;
    t.log("  gpu     utilization " + format_significant(s.util_mean, 3) + "% (max " +
          format_significant(s.util_max, 3) + "%), memory " +
          format_significant(static_cast<double>(s.memory_used_max) / gib, 3) + " / " +
          format_significant(static_cast<double>(s.memory_total) / gib, 3) + " GiB (" + std::to_string(s.samples) +
          " samples)");
  }
  void on_fit_end(Trainer&) override { mon_.reset(); }

 private:
  GpuMonitorOptions o_;
  std::unique_ptr<device::NvmlMonitor> mon_;
};

config::Fields<GpuMonitorOptions> gpu_monitor_fields() {
  config::Fields<GpuMonitorOptions> f;
  f.field("enabled", &GpuMonitorOptions::enabled,
          "sample GPU utilization and memory during training epochs (NVML; "
          "nothing happens without an NVIDIA driver)");
  f.field("interval_s", &GpuMonitorOptions::interval_s, "seconds between samples").min(0.01);
  f.field("library", &GpuMonitorOptions::library, "the NVML library dlopen loads");
  return f;
}

KG_REGISTER_SECTION("gpu_monitor", "GPU utilization and memory per epoch from NVML (nvidia-smi's library)",
                    gpu_monitor_fields().schema(), "");

KG_REGISTER(callback_registry(), "gpu_monitor",
            "GPU utilization and memory per epoch from NVML (metrics.jsonl gpu_util_pct, gpu_mem_used_gib; keys in "
            "[gpu_monitor])",
            "[gpu_monitor]\nenabled = true\ninterval_s = 0.5", config::Fields<config::NoOptions>(),
            [](const config::NoOptions&, const config::Recipe& recipe) -> CallbackPtr {
              auto o = gpu_monitor_fields().load(recipe.section("gpu_monitor"));
              return o.enabled ? std::make_unique<GpuMonitor>(o) : nullptr;
            });

}  // namespace
}  // namespace kg::train
