// `kgtrain bench --ablate / --suggest`: configurations of a recipe timed one after another. Each
// toggle is an override on the recipe as given, validated like one from the command line, then set up
// and timed exactly as the baseline (lib/jobs/bench_phases.h). A toggle that does not apply on this
// device or model is a "skipped" row with the reason; one whose run throws is a "failed" row with the
// message. Only one configuration lives at a time, so each row's peak memory is its own.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "device/device.h"
#include "jobs/bench_phases.h"
#include "session/session.h"

namespace kg::jobs::bench {

// Every toggle --ablate knows, in report order.
const std::vector<std::string>& toggle_names();
// The toggles to time: `asked` (deduplicated; bench_flags() has checked the names against toggle_names()), or
// every toggle when none is asked and `suggest` is set.
std::vector<std::string> ablation_list(const std::vector<std::string>& asked, bool suggest);

// What the recipe as given resolved to; each toggle is planned from it.
struct BaseInfo {
  device::DeviceInfo dev;
  device::DeviceOptions device_options;
  int64_t fold = 0;
  int64_t num_workers = 0;
  std::string cache;
  int64_t batch_size = 0, accum_steps = 1, eval_batch = 0;
  bool grad_checkpointing = false;
};

struct Toggle {
  std::string name;
  std::vector<std::string> overrides;  // key=value words applied after the recipe's own
  std::string skip;                    // why it does not apply here ("" = it does)
};
Toggle plan_toggle(const std::string& name, const BaseInfo& b);
// Dry run: "" when the toggle's recipe validates, else " (refused: <why>)".
std::string check_toggle(const session::Session& o, const Toggle& t);

struct Row {
  Row() = default;
  Row(std::string n, std::vector<std::string> o, std::string st = "timed", std::string why = "")
      : name(std::move(n)), overrides(std::move(o)), status(std::move(st)), reason(std::move(why)) {}
  std::string name;  // "baseline", a toggle's name, "combination"
  std::vector<std::string> overrides;
  std::string status = "timed";  // timed | skipped | failed
  std::string reason;
  ConfigTiming timing;
  device::PeakMemory memory;
};
// bench.json's ablation entry; speedup = baseline_epoch / the row's epoch.
nlohmann::json row_json(const Row& r, double baseline_epoch);

class Runner {
 public:
  Runner(const session::Session& o, Settings st, std::string dir, std::function<void(const std::string&)> log);
  // The recipe as given with every phase timed (a dry run sets it up and times nothing). Errors propagate.
  Row baseline();
  const BaseInfo& base() const { return base_; }
  // The recipe with `t`'s overrides, training and evaluation steps timed; never throws.
  Row ablate(const Toggle& t);
  Row run(const std::string& name, const std::vector<std::string>& overrides);

 private:
  Row time(const std::string& name, const std::vector<std::string>& overrides, bool phases);
  const session::Session& o_;
  Settings st_;
  std::string dir_;
  std::function<void(const std::string&)> log_;
  BaseInfo base_;
};

// The fastest safe combination: every timed toggle faster than the baseline by more than `min_gain`
// (0.03, or the machine's drift when larger), timed together once; kept when faster than each of them
// alone, else the best single toggle. JSON: {overrides, from (combination | toggle | none), toggles,
// min_gain, epoch_seconds, speedup, text[, combination]}.
nlohmann::json suggest(Runner& runner, const Row& baseline, const std::vector<Row>& rows, double min_gain);

// `configuration | time per epoch | speedup | peak memory | notes`, baseline first (Markdown); `again`
// (the baseline timed after the toggles; may be null) last, its speedup being the machine's drift.
std::string ablation_table(const Row& baseline, const std::vector<Row>& rows, const Row* again);

}  // namespace kg::jobs::bench
