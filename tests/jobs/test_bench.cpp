// `kgtrain bench` through the binary on a tiny dataset: every phase timed with a positive rate, the
// ablation rows that apply on the CPU timed and the CUDA ones skipped with their reason, bench.json's
// keys, the suggested fit command accepted by `fit --dry-run`, option errors, and configurations that
// throw becoming failed or skipped rows.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "jobs/bench_ablate.h"
#include "support/fixtures.h"
#include "support/job_helpers.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;

namespace {

std::set<std::string> keys_of(const json& j) {
  std::set<std::string> k;
  for (auto& [key, v] : j.items()) k.insert(key);
  return k;
}

// The words of the line after "suggestion: ..." that starts with "kgtrain fit".
std::vector<std::string> suggested_command(const std::string& output) {
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    const auto at = line.find("kgtrain fit ");
    if (at == std::string::npos || line.find("suggestion") != std::string::npos) continue;
    std::istringstream words(line.substr(at));
    std::vector<std::string> out;
    for (std::string w; words >> w;) out.push_back(w);
    return out;
  }
  return {};
}

}  // namespace

TEST_CASE("bench times every phase, ablates the toggles and suggests a fit command", "[integration][jobs][bench]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 48, 4);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::string out = dir / "bench.json";
  const std::vector<std::string> fast{"--steps", "2", "--warmup", "1", "--repeats", "1", "--json", out, "--quiet"};

  auto r = kg::test::run_kgtrain(kg::test::cat(
      {"bench", recipe, "--ablate",
       "precision,channels_last,workers,accum,tf32,cudnn_benchmark,cuda_graphs,grad_checkpointing,cache,eval_batch",
       "--suggest"},
      fast));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("bottleneck: ") != std::string::npos);
  CHECK(r.output.find("configuration | time per epoch | speedup | peak memory | notes") != std::string::npos);
  const json j = kg::test::read_json(out);
  CHECK(keys_of(j) == std::set<std::string>{"schema_version", "command", "device", "recipe", "settings", "data",
                                            "phases", "memory", "tflops", "epoch", "bottleneck", "notes", "ablations",
                                            "drift", "suggestion"});
  CHECK(j["schema_version"] == 1);
  CHECK(j["command"] == "bench");
  CHECK(j["recipe"]["files"].back() == recipe);
  CHECK(j["settings"] == json({{"steps", 2}, {"warmup", 1}, {"repeats", 1}}));
  CHECK(j["data"]["train_rows"] == 36);  // 48 rows, fold 1 of 4 held out
  CHECK(j["data"]["valid_rows"] == 12);
  CHECK(j["data"]["batch_size"] == 8);
  CHECK(j["data"]["eval_batch_size"] == 16);

  // Every phase, each with a positive rate (the CPU's copy is measured too: it is ~0 ms).
  std::vector<std::string> names;
  for (auto& p : j["phases"]) {
    INFO(p.dump());
    names.push_back(p["name"]);
    CHECK(keys_of(p) ==
          std::set<std::string>{"name", "batch", "threads", "ms_per_step", "images_per_s", "repeats", "steps", "note"});
    CHECK(p["images_per_s"].get<double>() > 0);
    CHECK(p["repeats"].get<int64_t>() >= 1);
  }
  CHECK(names == std::vector<std::string>{"decode_augment_1_thread", "decode_augment_workers", "loader",
                                          "host_to_device", "forward", "backward", "optimizer_step", "train_step",
                                          "eval_step"});
  CHECK(j["phases"][3]["note"] == "cpu: no copy");
  CHECK(j["phases"][7]["batch"] == 8);  // one update: 8 images, no accumulation
  CHECK(j["phases"][7]["ms_per_step"].get<double>() > 0);
  // 12 validation rows are one batch of 16: the set is gone through again for the 2 timed steps, its
  // first pass (one-off costs such as cuDNN autotuning of each batch shape) left out as warm-up.
  CHECK(j["phases"][8]["steps"] == 2);
  CHECK(j["epoch"]["updates"] == 4);  // 36 rows / 8, the last partial batch dropped
  CHECK(j["epoch"]["seconds"].get<double>() > j["epoch"]["train_seconds"].get<double>());
  CHECK(j["memory"]["peak_rss_bytes"].get<int64_t>() > 0);
  CHECK(j["memory"]["cuda_peak_allocated_bytes"].is_null());
  CHECK(j["tflops"]["forward_gflops_per_image"].get<double>() > 0);
  CHECK(j["tflops"]["train_step"].get<double>() > 0);
  CHECK(j["bottleneck"]["verdict"].get<std::string>().size() > 20);

  // Ablations: one row per toggle, in the order asked; the CUDA-only ones skipped on the CPU.
  std::map<std::string, json> rows;
  for (auto& a : j["ablations"]) {
    CHECK(keys_of(a) == std::set<std::string>{"name", "configuration", "status", "reason", "epoch_seconds", "speedup",
                                              "train_images_per_s", "peak_rss_bytes", "cuda_peak_allocated_bytes",
                                              "cuda_peak_reserved_bytes"});
    rows[a["name"]] = a;
  }
  REQUIRE(rows.size() == 10);
  for (auto name : {"channels_last", "workers", "accum", "grad_checkpointing", "cache", "eval_batch"}) {
    INFO(name << ": " << rows[name].dump());
    CHECK(rows[name]["status"] == "timed");
    CHECK(rows[name]["epoch_seconds"].get<double>() > 0);
    CHECK(rows[name]["speedup"].get<double>() > 0);
    CHECK(rows[name]["peak_rss_bytes"].get<int64_t>() > 0);
  }
  CHECK(rows["channels_last"]["configuration"] == json({"device.channels_last=true"}));
  CHECK(rows["workers"]["configuration"] == json({"data.num_workers=0"}));
  CHECK(rows["accum"]["configuration"] == json({"train.batch_size=4", "train.accum_steps=2"}));
  CHECK(rows["cache"]["configuration"] == json({"data.cache=ram"}));
  CHECK(rows["eval_batch"]["configuration"] == json({"train.eval_batch_size=32"}));
  for (auto name : {"tf32", "cudnn_benchmark", "cuda_graphs"}) {
    CHECK(rows[name]["status"] == "skipped");
    CHECK(rows[name]["reason"].get<std::string>().rfind("cpu: ", 0) == 0);
    CHECK(rows[name]["epoch_seconds"].is_null());
  }
  // fp32 -> bf16 where the CPU has native bf16, else skipped with the reason.
  if (rows["precision"]["status"] == "timed")
    CHECK(rows["precision"]["configuration"] == json({"device.precision=bf16"}));
  else
    CHECK(rows["precision"]["reason"].get<std::string>().find("bf16") != std::string::npos);

  // The baseline timed again after the toggles: the machine's drift, the least gain a suggestion needs.
  CHECK(j["drift"]["baseline_again_epoch_seconds"].get<double>() > 0);
  CHECK(j["drift"]["fraction"].get<double>() >= 0);
  CHECK(r.output.find("baseline (again)") != std::string::npos);

  // The suggestion: overrides from the timed toggles (or none), and a fit command that resolves.
  const auto& s = j["suggestion"];
  CHECK(s["min_gain"].get<double>() == Approx(std::max(0.03, j["drift"]["fraction"].get<double>())));
  CHECK(s.contains("overrides"));
  CHECK(s.contains("command"));
  CHECK((s["from"] == "none" || s["from"] == "toggle" || s["from"] == "combination"));
  auto cmd = suggested_command(r.output);
  REQUIRE(cmd.size() >= 3);
  CHECK(cmd[0] + " " + cmd[1] == "kgtrain fit");
  CHECK(s["command"] == [&] {
    std::string c;
    for (auto& w : cmd) c += (c.empty() ? "" : " ") + w;
    return c;
  }());
  std::vector<std::string> fit(cmd.begin() + 1, cmd.end());
  fit.push_back("--dry-run");
  auto d = kg::test::run_kgtrain(fit);
  INFO(d.output);
  CHECK(d.exit_code == 0);
}

TEST_CASE("bench options: unknown toggles, dry run, the run folder", "[integration][jobs][bench]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 24, 4);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));

  SECTION("an unknown toggle is a usage error listing the allowed ones") {
    auto u = kg::test::run_kgtrain({"bench", recipe, "--ablate", "channels_last,precison"});
    CHECK(u.exit_code == 2);
    // The flag table's choices (bench_flags(), from bench::toggle_names()), with the message a recipe key gets.
    CHECK(u.output.find("--ablate: expected one of precision, channels_last, workers, accum, tf32, cudnn_benchmark, "
                        "cuda_graphs, grad_checkpointing, cache, eval_batch, got \"precison\"") != std::string::npos);
    CHECK(u.output.find("did you mean precision") != std::string::npos);
    CHECK(kg::test::run_kgtrain({"bench", recipe, "--steps", "0"}).exit_code == 2);
  }
  SECTION("--dry-run plans the toggles and times nothing") {
    auto d =
        kg::test::run_kgtrain({"bench", recipe, "--dry-run", "--ablate", "workers,tf32", "--run-dir", dir / "run"});
    INFO(d.output);
    CHECK(d.exit_code == 0);
    CHECK(d.output.find("workers: data.num_workers=0") != std::string::npos);
    CHECK(d.output.find("tf32: skipped (cpu: ") != std::string::npos);
    CHECK(d.output.find("nothing timed") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir / "run/bench.json"));
  }
  SECTION("without --json the report goes to the bench run's folder") {
    auto b = kg::test::run_kgtrain(
        {"bench", recipe, "--steps", "1", "--warmup", "0", "--repeats", "1", "--run-dir", dir / "run", "--quiet"});
    INFO(b.output);
    REQUIRE(b.exit_code == 0);
    const json j = kg::test::read_json(dir / "run/bench.json");
    CHECK(j["ablations"].empty());
    CHECK(j["suggestion"].is_null());
    CHECK(j["drift"].is_null());
    CHECK(j["settings"]["warmup"] == 0);
  }
  SECTION("train.batch_size = \"auto\" is found as fit finds it, then timed at that size") {
    auto a = kg::test::run_kgtrain({"bench", recipe, "train.batch_size=auto", "train.auto_batch_max=8", "--steps", "1",
                                    "--warmup", "0", "--repeats", "1", "--json", dir / "auto.json"});
    INFO(a.output);
    REQUIRE(a.exit_code == 0);
    CHECK(a.output.find("batch size auto: ") != std::string::npos);
    CHECK(kg::test::read_json(dir / "auto.json")["data"]["batch_size"] == 8);
  }
}

TEST_CASE("a configuration that throws is a failed or skipped row, never an abort", "[unit][jobs][bench]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 16, 2);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  kg::session::Session o;
  o.command = "bench";
  o.recipe = kg::test::resolve_recipe({recipe}, {});
  o.quiet = true;
  kg::jobs::bench::Runner runner(o, {1, 0, 1}, dir.str(), [](const std::string&) {});

  // A runtime failure while setting the configuration up (here: its data is missing): the message.
  auto failed = runner.run("broken", {"data.root=" + (dir / "nowhere")});
  CHECK(failed.status == "failed");
  CHECK(failed.reason.find("nowhere") != std::string::npos);
  CHECK(kg::jobs::bench::row_json(failed, 1.0)["epoch_seconds"].is_null());
  // A value the recipe's validation or the device refuses: the toggle does not apply.
  auto skipped = runner.run("fp16 on the cpu", {"device.name=cpu", "device.precision=fp16"});
  CHECK(skipped.status == "skipped");
  CHECK(skipped.reason.find("fp16") != std::string::npos);
  // And a configuration that runs is timed.
  auto ok = runner.run("plain", {"data.num_workers=0"});
  CHECK(ok.status == "timed");
  CHECK(ok.timing.train_images_per_s > 0);
}

}  // namespace KG_UNITY_ID
}  // namespace
