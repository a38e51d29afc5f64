// kgtrain's efficientnet_b0..b4 against timm/torchvision: the same parameter counts, timm's state_dict
// names and the same logits as torchvision's efficientnet_b0/b2 filled with the same deterministic weights
// (tests/golden/efficientnet_b*_forward.json, made by scripts/golden/gen_efficientnet.py).
#include <catch2/catch.hpp>

#include <set>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/fs.h"
#include "model/batchnorm.h"
#include "model/model.h"
#include "model/weights/safetensors.h"
#include "support/det_weights.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;

namespace {

kg::model::NetworkPtr efficientnet(const std::string& name, kg::model::ModelContext ctx,
                                   const std::string& extra = "") {
  auto recipe = kg::config::Recipe::validate(
      kg::config::parse_toml_string("[model]\nname = \"" + name + "\"\n" + extra, "efficientnet.toml"));
  return kg::model::build(recipe, ctx);
}

const std::string kGolden = KGTRAIN_SOURCE_DIR "/tests/golden/";

at::Tensor golden_tensor(const json& g, const char* key) {
  return torch::tensor(g.at(key).get<std::vector<double>>(), torch::kDouble)
      .reshape(g.at("logits_shape").get<std::vector<int64_t>>());
}

// Checks here, so that the INFO with both tensors is in scope when the CHECK fails.
void check_logits(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  REQUIRE(got.sizes() == want.sizes());
  INFO(what << ": kgtrain logits\n" << got << "\npython logits\n" << want);
  // Both sides in float64: what is left is float64 rounding (~1e-13 here), far below any real discrepancy.
  REQUIRE(got.scalar_type() == torch::kDouble);
  CHECK((got - want).abs().max().item<double>() < 1e-8 * (1 + want.abs().max().item<double>()));
}

void set_bn_momentum(torch::nn::Module& m, double momentum) {
  for (auto& mod : m.modules())
    if (auto* bn = mod->as<kg::model::BatchNorm2d>()) bn->options.momentum(momentum);
}

}  // namespace

TEST_CASE("efficientnet_b0..b4 have timm's parameter counts at 1000 classes", "[unit][model]") {
  const std::vector<std::pair<std::string, int64_t>> expected = {{"efficientnet_b0", 5288548},
                                                                 {"efficientnet_b1", 7794184},
                                                                 {"efficientnet_b2", 9109994},
                                                                 {"efficientnet_b3", 12233232},
                                                                 {"efficientnet_b4", 19341616}};
  for (auto& [name, count] : expected) {
    INFO(name);
    auto net = efficientnet(name, {3, 1000});
    CHECK(kg::model::count_parameters(*net) == count);
    CHECK(net->first_conv() == "conv_stem.weight");
    CHECK(net->classifier() == "classifier");
  }
}

TEST_CASE("efficientnet_b0 and b2 have timm's names and torchvision's logits for the same weights", "[unit][model]") {
  for (std::string name : {"efficientnet_b0", "efficientnet_b2"}) {
    INFO(name);
    json g = json::parse(kg::read_file(kGolden + name + "_forward.json"));
    REQUIRE(g.at("model") == name);
    auto net = efficientnet(name, {g.at("in_chans").get<int64_t>(), g.at("num_outputs").get<int64_t>()});
    CHECK(kg::model::count_parameters(*net) == g.at("num_params").get<int64_t>());

    std::set<std::string> model_names;
    for (auto& [k, v] : kg::model::state_dict(*net)) model_names.insert(k);
    auto golden_names = g.at("names").get<std::set<std::string>>();
    CHECK(model_names == golden_names);
    CHECK(model_names.count("blocks.0.0.se.conv_reduce.bias") == 1);
    CHECK(model_names.count("blocks.6.0.conv_pwl.weight") == 1);
    CHECK(model_names.count("bn2.num_batches_tracked") == 1);

    kg::test::det_fill(*net);
    // float64, as the golden file was made: in float32 the logits' last digits depend on the BLAS/oneDNN in use.
    REQUIRE(g.at("dtype") == "float64");
    net->to(torch::kDouble);
    auto x = kg::test::det_input(g.at("input_shape").get<std::vector<int64_t>>()).to(torch::kDouble);
    torch::NoGradGuard no_grad;

    // det_fill's running statistics: the signal fades through the network, so this checks little more
    // than the path of the biases; the two checks below depend on the input.
    net->eval();
    check_logits(net->forward(x), golden_tensor(g, "eval_logits"), "eval");

    // A train-mode pass (batch statistics) with BatchNorm momentum 1 sets running stats to the batch's.
    set_bn_momentum(*net, 1.0);
    net->train();
    auto train_want = golden_tensor(g, "train_logits");
    check_logits(net->forward(x), train_want, "train");
    CHECK((train_want[0] - train_want[1]).abs().max().item<double>() > 0.1);

    net->eval();
    auto calibrated_want = golden_tensor(g, "calibrated_eval_logits");
    check_logits(net->forward(x), calibrated_want, "calibrated eval");
    CHECK((calibrated_want[0] - calibrated_want[1]).abs().max().item<double>() > 0.1);
  }
}

TEST_CASE("efficientnet_b0 takes 1-channel 32 px images", "[unit][model]") {
  kg::model::ModelContext ctx{1, 7};
  ctx.height = ctx.width = 32;
  auto net = efficientnet("efficientnet_b0", ctx);
  CHECK(net->named_parameters()["conv_stem.weight"].sizes() == c10::IntArrayRef{32, 1, 3, 3});
  CHECK(net->num_features() == 1280);
  net->eval();
  torch::NoGradGuard no_grad;
  CHECK(net->forward(torch::zeros({3, 1, 32, 32})).sizes() == c10::IntArrayRef{3, 7});
  // Stride 32: a 32 px image leaves a 1x1 feature map.
  CHECK(net->forward_features(torch::zeros({2, 1, 32, 32})).sizes() == c10::IntArrayRef{2, 1280, 1, 1});
}

TEST_CASE("efficientnet drop_path_rate changes train-mode outputs but not eval outputs", "[unit][model]") {
  auto plain = efficientnet("efficientnet_b0", {3, 10});
  auto dropped = efficientnet("efficientnet_b0", {3, 10}, "drop_path_rate = 0.5\n");
  kg::test::det_fill(*plain);
  kg::test::det_fill(*dropped);
  auto x = kg::test::det_input({4, 3, 32, 32});
  torch::NoGradGuard no_grad;

  plain->eval();
  dropped->eval();
  CHECK(torch::equal(plain->forward(x), dropped->forward(x)));

  plain->train();
  dropped->train();
  torch::manual_seed(0);
  auto a = plain->forward(x);
  torch::manual_seed(0);
  auto b = dropped->forward(x);
  CHECK((a - b).abs().max().item<double>() > 1e-3);
  // Without drop path, train mode is deterministic.
  CHECK(torch::allclose(a, plain->forward(x)));
}

TEST_CASE("efficientnet layer groups are stem, blocks.0..6, head_conv, head and cover every parameter once",
          "[unit][model]") {
  auto net = efficientnet("efficientnet_b1", {3, 10}, "head_hidden = [64]\n");
  auto groups = net->layer_groups();
  std::vector<std::string> names;
  for (auto& g : groups) names.push_back(g.name);
  CHECK(names == std::vector<std::string>{"stem", "blocks.0", "blocks.1", "blocks.2", "blocks.3", "blocks.4",
                                          "blocks.5", "blocks.6", "head_conv", "head"});
  CHECK(net->group_names() == names);

  std::set<std::string> seen;
  int64_t total = 0;
  for (auto& g : groups) {
    INFO(g.name);
    CHECK(!g.params.empty());
    for (auto& [n, t] : g.params) CHECK(seen.insert(n).second);
    total += g.numel();
  }
  CHECK(seen.size() == net->named_parameters().size());
  CHECK(total == kg::model::count_parameters(*net));

  auto in_group = [&](size_t i, const std::string& param) {
    for (auto& [n, t] : groups[i].params)
      if (n == param) return true;
    return false;
  };
  CHECK(in_group(0, "conv_stem.weight"));
  CHECK(in_group(0, "bn1.weight"));
  CHECK(in_group(1, "blocks.0.1.conv_dw.weight"));  // b1 has two blocks in stage 0
  CHECK(in_group(7, "blocks.6.1.bn3.bias"));
  CHECK(in_group(8, "conv_head.weight"));
  CHECK(in_group(9, "classifier.weight"));
  CHECK(in_group(9, "head_hidden.2.weight"));
}

TEST_CASE("efficientnet stages run under gradient checkpointing with the same gradients", "[unit][model]") {
  auto plain = efficientnet("efficientnet_b0", {3, 5});
  auto ckpt = efficientnet("efficientnet_b0", {3, 5}, "grad_checkpointing = true\n");
  CHECK(ckpt->grad_checkpointing());
  kg::test::det_fill(*plain);
  kg::test::det_fill(*ckpt);
  auto x = kg::test::det_input({2, 3, 32, 32});
  plain->train();
  ckpt->train();
  plain->forward(x).pow(2).sum().backward();
  ckpt->forward(x).pow(2).sum().backward();
  auto pg = plain->named_parameters();
  auto cg = ckpt->named_parameters();
  for (const char* n : {"conv_stem.weight", "blocks.3.1.se.conv_reduce.weight", "blocks.6.0.conv_pwl.weight"}) {
    INFO(n);
    REQUIRE(cg[n].grad().defined());
    CHECK(torch::allclose(pg[n].grad(), cg[n].grad(), 1e-4, 1e-6));
    CHECK(pg[n].grad().abs().max().item<double>() > 0);
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
