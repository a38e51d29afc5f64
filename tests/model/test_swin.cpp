// kgtrain's Swin Transformer beyond the logits test_timm_parity.cpp checks against timm: timm's size, windows fitted
// to the maps of data.image_size, relative position tables resampled for weights saved with other windows, no
// non-persistent buffers in the state_dict, inputs of other sizes, layer groups and weight decay.
// scripts/check_timm_parity.py checks the resampling against timm's own load.
#include <catch2/catch.hpp>

#include <set>

#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "model/model.h"
#include "model/weights/safetensors.h"
#include "model/weights/weights.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

kg::model::NetworkPtr swin(int64_t size, int64_t outputs = 10,
                           const std::string& name = "swin_tiny_patch4_window7_224") {
  auto recipe =
      kg::config::Recipe::validate(kg::config::parse_toml_string("[model]\nname = \"" + name + "\"\n", "swin.toml"));
  kg::model::ModelContext ctx{3, outputs};
  ctx.height = ctx.width = size;
  return kg::model::build(recipe, ctx);
}

at::Tensor param(kg::model::Network& net, const std::string& name) { return net.named_parameters()[name]; }
const std::string kTable = ".attn.relative_position_bias_table";

}  // namespace

TEST_CASE("swin_tiny has timm's parameter count at 224 px", "[unit][model]") {
  CHECK(kg::model::count_parameters(*swin(224, 1000)) == 28288354);
}

TEST_CASE("a swin's windows fit the maps of its image size", "[unit][model]") {
  auto net = swin(64);  // maps 16, 8, 4, 2: windows 7, 7, 4, 2
  CHECK(param(*net, "layers.0.blocks.1" + kTable).sizes() == c10::IntArrayRef{13 * 13, 3});
  CHECK(param(*net, "layers.1.blocks.0" + kTable).sizes() == c10::IntArrayRef{13 * 13, 6});
  CHECK(param(*net, "layers.2.blocks.5" + kTable).sizes() == c10::IntArrayRef{7 * 7, 12});
  CHECK(param(*net, "layers.3.blocks.1" + kTable).sizes() == c10::IntArrayRef{3 * 3, 24});
  CHECK(param(*net, "layers.1.downsample.reduction.weight").sizes() == c10::IntArrayRef{192, 384});
  for (auto& [name, t] : kg::model::state_dict(*net)) {
    INFO(name);
    CHECK(name.find("relative_position_index") == std::string::npos);  // timm's are non-persistent
    CHECK(name.find("attn_mask") == std::string::npos);
  }
  auto map = net->forward_features(torch::randn({2, 3, 64, 64}));
  CHECK(map.sizes() == c10::IntArrayRef{2, 768, 2, 2});  // NCHW for kgtrain's head and Grad-CAM
  CHECK(net->forward(torch::randn({2, 3, 96, 96})).sizes() == c10::IntArrayRef{2, 10});  // another size runs

  CHECK_THROWS_WITH(swin(28), Catch::Contains("needs images of at least 32x32 pixels") && Catch::Contains("got 28x28"));
}

TEST_CASE("weights saved with 7x7 windows load into a 64 px swin with their tables resampled", "[unit][model]") {
  torch::manual_seed(0);
  auto state = kg::model::state_dict(*swin(224));
  // A constant table stays constant through the linear interpolation; a ramp along the offsets keeps its order.
  state["layers.2.blocks.0" + kTable] = torch::full({169, 12}, 0.25f);
  auto ramp = torch::arange(13, torch::kFloat).view({13, 1}).expand({13, 13}).reshape({169, 1}).expand({169, 24});
  state["layers.3.blocks.0" + kTable] = ramp.contiguous();
  auto net = swin(64);
  auto report = kg::model::load_weights(*net, state, {true, true}, "w.safetensors");
  std::set<std::string> adapted(report.adapted.begin(), report.adapted.end());
  CHECK(adapted.count("layers.2.blocks.0" + kTable + " window 7 -> 4"));
  CHECK(adapted.count("layers.3.blocks.1" + kTable + " window 7 -> 2"));
  CHECK(report.adapted.size() == 6 + 2);  // stage 2's six blocks and stage 3's two; stages 0 and 1 keep window 7
  CHECK(param(*net, "layers.2.blocks.0" + kTable).sub(0.25).abs().max().item<double>() < 1e-6);
  auto t = param(*net, "layers.3.blocks.0" + kTable).detach().select(1, 0).view({3, 3});
  CHECK(t[0][0].item<double>() < t[1][0].item<double>());
  CHECK(t[1][0].item<double>() == Approx(6.0));  // the centre offset is the source's centre
  CHECK(t[1][0].item<double>() < t[2][0].item<double>());
  CHECK(param(*net, "layers.0.blocks.0" + kTable).equal(state["layers.0.blocks.0" + kTable]));
}

TEST_CASE("a swin's layer groups and the tables timm keeps out of weight decay", "[unit][model]") {
  auto net = swin(32);
  CHECK(net->group_names() ==
        std::vector<std::string>{"stem", "layers.0", "layers.1", "layers.2", "layers.3", "norm", "head"});
  CHECK(net->skips_weight_decay("layers.2.blocks.3" + kTable));
  CHECK_FALSE(net->skips_weight_decay("layers.2.blocks.3.attn.qkv.weight"));
  CHECK(net->first_conv() == "patch_embed.proj.weight");
}

}  // namespace KG_UNITY_ID
}  // namespace
