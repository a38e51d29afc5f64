// kgtrain's resnet18/34/50, efficientnet_b0/b2, convnext_tiny, resnext50_32x4d, seresnext50_32x4d, tf_efficientnet_b0,
// tf_efficientnetv2_s, vit_tiny_patch16_224, deit3_small_patch16_224 and swin_tiny_patch4_window7_224 (the last three
// built for 64 px) against PyPI timm's own models (not torchvision's
// with mapped names, as the per-family tests): exactly timm's state_dict (every name and shape, nothing missing or
// extra), so timm's Hugging Face model.safetensors files load as-is, and timm's float64 logits for the same
// name-derived weights (tests/golden/timm_parity.json, made by scripts/golden/gen_timm.py with timm 1.0.31).
#include <catch2/catch.hpp>

#include <map>
#include <sstream>

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

using Shapes = std::map<std::string, std::vector<int64_t>>;

const json& golden() {
  static const json g = json::parse(kg::read_file(KGTRAIN_SOURCE_DIR "/tests/golden/timm_parity.json"));
  return g;
}

kg::model::NetworkPtr build(const std::string& arch) {
  auto recipe =
      kg::config::Recipe::validate(kg::config::parse_toml_string("[model]\nname = \"" + arch + "\"\n", "timm.toml"));
  return kg::model::build(recipe, {golden().at("in_chans").get<int64_t>(), golden().at("num_outputs").get<int64_t>()});
}

// Names and shapes only in `a` (not in `b`, or of another shape there), one a line.
std::string only_in(const Shapes& a, const Shapes& b) {
  std::ostringstream out;
  for (auto& [name, shape] : a) {
    auto it = b.find(name);
    if (it == b.end() || it->second != shape) out << "  " << name << " " << c10::IntArrayRef(shape) << "\n";
  }
  return out.str();
}

at::Tensor logits(const json& m, const char* key) {
  return torch::tensor(m.at(key).get<std::vector<double>>(), torch::kDouble)
      .reshape(m.at("logits_shape").get<std::vector<int64_t>>());
}

// Both sides in float64: what is left is float64 rounding, relative to the logits' scale (det_fill's running
// statistics let resnet34's eval logits grow to 4e6 through the residual sums). The calibrated statistics are
// batch statistics of two images, tiny variances in efficientnet_b2's last stages that amplify rounding: there
// kgtrain and timm differ by 1.1e-9 relative, and timm differs from itself by 3.9e-9 run channels_last; every
// other logit set by 2e-12 or less. (BatchNorm eps 1e-3 for 1e-5 moves them by 3e-4 relative or more.)
void check_logits(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  REQUIRE(got.scalar_type() == torch::kDouble);
  REQUIRE(got.sizes() == want.sizes());
  const double scale = std::max(1.0, want.abs().max().item<double>());
  const double diff = (got - want).abs().max().item<double>();
  INFO(what << ": max |kgtrain - timm| " << diff << " at scale " << scale << "\nkgtrain\n"
            << got << "\ntimm\n"
            << want);
  CHECK(diff / scale < 1e-8);
}

}  // namespace

TEST_CASE("the timm parity fixture covers the thirteen models with logits that depend on the input",
          "[unit][model][timm]") {
  std::vector<std::string> archs;
  for (auto& m : golden().at("models")) {
    archs.push_back(m.at("model"));
    auto calibrated = logits(m, "calibrated_eval_logits");
    CHECK((calibrated[0] - calibrated[1]).abs().max().item<double>() > 0.005);  // vit_tiny's: 0.009
  }
  CHECK(archs == std::vector<std::string>{"resnet18", "resnet34", "resnet50", "efficientnet_b0", "efficientnet_b2",
                                          "convnext_tiny", "resnext50_32x4d", "seresnext50_32x4d", "tf_efficientnet_b0",
                                          "tf_efficientnetv2_s", "vit_tiny_patch16_224", "deit3_small_patch16_224",
                                          "swin_tiny_patch4_window7_224"});
  CHECK(golden().at("dtype") == "float64");
}

TEST_CASE("thirteen backbones have timm's state_dict and timm's logits", "[unit][model][timm]") {
  for (auto& m : golden().at("models")) {
    const std::string arch = m.at("model");
    DYNAMIC_SECTION(arch) {
      auto net = build(arch);
      // Strict: every name of timm's state_dict with its shape, and nothing else.
      Shapes want = m.at("shapes").get<Shapes>();
      Shapes got;
      for (auto& [name, t] : kg::model::state_dict(*net)) got[name] = t.sizes().vec();
      INFO("only in kgtrain's state_dict (or of another shape):\n"
           << only_in(got, want) << "only in timm's:\n"
           << only_in(want, got));
      CHECK(got == want);
      CHECK(kg::model::count_parameters(*net) == m.at("num_params").get<int64_t>());

      const std::string fill = m.at("fill");
      if (fill == "det_fill")
        kg::test::det_fill(*net);
      else if (fill == "det_fill_scrambled")
        kg::test::det_fill_scrambled(*net);
      else
        FAIL("unknown fill " << fill);
      net->to(torch::kDouble);
      auto x = kg::test::det_input(golden().at("input_shape").get<std::vector<int64_t>>()).to(torch::kDouble);
      torch::NoGradGuard no_grad;
      net->eval();
      check_logits(net->forward(x), logits(m, "eval_logits"), "eval");
      // BatchNorm momentum 1: the train-mode pass sets every running statistic to the batch's, as the generator did.
      size_t bns = 0, running_vars = 0;
      for (auto& mod : net->modules())
        if (auto* bn = mod->as<kg::model::BatchNorm2d>()) bn->options.momentum(1.0), ++bns;
      for (auto& [name, shape] : want)
        running_vars += name.size() > 11 && name.substr(name.size() - 11) == "running_var";
      REQUIRE(bns == running_vars);
      net->train();
      check_logits(net->forward(x), logits(m, "train_logits"), "train");
      net->eval();
      check_logits(net->forward(x), logits(m, "calibrated_eval_logits"), "calibrated eval");
    }
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
