// kgtrain's ResNet-18/34/50 against torchvision's: parameter counts, state_dict names and logits with
// the same name-derived weights (tests/golden/resnet*_forward.json, scripts/golden/gen_resnet.py).
#include <catch2/catch.hpp>

#include <set>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/fs.h"
#include "model/model.h"
#include "support/det_weights.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;

namespace {

kg::model::NetworkPtr build(const std::string& toml, kg::model::ModelContext ctx) {
  auto recipe = kg::config::Recipe::validate(kg::config::parse_toml_string(toml, "model.toml"));
  return kg::model::build(recipe, ctx);
}

kg::model::ModelContext ctx(int64_t in_chans, int64_t outputs) {
  kg::model::ModelContext c;
  c.in_chans = in_chans;
  c.num_outputs = outputs;
  return c;
}

at::Tensor as_tensor(const json& v, const std::vector<int64_t>& shape) {
  return torch::tensor(v.get<std::vector<double>>(), torch::kDouble).reshape(shape);
}

}  // namespace

TEST_CASE("ResNet-18 34 50 match torchvision's names sizes and logits", "[unit][model]") {
  for (std::string arch : {"resnet18", "resnet34", "resnet50"}) {
    DYNAMIC_SECTION(arch) {
      json g = json::parse(kg::read_file(KGTRAIN_SOURCE_DIR "/tests/golden/" + arch + "_forward.json"));
      auto big = build("[model]\nname = \"" + arch + "\"\n", ctx(3, 1000));
      CHECK(kg::model::count_parameters(*big) == g.at("params_1000").get<int64_t>());

      auto net = build("[model]\nname = \"" + arch + "\"\n", ctx(3, 10));
      std::set<std::string> names;
      for (auto& p : net->named_parameters()) names.insert(p.key());
      for (auto& b : net->named_buffers()) names.insert(b.key());
      auto want_names = g.at("names").get<std::vector<std::string>>();
      CHECK(names == std::set<std::string>(want_names.begin(), want_names.end()));

      kg::test::det_fill(*net);
      // float64, as the golden file was made: the train-mode logits are ill-conditioned, and in float32 their last
      // digits depend on the BLAS/oneDNN in use (1.5e-3 apart between the reference BLAS and MKL).
      REQUIRE(g.at("dtype") == "float64");
      net->to(torch::kDouble);
      auto x = kg::test::det_input({2, 3, 64, 64}).to(torch::kDouble);
      torch::NoGradGuard no_grad;
      // Eval first: a train-mode forward would update the running statistics. They are synthetic and let
      // activations grow through the residual sums (up to 1e6 for resnet34): compared relative to scale.
      net->eval();
      auto eval = net->forward(x);
      REQUIRE(eval.scalar_type() == torch::kDouble);
      auto want_eval = as_tensor(g.at("eval_logits"), {2, 10});
      double scale = std::max(1.0, want_eval.abs().max().item<double>());
      INFO("scale " << scale << " diff " << (eval - want_eval).abs().max().item<double>());
      CHECK((eval - want_eval).abs().max().item<double>() / scale < 1e-9);
      // Train mode normalises by batch statistics: logits of order 1.
      net->train();
      auto train = net->forward(x);
      auto want_train = as_tensor(g.at("train_logits"), {2, 10});
      CHECK((train - want_train).abs().max().item<double>() < 1e-8);
      CHECK((want_train[0] - want_train[1]).abs().max().item<double>() > 0.1);  // the logits depend on the input
    }
  }
}

TEST_CASE("resnet options: small_input stem, in_chans, drop_path, groups", "[unit][model]") {
  auto net = build("[model]\nname = \"resnet18\"\nsmall_input = true\n", ctx(1, 7));
  CHECK(net->named_parameters()["conv1.weight"].sizes() == c10::IntArrayRef{64, 1, 3, 3});
  net->eval();
  {
    torch::NoGradGuard g;
    CHECK(net->forward(torch::zeros({2, 1, 28, 28})).sizes() == c10::IntArrayRef{2, 7});
  }
  // 28 px keeps a 4x4 map at layer4 with the small stem; the ImageNet stem would leave 1x1.
  CHECK(net->forward_features(torch::zeros({1, 1, 28, 28})).sizes() == c10::IntArrayRef{1, 512, 4, 4});

  auto groups = net->layer_groups();
  std::vector<std::string> gnames;
  int64_t total = 0;
  for (auto& gr : groups) gnames.push_back(gr.name), total += gr.numel();
  CHECK(gnames == std::vector<std::string>{"stem", "layer1", "layer2", "layer3", "layer4", "head"});
  CHECK(total == kg::model::count_parameters(*net));
  CHECK(groups.back().params.size() == 2);  // fc.weight, fc.bias
  CHECK(groups.back().params[0].first.rfind("fc.", 0) == 0);

  // Stochastic depth: train-mode outputs vary between calls; eval-mode outputs do not.
  auto dp = build("[model]\nname = \"resnet18\"\nsmall_input = true\ndrop_path_rate = 0.5\n", ctx(3, 4));
  kg::test::det_fill(*dp);  // the zero-initialised last BN of each block would hide the dropped branches
  auto x = torch::randn({4, 3, 32, 32});
  torch::NoGradGuard g;
  dp->train();
  torch::manual_seed(1);
  auto a = dp->forward(x);
  auto b = dp->forward(x);
  CHECK_FALSE(torch::allclose(a, b));
  dp->eval();
  CHECK(torch::equal(dp->forward(x), dp->forward(x)));
}

}  // namespace KG_UNITY_ID
}  // namespace
