// kgtrain's ConvNeXt against torchvision's (the same network as timm's, its names mapped to timm's):
// timm's parameter names and shapes, the same eval-mode outputs on deterministic weights
// (tests/golden/convnext_tiny_forward.json, made by scripts/golden/gen_convnext.py), timm's size.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/fs.h"
#include "device/precision.h"
#include "model/model.h"
#include "model/weights/safetensors.h"
#include "support/det_weights.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;

namespace {

kg::model::NetworkPtr convnext(const std::string& name, int64_t in_chans, int64_t outputs,
                               const std::string& extra = "") {
  auto recipe = kg::config::Recipe::validate(
      kg::config::parse_toml_string("[model]\nname = \"" + name + "\"\n" + extra, "convnext.toml"));
  return kg::model::build(recipe, {in_chans, outputs});
}

const std::string kGolden = KGTRAIN_SOURCE_DIR "/tests/golden/convnext_tiny_forward.json";

at::Tensor golden_tensor(const json& g, const std::string& key) {
  return torch::tensor(g.at(key).get<std::vector<double>>(), torch::kDouble)
      .reshape(g.at(key + "_shape").get<std::vector<int64_t>>());
}

double max_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

// fp32 against the float64 reference differs by ~2e-6; a 1% change of the stem weights, tanh GELU or
// LayerNorm eps 1e-5 moves the logits by 3e-5 to 4e-4 (measured with the Python reference).
constexpr double kTol = 2e-5;

}  // namespace

TEST_CASE("convnext has timm's parameter counts", "[unit][model]") {
  CHECK(kg::model::count_parameters(*convnext("convnext_tiny", 3, 1000)) == 28589128);
  CHECK(kg::model::count_parameters(*convnext("convnext_small", 3, 1000)) == 50223688);
}

TEST_CASE("convnext initialises like timm", "[unit][model]") {
  torch::manual_seed(1);
  auto net = convnext("convnext_tiny", 3, 10);
  auto p = net->named_parameters();
  // Convs and linears (head.fc too): trunc_normal(std .02), zero bias; norms 1/0; layer scale 1e-6.
  for (const char* w : {"stem.0.weight", "stages.1.downsample.1.weight", "stages.2.blocks.5.conv_dw.weight",
                        "stages.2.blocks.5.mlp.fc1.weight", "stages.3.blocks.2.mlp.fc2.weight", "head.fc.weight"}) {
    INFO(w);
    CHECK(p[w].std().item<double>() == Approx(0.02).epsilon(0.1));
    CHECK(p[w].mean().abs().item<double>() < 0.005);
    std::string b = std::string(w).replace(std::string(w).size() - 6, 6, "bias");
    CHECK(torch::equal(p[b], torch::zeros_like(p[b])));
  }
  for (const char* n :
       {"stem.1.weight", "stages.3.downsample.0.weight", "stages.1.blocks.0.norm.weight", "head.norm.weight"})
    CHECK(torch::equal(p[n], torch::ones_like(p[n])));
  CHECK(torch::allclose(p["stages.2.blocks.8.gamma"], torch::full({384}, 1e-6)));
}

TEST_CASE("convnext_tiny has timm's state_dict names and reproduces the reference's eval outputs", "[unit][model]") {
  json g = json::parse(kg::read_file(kGolden));
  REQUIRE(g.at("model") == "convnext_tiny");
  auto net = convnext("convnext_tiny", g.at("in_chans").get<int64_t>(), g.at("num_outputs").get<int64_t>());
  CHECK(kg::model::count_parameters(*net) == g.at("num_params").get<int64_t>());

  std::map<std::string, std::vector<int64_t>> have, want;
  for (auto& [k, v] : kg::model::state_dict(*net)) have[k] = v.sizes().vec();
  for (auto& [k, v] : g.at("shapes").items()) want[k] = v.get<std::vector<int64_t>>();
  CHECK(have == want);
  for (const char* n :
       {"stem.0.weight", "stem.1.bias", "stages.0.blocks.2.gamma", "stages.1.downsample.0.weight",
        "stages.3.downsample.1.bias", "stages.2.blocks.8.mlp.fc2.weight", "head.norm.weight", "head.fc.bias"})
    CHECK(have.count(n) == 1);
  CHECK(have.count("stages.0.downsample.0.weight") == 0);  // stage 0 keeps the stem's width: no downsample
  CHECK(net->first_conv() == "stem.0.weight");
  CHECK(net->classifier() == "head.fc");

  kg::test::det_fill_scrambled(*net);
  auto x = kg::test::det_input(g.at("input_shape").get<std::vector<int64_t>>());
  auto logits = golden_tensor(g, "logits");
  auto features = golden_tensor(g, "pooled_features");
  // The two images differ: the comparison depends on the input, not only on biases.
  REQUIRE((logits[0] - logits[1]).abs().max().item<double>() > 0.01);

  net->eval();
  torch::NoGradGuard no_grad;
  auto got = net->forward(x);
  REQUIRE(got.sizes() == logits.sizes());
  INFO("kgtrain logits\n" << got << "\nreference logits\n" << logits);
  CHECK(max_diff(got, logits) < kTol);
  CHECK(max_diff(net->forward_features(x).mean({2, 3}), features) < kTol);

  SECTION("channels_last gives the same outputs") {
    net->set_channels_last(true);
    CHECK(net->named_parameters()["stages.1.downsample.1.weight"].is_contiguous(at::MemoryFormat::ChannelsLast));
    auto cl = net->forward(x);
    CHECK(max_diff(cl, logits) < kTol);
    CHECK(max_diff(cl, got) < kTol);
  }
}

TEST_CASE("convnext_tiny takes 1-channel images", "[unit][model]") {
  auto net = convnext("convnext_tiny", 1, 7);
  CHECK(net->named_parameters()["stem.0.weight"].sizes() == c10::IntArrayRef{96, 1, 4, 4});
  net->eval();
  torch::NoGradGuard no_grad;
  auto y = net->forward(kg::test::det_input({2, 1, 64, 64}));
  CHECK(y.sizes() == c10::IntArrayRef{2, 7});
  CHECK(torch::isfinite(y).all().item<bool>());
}

TEST_CASE("convnext_tiny trains under bf16 autocast on the CPU, its LayerNorms in float32", "[unit][model]") {
  // LibTorch 1.13's CPU layer_norm refused a bf16 input with float weights ("expected scalar type BFloat16 but found
  // Float": bench-model convnext_tiny device.precision=bf16 exited 1 with Debian's LibTorch).
  auto net = convnext("convnext_tiny", 3, 5);
  net->train();
  auto x = kg::test::det_input({2, 3, 32, 32});
  at::Tensor y, y32;
  {
    kg::device::AutocastScope autocast(kg::device::Precision::bf16, c10::kCPU);
    y = net->forward(x);
  }
  REQUIRE(y.sizes() == c10::IntArrayRef{2, 5});
  y.to(torch::kFloat).square().sum().backward();
  for (auto& p : net->named_parameters()) {
    INFO(p.key());
    REQUIRE(p.value().grad().defined());
    CHECK(torch::isfinite(p.value().grad()).all().item<bool>());
  }
  {
    torch::NoGradGuard no_grad;
    y32 = net->forward(x);
  }
  CHECK(max_diff(y, y32) < 0.1 * (1 + y32.abs().max().item<double>()));  // bf16 rounding, not another network
}

TEST_CASE("convnext drop_path_rate changes train-mode outputs only", "[unit][model]") {
  auto plain = convnext("convnext_tiny", 3, 5);
  auto dropped = convnext("convnext_tiny", 3, 5, "drop_path_rate = 0.5\n");
  kg::test::det_fill_scrambled(*plain);
  kg::test::det_fill_scrambled(*dropped);
  auto x = kg::test::det_input({4, 3, 32, 32});
  torch::NoGradGuard no_grad;
  plain->eval();
  dropped->eval();
  auto want = plain->forward(x);
  CHECK(torch::equal(dropped->forward(x), want));
  // No BatchNorm or dropout: without drop_path the training forward is the eval forward.
  plain->train();
  dropped->train();
  torch::manual_seed(0);
  CHECK(max_diff(plain->forward(x), want) < 1e-6);
  torch::manual_seed(0);
  CHECK(max_diff(dropped->forward(x), want) > 1e-3);
}

TEST_CASE("convnext layer groups are stem, stages.0-3 and head, covering each parameter once", "[unit][model]") {
  auto net = convnext("convnext_tiny", 3, 10, "global_pool = \"catavgmax\"\n");
  auto groups = net->layer_groups();
  std::vector<std::string> names;
  std::multiset<std::string> seen;
  int64_t numel = 0;
  for (auto& grp : groups) {
    names.push_back(grp.name);
    CHECK(!grp.params.empty());
    for (auto& [n, t] : grp.params) seen.insert(n);
    numel += grp.numel();
  }
  CHECK(names == std::vector<std::string>{"stem", "stages.0", "stages.1", "stages.2", "stages.3", "head"});
  std::multiset<std::string> all;
  for (auto& p : net->named_parameters(true)) all.insert(p.key());
  CHECK(seen == all);
  CHECK(numel == kg::model::count_parameters(*net));
  // head.norm sits in the head with head.fc: with catavgmax it is 1536 wide, unlike pretrained files.
  std::set<std::string> head;
  for (auto& [n, t] : groups.back().params) head.insert(n);
  CHECK(head == std::set<std::string>{"head.norm.weight", "head.norm.bias", "head.fc.weight", "head.fc.bias"});
  CHECK(net->named_parameters()["head.norm.weight"].numel() == 1536);
  CHECK(net->is_head_param("head.norm.weight"));
  CHECK(!net->is_head_param("stages.3.blocks.2.gamma"));
}

TEST_CASE("convnext grad checkpointing gives the same gradients", "[unit][model]") {
  auto plain = convnext("convnext_tiny", 3, 4);
  auto ckpt = convnext("convnext_tiny", 3, 4, "grad_checkpointing = true\n");
  REQUIRE(ckpt->grad_checkpointing());
  kg::test::det_fill_scrambled(*plain);
  kg::test::det_fill_scrambled(*ckpt);
  auto x = kg::test::det_input({2, 3, 32, 32});
  for (auto& net : {plain, ckpt}) {
    net->train();
    net->zero_grad();
    net->forward(x).pow(2).sum().backward();
  }
  auto a = plain->named_parameters();
  auto b = ckpt->named_parameters();
  for (const char* n : {"stem.0.weight", "stages.0.blocks.0.conv_dw.weight", "stages.2.blocks.4.gamma",
                        "stages.3.downsample.1.weight", "head.norm.bias"}) {
    INFO(n);
    REQUIRE(a[n].grad().defined());
    REQUIRE(b[n].grad().defined());
    CHECK(a[n].grad().abs().max().item<double>() > 0);
    CHECK(max_diff(a[n].grad(), b[n].grad()) <= 1e-5 * (1 + a[n].grad().abs().max().item<double>()));
  }
}

TEST_CASE("convnext refuses images smaller than 32 px with a config error", "[unit][model]") {
  auto recipe = kg::config::Recipe::validate(
      kg::config::parse_toml_string("[model]\nname = \"convnext_tiny\"\n", "convnext.toml"));
  kg::model::ModelContext ctx{1, 10};
  ctx.height = ctx.width = 28;
  CHECK_THROWS_AS(kg::model::build(recipe, ctx), kg::ConfigError);
  CHECK_THROWS_WITH(kg::model::build(recipe, ctx), Catch::Contains("at least 32x32") && Catch::Contains("28x28"));
  ctx.height = ctx.width = 32;
  CHECK(kg::model::build(recipe, ctx)->num_features() == 768);
}

}  // namespace KG_UNITY_ID
}  // namespace
