// torch.save files (.pth) read without Python: every dtype and view torch.save writes, the state dict nested in a
// checkpoint, wrapper prefixes stripped, and the files kgtrain refuses (a pickled module, the legacy format, a
// TorchScript archive, a truncated archive), against the fixtures of scripts/gen_pth_fixtures.py (tests/golden/pth).
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/fs.h"
#include "model/model.h"
#include "model/weights/safetensors.h"
#include "model/weights/torch_save.h"
#include "model/weights/weights.h"
#include "support/fixtures.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

const std::string kPth = KGTRAIN_SOURCE_DIR "/tests/golden/pth/";

std::string refusal(const std::string& path) {
  try {
    kg::model::read_weights(path);
  } catch (const kg::CheckpointError& e) {
    return e.what();
  }
  return "(read without an error)";
}

kg::model::NetworkPtr resnet9_w4(int64_t outputs) {
  auto recipe = kg::config::Recipe::validate(
      kg::config::parse_toml_string("[model]\nname = \"resnet9\"\nwidth = 4\n", "resnet9.toml"));
  return kg::model::build(recipe, {1, outputs});
}

}  // namespace

TEST_CASE("torch.save: every dtype, a 0-d and an empty tensor, and views at offsets", "[unit][model]") {
  const auto w = kg::model::read_torch_save(kPth + "tensors.pth");
  CHECK(w.key.empty());
  const auto& t = w.tensors;
  REQUIRE(t.size() == 14);
  const auto base = torch::arange(24, torch::kFloat).reshape({4, 6}) / 8;
  CHECK(torch::equal(t.at("f32"), base));
  CHECK(torch::equal(t.at("f64"), base.to(torch::kDouble)));
  CHECK(torch::equal(t.at("f16"), base.to(torch::kHalf)));
  CHECK(torch::equal(t.at("bf16"), base.to(torch::kBFloat16)));
  CHECK(torch::equal(t.at("i64"), torch::tensor({int64_t{-3}, int64_t{0}, int64_t{7}, int64_t{1} << 40})));
  CHECK(torch::equal(t.at("i32"), torch::tensor({-1, 2, 3, -4}, torch::kInt).reshape({2, 2})));
  CHECK(torch::equal(t.at("u8"), torch::tensor({0, 1, 255}, torch::kByte)));
  CHECK(torch::equal(t.at("bool"), torch::tensor({true, false, true})));
  CHECK(t.at("scalar").dim() == 0);
  CHECK(t.at("scalar").item<float>() == 1.5f);
  CHECK(t.at("empty").sizes() == c10::IntArrayRef{0, 3});
  CHECK(torch::equal(t.at("transposed"), base.t()));
  CHECK(t.at("transposed").is_contiguous());
  CHECK(torch::equal(t.at("slice"), base.slice(0, 1, 3).slice(1, 2, 5)));
  CHECK(torch::equal(t.at("shared_a"), torch::arange(4, torch::kLong)));
  CHECK(torch::equal(t.at("shared_b"), torch::arange(5, 10, torch::kLong)));
}

TEST_CASE("torch.save: model.state_dict() holds what the same weights hold as safetensors", "[unit][model]") {
  const auto pth = kg::model::read_weights(kPth + "resnet9_w4.pth");
  const auto st = kg::model::read_safetensors(KGTRAIN_SOURCE_DIR "/tests/golden/resnet9_w4.safetensors");
  CHECK(pth.source == kPth + "resnet9_w4.pth");
  REQUIRE(pth.tensors.size() == st.size());
  for (const auto& [name, v] : st) {
    INFO(name);
    REQUIRE(pth.tensors.count(name) == 1);
    CHECK(pth.tensors.at(name).scalar_type() == v.scalar_type());
    CHECK(torch::equal(pth.tensors.at(name), v));
  }
}

TEST_CASE("torch.save: a checkpoint's state dict is found, and a wrapper's prefix stripped", "[unit][model]") {
  // timm's train.py: epoch, arch, args (an argparse.Namespace: never built), optimizer, state_dict with "module.".
  const auto ck = kg::model::read_weights(kPth + "checkpoint.pth");
  CHECK(ck.source == kPth + "checkpoint.pth (its state_dict)");
  REQUIRE(ck.tensors.size() == 2);
  CHECK(torch::equal(ck.tensors.at("module.fc.weight"), torch::arange(24, torch::kFloat).reshape({4, 6}) / 8));

  auto net = resnet9_w4(10);
  const auto st = kg::model::read_safetensors(KGTRAIN_SOURCE_DIR "/tests/golden/resnet9_w4.safetensors");
  kg::model::TensorMap wrapped;
  for (const auto& [name, v] : st) wrapped["module.model." + name] = v;
  const auto r = kg::model::load_weights(*net, wrapped, {/*strict=*/true, /*reinit_head=*/false}, "wrapped");
  CHECK(r.renamed == std::vector<std::string>{"prefix module. stripped", "prefix model. stripped"});
  CHECK(r.str().find("prefix module. stripped") != std::string::npos);
  CHECK(torch::equal(net->named_buffers()["layer2.bn.running_var"], st.at("layer2.bn.running_var")));
  // Names that already match are left alone.
  const auto plain = kg::model::load_weights(*net, st, {true, false}, "plain");
  CHECK(plain.renamed.empty());
}

TEST_CASE("torch.save: what kgtrain refuses, with the file named and what to do", "[unit][model]") {
  auto module = refusal(kPth + "module.pth");
  CHECK(module.find("module.pth holds a pickled torch.nn.modules.linear.Linear object") != std::string::npos);
  CHECK(module.find("torch.save(model.state_dict(), path)") != std::string::npos);
  auto legacy = refusal(kPth + "legacy.pth");
  CHECK(legacy.find("legacy format") != std::string::npos);
  auto script = refusal(KGTRAIN_SOURCE_DIR "/tests/golden/tiny_scripted.pt");
  CHECK(script.find("TorchScript") != std::string::npos);

  kg::test::TempDir dir;
  const std::string bytes = kg::read_file(kPth + "resnet9_w4.pth");
  const std::string cut = dir.write("cut.pth", bytes.substr(0, bytes.size() / 2));
  CHECK(refusal(cut).find("cut.pth") != std::string::npos);
  const std::string zip_only = dir.write("other.zip", std::string("PK\x03\x04", 4) + std::string(60, '\0'));
  CHECK(refusal(zip_only).find("other.zip") != std::string::npos);
}

TEST_CASE("a safetensors file whose header is 128 bytes long is no legacy torch.save file", "[unit][model]") {
  // Its first byte is 0x80, as a pickle's PROTO opcode: timm's resnet50 state dict saved by safetensors.torch was
  // refused as "legacy format" until kgtrain read the magic number's bytes too.
  std::string header = R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  header.resize(128, ' ');  // safetensors pads its header with spaces
  std::string bytes(8, '\0');
  bytes[0] = static_cast<char>(0x80);
  const float value = 2.5f;
  bytes += header + std::string(reinterpret_cast<const char*>(&value), 4);
  kg::test::TempDir dir;
  const auto w = kg::model::read_weights(dir.write("w.safetensors", bytes));
  REQUIRE(w.tensors.count("t") == 1);
  CHECK(w.tensors.at("t").item<float>() == 2.5f);
}

TEST_CASE("fit --weights reads a .pth and says what it loaded", "[integration][model]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 24, 4);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  auto r =
      kg::test::run_kgtrain({"fit", recipe, "--weights", kPth + "resnet9_w4.pth", "--smoke", "--run-dir", dir / "run"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("--weights " + kPth + "resnet9_w4.pth") != std::string::npos);
  CHECK(r.output.find("fc.weight [10, 32] vs model [2, 32]") != std::string::npos);  // 10 classes -> the tiny 2
  auto bad =
      kg::test::run_kgtrain({"fit", recipe, "--weights", kPth + "module.pth", "--smoke", "--run-dir", dir / "run2"});
  CHECK(bad.exit_code == 3);
  CHECK(bad.output.find("torch.nn.modules.linear.Linear") != std::string::npos);
}

}  // namespace KG_UNITY_ID
}  // namespace
