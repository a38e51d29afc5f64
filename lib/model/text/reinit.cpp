#include "model/text/reinit.h"

#include <cmath>

#include <torch/torch.h>

#include "core/error.h"

namespace kg::model::text {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// A draw from the normal N(0, std) truncated to [-cut * std, cut * std], the distribution of
// torch.nn.init.trunc_normal_: the values that fall outside are drawn again until none does.
void trunc_normal(at::Tensor& w, double std, double cut) {
  w.normal_(0.0, std);
  for (int round = 0; round < 64; ++round) {
    const at::Tensor outside = w.abs() > cut * std;
    if (!outside.any().item<bool>()) return;
    w.masked_scatter_(outside, torch::empty_like(w).normal_(0.0, std).masked_select(outside));
  }
  w.clamp_(-cut * std, cut * std);  // after 64 rounds a value outside has probability ~0.05^64
}

}  // namespace

std::vector<std::string> reinit_top_layers(TextEncoder& enc, const HfConfig& cfg, int64_t k) {
  const int64_t layers = enc.shape().num_layers;
  KG_CHECK(k >= 0 && k <= layers, ConfigError, "model.reinit_layers = ", k, ": ", cfg.path(), " has ", layers,
           " layers; re-initialise at most that many");
  std::vector<std::string> done;
  if (k == 0) return done;
  const bool modern = cfg.model_type() == "modernbert";
  const double range = cfg.get_double("initializer_range", 0.02);
  const double cut = modern ? cfg.get_double("initializer_cutoff_factor", 2.0) : 0.0;
  const double out_std = range / std::sqrt(2.0 * static_cast<double>(layers));
  torch::NoGradGuard no_grad;
  for (auto& g : enc.layer_groups()) {
    if (g.name.rfind("layer.", 0) != 0 || std::stoll(g.name.substr(6)) < layers - k) continue;
    for (auto& [name, p] : g.params) {
      if (ends_with(name, ".bias"))
        p.zero_();
      else if (p.dim() == 1)
        p.fill_(1.0);  // a LayerNorm's (or ModernBERT's norm's) weight
      else if (modern)
        trunc_normal(p, name.find(".Wo.") != std::string::npos ? out_std : range, cut);
      else
        p.normal_(0.0, range);
    }
    done.push_back(g.name);
  }
  return done;
}

}  // namespace kg::model::text
