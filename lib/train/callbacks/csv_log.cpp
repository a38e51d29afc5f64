// The `csv_log` callback (log.loggers has "csv"): metrics.csv in the run (or fold) directory, one row per
// completed epoch with every value of metrics.jsonl (Lightning's CSVLogger), columns epoch, step, then the
// rest by name. Rewritten atomically from the loop's history after every epoch, like metrics.jsonl.
#include <filesystem>
#include <set>

#include "core/fs.h"
#include "data/csv.h"
#include "train/log_options.h"
#include "train/trainer.h"

namespace kg::train {
namespace {

std::string csv_cell(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) {
    char b[32];
    std::snprintf(b, sizeof b, "%.17g", v.get<double>());
    return b;
  }
  return data::csv_field(v.is_string() ? v.get<std::string>() : v.dump());
}

class CsvLog : public Callback {
 public:
  std::string name() const override { return "csv_log"; }
  int order() const override { return 81; }
  void on_epoch_end(Trainer& t, EpochReport&) override {
    const auto& h = t.state().history;
    std::vector<std::string> cols{"epoch", "step"};
    std::set<std::string> rest;
    for (auto& line : h)
      for (auto& [k, v] : line.items())
        if (k != "epoch" && k != "step") rest.insert(k);
    cols.insert(cols.end(), rest.begin(), rest.end());
    std::string text;
    for (size_t i = 0; i < cols.size(); ++i) text += (i ? "," : "") + cols[i];
    text += "\n";
    for (auto& line : h) {
      for (size_t i = 0; i < cols.size(); ++i)
        text += (i ? "," : "") + (line.contains(cols[i]) ? csv_cell(line[cols[i]]) : std::string());
      text += "\n";
    }
    write_file_atomic((std::filesystem::path(t.io().dir) / "metrics.csv").string(), text);
  }
};

KG_REGISTER(callback_registry(), "csv_log", "metrics.csv, one row per epoch (log.loggers has \"csv\")",
            "[log]\nloggers = [\"jsonl\", \"csv\"]", config::Fields<config::NoOptions>(),
            [](const config::NoOptions&, const config::Recipe& recipe) -> CallbackPtr {
              return has_logger(recipe.get<LogOptions>(), "csv") ? std::make_unique<CsvLog>() : nullptr;
            });

}  // namespace
}  // namespace kg::train
