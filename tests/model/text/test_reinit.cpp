// model.reinit_layers (model/text/reinit.h): the top k layers are drawn anew as transformers initialises them, the
// layers below and the embeddings are left as loaded, and a seeded build draws the same weights.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>

#include <torch/torch.h>

#include "core/error.h"
#include "model/text/encoder.h"
#include "model/text/hf_config.h"
#include "model/text/reinit.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::model::text::HfConfig;

const char* kBertWide = R"({"model_type": "bert", "vocab_size": 40, "hidden_size": 64, "num_hidden_layers": 3,
  "num_attention_heads": 4, "intermediate_size": 128, "max_position_embeddings": 64, "type_vocab_size": 2,
  "initializer_range": 0.05})";
const char* kModernWide = R"({"model_type": "modernbert", "vocab_size": 40, "hidden_size": 64, "num_hidden_layers": 2,
  "num_attention_heads": 2, "intermediate_size": 96, "pad_token_id": 0, "local_attention": 4,
  "global_attn_every_n_layers": 2, "initializer_range": 0.04, "initializer_cutoff_factor": 2.0})";

std::map<std::string, at::Tensor> snapshot(const kg::model::text::TextEncoder& enc) {
  std::map<std::string, at::Tensor> out;
  for (const auto& p : enc.named_parameters(true)) out[p.key()] = p.value().detach().clone();
  return out;
}

// Loaded weights stand-in: every parameter filled with 0.3, which no initialiser gives.
void fill_loaded(kg::model::text::TextEncoder& enc) {
  torch::NoGradGuard no_grad;
  for (auto& p : enc.parameters()) p.fill_(0.3);
}

TEST_CASE("reinit: the top k BERT layers are drawn as transformers draws them, the rest kept", "[unit][model]") {
  const auto cfg = HfConfig::parse(kBertWide, "bert/config.json");
  auto enc = kg::model::text::build_text_encoder(cfg);
  fill_loaded(*enc);
  torch::manual_seed(5);
  const auto groups = kg::model::text::reinit_top_layers(*enc, cfg, 2);
  CHECK(groups == std::vector<std::string>{"layer.1", "layer.2"});
  for (const auto& [name, t] : snapshot(*enc)) {
    INFO(name);
    const bool top = name.rfind("encoder.layer.1.", 0) == 0 || name.rfind("encoder.layer.2.", 0) == 0;
    if (!top) {
      CHECK(torch::all(t == 0.3f).item<bool>());  // embeddings, layer 0 and the pooler: as loaded
    } else if (name.size() > 5 && name.substr(name.size() - 5) == ".bias") {
      CHECK(torch::all(t == 0).item<bool>());
    } else if (t.dim() == 1) {
      CHECK(torch::all(t == 1).item<bool>());  // LayerNorm
    } else {
      CHECK(std::abs(t.mean().item<double>()) < 0.01);
      CHECK(t.std().item<double>() == Approx(0.05).epsilon(0.1));  // N(0, initializer_range)
    }
  }
  // The same seed draws the same weights; another seed others.
  auto again = kg::model::text::build_text_encoder(cfg);
  fill_loaded(*again);
  torch::manual_seed(5);
  (void)kg::model::text::reinit_top_layers(*again, cfg, 2);
  const auto a = snapshot(*enc), b = snapshot(*again);
  for (const auto& [name, t] : a) CHECK(torch::equal(t, b.at(name)));
  CHECK(kg::model::text::reinit_top_layers(*again, cfg, 0).empty());
  CHECK_THROWS_WITH(kg::model::text::reinit_top_layers(*again, cfg, 4),
                    Catch::Contains("model.reinit_layers = 4") && Catch::Contains("3 layers"));
}

TEST_CASE("reinit: ModernBERT's output projections get the smaller truncated normal", "[unit][model]") {
  const auto cfg = HfConfig::parse(kModernWide, "modern/config.json");
  auto enc = kg::model::text::build_text_encoder(cfg);
  fill_loaded(*enc);
  torch::manual_seed(1);
  CHECK(kg::model::text::reinit_top_layers(*enc, cfg, 1) == std::vector<std::string>{"layer.1"});
  const double in_std = 0.04, out_std = 0.04 / std::sqrt(4.0);
  int checked = 0;
  for (const auto& [name, t] : snapshot(*enc)) {
    if (name.rfind("layers.1.", 0) != 0 || t.dim() != 2) continue;
    INFO(name);
    const double std = name.find(".Wo.") != std::string::npos ? out_std : in_std;
    CHECK(t.abs().max().item<double>() <= 2.0 * std + 1e-12);  // cut at 2 std
    // A normal truncated at +-2 std has std 0.880 of the untruncated one.
    CHECK(t.std().item<double>() == Approx(0.880 * std).epsilon(0.1));
    ++checked;
  }
  CHECK(checked == 4);  // Wqkv, attn Wo, Wi, mlp Wo
}

}  // namespace KG_UNITY_ID
}  // namespace
