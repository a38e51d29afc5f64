// `kgtrain bench-data`: the recipe's input pipeline timed without the model, so a competitor can tell
// whether data loading starves training: decode alone, decode + the split's transforms, and the
// threaded Loader end to end, with a verdict against the model's rate when it is given.
#include "jobs/bench_data.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include <ATen/core/Tensor.h>

#include "config/flags.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "data/folds.h"
#include "data/image_io.h"
#include "data/loader.h"
#include "data/options.h"
#include "data/source.h"
#include "data/table.h"
#include "data/transform.h"
#include "jobs/bench_util.h"
#include "session/modality.h"
#include "session/session.h"
#include "train/options.h"

using nlohmann::json;

namespace kg::jobs {
namespace {

using bench::Clock;
using bench::rate_json;
using bench::seconds_since;

struct LoaderTiming {
  double seconds = 0;
  int64_t batches = 0, images = 0;
};

// `batches` batches after one warm-up batch, crossing into further epochs when one is too short
// (a new Loader per epoch, as fit does); batches < 0: one whole epoch timed from construction.
LoaderTiming time_loader(const data::Table& t, const std::vector<int64_t>& rows, const data::Pipeline& pipe,
                         data::LoaderOptions lo, int64_t batches, int64_t& epoch) {
  Clock::time_point t0 = Clock::now();
  lo.epoch = epoch++;
  auto loader = std::make_unique<data::Loader>(t, rows, pipe, lo);
  KG_CHECK(loader->size() > 0, DataError, "bench-data: the split has no batch of ", lo.batch_size, " rows");
  data::Batch b;
  auto next = [&] {
    while (!loader->next(b)) {
      loader.reset();
      lo.epoch = epoch++;
      loader = std::make_unique<data::Loader>(t, rows, pipe, lo);
    }
    return b.size();
  };
  LoaderTiming r;
  if (batches < 0) {
    while (loader->next(b)) ++r.batches, r.images += b.size();
  } else {
    next();  // warm-up: threads started, first batch prefetched
    t0 = Clock::now();
    for (int64_t i = 0; i < batches; ++i) r.images += next(), ++r.batches;
  }
  r.seconds = seconds_since(t0);
  return r;
}

std::string verdict_text(double loader_ips, int workers, double compute_ips) {
  std::string x = bench::fixed(loader_ips, 1);
  if (compute_ips <= 0)
    return "loader delivers " + x + " img/s with " + std::to_string(workers) +
           " workers; give --compute-rate IMG_PER_S (fit's train_images_per_s, or kgtrain_compute_bench) to compare "
           "with the model";
  return "loader delivers " + x + " img/s, the model consumes " + bench::fixed(compute_ips, 1) + " img/s: the loader " +
         (loader_ips < compute_ips ? "is" : "is not") + " the bottleneck (" +
         bench::fixed(loader_ips / compute_ips, 2) + "x the model's rate with " + std::to_string(workers) + " workers)";
}

// The decode and decode + transforms sections on `sample` shuffled rows, on one thread and on `threads`,
// into `report`; their table lines.
std::string decode_sections(const BenchDataRequest& o, const data::Table& table, const std::vector<int64_t>& shuffled,
                            size_t sample, const data::ImageGeometry& geom, const data::Pipeline& pipe, uint64_t seed,
                            int threads, bool train, json& report) {
  auto has = [&](const char* s) {
    return std::find(o.flags.sections.begin(), o.flags.sections.end(), s) != o.flags.sections.end();
  };
  std::string table_txt =
      has("decode") || has("augment") ? "section          threads    images   seconds       img/s  img/s/thread\n" : "";
  auto add_line = [&](const std::string& name, const json& r) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%-15s %8d %9lld %9.3f %11.1f %13.1f\n", name.c_str(), r["threads"].get<int>(),
                  static_cast<long long>(r["images"].get<int64_t>()), r["seconds"].get<double>(),
                  r["images_per_s"].get<double>(), r["images_per_s_per_thread"].get<double>());
    table_txt += buf;
  };
  std::vector<int> decode_threads{1};
  if (threads > 1) decode_threads.push_back(threads);
  auto rate_key = [](int t) { return t == 1 ? "one_thread" : "all_workers"; };

  if (has("decode")) {
    json sec = {{"sample", sample}};
    for (int t : decode_threads) {
      o.log("  decode, " + std::to_string(t) + " thread(s), " + std::to_string(sample) + " images...");
      double secs = bench::time_decode(table, shuffled, sample, static_cast<int>(geom.channels), t);
      sec[rate_key(t)] = rate_json(t, static_cast<int64_t>(sample), secs);
      add_line("decode", sec[rate_key(t)]);
    }
    if (threads == 1) sec["all_workers"] = sec["one_thread"];
    report["decode"] = sec;
  }
  if (has("augment")) {
    json sec = {{"sample", sample}, {"pipeline", train ? "train" : "eval"}};
    for (int t : decode_threads) {
      o.log("  decode + transforms, " + std::to_string(t) + " thread(s), " + std::to_string(sample) + " images...");
      double secs = bench::time_decode_augment(table, shuffled, sample, pipe, seed, t);
      sec[rate_key(t)] = rate_json(t, static_cast<int64_t>(sample), secs);
      add_line("decode+augment", sec[rate_key(t)]);
    }
    if (threads == 1) sec["all_workers"] = sec["one_thread"];
    report["decode_augment"] = sec;
  }

  return table_txt;
}

// The loader section: every worker count of `thread_list` timed o.flags.repeats times (the median kept),
// into report["loader"] and `table_txt`; the verdict against --compute-rate.
json loader_section(const BenchDataRequest& o, const data::Table& table, const std::vector<int64_t>& rows,
                    const data::Pipeline& pipe, const data::DataOptions& dopt, const std::vector<int>& thread_list,
                    int64_t batch, bool train, uint64_t seed, json& report, std::string& table_txt) {
  const int workers = static_cast<int>(dopt.num_workers);
  const bool decoded = report.contains("decode") || report.contains("decode_augment");
  json verdict = {{"loader_images_per_s", nullptr},
                  {"loader_workers", nullptr},
                  {"compute_images_per_s", o.flags.compute_rate ? json(*o.flags.compute_rate) : json(nullptr)},
                  {"bottleneck", nullptr}};
  {
    std::string ltxt = "loader         workers   batches   seconds   batches/s       img/s   (median of " +
                       std::to_string(o.flags.repeats) + ")\n";
    json runs = json::array();
    int64_t epoch = 0;
    for (int w : thread_list) {
      o.log(
          "  loader, " + std::to_string(w) + " workers, " +
          (o.flags.batch_count() < 0 ? std::string("one epoch") : std::to_string(o.flags.batch_count()) + " batches") +
          " x " + std::to_string(o.flags.repeats) + "...");
      // data.cache = "ram" is honoured; each worker count starts from an empty cache.
      std::unique_ptr<data::ImageCache> cache;
      if (dopt.cache == "ram")
        cache = std::make_unique<data::ImageCache>(static_cast<size_t>(dopt.cache_max_gb * (1ull << 30)));
      data::LoaderOptions lo{batch, train, train, w, static_cast<int>(dopt.prefetch), seed, 0, -1, cache.get()};
      std::vector<LoaderTiming> reps;
      for (int k = 0; k < o.flags.repeats; ++k)
        reps.push_back(time_loader(table, rows, pipe, lo, o.flags.batch_count(), epoch));
      std::vector<double> secs;
      for (auto& r : reps) secs.push_back(r.seconds);
      std::sort(reps.begin(), reps.end(), [](auto& a, auto& b) { return a.seconds < b.seconds; });
      const LoaderTiming& med = reps[reps.size() / 2];
      double bps = med.seconds > 0 ? med.batches / med.seconds : 0.0,
             ips = med.seconds > 0 ? med.images / med.seconds : 0.0;
      runs.push_back({{"workers", w},
                      {"batches", med.batches},
                      {"images", med.images},
                      {"seconds", med.seconds},
                      {"batches_per_s", bps},
                      {"images_per_s", ips},
                      {"repeat_seconds", secs}});
      char buf[160];
      std::snprintf(buf, sizeof buf, "%-15s %7d %9lld %9.3f %11.2f %11.1f\n", "loader", w,
                    static_cast<long long>(med.batches), med.seconds, bps, ips);
      ltxt += buf;
    }
    report["loader"] = {{"batches", o.flags.batch_count() < 0 ? json("all") : json(o.flags.batch_count())},
                        {"warmup_batches", o.flags.batch_count() < 0 ? 0 : 1},
                        {"repeats", o.flags.repeats},
                        {"runs", runs}};
    table_txt += (decoded ? "\n" : "") + ltxt;
    // The rate fit will see: the recipe's worker count when measured, else the best one measured.
    const json* pick = nullptr;
    for (auto& r : runs)
      if (r["workers"] == workers) pick = &r;
    if (!pick)
      for (auto& r : runs)
        if (!pick || r["images_per_s"].get<double>() > (*pick)["images_per_s"].get<double>()) pick = &r;
    double ips = (*pick)["images_per_s"].get<double>();
    verdict["loader_images_per_s"] = ips;
    verdict["loader_workers"] = (*pick)["workers"];
    if (o.flags.compute_rate) verdict["bottleneck"] = ips < *o.flags.compute_rate;
    verdict["text"] = verdict_text(ips, (*pick)["workers"].get<int>(), o.flags.compute_rate.value_or(0.0));
  }
  return verdict;
}

}  // namespace

int64_t BenchDataFlags::batch_count() const { return batches == "all" ? -1 : std::stoll(batches); }

const config::Fields<BenchDataFlags>& bench_data_flags() {
  static const config::Fields<BenchDataFlags> f = [] {
    using F = BenchDataFlags;
    config::Fields<F> t;
    t.field("batches", &F::batches,
            "loader batches timed after one warm-up batch, or \"all\": one whole epoch timed from the start")
        .check([](const config::json& v) {
          const std::string w = v.get<std::string>();
          const bool count = !w.empty() && w.size() < 12 && w.find_first_not_of("0123456789") == std::string::npos &&
                             std::stoll(w) > 0;
          return w == "all" || count ? std::string() : "expected a positive count or \"all\", got \"" + w + "\"";
        });
    t.field("threads", &F::threads, "loader worker counts, e.g. 0,1,4 (none: 0, 1 and data.num_workers)").min(0);
    t.field("split", &F::split,
            "train (training folds, training augmentation) | valid (held-out fold, evaluation transforms)")
        .choices({"train", "valid"});
    t.field("json", &F::json, "also write the report as JSON (schema_version 1) to this file");
    t.field("compute_rate", &F::compute_rate,
            "the model's training img/s (fit's train_images_per_s): say whether the loader is the bottleneck")
        .positive();
    t.field("sections", &F::sections, "what to time")
        .choices({"decode", "augment", "loader"})
        .check([](const config::json& v) {
          return v.empty() ? std::string("expected at least one section") : std::string();
        });
    t.field("repeats", &F::repeats, "loader repeats, the median reported").min(1);
    return t;
  }();
  return f;
}

int run_bench_data(const BenchDataRequest& o) {
  const auto& recipe = o.recipe;
  session::modality_of(o.recipe).require(session::Capability::bench_data, "bench-data",
                                         "times image decoding and augmentation");
  auto run = recipe.get<train::RunOptions>();
  auto topt = recipe.get<train::TrainOptions>();
  auto dopt = recipe.get<data::DataOptions>();
  auto cv = recipe.get<data::CvOptions>();
  const auto seed = static_cast<uint64_t>(run.seed);
  auto has = [&](const char* s) {
    return std::find(o.flags.sections.begin(), o.flags.sections.end(), s) != o.flags.sections.end();
  };
  config::check_flags(bench_data_flags(), o.flags);
  const bool train = o.flags.split == "train";
  const int workers = static_cast<int>(dopt.num_workers);
  const int threads = std::max(1, workers);

  // The rows fit would use: the training folds (train) or the held-out fold (valid).
  o.log("kgtrain bench-data: loading the table (images not scanned)...");
  data::ClassList classes = data::infer_classes(dopt);
  data::Table table =
      data::load_split(dopt, data::Split::train, classes, /*scan=*/false, threads, data::fold_columns(cv));
  auto split = data::split_folds(table, cv, seed);
  const std::vector<int64_t>& rows = train ? split.train : split.valid;
  KG_CHECK(!rows.empty(), DataError, "fold ", cv.held_out, " of ", cv.folds, " leaves no ", o.flags.split, " rows");

  // Training runs at the schedule's last stage (the largest, as a rule); validation at data.image_size.
  const auto stages = data::size_schedule(dopt);
  const auto geom = train ? stages.back().size : data::geometry(dopt);
  const int64_t batch = train ? (stages.back().batch_size > 0 ? stages.back().batch_size : topt.batch_size)
                              : train::eval_batch_size(topt);
  // data.uint8_transfer is honoured (uint8 batches, normalize left to the device); pinning needs CUDA: off here.
  data::Pipeline pipe(dopt.augment, geom, train, dopt.uint8_transfer, dopt.reduced_decode);
  std::vector<std::string> transforms;
  for (auto& t : dopt.augment)
    if (t.contains("name")) transforms.push_back(t["name"].get<std::string>());
  std::vector<int> thread_list(o.flags.threads.begin(), o.flags.threads.end());
  if (thread_list.empty()) thread_list = {0, 1, workers};
  std::sort(thread_list.begin(), thread_list.end());
  thread_list.erase(std::unique(thread_list.begin(), thread_list.end()), thread_list.end());
  for (int w : thread_list) KG_CHECK(w >= 0, UsageError, "--threads: worker counts must be >= 0, got ", w);

  // Decode sections use a shuffled sample the size of the timed loader run (the whole split for "all").
  const auto shuffled = data::epoch_order(rows, seed, 0);
  const size_t sample =
      o.flags.batch_count() < 0
          ? rows.size()
          : std::min(rows.size(), static_cast<size_t>(std::max<int64_t>(64, batch * o.flags.batch_count())));
  const std::string format = data::resolve_format(dopt);
  std::string head =
      "bench-data: " + join(o.layers, " + ") + ", " + o.flags.split + " split: " + std::to_string(rows.size()) +
      " rows (" + format + "), input " + std::to_string(geom.channels) + "x" + std::to_string(geom.height) + "x" +
      std::to_string(geom.width) + ", batch " + std::to_string(batch) + ", " + std::to_string(workers) +
      " workers, prefetch " + std::to_string(dopt.prefetch) + ", OpenCV threads " +
      std::to_string(data::opencv_threads()) + (pipe.outputs_u8() ? ", uint8 batches" : "") + "\n  transforms (" +
      (train ? "training" : "evaluation") + "): " + (transforms.empty() ? "none" : join(transforms, ", ")) +
      (train ? "" : " (random ones skipped)") + "\n";
  if (o.dry_run) {
    std::vector<std::string> plan, ws;
    for (int w : thread_list) ws.push_back(std::to_string(w));
    if (has("decode")) plan.push_back("decode");
    if (has("augment")) plan.push_back("decode + transforms");
    std::string what = plan.empty() ? ""
                                    : join(plan, " and ") + " of " + std::to_string(sample) + " images on 1 and " +
                                          std::to_string(threads) + " threads";
    if (has("loader"))
      what += (what.empty() ? "" : "; ") + std::string("the loader with ") + join(ws, ", ") + " workers";
    std::cout << head << "dry run: would time " << what << "; nothing timed\n";
    return kExitOk;
  }

  json report = {{"schema_version", bench::kSchemaVersion},
                 {"command", "bench-data"},
                 {"recipe", o.layers},
                 {"split", o.flags.split},
                 {"format", format},
                 {"rows", rows.size()},
                 {"input", {{"channels", geom.channels}, {"height", geom.height}, {"width", geom.width}}},
                 {"batch_size", batch},
                 {"num_workers", workers},
                 {"prefetch", dopt.prefetch},
                 {"transforms", transforms},
                 {"cache", dopt.cache},
                 {"uint8_transfer", dopt.uint8_transfer},
                 {"opencv_threads", data::opencv_threads()}};
  std::string table_txt = decode_sections(o, table, shuffled, sample, geom, pipe, seed, threads, train, report);
  json verdict =
      has("loader") ? loader_section(o, table, rows, pipe, dopt, thread_list, batch, train, seed, report, table_txt)
                    : json{{"loader_images_per_s", nullptr},
                           {"loader_workers", nullptr},
                           {"compute_images_per_s", o.flags.compute_rate ? json(*o.flags.compute_rate) : json(nullptr)},
                           {"bottleneck", nullptr},
                           {"text", "loader not measured (--sections without loader): no verdict"}};
  report["verdict"] = verdict;

  std::cout << head << table_txt << "verdict: " << verdict["text"].get<std::string>() << "\n";
  if (!o.flags.json.empty()) {
    write_file_atomic(o.flags.json, report.dump(2) + "\n");
    o.log("report: " + o.flags.json);
  }
  return kExitOk;
}

}  // namespace kg::jobs
