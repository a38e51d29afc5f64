#include "data/pseudo.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <ATen/ATen.h>

#include "config/schema.h"
#include "config/sections.h"
#include "core/error.h"

namespace kg::data {
namespace {
config::Fields<PseudoOptions> pseudo_fields() {
  config::Fields<PseudoOptions> f;
  f.field("threshold", &PseudoOptions::threshold,
          "keep an unlabeled row when the ensemble's confidence (multiclass max probability, binary max(p, 1-p), "
          "multilabel the least confident label) >= threshold; 0 = no threshold")
      .range(0, 1);
  f.field("top_fraction", &PseudoOptions::top_fraction,
          "per predicted class keep only this most confident fraction of the rows predicted as that class (keeps the "
          "class balance); with threshold both must hold; 0 = off")
      .range(0, 1);
  f.field(
      "soft", &PseudoOptions::soft,
      "write the probabilities as soft targets (prob_<class> columns; the loss trains on them) instead of hard labels");
  f.field("source_csv", &PseudoOptions::source_csv,
          "the unlabeled table to pseudo-label (relative to data.root); \"\" = data.test_csv");
  f.field("source_image_dir", &PseudoOptions::source_image_dir,
          "folder of source_csv's images (relative to data.root); \"\" = data.test_image_dir");
  return f;
}
KG_REGISTER_SECTION("pseudo", "pseudo-labelling: which confident unlabeled rows kgtrain pseudo-label keeps",
                    pseudo_fields().schema(), "");
}  // namespace

PseudoOptions PseudoOptions::load(const config::Tree& recipe) {
  return pseudo_fields().load(config::Options(&recipe, "pseudo"));
}

PseudoSelection select_pseudo(const at::Tensor& probs_in, Task task, const PseudoOptions& o) {
  PseudoSelection s;
  const int64_t n = probs_in.size(0);
  if (task == Task::regression) {
    KG_CHECK(o.threshold == 0 && o.top_fraction == 0, ConfigError,
             "pseudo.threshold / pseudo.top_fraction: a regression model has no confidence to select by; set both to 0 "
             "(every row is kept)");
    for (int64_t i = 0; i < n; ++i) s.rows.push_back(i), s.confidence.push_back(1.0), s.label.push_back(-1);
    return s;
  }
  auto p = probs_in.to(at::kDouble).contiguous();
  at::Tensor conf, cls;
  if (task == Task::multiclass) {
    auto mx = p.max(1);
    conf = std::get<0>(mx);
    cls = std::get<1>(mx);
  } else if (task == Task::binary) {
    auto q = p.select(1, 0);
    conf = at::max(q, 1 - q);
    cls = (q >= 0.5).to(at::kLong);
  } else {
    conf = std::get<0>(at::max(p, 1 - p).min(1));
    cls = at::zeros({n}, at::kLong);  // one group: the fraction applies to all rows
  }
  const double* c = conf.data_ptr<double>();
  const int64_t* k = cls.data_ptr<int64_t>();
  std::vector<bool> keep(static_cast<size_t>(n), true);
  if (o.threshold > 0)
    for (int64_t i = 0; i < n; ++i) keep[static_cast<size_t>(i)] = c[i] >= o.threshold;
  if (o.top_fraction > 0) {
    std::map<int64_t, std::vector<int64_t>> by_class;
    for (int64_t i = 0; i < n; ++i) by_class[k[i]].push_back(i);
    std::vector<bool> top(static_cast<size_t>(n), false);
    for (auto& [cl, rows] : by_class) {
      // Most confident first; ties by row order, so the selection is deterministic.
      std::stable_sort(rows.begin(), rows.end(), [&](int64_t a, int64_t b) { return c[a] > c[b]; });
      const auto m = static_cast<size_t>(std::ceil(o.top_fraction * static_cast<double>(rows.size()) - 1e-9));
      for (size_t j = 0; j < std::min(m, rows.size()); ++j) top[static_cast<size_t>(rows[j])] = true;
    }
    for (int64_t i = 0; i < n; ++i)
      keep[static_cast<size_t>(i)] = keep[static_cast<size_t>(i)] && top[static_cast<size_t>(i)];
  }
  for (int64_t i = 0; i < n; ++i)
    if (keep[static_cast<size_t>(i)]) {
      s.rows.push_back(i);
      s.confidence.push_back(c[i]);
      s.label.push_back(task == Task::multilabel ? -1 : k[i]);
    }
  return s;
}

}  // namespace kg::data
