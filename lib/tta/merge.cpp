#include "tta/merge.h"

#include <torch/torch.h>

#include <cmath>

#include "core/error.h"
#include "core/strings.h"
#include "core/tasks.h"

namespace kg::tta {
namespace {

const std::vector<std::string> kMethods{"mean", "geometric", "logits"};

std::string shape(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

// Validates the call; returns the weights normalized to sum 1 (uniform when none are given).
std::vector<double> prepare(const std::vector<at::Tensor>& xs, const std::string& how, Task task,
                            const std::vector<double>& weights) {
  bool known = false;
  for (auto& m : kMethods) known = known || m == how;
  KG_CHECK(known, ConfigError, "tta.merge: unknown method \"", how, "\" (allowed: ", join(kMethods, ", "), ")",
           did_you_mean(how, kMethods));
  KG_CHECK(
      how != "geometric" || task != Task::regression, ConfigError,
      "tta.merge = \"geometric\" is not defined for regression: a geometric mean needs positive numbers and "
      "regression outputs may be zero or negative; use tta.merge = \"mean\" (\"logits\" is the same for regression)");
  KG_CHECK(!xs.empty(), UsageError, "tta merge: no predictions to merge");
  for (size_t i = 0; i < xs.size(); ++i) {
    KG_CHECK(xs[i].defined() && xs[i].dim() >= 1, UsageError, "tta merge: prediction ", i, " is empty");
    KG_CHECK(xs[i].sizes() == xs[0].sizes(), UsageError, "tta merge: prediction ", i, " has shape ", shape(xs[i]),
             " but prediction 0 has ", shape(xs[0]),
             "; every view and checkpoint must predict the same rows and classes");
  }
  if (weights.empty()) return std::vector<double>(xs.size(), 1.0 / static_cast<double>(xs.size()));
  KG_CHECK(weights.size() == xs.size(), ConfigError, "tta merge: ", weights.size(), " weights for ", xs.size(),
           " predictions; give one weight per prediction");
  double sum = 0;
  for (double w : weights) {
    KG_CHECK(std::isfinite(w) && w >= 0, ConfigError, "tta merge: weights must be finite and >= 0, got ",
             format_double(w));
    sum += w;
  }
  KG_CHECK(sum > 0, ConfigError, "tta merge: the weights sum to 0; at least one must be positive");
  std::vector<double> out;
  for (double w : weights) out.push_back(w / sum);
  return out;
}

// sum_i w_i * f(x_i), in float64 on the first prediction's device.
template <class F>
at::Tensor weighted(const std::vector<at::Tensor>& xs, const std::vector<double>& w, F f) {
  at::Tensor acc;
  for (size_t i = 0; i < xs.size(); ++i) {
    at::Tensor v = f(xs[i].to(xs[0].device(), torch::kDouble)) * w[i];
    acc = acc.defined() ? acc + v : v;
  }
  return acc;
}

at::Tensor activate(const at::Tensor& x, Task task) {
  if (task == Task::multiclass) return torch::softmax(x, -1);
  if (task == Task::regression) return x;
  return torch::sigmoid(x);
}

at::Tensor identity(const at::Tensor& x) { return x; }

}  // namespace

at::Tensor merge(const std::vector<at::Tensor>& outputs, const std::string& how, Task task,
                 const std::vector<double>& weights) {
  const auto w = prepare(outputs, how, task, weights);
  at::Tensor out;
  if (how == "mean") {
    out = weighted(outputs, w, [&](const at::Tensor& x) { return activate(x, task); });
  } else if (how == "geometric" && task == Task::multiclass) {
    out = torch::softmax(weighted(outputs, w, [](const at::Tensor& x) { return torch::log_softmax(x, -1); }), -1);
  } else {  // logits, and geometric for sigmoid tasks: sigmoid(mean logit) = p_g / (p_g + q_g)
    out = activate(weighted(outputs, w, identity), task);
  }
  return out.to(torch::kFloat);
}

at::Tensor merge_probs(const std::vector<at::Tensor>& probs, const std::string& how, Task task,
                       const std::vector<double>& weights) {
  const auto w = prepare(probs, how, task, weights);
  at::Tensor out;
  if (how == "mean" || task == Task::regression) {
    out = weighted(probs, w, identity);
  } else if (task == Task::multiclass) {
    // A zero probability stays (almost) zero; the clamp keeps 0 * log(0) from turning into NaN.
    out = torch::softmax(weighted(probs, w, [](const at::Tensor& p) { return p.clamp_min(1e-300).log(); }), -1);
  } else {
    out = torch::sigmoid(weighted(probs, w, [](const at::Tensor& p) {
      auto q = p.clamp(1e-16, 1 - 1e-16);
      return q.log() - (-q).log1p();
    }));
  }
  return out.to(torch::kFloat);
}

at::Tensor apply_threshold(const at::Tensor& probs, const config::json& threshold, const std::string& key) {
  auto number = [](const config::json& x) { return x.is_number_integer() || x.is_number_float(); };
  auto in_range = [](double t) { return t >= 0 && t <= 1; };
  if (number(threshold)) {
    const double t = threshold.get<double>();
    KG_CHECK(in_range(t), ConfigError, key, ": expected a threshold in [0, 1], got ", threshold.dump());
    return probs >= t;
  }
  KG_CHECK(threshold.is_array() && !threshold.empty(), ConfigError, key,
           ": expected a number in [0, 1] or an array of them, one per class, got ", threshold.dump());
  const int64_t k = probs.dim() >= 2 ? probs.size(-1) : 1;
  KG_CHECK(static_cast<int64_t>(threshold.size()) == k, ConfigError, key, ": ", threshold.size(),
           " thresholds but the model predicts ", k, " class", k == 1 ? "" : "es",
           "; give one number for all classes or ", k, " (one per class, in the class order of the submission)");
  std::vector<double> t;
  for (auto& x : threshold) {
    KG_CHECK(number(x) && in_range(x.get<double>()), ConfigError, key, ": expected thresholds in [0, 1], got ",
             x.dump(), " in ", threshold.dump());
    t.push_back(x.get<double>());
  }
  // Compared in the probabilities' dtype, as torch and numpy compare a float32 array with a number:
  // a probability of 0.7f meets a threshold of 0.7.
  if (probs.dim() < 2) return probs >= t[0];
  return probs >= torch::tensor(t, torch::kDouble).to(probs.device(), probs.scalar_type());
}

}  // namespace kg::tta
