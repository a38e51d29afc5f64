// kgtrain's ECA-NFNet: timm's size and names, and what makes it normalizer-free: no BatchNorm anywhere, convs that
// standardise their own weights (so scaling a conv's weight changes nothing), each block's last conv starting at gain 0
// (the residual branches start silent). Its logits against timm's: scripts/check_timm_parity.py (CI).
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "model/batchnorm.h"
#include "model/model.h"
#include "model/weights/safetensors.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

kg::model::NetworkPtr nfnet(int64_t outputs, const std::string& name = "eca_nfnet_l0") {
  auto recipe =
      kg::config::Recipe::validate(kg::config::parse_toml_string("[model]\nname = \"" + name + "\"\n", "nfnet.toml"));
  return kg::model::build(recipe, {3, outputs});
}

}  // namespace

TEST_CASE("eca_nfnet_l0 has timm's size and names, and no BatchNorm", "[unit][model]") {
  CHECK(kg::model::count_parameters(*nfnet(1000)) == 24143924);
  auto net = nfnet(10);
  auto sd = kg::model::state_dict(*net);
  for (const char* name : {"stem.conv4.gain", "stages.0.0.downsample.conv.weight", "stages.1.1.conv2b.bias",
                           "stages.3.2.attn_last.conv.weight", "final_conv.gain", "head.fc.weight"})
    CHECK(sd.count(name) == 1);
  CHECK(sd.at("final_conv.weight").sizes() == c10::IntArrayRef{2304, 1536, 1, 1});
  CHECK(sd.at("stages.2.0.conv2.weight").sizes() == c10::IntArrayRef{384, 64, 3, 3});  // groups of 64
  for (auto& m : net->modules()) CHECK(m->as<kg::model::BatchNorm2d>() == nullptr);
  CHECK(net->group_names() ==
        std::vector<std::string>{"stem", "stages.0", "stages.1", "stages.2", "stages.3", "final_conv", "head"});
}

TEST_CASE("an NFNet's convs standardise their weights, and its branches start silent", "[unit][model]") {
  torch::manual_seed(0);
  auto net = nfnet(10);
  net->eval();
  torch::NoGradGuard no_grad;
  auto params = net->named_parameters();
  CHECK(params["stages.1.0.conv3.gain"].abs().max().item<double>() == 0.0);  // timm's gain_init 0
  CHECK(params["stages.1.0.conv2.gain"].eq(1.0).all().item<bool>());
  for (auto& p : params)
    if (p.key().size() > 5 && p.key().substr(p.key().size() - 5) == ".gain") p.value().uniform_(0.5, 1.5);
  // A standardised weight does not see its scale, up to eps 1e-5 against its variance (1 / fan-in at init: scaled by
  // 100 first, eps no longer counts); its gain does.
  auto w = params["stages.2.3.conv2.weight"];
  w.mul_(100.0);
  auto x = torch::randn({2, 3, 64, 64});
  auto before = net->forward(x);
  CHECK((before[0] - before[1]).abs().max().item<double>() > 1e-4);
  w.mul_(3.0);
  CHECK((net->forward(x) - before).abs().max().item<double>() < 1e-5);
  w.div_(3.0);
  params["stages.2.3.conv2.gain"].mul_(1.5);
  CHECK((net->forward(x) - before).abs().max().item<double>() > 1e-4);
  auto eval_out = net->forward(x);
  net->train();  // nothing depends on the batch: train and eval agree without drop path
  CHECK((net->forward(x) - eval_out).abs().max().item<double>() < 1e-6);
}

}  // namespace KG_UNITY_ID
}  // namespace
