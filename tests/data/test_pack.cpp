// The packed single-file dataset: round trips, the content hash, and every kind of damage.
#include <filesystem>
#include <fstream>
#include <thread>

#include <catch2/catch.hpp>
#include <opencv2/imgproc.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "core/random.h"
#include "core/xxh64.h"
#include "data/image_io.h"
#include "data/pack.h"
#include "data/table.h"
#include "support/fixtures.h"
#include "support/temp_dir.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::data::PackKind;
using kg::data::PackReader;
using kg::data::PackWriter;
using nlohmann::json;

namespace {

json meta_for(const std::string& kind, int64_t rows) {
  json m = {{"kind", kind}, {"id_col", "id"}, {"source", "test"}, {"created_by", "kgtrain tests"}};
  std::string csv = "id,label\n";
  for (int64_t i = 0; i < rows; ++i) csv += "img" + std::to_string(i) + "," + std::to_string(i % 3) + "\n";
  m["table_csv"] = csv;
  return m;
}

cv::Mat noise(int h, int w, int type, uint64_t seed) {
  cv::Mat m(h, w, type);
  kg::Rng rng(seed);
  for (size_t i = 0; i < m.total() * m.elemSize(); ++i) m.data[i] = static_cast<uchar>(rng.below(256));
  return m;
}

std::string bytes_of(const cv::Mat& m) {
  return std::string(reinterpret_cast<const char*>(m.data), m.total() * m.elemSize());
}

bool same(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

// Items of awkward sizes (empty, 1 byte, stripes of the hash, bigger than the writer's buffer).
std::vector<std::string> odd_items() {
  std::vector<std::string> items;
  kg::Rng rng(7);
  for (size_t n : {0, 1, 31, 32, 33, 64, 100, 5000, (1 << 20) + 3}) {
    std::string s(n, '\0');
    for (auto& c : s) c = static_cast<char>(rng.below(256));
    items.push_back(s);
  }
  return items;
}

std::string write_pack(const std::string& path, const std::vector<std::string>& items,
                       const std::string& kind = "encoded") {
  PackWriter w(path, meta_for(kind, static_cast<int64_t>(items.size())));
  for (auto& it : items) w.add(it);
  return w.finish();
}

void overwrite(const std::string& path, size_t offset, const std::string& bytes) {
  std::string f = kg::read_file(path);
  REQUIRE(offset + bytes.size() <= f.size());
  f.replace(offset, bytes.size(), bytes);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << f;
}

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>(v >> (8 * i));
  return s;
}
uint64_t read_le64(const std::string& f, size_t off) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(f[off + static_cast<size_t>(i)]);
  return v;
}

size_t files_in(const kg::test::TempDir& dir) {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir.path()), {}));
}

}  // namespace

TEST_CASE("pack: encoded items round-trip bit-exact", "[unit][data]") {
  kg::test::TempDir dir;
  const std::string path = dir / "train.kgpack";
  std::vector<std::string> items;
  std::vector<cv::Mat> images;
  for (int i = 0; i < 5; ++i) {
    images.push_back(noise(6 + i, 9, CV_8UC3, static_cast<uint64_t>(i)));
    std::string png;
    kg::data::encode_png(images.back(), png);
    items.push_back(png);
  }
  const std::string hash = write_pack(path, items);

  auto r = PackReader::open(path);
  REQUIRE(r->size() == 5);
  CHECK(r->kind() == PackKind::encoded);
  CHECK(r->path() == path);
  CHECK(r->hash() == hash);
  CHECK(hash.size() == 16);
  CHECK_NOTHROW(r->verify());
  for (int64_t i = 0; i < 5; ++i) {
    CHECK(r->item(i) == items[static_cast<size_t>(i)]);
    CHECK(reinterpret_cast<uintptr_t>(r->item(i).data()) % kg::data::kPackAlign == 0);
    CHECK(same(r->image(i, 3), images[static_cast<size_t>(i)]));
    cv::Mat gray;
    cv::cvtColor(images[static_cast<size_t>(i)], gray, cv::COLOR_RGB2GRAY);
    CHECK(r->image(i, 1).channels() == 1);
    CHECK(r->image(i, 1).size() == gray.size());
  }
  CHECK_THROWS_AS(r->item(5), kg::DataError);
  CHECK_THROWS_AS(r->item(-1), kg::DataError);
}

TEST_CASE("pack: items of any size, the hash covers everything after the header", "[unit][data]") {
  kg::test::TempDir dir;
  const std::string path = dir / "odd.kgpack";
  auto items = odd_items();
  const std::string hash = write_pack(path, items);
  auto r = PackReader::open(path);
  REQUIRE(r->size() == static_cast<int64_t>(items.size()));
  for (size_t i = 0; i < items.size(); ++i) CHECK(r->item(static_cast<int64_t>(i)) == items[i]);
  const std::string file = kg::read_file(path);
  CHECK(file.substr(0, 8) == "KGPACK01");
  char want[17];
  std::snprintf(want, sizeof want, "%016llx",
                static_cast<unsigned long long>(kg::xxh64(std::string_view(file).substr(kg::data::kPackHeaderSize))));
  CHECK(hash == want);
  CHECK_NOTHROW(r->verify());
}

TEST_CASE("pack: raw items round-trip and convert channels", "[unit][data]") {
  kg::test::TempDir dir;
  SECTION("rgb") {
    json m = meta_for("raw", 3);
    m["height"] = 5;
    m["width"] = 7;
    m["channels"] = 3;
    std::vector<cv::Mat> px;
    PackWriter w(dir / "rgb.kgpack", m);
    for (int i = 0; i < 3; ++i) {
      px.push_back(noise(5, 7, CV_8UC3, 100 + static_cast<uint64_t>(i)));
      w.add(bytes_of(px.back()));
    }
    CHECK_THROWS_WITH(w.add(std::string(10, 'x')), Catch::Contains("has 10 bytes, a raw 5x7x3 item has 105"));
    w.finish();
    auto r = PackReader::open(dir / "rgb.kgpack");
    CHECK(r->kind() == PackKind::raw);
    CHECK(r->raw_geometry().height == 5);
    CHECK(r->raw_geometry().width == 7);
    CHECK(r->raw_geometry().channels == 3);
    for (int64_t i = 0; i < 3; ++i) {
      CHECK(r->item(i) == bytes_of(px[static_cast<size_t>(i)]));
      cv::Mat rgb = r->image(i, 3);
      CHECK(same(rgb, px[static_cast<size_t>(i)]));
      CHECK(rgb.data != reinterpret_cast<const uchar*>(r->item(i).data()));  // owns its pixels
      cv::Mat gray;
      cv::cvtColor(px[static_cast<size_t>(i)], gray, cv::COLOR_RGB2GRAY);
      CHECK(same(r->image(i, 1), gray));
    }
  }
  SECTION("gray") {
    json m = meta_for("raw", 2);
    m["height"] = 4;
    m["width"] = 3;
    m["channels"] = 1;
    PackWriter w(dir / "gray.kgpack", m);
    cv::Mat a = noise(4, 3, CV_8UC1, 1), b = noise(4, 3, CV_8UC1, 2);
    w.add(bytes_of(a));
    w.add(bytes_of(b));
    w.finish();
    auto r = PackReader::open(dir / "gray.kgpack");
    CHECK(same(r->image(1, 1), b));
    cv::Mat rgb = r->image(1, 3);
    REQUIRE(rgb.type() == CV_8UC3);
    std::vector<cv::Mat> planes;
    cv::split(rgb, planes);
    for (auto& p : planes) CHECK(same(p, b));
  }
}

TEST_CASE("pack: metadata round-trips", "[unit][data]") {
  kg::test::TempDir dir;
  json m = meta_for("encoded", 2);
  m["extra"] = {{"classes", {"cat", "dog"}}, {"note", "ünïcödé"}};
  PackWriter w(dir / "m.kgpack", m);
  w.add("a");
  w.add("bc");
  w.finish();
  auto r = PackReader::open(dir / "m.kgpack");
  CHECK(r->meta() == m);
  CHECK(r->table_csv() == m["table_csv"].get<std::string>());
  CHECK(r->id_col() == "id");
  CHECK(r->meta()["source"] == "test");
  CHECK(r->meta()["created_by"] == "kgtrain tests");
}

TEST_CASE("pack: an empty pack is allowed", "[unit][data]") {
  kg::test::TempDir dir;
  write_pack(dir / "empty.kgpack", {});
  auto r = PackReader::open(dir / "empty.kgpack");
  CHECK(r->size() == 0);
  CHECK(r->table_csv() == "id,label\n");
  CHECK_NOTHROW(r->verify());
  CHECK_THROWS_AS(r->item(0), kg::DataError);
}

TEST_CASE("pack: the hash is stable for the same content and differs otherwise", "[unit][data]") {
  kg::test::TempDir dir;
  auto items = odd_items();
  const std::string h1 = write_pack(dir / "a.kgpack", items);
  const std::string h2 = write_pack(dir / "b.kgpack", items);
  CHECK(h1 == h2);
  CHECK(kg::read_file(dir / "a.kgpack") == kg::read_file(dir / "b.kgpack"));  // deterministic bytes
  items[3][5] ^= 1;
  CHECK(write_pack(dir / "c.kgpack", items) != h1);
  items[3][5] ^= 1;
  std::swap(items[1], items[2]);
  CHECK(write_pack(dir / "d.kgpack", items) != h1);
}

TEST_CASE("pack: verify() catches a flipped byte in an item", "[unit][data]") {
  kg::test::TempDir dir;
  const std::string path = dir / "p.kgpack";
  auto items = odd_items();
  write_pack(path, items);
  const std::string file = kg::read_file(path);
  const size_t at = file.find(items[7]);  // the 5000-byte item
  REQUIRE(at != std::string::npos);
  std::string flipped(1, static_cast<char>(file[at + 1234] ^ 0x10));
  overwrite(path, at + 1234, flipped);
  auto r = PackReader::open(path);  // structure intact: opens fine
  CHECK(r->item(7) != items[7]);
  REQUIRE_THROWS_AS(r->verify(), kg::DataError);
  REQUIRE_THROWS_WITH(r->verify(), Catch::Contains("p.kgpack") && Catch::Contains("content hash mismatch") &&
                                       Catch::Contains("re-run kgtrain pack"));
}

TEST_CASE("pack: the pack source checks the content hash before training on a pack", "[unit][data]") {
  // A flipped pixel or label leaves the structure intact; only the hash sees it.
  kg::test::TempDir clean_dir, damaged_dir;
  auto open = [](const std::string& root) {
    kg::data::DataOptions o;
    o.root = root;
    o.format = "pack";
    o.channels = 1;
    o.image_size = 12;
    return kg::data::infer_classes(o);
  };
  CHECK_NOTHROW(open(kg::test::make_tiny_pack_dataset(clean_dir, 12, 2).root));
  const std::string root = kg::test::make_tiny_pack_dataset(damaged_dir, 12, 2).root, path = root + "/train.kgpack";
  const size_t at = kg::data::kPackHeaderSize + 7;
  overwrite(path, at, std::string(1, static_cast<char>(kg::read_file(path)[at] ^ 0xFF)));
  REQUIRE_THROWS_AS(open(root), kg::DataError);
  REQUIRE_THROWS_WITH(open(root), Catch::Contains("train.kgpack") && Catch::Contains("content hash mismatch"));
}

TEST_CASE("pack: damaged files are DataErrors that say what is wrong", "[unit][data]") {
  kg::test::TempDir dir;
  const std::string path = dir / "train.kgpack";
  auto items = odd_items();
  write_pack(path, items);
  const std::string file = kg::read_file(path);
  const uint64_t index_off = read_le64(file, 40), meta_off = read_le64(file, 56);

  SECTION("missing") {
    REQUIRE_THROWS_AS(PackReader::open(dir / "nope.kgpack"), kg::DataError);
    REQUIRE_THROWS_WITH(PackReader::open(dir / "nope.kgpack"), Catch::Contains("nope.kgpack"));
  }
  SECTION("truncated") {
    std::filesystem::resize_file(path, file.size() - 10);
    REQUIRE_THROWS_AS(PackReader::open(path), kg::DataError);
    REQUIRE_THROWS_WITH(PackReader::open(path), Catch::Contains("train.kgpack") &&
                                                    Catch::Contains(std::to_string(file.size() - 10)) &&
                                                    Catch::Contains("truncated or damaged"));
  }
  SECTION("shorter than the header") {
    std::filesystem::resize_file(path, 50);
    REQUIRE_THROWS_WITH(PackReader::open(path), Catch::Contains("50 bytes") && Catch::Contains("128-byte pack header"));
    std::filesystem::resize_file(path, 0);
    REQUIRE_THROWS_WITH(PackReader::open(path), Catch::Contains("0 bytes"));
  }
  SECTION("bad magic") {
    overwrite(path, 0, "PK\x03\x04");
    REQUIRE_THROWS_AS(PackReader::open(path), kg::DataError);
    REQUIRE_THROWS_WITH(PackReader::open(path), Catch::Contains("not a kgtrain pack"));
  }
  SECTION("newer format version") {
    overwrite(path, 8, std::string("\x07\0\0\0", 4));
    REQUIRE_THROWS_WITH(PackReader::open(path), Catch::Contains("version 7") && Catch::Contains("reads version 1"));
  }
  SECTION("index entry pointing past the end") {
    overwrite(path, index_off + 16 * 4 + 8, le64(file.size()));  // item 4's size
    REQUIRE_THROWS_AS(PackReader::open(path), kg::DataError);
    REQUIRE_THROWS_WITH(PackReader::open(path),
                        Catch::Contains("train.kgpack: item 4 ends at byte") &&
                            Catch::Contains("past the end of the file (" + std::to_string(file.size()) + " bytes)"));
  }
  SECTION("index entry with an overflowing offset") {
    overwrite(path, index_off + 16 * 2, le64(~0ULL - 3));
    REQUIRE_THROWS_WITH(PackReader::open(path), Catch::Contains("item 2 ends at byte"));
  }
  SECTION("index entry outside the item section") {
    overwrite(path, index_off + 16 * 1, le64(meta_off));  // inside the file, but in the metadata
    REQUIRE_THROWS_WITH(PackReader::open(path),
                        Catch::Contains("item 1") && Catch::Contains("outside the item section"));
  }
  SECTION("section outside the file") {
    overwrite(path, 56, le64(file.size() + 100));  // metadata offset
    REQUIRE_THROWS_WITH(PackReader::open(path),
                        Catch::Contains("metadata section") && Catch::Contains("outside the file"));
  }
  SECTION("index size disagrees with the item count") {
    overwrite(path, 16, le64(items.size() + 1));
    REQUIRE_THROWS_WITH(PackReader::open(path), Catch::Contains("index section"));
  }
  SECTION("garbage metadata") {
    overwrite(path, meta_off, "#!");
    REQUIRE_THROWS_AS(PackReader::open(path), kg::DataError);
    REQUIRE_THROWS_WITH(PackReader::open(path), Catch::Contains("train.kgpack") && Catch::Contains("not valid JSON"));
  }
  SECTION("metadata without a required key") {
    std::string meta = file.substr(meta_off);
    auto k = meta.find("\"kind\"");
    REQUIRE(k != std::string::npos);
    overwrite(path, meta_off + k, "\"kynd\"");
    REQUIRE_THROWS_WITH(PackReader::open(path), Catch::Contains("no \"kind\""));
  }
}

TEST_CASE("pack: a raw item of the wrong size or a table/item mismatch is caught on open", "[unit][data]") {
  kg::test::TempDir dir;
  SECTION("raw geometry") {
    json m = meta_for("raw", 2);
    m["height"] = 2;
    m["width"] = 2;
    m["channels"] = 3;
    PackWriter w(dir / "r.kgpack", m);
    w.add(std::string(12, 'a'));
    w.add(std::string(12, 'b'));
    w.finish();
    // Claim 1 channel: every item is now the wrong size. The metadata has the same length either way.
    std::string file = kg::read_file(dir / "r.kgpack");
    const uint64_t meta_off = read_le64(file, 56);
    auto c = file.find("\"channels\":3", meta_off);
    REQUIRE(c != std::string::npos);
    overwrite(dir / "r.kgpack", c, "\"channels\":1");
    REQUIRE_THROWS_WITH(PackReader::open(dir / "r.kgpack"),
                        Catch::Contains("item 0 has 12 bytes, a raw 2x2x1 item has 4"));
  }
  SECTION("table rows") {
    PackWriter w(dir / "t.kgpack", meta_for("encoded", 3));
    w.add("x");
    w.add("y");
    w.finish();
    REQUIRE_THROWS_WITH(PackReader::open(dir / "t.kgpack"), Catch::Contains("3 data rows but the pack holds 2 items"));
  }
}

TEST_CASE("pack writer: bad metadata is refused up front", "[unit][data]") {
  kg::test::TempDir dir;
  json m = meta_for("encoded", 0);
  m.erase("kind");
  CHECK_THROWS_WITH(PackWriter(dir / "a.kgpack", m), Catch::Contains("\"kind\""));
  m = meta_for("raw", 0);
  CHECK_THROWS_WITH(PackWriter(dir / "a.kgpack", m), Catch::Contains("\"height\""));
  m = meta_for("jpeg", 0);
  CHECK_THROWS_WITH(PackWriter(dir / "a.kgpack", m), Catch::Contains("expected \"encoded\" or \"raw\""));
  m = meta_for("encoded", 0);
  m.erase("table_csv");
  CHECK_THROWS_WITH(PackWriter(dir / "a.kgpack", m), Catch::Contains("table_csv"));
  CHECK(files_in(dir) == 0);
}

TEST_CASE("pack writer: nothing half-written is ever at the path", "[unit][data]") {
  kg::test::TempDir dir;
  const std::string path = dir / "train.kgpack";
  SECTION("destroyed without finish") {
    {
      PackWriter w(path, meta_for("encoded", 2));
      w.add("abc");
      CHECK_FALSE(std::filesystem::exists(path));
      CHECK(files_in(dir) == 1);  // the temp file
    }
    CHECK_FALSE(std::filesystem::exists(path));
    CHECK(files_in(dir) == 0);
  }
  SECTION("an existing pack stays until finish replaces it") {
    write_pack(path, {"old"});
    PackWriter w(path, meta_for("encoded", 2));
    w.add("new1");
    w.add("new2");
    CHECK(PackReader::open(path)->item(0) == "old");
    w.finish();
    CHECK(PackReader::open(path)->item(1) == "new2");
    CHECK(files_in(dir) == 1);
  }
  SECTION("creates missing folders") {
    write_pack(dir / "sub/dir/p.kgpack", {"x"});
    CHECK(PackReader::open(dir / "sub/dir/p.kgpack")->size() == 1);
  }
}

TEST_CASE("pack: concurrent reads from many threads see the same bytes", "[unit][data]") {
  kg::test::TempDir dir;
  const std::string path = dir / "c.kgpack";
  std::vector<std::string> items;
  std::vector<cv::Mat> images;
  for (int i = 0; i < 24; ++i) {
    images.push_back(noise(8, 8, CV_8UC3, 1000 + static_cast<uint64_t>(i)));
    std::string png;
    kg::data::encode_png(images.back(), png);
    items.push_back(png);
  }
  write_pack(path, items);
  auto r = PackReader::open(path);
  std::vector<int> bad(8, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep)
        for (int64_t k = 0; k < r->size(); ++k) {
          const int64_t i = (k * 7 + t + rep) % r->size();
          if (r->item(i) != items[static_cast<size_t>(i)]) ++bad[static_cast<size_t>(t)];
          if (rep % 5 == 0 && !same(r->image(i, 3), images[static_cast<size_t>(i)])) ++bad[static_cast<size_t>(t)];
        }
    });
  for (auto& th : threads) th.join();
  for (int b : bad) CHECK(b == 0);
}

TEST_CASE("the tiny dataset as raw packs trains the weights its PNG files train", "[data][integration]") {
  // make_tiny_pack_dataset stands in for make_tiny_dataset where a build has no image codecs (the GPU tests).
  kg::test::TempDir png_dir, pack_dir;
  auto png = kg::test::make_tiny_dataset(png_dir, 24, 4);
  auto pack = kg::test::make_tiny_pack_dataset(pack_dir, 24, 4);
  CHECK(std::filesystem::exists(pack.root + "/train.kgpack"));
  CHECK_FALSE(std::filesystem::exists(pack.root + "/train"));
  CHECK(kg::read_file(png.root + "/train.csv") == kg::read_file(pack.root + "/train.csv"));
  auto fit = [](const std::string& root, const std::string& run, std::vector<std::string> extra) {
    kg::test::TempDir d;
    std::vector<std::string> args{"fit",
                                  d.write("r.toml", kg::test::tiny_recipe(root)),
                                  "train.epochs=1",
                                  "plots.enabled=false",
                                  "--run-dir",
                                  run,
                                  "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = kg::test::run_kgtrain(args);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return kg::read_file(run + "/checkpoints/last/model.safetensors");
  };
  CHECK(fit(png.root, png_dir / "run", {}) == fit(pack.root, pack_dir / "run", {"data.format=pack"}));
}

}  // namespace KG_UNITY_ID
}  // namespace
