// kgtrain's Vision Transformers beyond the logits test_timm_parity.cpp checks against timm: timm's sizes, a network
// built for data.image_size, pos_embed resampled for weights saved at another size (on load) and for inputs of
// another size (on the fly), the pools timm offers, layer groups and no weight decay on pos_embed/cls_token.
// scripts/check_timm_parity.py checks the resampling against timm's own load.
#include <catch2/catch.hpp>

#include <set>

#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "model/model.h"
#include "model/weights/weights.h"
#include "support/det_weights.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

kg::model::NetworkPtr vit(const std::string& name, int64_t size, int64_t outputs = 10, const std::string& extra = "") {
  auto recipe = kg::config::Recipe::validate(
      kg::config::parse_toml_string("[model]\nname = \"" + name + "\"\n" + extra, "vit.toml"));
  kg::model::ModelContext ctx{3, outputs};
  ctx.height = ctx.width = size;
  return kg::model::build(recipe, ctx);
}

at::Tensor param(kg::model::Network& net, const std::string& name) { return net.named_parameters()[name]; }

}  // namespace

TEST_CASE("vit and deit have timm's parameter counts at 224 px", "[unit][model]") {
  CHECK(kg::model::count_parameters(*vit("vit_tiny_patch16_224", 224, 1000)) == 5717416);
  CHECK(kg::model::count_parameters(*vit("vit_base_patch32_224", 224, 1000)) == 88224232);
  CHECK(kg::model::count_parameters(*vit("deit3_small_patch16_224", 224, 1000)) == 22059496);
}

TEST_CASE("a vit is built for the recipe's image size", "[unit][model]") {
  auto net = vit("vit_tiny_patch16_224", 64);
  CHECK(param(*net, "pos_embed").sizes() == c10::IntArrayRef{1, 1 + 4 * 4, 192});  // the class token's, then 4x4
  CHECK(param(*net, "cls_token").sizes() == c10::IntArrayRef{1, 1, 192});
  CHECK(param(*net, "patch_embed.proj.weight").sizes() == c10::IntArrayRef{192, 3, 16, 16});
  CHECK(net->first_conv() == "patch_embed.proj.weight");
  auto deit3 = vit("deit3_small_patch16_384", 96);
  CHECK(param(*deit3, "pos_embed").sizes() == c10::IntArrayRef{1, 6 * 6, 384});  // no class-token entry
  CHECK(param(*deit3, "blocks.11.ls2.gamma").sizes() == c10::IntArrayRef{384});
  CHECK(param(*deit3, "blocks.0.ls1.gamma").max().item<double>() == Approx(1e-6));
  CHECK(net->forward(torch::randn({2, 3, 64, 64})).sizes() == c10::IntArrayRef{2, 10});

  CHECK_THROWS_WITH(vit("vit_base_patch32_224", 28),
                    Catch::Contains("needs images of at least 32x32 pixels") && Catch::Contains("got 28x28"));
}

TEST_CASE("a vit pools the class token, or the patch tokens' mean through fc_norm as timm", "[unit][model]") {
  auto token = vit("vit_tiny_patch16_224", 32);
  CHECK(token->pool() == "token");
  CHECK(token->named_parameters().contains("norm.weight"));
  auto avg = vit("vit_tiny_patch16_224", 32, 10, "global_pool = \"avg\"\n");
  CHECK(avg->named_parameters().contains("fc_norm.weight"));
  CHECK_FALSE(avg->named_parameters().contains("norm.weight"));
  CHECK_THROWS_AS(vit("vit_tiny_patch16_224", 32, 10, "global_pool = \"catavgmax\"\n"), kg::ConfigError);
  CHECK_THROWS_WITH(vit("vit_tiny_patch16_224", 32, 10, "global_pool = \"max\"\n"),
                    Catch::Contains("it takes: token, avg"));
}

TEST_CASE("weights saved at 224 px load into a 64 px vit with pos_embed resampled", "[unit][model]") {
  torch::manual_seed(0);
  auto big = vit("vit_tiny_patch16_224", 224);
  auto state = kg::model::state_dict(*big);
  // A pos_embed whose grid is a ramp down the rows: resampled, each row stays constant, the rows climb, and the
  // symmetric kernel maps the reflected ramp to the reflected values (row 0 + row 3 = 13); the class token's entry
  // is kept as it is.
  auto ramp = torch::arange(14, torch::kFloat).view({1, 14, 1, 1}).expand({1, 14, 14, 192}).reshape({1, 196, 192});
  auto cls = torch::full({1, 1, 192}, 7.0f);
  state["pos_embed"] = torch::cat({cls, ramp}, 1);
  auto small = vit("vit_tiny_patch16_224", 64);
  auto report = kg::model::load_weights(*small, state, {true, true}, "w.safetensors");
  REQUIRE(report.adapted.size() == 1);
  CHECK(report.adapted[0] == "pos_embed 14x14 -> 4x4 patches (bicubic)");
  auto pe = param(*small, "pos_embed").detach();
  REQUIRE(pe.sizes() == c10::IntArrayRef{1, 17, 192});
  CHECK(pe[0][0].eq(7.0f).all().item<bool>());
  auto rows = pe.slice(1, 1).reshape({4, 4, 192});
  CHECK((rows - rows.select(2, 0).unsqueeze(2)).abs().max().item<double>() < 1e-5);  // constant in D
  CHECK((rows - rows.select(1, 0).unsqueeze(1)).abs().max().item<double>() < 1e-5);  // and along a row
  const auto r = rows.select(1, 0).select(1, 0);
  CHECK(r[0].item<double>() < r[1].item<double>());
  CHECK(r[1].item<double>() < r[2].item<double>());
  CHECK(r[2].item<double>() < r[3].item<double>());
  CHECK(r[0].item<double>() + r[3].item<double>() == Approx(13.0).epsilon(1e-5));
  CHECK(r[1].item<double>() + r[2].item<double>() == Approx(13.0).epsilon(1e-5));
  // Everything else loaded unchanged.
  CHECK(param(*small, "blocks.3.attn.qkv.weight").equal(state["blocks.3.attn.qkv.weight"]));

  // A grid that is not square (no side to read) is a shape mismatch, as any other.
  state["pos_embed"] = torch::zeros({1, 1 + 15, 192});
  CHECK_THROWS_WITH(kg::model::load_weights(*small, state, {false, true}, "w.safetensors"),
                    Catch::Contains("does not fit the model") && Catch::Contains("pos_embed"));
}

TEST_CASE("a vit takes inputs of another size, resampling pos_embed as a network built for it would", "[unit][model]") {
  torch::manual_seed(1);
  auto at64 = vit("vit_tiny_patch16_224", 64);
  kg::test::det_fill_scrambled(*at64);
  auto at96 = vit("vit_tiny_patch16_224", 96);
  kg::model::load_weights(*at96, kg::model::state_dict(*at64), {true, true}, "at64");
  at64->eval();
  at96->eval();
  torch::NoGradGuard no_grad;
  auto x = kg::test::det_input({2, 3, 96, 96});
  auto got = at64->forward(x), want = at96->forward(x);
  CHECK((got - want).abs().max().item<double>() < 1e-5);
  CHECK((got[0] - got[1]).abs().max().item<double>() > 1e-3);  // the outputs depend on the input
}

TEST_CASE("a vit's layer groups and the tensors timm keeps out of weight decay", "[unit][model]") {
  auto net = vit("deit_small_patch16_224", 32);
  auto names = net->group_names();
  REQUIRE(names.size() == 15);
  CHECK(names.front() == "stem");
  CHECK(names[1] == "blocks.0");
  CHECK(names[12] == "blocks.11");
  CHECK(names[13] == "norm");
  CHECK(names.back() == "head");
  auto groups = net->layer_groups();
  std::set<std::string> stem;
  for (auto& [n, t] : groups.front().params) stem.insert(n);
  CHECK(stem == std::set<std::string>{"cls_token", "pos_embed", "patch_embed.proj.weight", "patch_embed.proj.bias"});
  CHECK(net->skips_weight_decay("pos_embed"));
  CHECK(net->skips_weight_decay("cls_token"));
  CHECK_FALSE(net->skips_weight_decay("blocks.0.attn.qkv.weight"));
}

}  // namespace KG_UNITY_ID
}  // namespace
