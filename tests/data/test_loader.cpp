// The loader's stream is a pure function of (seed, epoch, sample index).
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>
#include <torch/torch.h>

#include "core/error.h"
#include "data/loader.h"
#include "data/table.h"
#include "support/fixtures.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

using Setup = kg::test::TinyTable;  // 37 rows

std::vector<kg::data::Batch> drain(const kg::data::Table& t, const kg::data::Pipeline& p, kg::data::LoaderOptions o) {
  std::vector<int64_t> rows(static_cast<size_t>(t.size()));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int64_t>(i);
  kg::data::Loader l(t, rows, p, o);
  std::vector<kg::data::Batch> out;
  kg::data::Batch b;
  while (l.next(b)) out.push_back(b);
  CHECK(static_cast<int64_t>(out.size()) == l.size());
  return out;
}

}  // namespace

TEST_CASE("labels and classes come from the CSV", "[unit][data]") {
  Setup s;
  CHECK(s.classes.names == std::vector<std::string>{"left", "right"});
  CHECK_FALSE(s.classes.numeric);
  CHECK(s.table.size() == 37);
  CHECK(s.table.targets[1] == 1);
  CHECK(s.table.rows[3].where.find("row 4 (line 5)") != std::string::npos);
}

TEST_CASE("batches do not depend on the worker count or prefetch depth", "[unit][data]") {
  Setup s;
  auto aug = kg::config::json::parse(
      R"([{"name": "pad_crop", "pad": 3}, {"name": "hflip"}, {"name": "normalize", "mean": [0.5], "std": [0.25]}])");
  kg::data::Pipeline p(aug, kg::data::geometry(s.opts), true);
  kg::data::LoaderOptions o{8, true, false, 0, 1, 11, 2, -1};
  auto ref = drain(s.table, p, o);
  REQUIRE(ref.size() == 5);  // 37 rows, batch 8, keep the short last batch
  CHECK(ref.back().inputs.pixels.size(0) == 5);
  for (int workers : {1, 2, 5})
    for (int prefetch : {1, 3}) {
      o.workers = workers;
      o.prefetch = prefetch;
      auto got = drain(s.table, p, o);
      REQUIRE(got.size() == ref.size());
      for (size_t i = 0; i < got.size(); ++i) {
        CHECK(got[i].rows == ref[i].rows);
        CHECK(torch::equal(got[i].inputs.pixels, ref[i].inputs.pixels));
        CHECK(torch::equal(got[i].targets, ref[i].targets));
      }
    }
}

TEST_CASE("shuffling depends on seed and epoch only", "[unit][data]") {
  std::vector<int64_t> rows(100);
  for (int i = 0; i < 100; ++i) rows[static_cast<size_t>(i)] = i;
  auto a = kg::data::epoch_order(rows, 1, 0), b = kg::data::epoch_order(rows, 1, 0);
  CHECK(a == b);
  CHECK(a != kg::data::epoch_order(rows, 1, 1));
  CHECK(a != kg::data::epoch_order(rows, 2, 0));
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == rows);
  CHECK(kg::data::num_batches(37, 8, true) == 4);
  CHECK(kg::data::num_batches(37, 8, false) == 5);
  CHECK(kg::data::num_batches(37, 8, false, 2) == 2);
}

TEST_CASE("a worker's data error reaches the consumer with the CSV row", "[unit][data]") {
  Setup s;
  std::filesystem::remove(s.opts.root + "/train/tr20.png");
  kg::data::Pipeline p(kg::config::json::array(), kg::data::geometry(s.opts), false);
  for (int workers : {0, 2}) {
    kg::data::LoaderOptions o{8, false, false, workers, 2, 0, 0, -1};
    try {
      drain(s.table, p, o);
      FAIL("no error");
    } catch (const kg::DataError& e) {
      std::string m = e.what();
      CHECK(m.find("row 21") != std::string::npos);
      CHECK(m.find("tr20") != std::string::npos);
    }
  }
  CHECK_THROWS_AS(kg::data::check_images(s.table, kg::data::geometry(s.opts), 2), kg::DataError);
}

TEST_CASE("uint8 transfer: the device normalization equals the host one", "[unit][data]") {
  Setup s;
  auto aug = kg::config::json::parse(
      R"([{"name": "pad_crop", "pad": 2}, {"name": "hflip"}, {"name": "normalize", "mean": [0.4], "std": [0.3]}])");
  auto g = kg::data::geometry(s.opts);
  kg::data::Pipeline host(aug, g, true), dev(aug, g, true, /*defer_normalize=*/true);
  CHECK_FALSE(host.outputs_u8());
  REQUIRE(dev.outputs_u8());
  CHECK(dev.size() == 2);
  CHECK(dev.device_mean() == std::vector<double>{0.4});
  kg::data::LoaderOptions o{8, true, false, 2, 2, 11, 0, -1};
  auto a = drain(s.table, host, o), b = drain(s.table, dev, o);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(b[i].inputs.pixels.scalar_type() == torch::kByte);
    auto x = kg::data::to_model_input(b[i], torch::kCPU).pixels;
    CHECK(torch::allclose(x, a[i].inputs.pixels, 1e-5, 1e-5));
  }
  // Transforms after normalize would need float pixels on the host.
  auto bad = kg::config::json::parse(R"([{"name": "normalize", "mean": [0.4], "std": [0.3]}, {"name": "hflip"}])");
  CHECK_THROWS_AS(kg::data::Pipeline(bad, g, true, true), kg::ConfigError);
}

TEST_CASE("the RAM cache serves decoded images and respects its cap", "[unit][data]") {
  Setup s;
  kg::data::Pipeline p(kg::config::json::array(), kg::data::geometry(s.opts), false);
  kg::data::ImageCache cache(1 << 20);
  kg::data::LoaderOptions o{8, false, false, 2, 2, 1, 0, -1, &cache};
  auto first = drain(s.table, p, o);
  CHECK(cache.count() == 37);
  CHECK(cache.bytes() == 37 * 12 * 12);
  // With the files gone the cached epoch is unchanged.
  for (auto& r : s.table.rows) std::filesystem::remove(r.image);
  auto second = drain(s.table, p, o);
  for (size_t i = 0; i < first.size(); ++i) CHECK(torch::equal(first[i].inputs.pixels, second[i].inputs.pixels));
  kg::data::ImageCache tiny(12 * 12 * 3);
  kg::data::LoaderOptions t{8, false, false, 0, 1, 1, 0, -1, &tiny};
  CHECK_THROWS_AS(drain(s.table, p, t), kg::DataError);  // only 3 fit; the rest must be read and are gone
  CHECK(tiny.count() == 0);
}

TEST_CASE("batch buffers are reused once the consumer lets go, without changing the stream", "[unit][data]") {
  Setup s;
  auto aug = kg::config::json::parse(R"([{"name": "pad_crop", "pad": 3}, {"name": "hflip"}])");
  kg::data::Pipeline p(aug, kg::data::geometry(s.opts), true);
  for (int workers : {0, 2}) {
    kg::data::LoaderOptions o{4, true, true, workers, 2, 5, 1, -1};
    auto ref = drain(s.table, p, o);  // keeps every batch: no reuse possible
    std::vector<int64_t> rows(static_cast<size_t>(s.table.size()));
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int64_t>(i);
    kg::data::Loader l(s.table, rows, p, o);
    std::set<const void*> buffers;
    kg::data::Batch b;
    size_t k = 0;
    while (l.next(b)) {
      buffers.insert(b.inputs.pixels.data_ptr());
      REQUIRE(k < ref.size());
      CHECK(torch::equal(b.inputs.pixels, ref[k].inputs.pixels));
      ++k;
    }
    CHECK(k == ref.size());
    CHECK(buffers.size() < ref.size());  // 9 batches from a handful of buffers
  }
}

TEST_CASE("start_batch resumes mid-epoch: the tail of the same epoch, true batch numbers", "[unit][data][loader]") {
  Setup s;
  auto aug = kg::config::json::parse(
      R"([{"name": "pad_crop", "pad": 3}, {"name": "hflip"}, {"name": "normalize", "mean": [0.5], "std": [0.25]}])");
  kg::data::Pipeline p(aug, kg::data::geometry(s.opts), true);
  std::vector<int64_t> rows(static_cast<size_t>(s.table.size()));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int64_t>(i);
  for (int workers : {0, 2}) {
    kg::data::LoaderOptions o{8, true, false, workers, 2, 11, 3, -1};
    auto full = drain(s.table, p, o);
    REQUIRE(full.size() == 5);
    for (int64_t k : {1, 3, 4, 5, 9}) {
      INFO("workers " << workers << ", start_batch " << k);
      o.start_batch = k;
      kg::data::Loader l(s.table, rows, p, o);
      CHECK(l.size() == 5);  // the whole epoch's count
      std::vector<kg::data::Batch> tail;
      kg::data::Batch b;
      while (l.next(b)) tail.push_back(b);
      REQUIRE(tail.size() == static_cast<size_t>(std::max<int64_t>(0, 5 - k)));
      for (size_t i = 0; i < tail.size(); ++i) {
        const auto& ref = full[static_cast<size_t>(k) + i];
        CHECK(tail[i].index == ref.index);
        CHECK(tail[i].index == k + static_cast<int64_t>(i));
        CHECK(tail[i].rows == ref.rows);
        CHECK(torch::equal(tail[i].inputs.pixels, ref.inputs.pixels));
        CHECK(torch::equal(tail[i].targets, ref.targets));
      }
    }
  }
  // Skipped batches are not decoded: a missing image in the skipped part does not matter.
  kg::data::LoaderOptions o{8, false, false, 2, 2, 0, 0, -1};
  std::filesystem::remove(s.opts.root + "/train/tr3.png");  // row 3: batch 0 in file order
  o.start_batch = 1;
  kg::data::Loader l(s.table, rows, p, o);
  kg::data::Batch b;
  int64_t n = 0;
  while (l.next(b)) ++n;
  CHECK(n == 4);
}

}  // namespace KG_UNITY_ID
}  // namespace
