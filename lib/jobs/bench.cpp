// `kgtrain bench`: where a recipe's training time goes and what would make it faster. The recipe is
// set up exactly as `fit` sets it up (session::TrainingContext) and its phases are timed — decode + augmentation,
// the loader alone, copy, forward, backward, optimizer step, the full training step through the real
// Trainer and loader, the evaluation step — with peak memory, achieved TFLOP/s and a bottleneck
// verdict. `--ablate` re-resolves the recipe with one toggle at a time (an override, validated like
// the command line's) and times each; `--suggest` combines the toggles that helped.
#include "jobs/bench.h"

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <iostream>
#include <optional>

#include "config/flags.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "jobs/bench_ablate.h"
#include "jobs/bench_phases.h"
#include "jobs/bench_util.h"
#include "session/auto_batch.h"
#include "session/session.h"
#include "session/training.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kg::jobs {
namespace {

using bench::fixed;
using bench::grouped;

std::string seconds_text(double s) {
  return s >= 100 ? fixed(s, 0) + " s" : s >= 10 ? fixed(s, 1) + " s" : fixed(s, 2) + " s";
}

const bench::PhaseTiming* find_phase(const bench::ConfigTiming& t, const std::string& name) {
  for (auto& p : t.phases)
    if (p.name == name) return &p;
  return nullptr;
}

// One sentence: what limits the training rate and what to change.
std::string verdict(const bench::ConfigTiming& t, const device::DeviceInfo& dev, const std::string& cache) {
  const double loader = t.loader_images_per_s, compute = t.compute_images_per_s, step = t.train_images_per_s;
  const std::string w = std::to_string(t.num_workers);
  const std::string cache_hint = cache != "none" ? "" : " or use data.cache=ram";
  std::string v;
  if (loader <= 0 || compute <= 0) return "not enough timings for a verdict";
  if (t.num_workers == 0) {
    // Loading runs in the training thread: its time adds to every update.
    const double share = (1 / loader) / (1 / loader + 1 / compute);
    v = share > 0.25 ? "loading in the training thread (data.num_workers = 0, " + grouped(loader) +
                           " img/s alone) takes " + fixed(100 * share, 0) + "% of each update next to the model's " +
                           grouped(compute) + " img/s: set data.num_workers=2" + cache_hint
                     : "the model is the bottleneck (" + grouped(compute) +
                           " img/s for forward + backward + step); loading in "
                           "the training thread costs " +
                           fixed(100 * share, 0) + "% of each update (" + grouped(loader) + " img/s)";
  } else if (loader < compute) {
    v = "the loader (" + grouped(loader) + " img/s with " + w + " workers) is slower than the training step (" +
        grouped(compute) + " img/s): raise data.num_workers" + cache_hint;
  } else {
    v = "the model is the bottleneck: the training step (" + grouped(compute) + " img/s) is slower than the loader (" +
        grouped(loader) + " img/s with " + w + " workers)";
    if (step < 0.85 * compute)
      v += ", but together they reach only " + grouped(step) +
           " img/s: the loader threads compete with the compute "
           "threads for the cores (try data.num_workers=0)";
  }
  if (const auto* copy = find_phase(t, "host_to_device"); copy && dev.device.is_cuda() && t.update_seconds > 0) {
    const double share = copy->ms_per_step / 1000 * static_cast<double>(t.accum_steps) / t.update_seconds;
    if (share > 0.15)
      v += "; the host-to-device copy takes " + fixed(100 * share, 0) +
           "% of each update (data.pin_memory, data.uint8_transfer)";
  }
  return v;
}

std::string phase_table(const bench::ConfigTiming& t) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-30s %6s %10s %11s  %s\n", "phase", "batch", "ms/step", "img/s", "notes");
  std::string s = buf;
  for (auto& p : t.phases) {
    const std::string ms = p.batch > 0 ? fixed(p.ms_per_step, p.ms_per_step < 10 ? 2 : 1) : "-";
    // A copy that is no copy (the CPU) has no meaningful rate.
    const std::string ips = starts_with(p.note, "cpu: no copy") ? "-" : grouped(p.images_per_s);
    std::snprintf(buf, sizeof buf, "%-30s %6s %10s %11s  %s\n", p.label.c_str(),
                  p.batch > 0 ? std::to_string(p.batch).c_str() : "-", ms.c_str(), ips.c_str(), p.note.c_str());
    s += buf;
  }
  return s;
}

json tflops_json(const bench::ConfigTiming& t) {
  if (t.macs_per_image <= 0) return nullptr;
  const double fwd = 2.0 * static_cast<double>(t.macs_per_image);  // FLOPs per image, forward
  const auto* f = find_phase(t, "forward");
  return {{"forward_gflops_per_image", fwd / 1e9},
          {"training_flops_per_image", "3 x forward (backward ~ 2 x forward)"},
          {"forward", f ? json(fwd * f->images_per_s / 1e12) : json()},
          {"train_compute", 3 * fwd * t.compute_images_per_s / 1e12},
          {"train_step", 3 * fwd * t.train_images_per_s / 1e12}};
}

std::string tflops_text(const json& j) {
  if (j.is_null()) return "TFLOP/s: not known for this model";
  auto tf = [](const json& v) { return v.is_null() ? std::string("n/a") : fixed(v.get<double>(), 3); };
  return "TFLOP/s (2 x MACs forward, 3 x that for training): forward " + tf(j["forward"]) +
         ", forward + backward + step " + tf(j["train_compute"]) + ", full training step " + tf(j["train_step"]) +
         " (" + fixed(j["forward_gflops_per_image"].get<double>(), 3) + " GFLOPs per image forward)";
}

// A shell word: quoted when it holds anything beyond [A-Za-z0-9_./=:,+-].
std::string shell_word(const std::string& w) {
  if (!w.empty() && w.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./=:,+-") ==
                        std::string::npos)
    return w;
  std::string q = "'";
  for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

const config::Fields<BenchFlags>& bench_flags() {
  static const config::Fields<BenchFlags> f = [] {
    using F = BenchFlags;
    config::Fields<F> t;
    t.field("ablate", &F::ablate, "toggles to time one at a time").choices(bench::toggle_names());
    t.field("suggest", &F::suggest,
            "the fastest combination of the toggles faster by more than 3% (timed), as overrides to paste (every "
            "toggle when --ablate is not given)");
    t.field("json", &F::json, "report path (none: RUN_DIR/bench.json)");
    t.field("steps", &F::steps, "timed steps per window").min(1);
    t.field("warmup", &F::warmup, "untimed steps first").min(0);
    t.field("repeats", &F::repeats, "timed windows per phase, the median reported").min(1);
    return t;
  }();
  return f;
}

int run_bench(const BenchRequest& given) {
  // train.batch_size = "auto" is found the way fit finds it; every row then times that size.
  BenchRequest o = given;
  session::resolve_auto_batch(o);
  config::check_flags(bench_flags(), o.flags);
  const auto toggles = bench::ablation_list(o.flags.ablate, o.flags.suggest);
  const bench::Settings st{o.flags.steps, o.flags.warmup, o.flags.repeats};
  auto logf = [&o](const std::string& l) { o.log(l); };

  std::string dir, json_path = o.flags.json;
  if (!o.dry_run && json_path.empty()) {
    dir = session::prepare_run_dir(o);
    json_path = (fs::path(dir) / "bench.json").string();
  } else if (!json_path.empty()) {
    dir = fs::path(json_path).parent_path().string();
  }
  bench::Runner runner(o, st, dir, logf);
  bench::Row base = runner.baseline();
  std::vector<bench::Toggle> plans;
  for (auto& name : toggles) plans.push_back(bench::plan_toggle(name, runner.base()));
  const auto& bt = base.timing;
  std::string head = "bench: " + join(o.layers, " + ") + "; " + runner.base().dev.description + "; fold " +
                     std::to_string(runner.base().fold) + ": " + std::to_string(bt.train_rows) + " train, " +
                     std::to_string(bt.valid_rows) + " valid rows; batch " + std::to_string(bt.micro_batch) +
                     (bt.accum_steps > 1 ? " x " + std::to_string(bt.accum_steps) + " accumulated" : "") +
                     ", eval batch " + std::to_string(bt.eval_batch) + ", " + std::to_string(bt.num_workers) +
                     " workers; " + std::to_string(st.warmup) + " warm-up + " + std::to_string(st.repeats) + " x " +
                     std::to_string(st.steps) + " timed steps per phase (median window)\n";
  if (o.dry_run) {
    std::cout << head << "dry run: would time every phase of the recipe";
    for (auto& t : plans)
      std::cout << "\n  " << t.name << ": "
                << (!t.skip.empty() ? "skipped (" + t.skip + ")" : join(t.overrides, " ") + bench::check_toggle(o, t));
    std::cout << (o.flags.suggest ? "\nand time the combination of the toggles faster by more than 3%" : "")
              << "\nnothing timed\n";
    return kExitOk;
  }

  std::vector<bench::Row> rows;
  for (auto& t : plans) rows.push_back(runner.ablate(t));
  // The baseline once more after the toggles: how far this machine's speed drifted while they ran
  // (shared VMs drift by several percent between minutes). A gain smaller than that is noise.
  const double epoch = bt.epoch_seconds();
  std::optional<bench::Row> again;
  if (std::any_of(rows.begin(), rows.end(), [](const bench::Row& r) { return r.status == "timed"; }))
    again = runner.run("baseline (again)", {});
  const bool drift_known = again && again->status == "timed" && again->timing.epoch_seconds() > 0;
  const double drift = drift_known ? std::abs(epoch / again->timing.epoch_seconds() - 1) : 0.0;
  json suggestion = o.flags.suggest ? bench::suggest(runner, base, rows, std::max(0.03, drift)) : json();

  // --- the report: tables on stdout, bench.json ---
  const std::string verdict_text = verdict(bt, runner.base().dev, runner.base().cache);
  const json tflops = tflops_json(bt);
  std::string out = head + phase_table(bt);
  out += "memory: peak " + bench::peak_memory_text(base.memory) + "\n" + tflops_text(tflops) + "\n";
  out += "epoch (extrapolated): " + std::to_string(bt.updates_per_epoch) + " updates x " +
         fixed(bt.update_seconds * 1000, 1) + " ms = " + seconds_text(bt.train_epoch_seconds) + " training (" +
         grouped(bt.train_images_per_s) + " img/s) + " + std::to_string(bt.valid_rows) + " validation images at " +
         grouped(bt.eval_images_per_s) + " img/s = " + seconds_text(bt.eval_epoch_seconds) + "; " +
         seconds_text(epoch) + " per epoch\n";
  for (auto& n : bt.notes) out += "note: " + n + "\n";
  out += "bottleneck: " + verdict_text + "\n";
  if (!rows.empty()) out += "\n" + bench::ablation_table(base, rows, again ? &*again : nullptr);
  if (!suggestion.is_null()) {
    std::string cmd = "kgtrain fit";
    for (auto& w : o.words) cmd += " " + shell_word(w);
    for (auto& w : suggestion["overrides"]) cmd += " " + shell_word(w.get<std::string>());
    suggestion["command"] = cmd;
    out += "\nsuggestion: " + suggestion["text"].get<std::string>() + "\n  " + cmd + "\n";
  }
  std::cout << out << std::flush;

  json phases = json::array(), ablations = json::array(), overrides = json::array();
  for (auto& p : bt.phases) phases.push_back(p.to_json());
  for (auto& r : rows) ablations.push_back(bench::row_json(r, epoch));
  for (auto& w : o.words)
    if (!ends_with(w, ".toml")) overrides.push_back(w);
  json report = {{"schema_version", 1},
                 {"command", "bench"},
                 {"device", runner.base().dev.description},
                 {"recipe", {{"files", o.layers}, {"overrides", overrides}}},
                 {"settings", {{"steps", st.steps}, {"warmup", st.warmup}, {"repeats", st.repeats}}},
                 {"data",
                  {{"fold", runner.base().fold},
                   {"train_rows", bt.train_rows},
                   {"valid_rows", bt.valid_rows},
                   {"batch_size", bt.micro_batch},
                   {"accum_steps", bt.accum_steps},
                   {"eval_batch_size", bt.eval_batch},
                   {"num_workers", bt.num_workers},
                   {"cache", runner.base().cache}}},
                 {"phases", phases},
                 {"memory", base.memory.to_json()},
                 {"tflops", tflops},
                 {"epoch",
                  {{"updates", bt.updates_per_epoch},
                   {"update_seconds", bt.update_seconds},
                   {"train_seconds", bt.train_epoch_seconds},
                   {"eval_seconds", bt.eval_epoch_seconds},
                   {"seconds", epoch},
                   {"train_images_per_s", bt.train_images_per_s}}},
                 {"bottleneck",
                  {{"verdict", verdict_text},
                   {"loader_images_per_s", bt.loader_images_per_s},
                   {"compute_images_per_s", bt.compute_images_per_s},
                   {"train_images_per_s", bt.train_images_per_s}}},
                 {"notes", bt.notes},
                 {"ablations", ablations},
                 {"drift", drift_known ? json({{"baseline_again_epoch_seconds", again->timing.epoch_seconds()},
                                               {"fraction", drift}})
                                       : json()},
                 {"suggestion", suggestion}};
  write_file_atomic(json_path, report.dump(2) + "\n");
  o.log("report: " + json_path);
  return kExitOk;
}

}  // namespace kg::jobs
