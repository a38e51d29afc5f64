// Checkpoints: manifest + SHA-256, damage detection, fallback to the newest complete one, crash leftovers,
// rotation and top-k retention.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <torch/torch.h>

#include "core/error.h"
#include "core/fs.h"
#include "core/sha256.h"
#include "model/weights/safetensors.h"
#include "support/temp_dir.h"
#include "train/checkpoint_store.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace fs = std::filesystem;
using kg::train::CheckpointFiles;
using nlohmann::json;

namespace {

std::set<std::string> entries(const std::string& dir) {
  std::set<std::string> s;
  for (const auto& e : fs::directory_iterator(dir)) s.insert(e.path().filename().string());
  return s;
}

CheckpointFiles files(int64_t step, float fill = 1.0f) {
  CheckpointFiles f;
  f.model["conv.weight"] = torch::full({4, 3}, fill);
  f.model["fc.bias"] = torch::arange(5, torch::kLong);
  f.state_tensors["optim.0.exp_avg"] = torch::linspace(0, 1, 12).view({3, 4});
  f.state_tensors["rng.cpu"] = torch::arange(40, torch::kByte);
  f.extra_weights["ema"] = {{"conv.weight", torch::full({4, 3}, fill * 0.5f)}};
  f.extra_weights["swa"] = {{"conv.weight", torch::full({4, 3}, fill * 0.25f)}};
  f.state = {{"epoch", step / 10}, {"step", step}, {"batch", 3}, {"metric", {{"name", "accuracy"}, {"value", 0.5}}}};
  f.recipe_toml = "[model]\nname = \"resnet9\"\n";
  f.provenance = {{"kgtrain", "test"}, {"seed", 1}};
  return f;
}

bool same(const kg::model::TensorMap& a, const kg::model::TensorMap& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [k, v] : a)
    if (!b.count(k) || !torch::equal(v, b.at(k))) return false;
  return true;
}

std::string contents(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void overwrite(const std::string& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

std::string load_error(const std::string& dir) {
  try {
    kg::train::load_checkpoint(dir);
  } catch (const kg::CheckpointError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("checkpoint: every file round-trips, the manifest lists them with size and SHA-256", "[unit][checkpoint]") {
  kg::test::TempDir d;
  auto f = files(20);
  const std::string dir = d / "checkpoints/last";
  kg::train::save_checkpoint(dir, f);
  CHECK(entries(d / "checkpoints") == std::set<std::string>{"last"});  // no temp folder left
  CHECK(entries(dir) == std::set<std::string>{"MANIFEST.json", "model.safetensors", "state.safetensors",
                                              "ema.safetensors", "swa.safetensors", "state.json", "recipe.toml",
                                              "provenance.json"});
  auto m = json::parse(contents(dir + "/MANIFEST.json"));
  CHECK(m["schema_version"] == 2);
  CHECK(m["created_utc"].get<std::string>().size() == 20);  // 2024-05-01T12:00:00Z
  REQUIRE(m["files"].size() == 7);
  for (const auto& e : m["files"]) {
    const std::string p = dir + "/" + e["name"].get<std::string>();
    CHECK(e["bytes"].get<uint64_t>() == fs::file_size(p));
    CHECK(e["sha256"] == kg::sha256_hex(contents(p)));
  }
  CHECK(kg::train::checkpoint_problem(dir) == "");
  CHECK(kg::train::checkpoint_problem(dir, false) == "");

  auto c = kg::train::load_checkpoint(dir);
  CHECK(c.dir == dir);
  CHECK(c.schema_version == 2);
  CHECK(same(c.weights, f.model));
  CHECK(same(c.state_tensors, f.state_tensors));
  REQUIRE(c.extra_weights.size() == 2);
  CHECK(same(c.extra_weights.at("ema"), f.extra_weights.at("ema")));
  CHECK(same(c.extra_weights.at("swa"), f.extra_weights.at("swa")));
  CHECK(c.state["schema_version"] == kg::train::kCheckpointSchema);
  CHECK(c.state["step"] == 20);
  CHECK(c.state["metric"]["value"] == 0.5);
  CHECK(c.recipe_toml == f.recipe_toml);
  CHECK(json::parse(contents(dir + "/provenance.json")) == f.provenance);
  // model.safetensors alone is a plain weights file (what --weights loads).
  CHECK(same(kg::model::read_safetensors(dir + "/model.safetensors"), f.model));

  // Saving again replaces it whole.
  kg::train::save_checkpoint(dir, files(30, 2.0f));
  auto c2 = kg::train::load_checkpoint(dir, false);
  CHECK(c2.state["step"] == 30);
  CHECK(torch::equal(c2.weights.at("conv.weight"), torch::full({4, 3}, 2.0f)));

  // The schema-1 call shape still works: empty state tensors, no extras.
  kg::train::save_checkpoint(d / "checkpoints/best", f.model, json{{"step", 5}}, "x = 1\n", json::object());
  auto b = kg::train::load_checkpoint(d / "checkpoints/best");
  CHECK(same(b.weights, f.model));
  CHECK(b.state_tensors.empty());
  CHECK(b.extra_weights.empty());
  CHECK(b.state["step"] == 5);
}

TEST_CASE("checkpoint: a schema-1 checkpoint (no manifest) still loads", "[unit][checkpoint]") {
  kg::test::TempDir d;
  const std::string dir = d / "checkpoints/best";
  kg::model::TensorMap w{{"fc.weight", torch::randn({2, 3})}};
  kg::model::write_safetensors(dir + "/model.safetensors", w);
  d.write("checkpoints/best/recipe.toml", "[model]\n");
  d.write("checkpoints/best/provenance.json", "{}\n");
  d.write("checkpoints/best/state.json", R"({"schema_version": 1, "kgtrain": "fit", "epoch": 2, "step": 14})");
  CHECK(kg::train::checkpoint_problem(dir) == "");
  auto c = kg::train::load_checkpoint(dir);
  CHECK(c.schema_version == 1);
  CHECK(same(c.weights, w));
  CHECK(c.state_tensors.empty());
  CHECK(c.state["step"] == 14);
  CHECK(c.recipe_toml == "[model]\n");
  CHECK(kg::train::find_latest(d / "checkpoints") == dir);
  // Without state.json (schema 1 wrote it last) it is an interrupted save.
  fs::remove(dir + "/state.json");
  CHECK_THROWS_AS(kg::train::load_checkpoint(dir), kg::CheckpointError);
  CHECK(kg::train::checkpoint_problem(dir).find("MANIFEST.json") != std::string::npos);
  // A schema-2 state.json without a manifest is not mistaken for schema 1.
  d.write("checkpoints/best/state.json", R"({"schema_version": 2, "step": 14})");
  CHECK(load_error(dir).find("MANIFEST.json") != std::string::npos);
  CHECK_THROWS_AS(kg::train::load_checkpoint(d / "nowhere"), kg::CheckpointError);
}

TEST_CASE("checkpoint: each damaged file is named, and find_latest falls back to the newest complete one",
          "[unit][checkpoint]") {
  const std::vector<std::string> names = {"model.safetensors", "state.safetensors", "ema.safetensors", "state.json",
                                          "recipe.toml",       "provenance.json",   "MANIFEST.json"};
  for (const auto& name : names)
    for (const std::string damage : {"truncate", "flip", "delete"}) {
      INFO(name << ": " << damage);
      kg::test::TempDir d;
      const std::string ckpts = d / "checkpoints";
      kg::train::save_checkpoint(ckpts + "/best", files(10));
      kg::train::save_checkpoint(ckpts + "/last", files(20));
      REQUIRE(kg::train::find_latest(ckpts) == ckpts + "/last");
      const std::string p = ckpts + "/last/" + name;
      std::string bytes = contents(p);
      REQUIRE(bytes.size() > 2);
      if (damage == "truncate") overwrite(p, bytes.substr(0, bytes.size() / 2));
      if (damage == "flip") {
        bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x20);
        overwrite(p, bytes);
      }
      if (damage == "delete") fs::remove(p);

      std::string err = load_error(ckpts + "/last");
      INFO(err);
      CHECK(err.find(name) != std::string::npos);
      CHECK(err.find("incomplete or damaged") != std::string::npos);
      std::string why = kg::train::checkpoint_problem(ckpts + "/last");
      INFO(why);
      CHECK(why.find(name) != std::string::npos);
      if (name != "MANIFEST.json") {
        const char* expect = damage == "truncate" ? "truncated" : damage == "flip" ? "corrupt" : "missing";
        CHECK(why.find(expect) != std::string::npos);
        // The cheap check sees sizes only: a flipped byte needs the hash.
        CHECK(kg::train::checkpoint_problem(ckpts + "/last", false).empty() == (damage == "flip"));
      }
      std::vector<std::string> skipped;
      CHECK(kg::train::find_latest(ckpts, &skipped) == ckpts + "/best");
      REQUIRE(skipped.size() == 1);
      CHECK(skipped[0].rfind(ckpts + "/last: ", 0) == 0);
      CHECK(skipped[0].find(name) != std::string::npos);
      // The newest complete one is what a resume gets; nothing complete left is nullopt.
      fs::remove(ckpts + "/best/MANIFEST.json");
      skipped.clear();
      CHECK_FALSE(kg::train::find_latest(ckpts, &skipped).has_value());
      CHECK(skipped.size() == 2);
    }
}

TEST_CASE("checkpoint: a crash mid-save leaves a .tmp-* folder that find_latest ignores and the next save removes",
          "[unit][checkpoint]") {
  kg::test::TempDir d;
  const std::string ckpts = d / "checkpoints";
  kg::train::save_checkpoint(ckpts + "/last", files(20));
  // Partial saves: one by a process that is gone (pids never reach 999999999), one by this process (a save
  // that threw or a restart that got the same pid), one by a live process (left alone: it may be mid-save).
  const std::string dead = ".tmp-last-999999999", mine = ".tmp-last-" + std::to_string(::getpid()),
                    live = ".tmp-last-" + std::to_string(::getppid());
  for (const auto& t : {dead, mine, live}) {
    kg::model::write_safetensors(ckpts + "/" + t + "/model.safetensors", {{"w", torch::ones({2})}});
    d.write("checkpoints/" + t + "/state.json", R"({"schema_version": 2, "step": 999})");
  }
  d.write("checkpoints/.tmp-best-999999999/state.json", "{}");
  std::vector<std::string> skipped;
  CHECK(kg::train::find_latest(ckpts, &skipped) == ckpts + "/last");
  CHECK(skipped.empty());
  kg::train::save_checkpoint(ckpts + "/last", files(30));
  CHECK(entries(ckpts) == std::set<std::string>{"last", live, ".tmp-best-999999999"});
  CHECK(kg::train::load_checkpoint(ckpts + "/last").state["step"] == 30);
}

TEST_CASE("checkpoint: ties between equal steps prefer last", "[unit][checkpoint]") {
  kg::test::TempDir d;
  const std::string ckpts = d / "checkpoints";
  kg::train::save_checkpoint(ckpts + "/best", files(40));
  kg::train::save_checkpoint(ckpts + "/top-epoch004", files(40));
  kg::train::save_checkpoint(ckpts + "/last", files(40));
  kg::train::save_checkpoint(ckpts + "/step-000000030", files(30));
  CHECK(kg::train::find_latest(ckpts) == ckpts + "/last");
  {
    std::error_code ec;
    kg::remove_tree(ckpts + "/last", ec);
  }
  CHECK(kg::train::find_latest(ckpts) == ckpts + "/best");
  CHECK_FALSE(kg::train::find_latest(d / "absent").has_value());
}

TEST_CASE("checkpoint store: rotation keeps exactly keep_last folders", "[unit][checkpoint]") {
  kg::test::TempDir d;
  const std::string ckpts = d / "checkpoints";
  kg::train::CheckpointStore store(ckpts, 3, 0, true);
  CHECK(store.dir() == ckpts);
  for (int64_t step : {10, 20, 30, 40, 50}) store.save_last(files(step));
  CHECK(entries(ckpts) == std::set<std::string>{"last", "step-000000040", "step-000000030"});
  CHECK(kg::train::load_checkpoint(ckpts + "/last").state["step"] == 50);
  CHECK(kg::train::load_checkpoint(ckpts + "/step-000000040").state["step"] == 40);
  CHECK(kg::train::load_checkpoint(ckpts + "/step-000000030").state["step"] == 30);
  // Saving the same step again (a resumed run re-saving) replaces last without rotating a duplicate.
  store.save_last(files(50, 3.0f));
  CHECK(entries(ckpts) == std::set<std::string>{"last", "step-000000040", "step-000000030"});
  // A damaged last is not rotated into the history; resume then falls back to the newest rotated one.
  fs::remove(ckpts + "/last/state.safetensors");
  std::vector<std::string> skipped;
  CHECK(kg::train::find_latest(ckpts, &skipped) == ckpts + "/step-000000040");
  CHECK(skipped.size() == 1);
  store.save_last(files(60));
  CHECK(entries(ckpts) == std::set<std::string>{"last", "step-000000040", "step-000000030"});
  store.save_best(files(60));
  CHECK(kg::train::load_checkpoint(ckpts + "/best").state["step"] == 60);

  kg::test::TempDir d1;
  kg::train::CheckpointStore one(d1.str(), 1, 0, true);
  for (int64_t step : {1, 2, 3}) one.save_last(files(step));
  CHECK(entries(d1.str()) == std::set<std::string>{"last"});

  // rotate_to through save_checkpoint directly.
  kg::test::TempDir d2;
  kg::train::save_checkpoint(d2 / "last", files(1), "prev");  // nothing to rotate yet
  CHECK(entries(d2.str()) == std::set<std::string>{"last"});
  kg::train::save_checkpoint(d2 / "last", files(2), "prev");
  CHECK(entries(d2.str()) == std::set<std::string>{"last", "prev"});
  CHECK(kg::train::load_checkpoint(d2 / "prev").state["step"] == 1);

  CHECK_THROWS_AS(kg::train::CheckpointStore(ckpts, 0, 0, true), kg::ConfigError);
  CHECK_THROWS_AS(kg::train::CheckpointStore(ckpts, 1, -1, true), kg::ConfigError);
}

TEST_CASE("checkpoint store: top-k keeps the k best, either direction, and its state survives resume",
          "[unit][checkpoint]") {
  const std::vector<double> values = {0.5, 0.7, 0.6, NAN, 0.9, 0.7};
  auto top_dirs = [](const std::string& dir) {
    std::set<std::string> s;
    for (const auto& n : entries(dir))
      if (n.rfind("top-", 0) == 0) s.insert(n);
    return s;
  };
  SECTION("higher is better") {
    kg::test::TempDir d;
    kg::train::CheckpointStore store(d.str(), 1, 2, true);
    std::vector<bool> kept;
    for (size_t i = 0; i < values.size(); ++i)
      kept.push_back(store.offer_top_k(files(10 * (int64_t(i) + 1)), values[i], int64_t(i) + 1));
    // 0.5 in; 0.7 in; 0.6 evicts 0.5; NaN never; 0.9 evicts 0.6; a later 0.7 ties with the kept 0.7: the earlier stays.
    CHECK(kept == std::vector<bool>{true, true, true, false, true, false});
    CHECK(top_dirs(d.str()) == std::set<std::string>{"top-epoch002", "top-epoch005"});
    CHECK(store.state() == json::parse(R"([{"epoch": 5, "value": 0.9, "dir": "top-epoch005"},
                                           {"epoch": 2, "value": 0.7, "dir": "top-epoch002"}])"));
    CHECK(kg::train::load_checkpoint(d / "top-epoch005").state["step"] == 50);

    // Resume: a new store given the saved state continues the same ranking.
    kg::train::CheckpointStore resumed(d.str(), 1, 2, true);
    resumed.load_state(store.state());
    CHECK(resumed.state() == store.state());
    CHECK(resumed.offer_top_k(files(70), 0.8, 7));  // evicts epoch 2 (0.7)
    CHECK(top_dirs(d.str()) == std::set<std::string>{"top-epoch005", "top-epoch007"});
    CHECK_FALSE(resumed.offer_top_k(files(80), 0.1, 8));
    // An epoch offered again replaces its own entry.
    CHECK(resumed.offer_top_k(files(71), 0.95, 7));
    CHECK(resumed.state()[0] == json({{"epoch", 7}, {"value", 0.95}, {"dir", "top-epoch007"}}));
    CHECK(resumed.state().size() == 2);

    // A smaller k on resume drops the worst; entries whose folder vanished are dropped.
    kg::train::CheckpointStore smaller(d.str(), 1, 1, true);
    smaller.load_state(resumed.state());
    CHECK(smaller.state().size() == 1);
    CHECK(top_dirs(d.str()) == std::set<std::string>{"top-epoch007"});
    {
      std::error_code ec;
      kg::remove_tree(d / "top-epoch007", ec);
    }
    smaller.load_state(resumed.state());
    CHECK(smaller.state().empty());
    smaller.load_state(json::object());  // a checkpoint saved without top-k bookkeeping
    CHECK(smaller.state().empty());
    CHECK_THROWS_AS(smaller.load_state(json{{"epoch", 1}}), kg::CheckpointError);
    CHECK_THROWS_AS(smaller.load_state(json::parse(R"([{"epoch": 1, "value": "x", "dir": "top-epoch001"}])")),
                    kg::CheckpointError);
    CHECK_THROWS_AS(smaller.load_state(json::parse(R"([{"epoch": 1, "value": 1, "dir": "../x"}])")),
                    kg::CheckpointError);
  }
  SECTION("lower is better") {
    kg::test::TempDir d;
    kg::train::CheckpointStore store(d.str(), 1, 2, false);
    std::vector<bool> kept;
    for (size_t i = 0; i < values.size(); ++i) kept.push_back(store.offer_top_k(files(10), values[i], int64_t(i) + 1));
    CHECK(kept == std::vector<bool>{true, true, true, false, false, false});
    CHECK(top_dirs(d.str()) == std::set<std::string>{"top-epoch001", "top-epoch003"});
    CHECK(store.state() == json::parse(R"([{"epoch": 1, "value": 0.5, "dir": "top-epoch001"},
                                           {"epoch": 3, "value": 0.6, "dir": "top-epoch003"}])"));
    CHECK_FALSE(store.offer_top_k(files(10), INFINITY, 9));
  }
  SECTION("off") {
    kg::test::TempDir d;
    kg::train::CheckpointStore store(d.str(), 1, 0, true);
    CHECK_FALSE(store.offer_top_k(files(10), 1.0, 1));
    CHECK(entries(d.str()).empty());
    CHECK(store.state() == json::array());
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
