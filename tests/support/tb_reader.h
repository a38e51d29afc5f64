// A reader for the TensorBoard event files kgtrain writes, for tests that must not need Python: TFRecord
// records (both CRCs checked with Catch2) and the Event fields kgtrain uses, with TensorBoard's
// restart rule (a SessionLog START at step s drops what was read with step >= s).
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/crc32c.h"
#include "core/fs.h"

namespace kg::test {

inline uint64_t tb_le(const std::string& s, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

// Splits a TFRecord stream into payloads, checking both CRCs of every record.
inline std::vector<std::string> tb_records(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < s.size()) {
    REQUIRE(at + 12 <= s.size());
    const uint64_t n = tb_le(s, at, 8);
    CHECK(tb_le(s, at + 8, 4) == kg::masked_crc32c(s.substr(at, 8)));
    REQUIRE(at + 16 + n <= s.size());
    const std::string payload = s.substr(at + 12, n);
    CHECK(tb_le(s, at + 12 + n, 4) == kg::masked_crc32c(payload));
    out.push_back(payload);
    at += 16 + n;
  }
  return out;
}

// Protobuf fields of one message: field number -> raw values (varints as numbers, others as bytes).
struct TbFields {
  std::multimap<int, std::string> bytes;
  std::multimap<int, uint64_t> ints;
};
inline TbFields tb_fields(const std::string& m) {
  TbFields f;
  size_t at = 0;
  auto varint = [&] {
    uint64_t v = 0;
    for (int shift = 0; at < m.size(); shift += 7) {
      const auto b = static_cast<unsigned char>(m[at++]);
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) break;
    }
    return v;
  };
  while (at < m.size()) {
    const uint64_t key = varint();
    const int field = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
    if (wire == 0) {
      f.ints.emplace(field, varint());
    } else if (wire == 1 || wire == 5) {
      const size_t n = wire == 1 ? 8 : 4;
      f.bytes.emplace(field, m.substr(at, n));
      at += n;
    } else {
      REQUIRE(wire == 2);
      const size_t n = varint();
      f.bytes.emplace(field, m.substr(at, n));
      at += n;
    }
  }
  return f;
}

struct TbRun {
  std::map<std::string, std::map<int64_t, float>> scalars;  // tag -> step -> value
  std::map<std::string, std::string> images;                // tag -> encoded image (the last)
  std::vector<std::string> plugin_tags;                     // tags with plugin metadata (hparams)
  std::vector<int64_t> restarts;                            // steps of SessionLog START events
  int files = 0;
};

// Every event file of `dir` in name order, as TensorBoard reads them.
inline TbRun read_tb_dir(const std::string& dir) {
  std::vector<std::string> files;
  for (auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  TbRun run;
  run.files = static_cast<int>(files.size());
  for (auto& file : files)
    for (auto& rec : tb_records(kg::read_file(file))) {
      const TbFields ev = tb_fields(rec);
      const int64_t step = ev.ints.count(2) ? static_cast<int64_t>(ev.ints.find(2)->second) : 0;
      if (ev.bytes.count(7)) {  // session_log: START purges later steps
        run.restarts.push_back(step);
        for (auto& [tag, series] : run.scalars)
          for (auto it = series.begin(); it != series.end();) it = it->first >= step ? series.erase(it) : ++it;
      }
      auto s = ev.bytes.find(5);
      if (s == ev.bytes.end()) continue;
      const TbFields summary = tb_fields(s->second);
      for (auto [it, end] = summary.bytes.equal_range(1); it != end; ++it) {
        const TbFields v = tb_fields(it->second);
        const std::string tag = v.bytes.count(1) ? v.bytes.find(1)->second : "";
        if (auto x = v.bytes.find(2); x != v.bytes.end()) {
          float f;
          std::memcpy(&f, x->second.data(), 4);
          run.scalars[tag][step] = f;
        }
        if (auto img = v.bytes.find(4); img != v.bytes.end())
          run.images[tag] = tb_fields(img->second).bytes.find(4)->second;
        if (v.bytes.count(9)) run.plugin_tags.push_back(tag);
      }
    }
  return run;
}

}  // namespace kg::test
