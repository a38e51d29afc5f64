// `kgtrain bench-data RECIPE... [OVERRIDE...] [--batches N|all] [--threads 0,1,4] [--split train|valid] ...`
#include "cli_checks.h"
#include "command.h"
#include "core/error.h"
#include "jobs/bench_data.h"

namespace kg::app {
namespace {

class BenchDataCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    flags_.add(cmd, RecipeFlags::Kind::other);
    cmd.add_option("--batches", batches_,
                   "loader batches timed after one warm-up batch, or \"all\": one whole "
                   "epoch timed from the start (default 20)");
    cmd.add_option("--threads", req_.bench_threads, "loader worker counts, e.g. 0,1,4 (default 0,1,data.num_workers)")
        ->delimiter(',')
        ->check(kCountOrZero);
    cmd.add_option("--split", req_.bench_split,
                   "train (training folds, training augmentation) | valid (held-out fold, "
                   "evaluation transforms); default train")
        ->check(CLI::IsMember({"train", "valid"}));
    cmd.add_option("--json", req_.bench_json, "also write the report as JSON (schema_version 1) to FILE");
    cmd.add_option("--compute-rate", req_.bench_compute_rate,
                   "the model's training img/s (fit's train_images_per_s): "
                   "say whether the loader is the bottleneck")
        ->check(kPositive);
    cmd.add_option("--sections", req_.bench_sections, "what to time: decode,augment,loader (default all three)")
        ->delimiter(',')
        ->check(CLI::IsMember({"decode", "augment", "loader"}));
    cmd.add_option("--repeats", req_.bench_repeats, "loader repeats, the median reported (default 3)")->check(kCount);
  }
  int run() override {
    static_cast<session::Session&>(req_) = flags_.resolve("bench-data");
    req_.bench_batches = parse_batches(batches_);
    return jobs::run_bench_data(req_);
  }

 private:
  // A positive count, or "all" (-1: one whole epoch).
  static int64_t parse_batches(const std::string& text) {
    if (text == "all") return -1;
    size_t used = 0;
    int64_t n = 0;
    try {
      n = std::stoll(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || n <= 0)
      throw UsageError("--batches takes a positive count or \"all\", got \"" + text + "\"");
    return n;
  }

  RecipeFlags flags_;
  jobs::BenchDataRequest req_;
  std::string batches_ = "20";
};

}  // namespace

KG_COMMAND(BenchDataCommand, "bench-data", 70,
           "time the recipe's input pipeline without the model: decode, decode + augmentation, the loader end to end");

}  // namespace kg::app
