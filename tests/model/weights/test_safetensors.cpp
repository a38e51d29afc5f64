// kgtrain's safetensors reader and writer: round trips, deterministic bytes, a file written by Python
// (tests/golden/tiny.safetensors from scripts/gen_golden.py), damaged files, and load_state_dict.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "core/error.h"
#include "core/fs.h"
#include "model/weights/safetensors.h"
#include "support/temp_dir.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::model::TensorMap;
using nlohmann::json;

namespace {

// The message of the CheckpointError `f` throws; fails the test on any other outcome.
std::string checkpoint_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const kg::CheckpointError& e) {
    CHECK(e.exit_code() == kg::kExitData);
    return e.what();
  } catch (const std::exception& e) {
    std::string what = e.what();
    FAIL_CHECK("expected kg::CheckpointError, got another exception: " << what.substr(0, what.find('\n')));
    return "";
  }
  FAIL_CHECK("expected kg::CheckpointError, nothing was thrown");
  return "";
}

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// A file from a header text and a data section, as a hand-made (possibly broken) writer would produce.
std::string file_of(const std::string& header, const std::string& data) { return le64(header.size()) + header + data; }

std::string decode_error(const std::string& bytes) {
  return checkpoint_error([&] { kg::model::decode_safetensors(bytes, "weights/w.safetensors"); });
}

// One tensor of every dtype the format and kgtrain support, with awkward shapes (0-d, empty, 3-d).
TensorMap every_dtype() {
  torch::manual_seed(3);
  TensorMap m;
  m["f64"] = torch::randn({3, 2}, torch::kDouble);
  m["f32"] = torch::randn({2, 3, 4});
  m["f16"] = torch::randn({5}).to(torch::kHalf);
  m["bf16"] = torch::randn({2, 2}).to(torch::kBFloat16);
  m["i64"] = torch::tensor({int64_t{0}, int64_t{-1}, int64_t{1} << 62, std::numeric_limits<int64_t>::min()});
  m["i32"] = torch::tensor({0, -5, std::numeric_limits<int32_t>::max()}, torch::kInt);
  m["i16"] = torch::tensor({1, -300, 32767}, torch::kShort);
  m["i8"] = torch::tensor({-128, 0, 127}, torch::kChar);
  m["u8"] = torch::tensor({0, 200, 255}, torch::kByte);
  m["bool"] = torch::tensor({true, false, true});
  m["scalar"] = torch::tensor(2.5);      // shape []
  m["empty"] = torch::zeros({0, 4});     // no bytes
  m["nbt"] = torch::tensor(int64_t{7});  // like BatchNorm's num_batches_tracked
  return m;
}

void check_same(const TensorMap& got, const TensorMap& want) {
  REQUIRE(got.size() == want.size());
  for (const auto& [name, t] : want) {
    INFO("tensor " << name);
    REQUIRE(got.count(name) == 1);
    const auto& g = got.at(name);
    CHECK(g.scalar_type() == t.scalar_type());
    CHECK(g.sizes() == t.sizes());
    CHECK(g.is_contiguous());
    CHECK(torch::equal(g, t.contiguous()));
  }
}

// A small module with parameters and buffers.
struct TinyNetImpl : torch::nn::Module {
  TinyNetImpl()
      : fc(register_module("fc", torch::nn::Linear(3, 2))), bn(register_module("bn", torch::nn::BatchNorm1d(2))) {}
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
};
TORCH_MODULE(TinyNet);

}  // namespace

TEST_CASE("safetensors round trip keeps every dtype, shape and value", "[unit][safetensors]") {
  kg::test::TempDir s;
  TensorMap m = every_dtype();
  check_same(kg::model::decode_safetensors(kg::model::encode_safetensors(m), "mem"), m);
  kg::model::write_safetensors(s / "sub/dir/w.safetensors", m);  // creates parents
  check_same(kg::model::read_safetensors(s / "sub/dir/w.safetensors"), m);
}

TEST_CASE("safetensors layout: LE header length, JSON header, 8-byte aligned packed data", "[unit][safetensors]") {
  TensorMap m = every_dtype();
  std::string bytes = kg::model::encode_safetensors(m);
  REQUIRE(bytes.size() >= 8);
  uint64_t len = 0;
  for (int i = 0; i < 8; ++i) len |= uint64_t{static_cast<uint8_t>(bytes[static_cast<size_t>(i)])} << (8 * i);
  REQUIRE(8 + len <= bytes.size());
  CHECK((8 + len) % 8 == 0);
  json h = json::parse(bytes.substr(8, len));
  REQUIRE(h.is_object());
  uint64_t offset = 0;  // tensors are packed in name order, no gaps, up to the end of the file
  for (const auto& [name, t] : m) {
    INFO(name);
    REQUIRE(h.contains(name));
    CHECK(h[name]["shape"] == json(t.sizes().vec()));
    CHECK(h[name]["data_offsets"][0] == offset);
    offset += static_cast<uint64_t>(t.numel()) * t.element_size();
    CHECK(h[name]["data_offsets"][1] == offset);
  }
  CHECK(h["f64"]["dtype"] == "F64");
  CHECK(h["f32"]["dtype"] == "F32");
  CHECK(h["f16"]["dtype"] == "F16");
  CHECK(h["bf16"]["dtype"] == "BF16");
  CHECK(h["i64"]["dtype"] == "I64");
  CHECK(h["i32"]["dtype"] == "I32");
  CHECK(h["i16"]["dtype"] == "I16");
  CHECK(h["i8"]["dtype"] == "I8");
  CHECK(h["u8"]["dtype"] == "U8");
  CHECK(h["bool"]["dtype"] == "BOOL");
  CHECK(8 + len + offset == bytes.size());
  // Little-endian data: the first F32 value's bytes are its LE representation.
  float f = m["f32"].flatten()[0].item<float>();
  uint32_t u;
  std::memcpy(&u, &f, 4);
  size_t at = 8 + len + h["f32"]["data_offsets"][0].get<size_t>();
  for (int i = 0; i < 4; ++i)
    CHECK(static_cast<uint8_t>(bytes[at + static_cast<size_t>(i)]) == ((u >> (8 * i)) & 0xff));
}

TEST_CASE("safetensors bytes depend only on names and values", "[unit][safetensors]") {
  auto a = torch::arange(12, torch::kFloat).reshape({3, 4});
  auto b = torch::tensor({1.0, 2.0}, torch::kDouble);
  auto c = torch::tensor({int64_t{5}});
  TensorMap m1, m2;
  m1.emplace("z.last", a);
  m1.emplace("a.first", b);
  m1.emplace("m.middle", c);
  m2.emplace("m.middle", c.clone());
  m2.emplace("a.first", b.clone());
  m2.emplace("z.last", a.t().contiguous().t());  // same values, another memory layout (non-contiguous)
  REQUIRE_FALSE(m2["z.last"].is_contiguous());
  CHECK(kg::model::encode_safetensors(m1) == kg::model::encode_safetensors(m2));

  // A value change changes the bytes (the comparison above is not vacuous).
  TensorMap m3 = m1;
  m3["z.last"] = a.clone();
  m3["z.last"][1][1] = 100.0f;
  CHECK(kg::model::encode_safetensors(m1) != kg::model::encode_safetensors(m3));

  // A model's state_dict written twice gives identical files.
  torch::manual_seed(0);
  TinyNet net;
  kg::test::TempDir s;
  kg::model::write_safetensors(s / "a.safetensors", kg::model::state_dict(*net));
  kg::model::write_safetensors(s / "b.safetensors", kg::model::state_dict(*net));
  CHECK(kg::read_file(s / "a.safetensors") == kg::read_file(s / "b.safetensors"));
  CHECK(kg::read_file(s / "a.safetensors") == kg::model::encode_safetensors(kg::model::state_dict(*net)));
}

TEST_CASE("safetensors reads a file written by Python", "[unit][safetensors]") {
  const std::string dir = KGTRAIN_SOURCE_DIR "/tests/golden/";
  json want = json::parse(kg::read_file(dir + "tiny_safetensors.json")).at("tensors");
  TensorMap got = kg::model::read_safetensors(dir + "tiny.safetensors");
  REQUIRE(got.size() == want.size());  // __metadata__ is not a tensor
  const std::map<std::string, at::ScalarType> types{
      {"F32", at::kFloat}, {"F16", at::kHalf}, {"BF16", at::kBFloat16}, {"I64", at::kLong}, {"F64", at::kDouble}};
  std::set<std::string> dtypes_seen;
  for (const auto& [name, w] : want.items()) {
    INFO("tensor " << name);
    REQUIRE(got.count(name) == 1);
    const auto& t = got.at(name);
    dtypes_seen.insert(w.at("dtype").get<std::string>());
    CHECK(t.scalar_type() == types.at(w.at("dtype").get<std::string>()));
    CHECK(t.sizes().vec() == w.at("shape").get<std::vector<int64_t>>());
    auto values = w.at("values").get<std::vector<double>>();
    auto flat = t.to(torch::kDouble).flatten();
    REQUIRE(flat.numel() == static_cast<int64_t>(values.size()));
    for (size_t i = 0; i < values.size(); ++i) {
      INFO("value " << i);
      CHECK(flat[static_cast<int64_t>(i)].item<double>() == values[i]);  // exact: both are the stored value
    }
  }
  CHECK(dtypes_seen == std::set<std::string>{"F32", "F16", "I64", "BF16"});
  CHECK(got.at("steps")[2].item<int64_t>() == int64_t{1} << 40);
  CHECK(got.at("scalar").dim() == 0);
}

TEST_CASE("damaged safetensors files give CheckpointError with the reason", "[unit][safetensors]") {
  kg::test::TempDir s;
  const std::string good_header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string eight(8, '\x01');

  SECTION("missing file") {
    auto msg = checkpoint_error([&] { kg::model::read_safetensors(s / "nope.safetensors"); });
    CHECK_THAT(msg, Catch::Contains("nope.safetensors"));
    CHECK_THAT(msg, Catch::Contains("cannot read"));
  }
  SECTION("empty file") {
    auto p = s.write("empty.safetensors", "");
    auto msg = checkpoint_error([&] { kg::model::read_safetensors(p); });
    CHECK_THAT(msg, Catch::Contains("empty.safetensors"));
    CHECK_THAT(msg, Catch::Contains("0 bytes"));
  }
  SECTION("5-byte file") {
    auto p = s.write("short.safetensors", "abcde");
    auto msg = checkpoint_error([&] { kg::model::read_safetensors(p); });
    CHECK_THAT(msg, Catch::Contains("short.safetensors"));
    CHECK_THAT(msg, Catch::Contains("5 bytes"));
  }
  SECTION("header length past the end of the file") {
    auto msg = decode_error(le64(1000) + good_header + eight);
    CHECK_THAT(msg, Catch::Contains("w.safetensors"));
    CHECK_THAT(msg, Catch::Contains("header length 1000"));
    CHECK_THAT(msg, Catch::Contains("past the end"));
  }
  SECTION("header length above 100 MB") {
    auto msg = decode_error(le64((100u << 20) + 1) + good_header + eight);
    CHECK_THAT(msg, Catch::Contains("100 MB"));
    CHECK_THAT(decode_error(le64(~uint64_t{0}) + good_header), Catch::Contains("100 MB"));  // no overflow
  }
  SECTION("header is not JSON") {
    CHECK_THAT(decode_error(file_of("{\"w\": [oops", eight)), Catch::Contains("not JSON"));
    CHECK_THAT(decode_error(file_of("[1, 2]", "")), Catch::Contains("not a JSON object"));
  }
  SECTION("unknown dtype") {
    auto msg = decode_error(file_of(R"({"w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", "ab"));
    CHECK_THAT(msg, Catch::Contains("tensor \"w\""));
    CHECK_THAT(msg, Catch::Contains("F8_E4M3"));
    CHECK_THAT(decode_error(file_of(R"({"w":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", eight)),
               Catch::Contains("dtype"));
  }
  SECTION("entry without dtype, shape or data_offsets") {
    CHECK_THAT(decode_error(file_of(R"({"w":{"dtype":"F32","shape":[2]}})", eight)), Catch::Contains("data_offsets"));
    CHECK_THAT(decode_error(file_of(R"({"w":5})", eight)), Catch::Contains("tensor \"w\""));
  }
  SECTION("offsets past the end of the data") {
    auto msg = decode_error(file_of(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", eight));
    CHECK_THAT(msg, Catch::Contains("tensor \"w\""));
    CHECK_THAT(msg, Catch::Contains("past the end of the data (8 bytes)"));
    CHECK_THAT(decode_error(file_of(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", eight)),
               Catch::Contains("data_offsets"));
    CHECK_THAT(decode_error(file_of(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", eight)),
               Catch::Contains("data_offsets"));
    CHECK_THAT(decode_error(file_of(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,-8]}})", eight)),
               Catch::Contains("data_offsets"));
  }
  SECTION("shape and offsets disagree on the size") {
    auto msg = decode_error(file_of(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight + eight));
    CHECK_THAT(msg, Catch::Contains("tensor \"w\""));
    CHECK_THAT(msg, Catch::Contains("needs 12 bytes"));
    CHECK_THAT(msg, Catch::Contains("offsets give 8"));
    CHECK_THAT(decode_error(file_of(R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,4]}})", eight)),
               Catch::Contains("offsets give 4"));
    // A shape larger than the whole file: rejected before any allocation.
    CHECK_THAT(decode_error(file_of(R"({"w":{"dtype":"F32","shape":[1000000],"data_offsets":[0,8]}})", eight)),
               Catch::Contains("shape [1000000]"));
    CHECK_THAT(decode_error(file_of(R"({"w":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,8]}})", eight)),
               Catch::Contains("shape"));
  }
  SECTION("tensors must tile the data: no gap, overlap or trailing bytes (as the reference reader)") {
    auto gap = decode_error(file_of(
        R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
        eight + "abcd"));
    CHECK_THAT(gap, Catch::Contains("tensor \"b\" starts at byte 8"));
    CHECK_THAT(gap, Catch::Contains("a gap"));
    auto overlap = decode_error(file_of(
        R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
        eight));
    CHECK_THAT(overlap, Catch::Contains("overlapping"));
    CHECK_THAT(decode_error(file_of(good_header, eight + "xy")), Catch::Contains("trailing bytes"));
  }
  SECTION("the good header itself decodes (the cases above differ from it in one point)") {
    auto m = kg::model::decode_safetensors(file_of(good_header, eight), "ok");
    REQUIRE(m.count("w") == 1);
    CHECK(m.at("w").sizes() == c10::IntArrayRef{2});
  }
}

TEST_CASE("malformed safetensors shapes give CheckpointError, never an allocation or a guess", "[unit][safetensors]") {
  // A shape must be an array (the reference implementation rejects anything else).
  CHECK_THAT(decode_error(file_of(R"({"w":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", std::string(8, '\0'))),
             Catch::Contains("shape"));
  CHECK_THAT(
      decode_error(file_of(R"({"w":{"dtype":"F32","shape":{"n":2},"data_offsets":[0,8]}})", std::string(8, '\0'))),
      Catch::Contains("shape"));
  // 2^32 * 2^32 F32 elements wrap to 0 bytes in 64 bits: the offsets [0, 0] must not pass for their size.
  CHECK_THAT(decode_error(file_of(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", "")),
             Catch::Contains("tensor \"w\""));
  // 2^63 F16 elements wrap to 0 bytes as well, and 2^63 does not fit a tensor dimension.
  CHECK_THAT(decode_error(file_of(R"({"w":{"dtype":"F16","shape":[9223372036854775808],"data_offsets":[0,0]}})", "")),
             Catch::Contains("tensor \"w\""));
  // 2^62 x 4 wraps to 0 before the final 0 dimension.
  CHECK_THAT(
      decode_error(file_of(R"({"w":{"dtype":"U8","shape":[4611686018427387904,4,0],"data_offsets":[0,0]}})", "")),
      Catch::Contains("tensor \"w\""));
}

TEST_CASE("state_dict names parameters and buffers like PyTorch", "[unit][safetensors]") {
  TinyNet net;
  auto sd = kg::model::state_dict(*net);
  std::vector<std::string> names;
  for (auto& [k, v] : sd) names.push_back(k);
  CHECK(names == std::vector<std::string>{"bn.bias", "bn.num_batches_tracked", "bn.running_mean", "bn.running_var",
                                          "bn.weight", "fc.bias", "fc.weight"});
  for (auto& [k, v] : sd) CHECK_FALSE(v.requires_grad());
}

TEST_CASE("load_state_dict copies by name and reports missing, unexpected and mismatched tensors",
          "[unit][safetensors]") {
  torch::manual_seed(1);
  TinyNet src, dst;
  TensorMap sd = kg::model::state_dict(*src);
  sd["bn.running_var"] = torch::rand({2}) + 0.5;
  sd["bn.num_batches_tracked"] = torch::tensor(int64_t{9});

  SECTION("everything matches: strict load copies every value") {
    auto r = kg::model::load_state_dict(*dst, sd, true, "w.safetensors");
    CHECK(r.clean());
    CHECK(r.str() == "all tensors matched");
    check_same(kg::model::state_dict(*dst), sd);
  }
  SECTION("tensors of another dtype are converted to the model's") {
    TensorMap half = sd;
    half["fc.weight"] = sd["fc.weight"].to(torch::kHalf);
    kg::model::load_state_dict(*dst, half, true, "w.safetensors");
    CHECK(dst->fc->weight.scalar_type() == torch::kFloat);
    CHECK(torch::equal(dst->fc->weight, half["fc.weight"].to(torch::kFloat)));
  }
  SECTION("non-strict: loads what matches and reports the rest") {
    TensorMap bad = sd;
    bad.erase("fc.bias");
    bad["head.extra"] = torch::zeros({1});
    bad["fc.weight"] = torch::zeros({2, 4});
    auto before_weight = dst->fc->weight.clone();
    auto before_bias = dst->fc->bias.clone();
    auto r = kg::model::load_state_dict(*dst, bad, false, "w.safetensors");
    CHECK_FALSE(r.clean());
    CHECK(r.missing == std::vector<std::string>{"fc.bias"});
    CHECK(r.unexpected == std::vector<std::string>{"head.extra"});
    REQUIRE(r.mismatched.size() == 1);
    CHECK_THAT(r.mismatched[0], Catch::StartsWith("fc.weight"));
    CHECK_THAT(r.mismatched[0], Catch::Contains("[2, 4]"));
    CHECK_THAT(r.mismatched[0], Catch::Contains("[2, 3]"));
    CHECK(torch::equal(dst->fc->weight, before_weight));  // untouched
    CHECK(torch::equal(dst->fc->bias, before_bias));
    CHECK(torch::equal(dst->bn->running_var, sd["bn.running_var"]));  // the rest was loaded
    CHECK(dst->bn->num_batches_tracked.item<int64_t>() == 9);
    auto s = r.str();
    CHECK_THAT(s, Catch::Contains("missing (1): fc.bias"));
    CHECK_THAT(s, Catch::Contains("unexpected (1): head.extra"));
    CHECK_THAT(s, Catch::Contains("shape mismatch (1): fc.weight"));
  }
  SECTION("strict: any difference is a CheckpointError naming the source and the tensors") {
    TensorMap bad = sd;
    bad.erase("bn.running_mean");
    auto msg = checkpoint_error([&] { kg::model::load_state_dict(*dst, bad, true, "run/best/weights.safetensors"); });
    CHECK_THAT(msg, Catch::Contains("run/best/weights.safetensors"));
    CHECK_THAT(msg, Catch::Contains("missing (1): bn.running_mean"));
    bad = sd;
    bad["extra"] = torch::zeros({1});
    CHECK_THAT(checkpoint_error([&] { kg::model::load_state_dict(*dst, bad, true, "w"); }),
               Catch::Contains("unexpected (1): extra"));
    bad = sd;
    bad["bn.weight"] = torch::ones({3});
    CHECK_THAT(checkpoint_error([&] { kg::model::load_state_dict(*dst, bad, true, "w"); }),
               Catch::Contains("shape mismatch (1): bn.weight"));
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
