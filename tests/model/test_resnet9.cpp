// kgtrain's resnet9 against the peer's Python network (../shared/bench/peer_fmnist.py): the same
// parameter names as the golden weights, the same eval-mode logits (tests/golden/resnet9_forward.json and
// resnet9_w4.safetensors, made by scripts/gen_golden.py), the same size.
#include <catch2/catch.hpp>

#include <set>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/fs.h"
#include "model/model.h"
#include "model/weights/safetensors.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;

namespace {

kg::model::NetworkPtr resnet9(int64_t width, int64_t in_chans, int64_t outputs) {
  auto recipe = kg::config::Recipe::validate(kg::config::parse_toml_string(
      "[model]\nname = \"resnet9\"\nwidth = " + std::to_string(width) + "\n", "resnet9.toml"));
  return kg::model::build(recipe, {in_chans, outputs});
}

const std::string kGolden = KGTRAIN_SOURCE_DIR "/tests/golden/";

}  // namespace

TEST_CASE("resnet9 has the peer's parameter names and reproduces its eval-mode logits", "[unit][model]") {
  json g = json::parse(kg::read_file(kGolden + "resnet9_forward.json"));
  REQUIRE(g.at("width") == 4);
  auto weights = kg::model::read_safetensors(kGolden + g.at("weights").get<std::string>());
  auto net = resnet9(4, g.at("in_chans").get<int64_t>(), g.at("num_outputs").get<int64_t>());

  std::set<std::string> model_names, file_names;
  for (auto& [k, v] : kg::model::state_dict(*net)) model_names.insert(k);
  for (auto& [k, v] : weights) file_names.insert(k);
  CHECK(model_names == file_names);
  CHECK(model_names.count("prep.conv.weight") == 1);
  CHECK(model_names.count("res3.b.bn.num_batches_tracked") == 1);
  CHECK(model_names.count("fc.bias") == 1);

  auto report = kg::model::load_state_dict(*net, weights, /*strict=*/true, "resnet9_w4.safetensors");
  CHECK(report.clean());
  CHECK(torch::equal(net->named_buffers()["layer2.bn.running_var"], weights.at("layer2.bn.running_var")));

  auto shape = g.at("input_shape").get<std::vector<int64_t>>();
  REQUIRE(shape == std::vector<int64_t>{2, 1, 28, 28});
  auto values = g.at("input").get<std::vector<double>>();
  auto x = torch::tensor(values, torch::kDouble).to(torch::kFloat).reshape(shape);
  auto want = torch::tensor(g.at("logits").get<std::vector<double>>(), torch::kDouble)
                  .reshape(g.at("logits_shape").get<std::vector<int64_t>>());

  net->eval();
  torch::NoGradGuard no_grad;
  auto got = net->forward(x).to(torch::kDouble);
  REQUIRE(got.sizes() == want.sizes());
  double diff = (got - want).abs().max().item<double>();
  INFO("kgtrain logits\n" << got << "\npython logits\n" << want);
  CHECK(diff < 1e-4);
  // The two images give different logits: the check above depends on the input, not only on biases.
  CHECK((want[0] - want[1]).abs().max().item<double>() > 0.1);
  // Eval mode uses the loaded running statistics, so the forward pass left them unchanged.
  CHECK(torch::equal(net->named_buffers()["prep.bn.running_mean"], weights.at("prep.bn.running_mean")));
}

TEST_CASE("resnet9 width 16 on 1-channel images with 10 classes has the peer's 412666 parameters", "[unit][model]") {
  auto net = resnet9(16, 1, 10);
  CHECK(kg::model::count_parameters(*net) == 412666);
  CHECK(kg::model::count_parameters(*net, true) == 412666);
  // Output shape for a Fashion-MNIST batch.
  net->eval();
  torch::NoGradGuard no_grad;
  CHECK(net->forward(torch::zeros({3, 1, 28, 28})).sizes() == c10::IntArrayRef{3, 10});
}

}  // namespace KG_UNITY_ID
}  // namespace
