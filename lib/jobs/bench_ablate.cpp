#include "jobs/bench_ablate.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdio>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/strings.h"
#include "jobs/bench_util.h"
#include "model/model.h"
#include "model/summary.h"
#include "optim/param_groups.h"
#include "session/effective_recipe.h"
#include "session/training.h"

using nlohmann::json;

namespace kg::jobs::bench {
namespace {

// The recipe with key=value `overrides` set as the command line sets them, validated again.
config::Recipe with_overrides(const config::Recipe& recipe, const std::vector<std::string>& overrides) {
  std::vector<std::pair<std::string, config::json>> changes;
  for (const auto& w : overrides) {
    const auto eq = w.find('=');
    KG_ASSERT(eq != std::string::npos, "bench override without '=': ", w);
    changes.emplace_back(w.substr(0, eq), config::parse_override_value(w.substr(eq + 1)));
  }
  return recipe.with(changes, config::Origin::command_line());
}

// The first line of an error: LibTorch's carry a backtrace below it.
std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string seconds_text(double s) { return fixed(s, s >= 100 ? 0 : s >= 10 ? 1 : 2) + " s"; }

}  // namespace

const std::vector<std::string>& toggle_names() {
  static const std::vector<std::string> names{"precision", "channels_last",   "workers",     "accum",
                                              "tf32",      "cudnn_benchmark", "cuda_graphs", "grad_checkpointing",
                                              "cache",     "eval_batch"};
  return names;
}

std::vector<std::string> ablation_list(const std::vector<std::string>& asked, bool suggest) {
  if (asked.empty()) return suggest ? toggle_names() : std::vector<std::string>{};
  std::vector<std::string> out;
  for (const auto& a : asked)
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  return out;
}

Toggle plan_toggle(const std::string& name, const BaseInfo& b) {
  Toggle t{name, {}, ""};
  const bool cuda = b.dev.device.is_cuda();
  auto flip = [&](const std::string& key, bool now) { t.overrides.push_back(key + "=" + (now ? "false" : "true")); };
  auto n = [](int64_t v) { return std::to_string(v); };
  const auto& d = b.device_options;
  if (name == "precision") {
    // The other of fp32 and the device's fast 16-bit mode.
    if (b.dev.precision != device::Precision::fp32)
      t.overrides.push_back("device.precision=fp32");
    else if (cuda)
      t.overrides.push_back(std::string("device.precision=") + (b.dev.hardware.native_bf16 ? "bf16" : "fp16"));
    else if (b.dev.hardware.native_bf16)
      t.overrides.push_back("device.precision=bf16");
    else
      t.skip = "this CPU has no native bf16 (AVX512-BF16 or AMX): emulated bf16 is slower than fp32";
  } else if (name == "channels_last") {
    flip("device.channels_last", d.channels_last);
  } else if (name == "workers") {
    if (b.cache == "device")
      t.skip = "data.cache = \"device\" makes batches on the device, without loader workers";
    else
      t.overrides.push_back("data.num_workers=" + n(b.num_workers > 0 ? 0 : 2));
  } else if (name == "accum") {
    if (b.batch_size % 2)
      t.skip = "train.batch_size = " + n(b.batch_size) + " cannot be halved";
    else
      t.overrides = {"train.batch_size=" + n(b.batch_size / 2), "train.accum_steps=" + n(b.accum_steps * 2)};
  } else if (name == "tf32") {
    if (!cuda)
      t.skip = "cpu: TF32 is a mode of CUDA tensor cores";
    else if (!b.dev.hardware.tf32)
      t.skip = "TF32 needs compute capability 8.0 (Ampere) or newer";
    else if (d.deterministic)
      t.skip = "device.deterministic = true keeps TF32 off";
    else
      flip("device.tf32", d.tf32);
  } else if (name == "cudnn_benchmark") {
    if (!cuda)
      t.skip = "cpu: cuDNN runs on CUDA devices only";
    else if (d.deterministic)
      t.skip = "device.deterministic = true keeps the cuDNN benchmark off";
    else
      flip("device.cudnn_benchmark", d.cudnn_benchmark);
  } else if (name == "cuda_graphs") {
    if (!cuda)
      t.skip = "cpu: CUDA graphs need a CUDA device";
    else if (b.grad_checkpointing)
      t.skip = "model.grad_checkpointing = true: its recomputation cannot be captured";
    else
      flip("device.cuda_graphs", d.cuda_graphs);
  } else if (name == "grad_checkpointing") {
    flip("model.grad_checkpointing", b.grad_checkpointing);
  } else if (name == "cache") {
    // ram against none; data.cache = "device" against ram (what it saves over decoded images in memory).
    t.overrides.push_back(std::string("data.cache=") + (b.cache == "ram" ? "none" : "ram"));
  } else if (name == "eval_batch") {
    t.overrides.push_back("train.eval_batch_size=" + n(2 * b.eval_batch));
  } else {
    KG_ASSERT(false, "unplanned toggle ", name);
  }
  return t;
}

std::string check_toggle(const session::Session& o, const Toggle& t) {
  try {
    (void)with_overrides(o.recipe, t.overrides);
    return "";
  } catch (const ConfigError& e) {
    return " (refused: " + first_line(e.what()) + ")";
  }
}

json row_json(const Row& r, double baseline_epoch) {
  const bool timed = r.status == "timed";
  const double epoch = r.timing.epoch_seconds();
  return {{"name", r.name},
          {"configuration", r.overrides},
          {"status", r.status},
          {"reason", r.reason},
          {"epoch_seconds", timed ? json(epoch) : json()},
          {"speedup", timed && epoch > 0 ? json(baseline_epoch / epoch) : json()},
          {"train_images_per_s", timed ? json(r.timing.train_images_per_s) : json()},
          {"peak_rss_bytes", timed && r.memory.host_rss_bytes >= 0 ? json(r.memory.host_rss_bytes) : json()},
          {"cuda_peak_allocated_bytes", timed && r.memory.cuda ? json(r.memory.cuda_allocated_bytes) : json()},
          {"cuda_peak_reserved_bytes", timed && r.memory.cuda ? json(r.memory.cuda_reserved_bytes) : json()}};
}

Runner::Runner(const session::Session& o, Settings st, std::string dir, std::function<void(const std::string&)> log)
    : o_(o), st_(st), dir_(std::move(dir)), log_(std::move(log)) {}

Row Runner::baseline() { return time("baseline", {}, true); }

Row Runner::time(const std::string& name, const std::vector<std::string>& overrides, bool phases) {
  Row r(name, overrides);
  session::Session ro = o_;
  ro.recipe = with_overrides(o_.recipe, overrides);
  ro.quiet = o_.quiet || !phases;  // the data lines once, for the baseline
  const bool lr_stand_in = optim::lr_is_find(ro.recipe);
  if (lr_stand_in) {
    session::Resolutions stand_in;
    stand_in.lr = 1e-3;
    ro.recipe = session::effective_recipe(ro.recipe, stand_in).recipe;
  }
  const bool host_reset = device::reset_host_peak();
  session::TrainingContext s(ro, "bench");
  KG_ASSERT(s.opt.train.batch_size > 0, "run_bench resolves train.batch_size = \"auto\" before timing");
  if (phases) {
    base_.dev = s.dev;
    base_.device_options = s.session.recipe.get<device::DeviceOptions>();
    base_.fold = s.opt.cv.run_folds.front();
    base_.num_workers = s.opt.data.num_workers;
    base_.cache = s.opt.data.cache;
    base_.batch_size = s.opt.train.batch_size;
    base_.accum_steps = s.opt.train.accum_steps;
    base_.eval_batch = train::eval_batch_size(s.opt.train);
    base_.grad_checkpointing = s.session.recipe.get<model::ModelOptions>().grad_checkpointing;
    if (o_.dry_run) {
      r.timing = config_shape(s);
      return r;
    }
  }
  device::reset_device_peak(s.dev);
  r.timing = time_config(s, st_, phases, dir_, log_);
  if (lr_stand_in) r.timing.notes.push_back("optim.lr = \"find\": timed at lr 1e-3 (the lr does not change the speed)");
  r.memory = device::read_peaks(s.dev, host_reset);
  return r;
}

Row Runner::run(const std::string& name, const std::vector<std::string>& overrides) {
  log_("configuration " + name + ": " + join(overrides, " ") + "...");
  Row r(name, overrides);
  try {
    r = time(name, overrides, false);
    log_("  " + seconds_text(r.timing.epoch_seconds()) + " per epoch, " + grouped(r.timing.train_images_per_s) +
         " img/s training");
  } catch (const ConfigError& e) {  // the toggle does not apply to this recipe (a model without checkpointing, ...)
    r.status = "skipped";
    r.reason = first_line(e.what());
  } catch (const c10::Error& e) {
    r.status = "failed";
    r.reason = first_line(e.what_without_backtrace());
  } catch (const std::exception& e) {
    r.status = "failed";
    r.reason = first_line(e.what());
  }
  if (r.status != "timed") log_("  " + r.status + ": " + r.reason);
  return r;
}

Row Runner::ablate(const Toggle& t) {
  if (t.skip.empty()) return run(t.name, t.overrides);
  return Row(t.name, t.overrides, "skipped", t.skip);
}

json suggest(Runner& runner, const Row& baseline, const std::vector<Row>& rows, double min_gain) {
  const double base = baseline.timing.epoch_seconds();
  std::vector<const Row*> faster;
  for (auto& r : rows)
    if (r.status == "timed" && r.timing.epoch_seconds() > 0 && base / r.timing.epoch_seconds() > 1 + min_gain)
      faster.push_back(&r);
  std::sort(faster.begin(), faster.end(),
            [](auto* a, auto* b) { return a->timing.epoch_seconds() < b->timing.epoch_seconds(); });
  json s = {{"overrides", json::array()}, {"from", "none"},        {"toggles", json::array()},
            {"min_gain", min_gain},       {"epoch_seconds", base}, {"speedup", 1.0}};
  if (faster.empty()) {
    s["text"] = "no toggle was faster than the recipe by more than " + fixed(100 * min_gain, 0) + "%" +
                (min_gain > 0.03 ? " (the baseline itself drifted that much while the toggles ran)" : "") +
                ": keep it as it is";
    return s;
  }
  auto take = [&](const Row& r, const std::string& from, std::vector<std::string> names) {
    s["overrides"] = r.overrides;
    s["from"] = from;
    s["toggles"] = names;
    s["epoch_seconds"] = r.timing.epoch_seconds();
    s["speedup"] = base / r.timing.epoch_seconds();
  };
  const Row& best = *faster.front();
  take(best, "toggle", {best.name});
  std::string text = best.name + " alone";
  if (faster.size() > 1) {
    std::vector<std::string> overrides, names;
    for (auto* r : faster) {
      overrides.insert(overrides.end(), r->overrides.begin(), r->overrides.end());
      names.push_back(r->name);
    }
    const Row combo = runner.run("combination", overrides);
    const bool wins = combo.status == "timed" && combo.timing.epoch_seconds() < best.timing.epoch_seconds();
    s["combination"] = row_json(combo, base);
    if (wins) {
      take(combo, "combination", names);
      text = "the combination of " + join(names, ", ");
    } else {
      text += " (the combination of " + join(names, ", ") + " " +
              (combo.status == "timed" ? "took " + seconds_text(combo.timing.epoch_seconds()) + " per epoch"
                                       : combo.status + ": " + combo.reason) +
              ")";
    }
  }
  s["text"] = text + ": " + seconds_text(s["epoch_seconds"].get<double>()) + " per epoch instead of " +
              seconds_text(base) + " (" + fixed(s["speedup"].get<double>(), 2) + "x)";
  return s;
}

std::string ablation_table(const Row& baseline, const std::vector<Row>& rows, const Row* again) {
  const double base = baseline.timing.epoch_seconds();
  std::string t = "configuration | time per epoch | speedup | peak memory | notes\n--- | ---: | ---: | ---: | ---\n";
  auto line = [&](const Row& r, const std::string& note) {
    const bool timed = r.status == "timed";
    const std::string conf = r.overrides.empty() ? r.name : r.name + " (" + join(r.overrides, " ") + ")";
    const std::string mem = !timed                        ? ""
                            : r.memory.host_rss_bytes < 0 ? "n/a"
                            : r.memory.cuda ? model::bytes_text(r.memory.cuda_reserved_bytes) + " CUDA, " +
                                                  model::bytes_text(r.memory.host_rss_bytes) + " RSS"
                                            : model::bytes_text(r.memory.host_rss_bytes);
    t += conf + " | " + (timed ? seconds_text(r.timing.epoch_seconds()) : r.status) + " | " +
         (timed && r.timing.epoch_seconds() > 0 ? fixed(base / r.timing.epoch_seconds(), 2) + "x" : "") + " | " + mem +
         " | " + note + "\n";
  };
  line(baseline, "the recipe as given, " + grouped(baseline.timing.train_images_per_s) + " img/s training");
  for (const auto& r : rows)
    line(r, r.status == "timed" ? grouped(r.timing.train_images_per_s) + " img/s training" : r.reason);
  if (again)
    line(*again, again->status == "timed" ? "the recipe again after the toggles: how far this machine drifted meanwhile"
                                          : again->reason);
  if (!baseline.memory.host_reset) t += "(peak memory: the process's peak so far; this kernel does not reset VmHWM)\n";
  return t;
}

}  // namespace kg::jobs::bench
