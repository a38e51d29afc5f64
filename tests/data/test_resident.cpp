// data.cache = "device": images resident on the device, batches gathered and augmented there, equal to
// what the host pipeline makes from the same images and the same per-sample streams.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "data/loader.h"
#include "device/device.h"
#include "data/pack.h"
#include "data/resident.h"
#include "data/table.h"
#include "data/transform.h"
#include "support/fixtures.h"
#include "support/gpu.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

// 29 gray images of 4 classes: PNG files + train.csv, or (raw_pack) one raw pack holding pixels and
// table, which needs no image codecs (the GPU build without them runs the [gpu] test on it).
struct Setup {
  kg::test::TempDir dir;
  kg::data::DataOptions opts;
  kg::data::Table table;
  explicit Setup(int stored_size, int image_size, bool raw_pack = false) {
    opts.channels = 1;
    opts.image_size = image_size;
    if (raw_pack) {
      std::string csv = "id,label\n";
      for (int i = 0; i < 29; ++i) csv += "r" + std::to_string(i) + "," + std::to_string(i % 4) + "\n";
      kg::data::PackWriter w(dir / "train.kgpack", {{"kind", "raw"},
                                                    {"height", stored_size},
                                                    {"width", stored_size},
                                                    {"channels", 1},
                                                    {"table_csv", csv},
                                                    {"id_col", "id"}});
      torch::manual_seed(5);
      for (int i = 0; i < 29; ++i) {
        at::Tensor px = torch::randint(0, 256, {stored_size * stored_size}, torch::kByte);
        w.add(std::string_view(reinterpret_cast<const char*>(px.data_ptr<uint8_t>()), static_cast<size_t>(px.numel())));
      }
      w.finish();
      opts.root = dir.str();
      opts.format = "pack";
      auto classes = kg::data::infer_classes(opts);
      table = kg::data::load_split(opts, kg::data::Split::train, classes, true, 1);
      return;
    }
    auto ds = kg::test::make_tiny_dataset(dir, 29, 4, stored_size);
    opts.root = ds.root;
    auto classes = kg::data::infer_classes(opts);
    table = kg::data::load_table(opts, opts.train_csv, opts.image_dir, &classes, true);
  }
  std::vector<int64_t> all() const {
    std::vector<int64_t> rows(static_cast<size_t>(table.size()));
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int64_t>(i);
    return rows;
  }
};

std::vector<kg::data::Batch> drain(const kg::data::Table& t, const std::vector<int64_t>& rows,
                                   const kg::data::Pipeline& p, kg::data::LoaderOptions o) {
  kg::data::Loader l(t, rows, p, o);
  std::vector<kg::data::Batch> out;
  kg::data::Batch b;
  while (l.next(b)) out.push_back(b);
  return out;
}

}  // namespace

TEST_CASE("device-resident batches equal the host pipeline's, transform by transform", "[unit][data][resident]") {
  // Stored 16x16 and resized to 12 once (as the host pipeline's first resize), or stored at 12.
  const int stored = GENERATE(12, 16);
  const bool raw_pack = GENERATE(false, true);
  INFO("stored " << stored << (raw_pack ? ", raw pack" : ", PNG files"));
  Setup s(stored, 12, raw_pack);
  const char* augments[] = {
      R"([{"name": "pad_crop", "pad": 3}, {"name": "hflip"}, {"name": "normalize", "mean": [0.4], "std": [0.3]}])",
      R"([{"name": "hflip"}, {"name": "pad_crop", "pad": 5, "mode": "constant", "p": 0.7}, {"name": "vflip"}])",
      R"([{"name": "vflip", "p": 0.3}, {"name": "pad_crop", "pad": 13, "mode": "reflect"}, {"name": "pad_crop", "pad": 2, "mode": "edge"}])",
      R"([{"name": "pad_crop", "pad": 2, "mode": "constant"}, {"name": "pad_crop", "pad": 2}, {"name": "normalize", "mean": [0.5], "std": [0.25]}])",
      R"([{"name": "normalize", "mean": [0.5], "std": [0.25]}])",
  };
  const auto g = kg::data::geometry(s.opts);
  kg::data::ResidentImages res(s.table, g, torch::kCPU, size_t{1} << 30, 2);
  CHECK(res.size() == 29);
  CHECK(res.bytes() == 29 * 13 * 13);
  for (const char* text : augments) {
    INFO(text);
    const auto aug = kg::config::json::parse(text);
    for (bool train : {true, false}) {
      kg::data::Pipeline host(aug, g, train), dev(aug, g, train, /*defer_normalize=*/true);
      REQUIRE_NOTHROW(kg::data::ResidentImages::check_pipeline(dev, 1));
      for (int64_t epoch : {0, 3}) {
        kg::data::LoaderOptions o{8, train, false, 2, 2, 17, epoch, -1};
        auto a = drain(s.table, s.all(), host, o), u8 = drain(s.table, s.all(), dev, o);
        o.resident = &res;
        auto b = drain(s.table, s.all(), dev, o);
        REQUIRE(a.size() == b.size());
        for (size_t i = 0; i < a.size(); ++i) {
          CHECK(b[i].rows == a[i].rows);
          CHECK(b[i].inputs.pixels.scalar_type() == torch::kFloat);
          CHECK(b[i].inputs.pixels.sizes() == a[i].inputs.pixels.sizes());
          CHECK(b[i].inputs.pixels.strides() == a[i].inputs.pixels.strides());
          CHECK(torch::equal(b[i].targets, a[i].targets));
          CHECK(torch::allclose(kg::data::to_model_input(b[i], torch::kCPU).pixels, a[i].inputs.pixels, 1e-5, 1e-5));
          CHECK(torch::equal(b[i].inputs.pixels, kg::data::to_model_input(u8[i], torch::kCPU).pixels));
        }
      }
    }
  }
}

TEST_CASE("device-resident data refuses what it cannot do, naming the key", "[unit][data][resident]") {
  Setup s(12, 12);
  const auto g = kg::data::geometry(s.opts);
  auto jitter = kg::config::json::parse(
      R"([{"name": "hflip"}, {"name": "color_jitter", "brightness": 0.2}, {"name": "normalize", "mean": [0.4], "std": [0.3]}])");
  kg::data::Pipeline p(jitter, g, true, true);
  try {
    kg::data::ResidentImages::check_pipeline(p, 1);
    FAIL("no error");
  } catch (const kg::ConfigError& e) {
    const std::string m = e.what();
    CHECK(m.find("data.augment[1] (color_jitter)") != std::string::npos);
    CHECK(m.find("pad_crop, hflip and vflip") != std::string::npos);
  }
  // Evaluation keeps only deterministic transforms: color_jitter is random, so it is not there.
  CHECK_NOTHROW(kg::data::ResidentImages::check_pipeline(kg::data::Pipeline(jitter, g, false, true), 1));
  kg::data::Pipeline flip(kg::config::json::parse(R"([{"name": "hflip"}])"), g, true, true);
  CHECK_THROWS_WITH(kg::data::ResidentImages::check_pipeline(flip, 2), Catch::Contains("progressive-resizing"));
  // More than data.cache_max_gb: refused before anything is allocated on the device.
  CHECK_THROWS_WITH(kg::data::ResidentImages(s.table, g, torch::kCPU, 1000, 1), Catch::Contains("data.cache_max_gb"));
}

TEST_CASE("device-resident data: an unreadable image is named by its CSV row", "[unit][data][resident]") {
  Setup s(12, 12);
  REQUIRE(std::filesystem::remove(s.table.rows[5].image));
  try {
    kg::data::ResidentImages(s.table, kg::data::geometry(s.opts), torch::kCPU, size_t{1} << 30, 2);
    FAIL("no error");
  } catch (const kg::DataError& e) {
    CHECK(std::string(e.what()).find("row 6") != std::string::npos);
  }
}

TEST_CASE("fit with data.cache = device trains exactly as with uint8 batches from the RAM cache",
          "[integration][jobs][resident]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 48, 8);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::vector<std::string> aug{
      "data.augment=[{name=\"pad_crop\",pad=2},{name=\"hflip\"},{name=\"normalize\",mean=[0.4],std=[0.3]}]",
      "train.epochs=2"};
  auto run = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args{"fit", recipe, "--run-dir", dir / name};
    args.insert(args.end(), aug.begin(), aug.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return kg::test::run_kgtrain(args);
  };
  auto ram = run("ram", {"data.cache=ram", "data.uint8_transfer=true", "--quiet"});
  INFO(ram.output);
  REQUIRE(ram.exit_code == 0);
  auto dev = run("device", {"data.cache=device"});
  INFO(dev.output);
  REQUIRE(dev.exit_code == 0);
  CHECK(dev.output.find("cache   device: 48 images") != std::string::npos);
  // Same pixels, same streams, same arithmetic: the same losses and metrics, bit for bit, apart from timings.
  auto strip = [](const std::string& m) {
    std::string out;
    for (auto& line : kg::split(m, '\n')) {
      if (line.empty()) continue;
      auto j = nlohmann::json::parse(line);
      for (const char* k : {"train_images_per_s", "elapsed_s", "epoch_seconds"}) j.erase(k);
      out += j.dump() + "\n";
    }
    return out;
  };
  CHECK(strip(kg::read_file(dir / "ram/metrics.jsonl")) == strip(kg::read_file(dir / "device/metrics.jsonl")));

  // A transform without a device version is a recipe error (exit 2) naming it.
  auto bad = run("bad", {"data.cache=device", "data.augment=[{name=\"rotate\",degrees=10}]"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("data.augment[0] (rotate)") != std::string::npos);
}

TEST_CASE("bench with data.cache = device times the device gather, not decoding",
          "[integration][jobs][resident][bench]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 48, 4);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  auto r = kg::test::run_kgtrain({"bench", recipe, "data.cache=device", "--ablate", "workers,cache", "--steps", "2",
                                  "--warmup", "1", "--repeats", "1", "--json", dir / "bench.json", "--quiet"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(kg::read_file(dir / "bench.json"));
  std::vector<std::string> phases;
  for (auto& p : j["phases"]) phases.push_back(p["name"].get<std::string>());
  CHECK(std::find(phases.begin(), phases.end(), "loader") != phases.end());
  CHECK(std::find(phases.begin(), phases.end(), "decode_augment_1_thread") == phases.end());
  REQUIRE(j["ablations"].size() >= 2);
  for (auto& a : j["ablations"]) {
    if (a["name"] == "workers") CHECK(a["status"] == "skipped");
    if (a["name"] == "cache") {
      CHECK(a["status"] == "timed");
      CHECK(a["configuration"] == nlohmann::json::array({"data.cache=ram"}));
    }
  }
}

TEST_CASE("device-resident batches on CUDA equal the CPU ones", "[unit][gpu][data][resident]") {
  KG_REQUIRE_GPU();
  Setup s(16, 12, /*raw_pack=*/true);
  const auto g = kg::data::geometry(s.opts);
  const auto aug = kg::config::json::parse(
      R"([{"name": "pad_crop", "pad": 3, "mode": "constant"}, {"name": "hflip"}, {"name": "vflip"}, {"name": "normalize", "mean": [0.4], "std": [0.3]}])");
  kg::data::Pipeline p(aug, g, true, true);
  kg::data::ResidentImages cpu(s.table, g, torch::kCPU, size_t{1} << 30, 2),
      gpu(s.table, g, torch::kCUDA, size_t{1} << 30, 2);
  const auto rows = s.all();
  auto a = cpu.batch(rows, p, 5, 1), b = gpu.batch(rows, p, 5, 1);
  CHECK(b.is_cuda());
  CHECK(torch::allclose(a, b.cpu(), 1e-6, 1e-6));
}

}  // namespace KG_UNITY_ID
}  // namespace
