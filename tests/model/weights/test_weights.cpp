// Initial weights: model.pretrained loads by name with a report, re-initialises a head of another
// shape, adapts the first conv to the input channels (timm's adapt_input_conv), and refuses damaged or
// mismatching files with a CheckpointError (exit 3).
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/fs.h"
#include "model/model.h"
#include "model/weights/safetensors.h"
#include "model/weights/weights.h"
#include "support/temp_dir.h"
#include "support/errors.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::model::TensorMap;

namespace {

kg::model::NetworkPtr build(const std::string& toml, int64_t in_chans, int64_t outputs) {
  auto recipe = kg::config::Recipe::validate(kg::config::parse_toml_string(toml, "model.toml"));
  kg::model::ModelContext c;
  c.in_chans = in_chans;
  c.num_outputs = outputs;
  c.height = c.width = 32;
  return kg::model::build(recipe, c);
}

const std::string kResnet18 = "[model]\nname = \"resnet18\"\nsmall_input = true\n";

std::string pretrained(const std::string& file) { return kResnet18 + "pretrained = \"" + file + "\"\n"; }

}  // namespace

TEST_CASE("adapt_input_conv follows timm: 1 channel sums RGB, more channels repeat and rescale", "[unit][model]") {
  auto w = torch::randn({8, 3, 3, 3});
  auto one = kg::model::adapt_input_conv(w, 1, "w");
  CHECK(one.sizes() == c10::IntArrayRef{8, 1, 3, 3});
  CHECK(torch::allclose(one, w.sum(1, true)));
  auto five = kg::model::adapt_input_conv(w, 5, "w");
  REQUIRE(five.sizes() == c10::IntArrayRef{8, 5, 3, 3});
  CHECK(torch::allclose(five.slice(1, 0, 3), w * 0.6));
  CHECK(torch::allclose(five.slice(1, 3, 5), w.slice(1, 0, 2) * 0.6));
  CHECK(torch::equal(kg::model::adapt_input_conv(w, 3, "w"), w));
  // 6-channel weights convert to 1 channel by summing groups of 3, but not to 4 channels.
  auto w6 = torch::randn({4, 6, 1, 1});
  CHECK(torch::allclose(kg::model::adapt_input_conv(w6, 1, "w"), w6.reshape({4, 2, 3, 1, 1}).sum(2)));
  CHECK(kg::test::error_of<kg::CheckpointError>([&] {
          kg::model::adapt_input_conv(w6, 4, "w6");
        }).find("only 3-channel") != std::string::npos);
}

TEST_CASE("model.pretrained: backbone loaded, differing head re-initialised, first conv adapted", "[unit][model]") {
  kg::test::TempDir dir;
  torch::manual_seed(0);
  auto src = build(kResnet18, 3, 1000);  // an "ImageNet" resnet18 with the small stem
  auto weights = kg::model::state_dict(*src);
  weights.erase("bn1.num_batches_tracked");  // older torchvision files lack these: still fine
  weights["layer1.0.conv1.weight"] = weights["layer1.0.conv1.weight"].to(torch::kHalf);  // f16 tensors convert
  std::string file = dir / "in1k.safetensors";
  kg::model::write_safetensors(file, weights);

  auto net = build(pretrained(file), 1, 10);  // 1 channel, 10 classes
  REQUIRE(net->pretrained_report());
  const auto& r = *net->pretrained_report();
  INFO(r.str());
  CHECK(r.missing.empty());
  CHECK(r.unexpected.empty());
  REQUIRE(r.reinitialized.size() == 2);  // fc.weight, fc.bias
  CHECK(r.reinitialized[0].rfind("fc.", 0) == 0);
  REQUIRE(r.adapted.size() == 1);
  auto params = net->named_parameters();
  CHECK(torch::allclose(params["conv1.weight"], src->named_parameters()["conv1.weight"].sum(1, true)));
  CHECK(torch::allclose(params["layer1.0.conv1.weight"], src->named_parameters()["layer1.0.conv1.weight"], 1e-3, 1e-3));
  CHECK(torch::equal(params["layer4.1.bn2.bias"], src->named_parameters()["layer4.1.bn2.bias"]));
  CHECK(
      torch::equal(net->named_buffers()["layer3.0.bn1.running_var"], src->named_buffers()["layer3.0.bn1.running_var"]));
  CHECK(params["fc.weight"].sizes() == c10::IntArrayRef{10, 512});

  SECTION("strict: an unexpected tensor is an error, but the re-initialised head is not") {
    auto extra = weights;
    extra["something.else"] = torch::zeros({2});
    kg::model::write_safetensors(file, extra);
    auto e =
        kg::test::error_of<kg::CheckpointError>([&] { build(pretrained(file) + "pretrained_strict = true\n", 3, 10); });
    CHECK(e.find("something.else") != std::string::npos);
    kg::model::write_safetensors(file, weights);
    CHECK_NOTHROW(build(pretrained(file) + "pretrained_strict = true\n", 3, 10));
    // Without strict the extra tensor is reported, not fatal.
    kg::model::write_safetensors(file, extra);
    auto lenient = build(pretrained(file), 3, 10);
    CHECK(lenient->pretrained_report()->unexpected == std::vector<std::string>{"something.else"});
  }
  SECTION("a backbone tensor of another shape is an error naming it") {
    auto bad = weights;
    bad["layer2.0.conv2.weight"] = torch::zeros({128, 128, 1, 1});
    kg::model::write_safetensors(file, bad);
    auto e = kg::test::error_of<kg::CheckpointError>([&] { build(pretrained(file), 3, 10); });
    CHECK(e.find("layer2.0.conv2.weight") != std::string::npos);
    CHECK(e.find("[128, 128, 1, 1]") != std::string::npos);
  }
  SECTION("weights of another architecture share no names: an error, not a silent random init") {
    kg::model::write_safetensors(file,
                                 kg::model::state_dict(*build("[model]\nname = \"resnet9\"\nwidth = 2\n", 3, 10)));
    auto e = kg::test::error_of<kg::CheckpointError>([&] { build(pretrained(file), 3, 10); });
    CHECK(e.find("is model.name right?") != std::string::npos);
  }
}

TEST_CASE("model.pretrained: missing, truncated and inconsistent files are CheckpointErrors", "[unit][model]") {
  kg::test::TempDir dir;
  auto e = kg::test::error_of<kg::CheckpointError>([&] { build(pretrained(dir / "nope.safetensors"), 3, 2); });
  CHECK(e.find("nope.safetensors") != std::string::npos);

  auto bytes = kg::model::encode_safetensors(kg::model::state_dict(*build(kResnet18, 3, 2)));
  std::string cut = dir / "cut.safetensors";
  kg::write_file_atomic(cut, bytes.substr(0, bytes.size() / 2));
  e = kg::test::error_of<kg::CheckpointError>([&] { build(pretrained(cut), 3, 2); });
  CHECK(e.find("cut.safetensors") != std::string::npos);
  CHECK(e.find("past the end") != std::string::npos);

  std::string dtype = dir / "dtype.safetensors";
  std::string h = R"({"conv1.weight":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})";
  std::string f(8, '\0');
  f[0] = static_cast<char>(h.size());
  kg::write_file_atomic(dtype, f + h + std::string(8, '\0'));
  e = kg::test::error_of<kg::CheckpointError>([&] { build(pretrained(dtype), 3, 2); });
  CHECK(e.find("unsupported dtype") != std::string::npos);
}

TEST_CASE("saved weights load back into a fresh model with identical outputs", "[unit][model]") {
  kg::test::TempDir dir;
  torch::manual_seed(3);
  auto a = build(kResnet18, 3, 4);
  std::string file = dir / "w.safetensors";
  kg::model::write_safetensors(file, kg::model::state_dict(*a));
  torch::manual_seed(4);
  auto b = build(kResnet18, 3, 4);
  kg::model::load_weights(*b, kg::model::read_safetensors(file), {/*strict=*/true, /*reinit_head=*/false}, file);
  a->eval();
  b->eval();
  torch::NoGradGuard g;
  auto x = torch::randn({2, 3, 32, 32});
  CHECK(torch::equal(a->forward(x), b->forward(x)));
  // A checkpoint for another class count is refused when the head must match (tta-predict --weights).
  auto c = build(kResnet18, 3, 5);
  auto e = kg::test::error_of<kg::CheckpointError>([&] {
    kg::model::load_weights(*c, kg::model::read_safetensors(file), {true, false}, file);
  });
  CHECK(e.find("fc.weight") != std::string::npos);
}

}  // namespace KG_UNITY_ID
}  // namespace
