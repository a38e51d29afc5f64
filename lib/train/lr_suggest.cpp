// fastai's lr_find suggestion functions (valley, slide, minimum, steep) on the smoothed curve, and
// lr_find.json.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/strings.h"
#include "train/lr_finder.h"

namespace kg::train {
namespace {
// "0.00123", "1.2e-07": three significant digits.
}  // namespace

// --- suggestions ---------------------------------------------------------------------------------

LrCurve suggestion_curve(const std::vector<double>& lrs, const std::vector<double>& smoothed, int64_t num_steps) {
  // Python's x[num_steps // 10 : -5].
  const int64_t n = static_cast<int64_t>(std::min(lrs.size(), smoothed.size()));
  const int64_t begin = std::min(num_steps / 10, n), end = std::max<int64_t>(0, n - 5);
  LrCurve c;
  for (int64_t i = begin; i < end; ++i) {
    if (!std::isfinite(smoothed[static_cast<size_t>(i)])) break;
    c.lrs.push_back(lrs[static_cast<size_t>(i)]);
    c.losses.push_back(smoothed[static_cast<size_t>(i)]);
  }
  return c;
}

double suggest_valley(const LrCurve& c, int64_t* index) {
  const int64_t n = static_cast<int64_t>(c.losses.size());
  KG_ASSERT(n >= 1, "suggest_valley on an empty curve");
  // fastai valley: lds[i] = the longest strictly decreasing subsequence ending at i.
  std::vector<int64_t> lds(static_cast<size_t>(n), 1);
  int64_t max_start = 0, max_end = 0;
  for (int64_t i = 1; i < n; ++i)
    for (int64_t j = 0; j < i; ++j) {
      auto ui = static_cast<size_t>(i), uj = static_cast<size_t>(j);
      if (c.losses[ui] < c.losses[uj] && lds[ui] < lds[uj] + 1) lds[ui] = lds[uj] + 1;
      if (lds[static_cast<size_t>(max_end)] < lds[ui]) {
        max_end = i;
        max_start = max_end - lds[static_cast<size_t>(max_end)];
      }
    }
  const double sections = static_cast<double>(max_end - max_start) / 3.0;
  int64_t idx = max_start + static_cast<int64_t>(sections) + static_cast<int64_t>(sections / 2);
  if (idx < 0) idx += n;  // Python indexing (a curve of two falling points gives -1: the last)
  if (index) *index = idx;
  return c.lrs[static_cast<size_t>(idx)];
}

std::optional<double> suggest_slide(const LrCurve& c, int64_t lr_diff, double thresh, double adjust_value) {
  const int64_t n = static_cast<int64_t>(c.losses.size());
  if (n < std::max<int64_t>(2, lr_diff + 1)) return std::nullopt;  // fastai indexes lrs[-(lr_diff + 1)]
  // np.gradient (unit spacing, first-order edges).
  std::vector<double> g(static_cast<size_t>(n));
  g[0] = c.losses[1] - c.losses[0];
  g[static_cast<size_t>(n - 1)] = c.losses[static_cast<size_t>(n - 1)] - c.losses[static_cast<size_t>(n - 2)];
  for (int64_t i = 1; i + 1 < n; ++i)
    g[static_cast<size_t>(i)] = (c.losses[static_cast<size_t>(i + 1)] - c.losses[static_cast<size_t>(i - 1)]) / 2.0;
  int64_t r = n - 1, l = r - lr_diff;
  double local_min_lr = c.lrs[static_cast<size_t>(l)];
  while (l >= 0 && std::abs(g[static_cast<size_t>(r)] - g[static_cast<size_t>(l)]) > thresh) {
    local_min_lr = c.lrs[static_cast<size_t>(l)];
    --r;
    --l;
  }
  return local_min_lr * adjust_value;
}

double suggest_minimum(const LrCurve& c) {
  KG_ASSERT(!c.losses.empty(), "suggest_minimum on an empty curve");
  auto it = std::min_element(c.losses.begin(), c.losses.end());
  return c.lrs[static_cast<size_t>(it - c.losses.begin())] / 10.0;
}

double suggest_steep(const LrCurve& c) {
  const size_t n = c.losses.size();
  KG_ASSERT(n >= 2, "suggest_steep needs two points");
  size_t best = 0;
  double best_g = 0;
  for (size_t i = 0; i + 1 < n; ++i) {
    double g = (c.losses[i + 1] - c.losses[i]) / (std::log(c.lrs[i + 1]) - std::log(c.lrs[i]));
    if (i == 0 || g < best_g) {
      best_g = g;
      best = i;
    }
  }
  return c.lrs[best];
}

const std::vector<std::string>& suggestion_names() {
  static const std::vector<std::string> names{"valley", "slide", "minimum", "steep"};
  return names;
}

void suggest(LrFindResult& r) {
  const auto& o = r.options;
  LrCurve c = suggestion_curve(r.lrs, r.smoothed, o.num_steps);
  const int64_t n = static_cast<int64_t>(c.losses.size());
  KG_CHECK(n >= 2, ConfigError, "lr_find: ", r.steps(), " update(s) recorded, ", n,
           " point(s) left for the suggestions after dropping the first num_steps/10 = ", o.num_steps / 10,
           " and the last 5 (and any after a non-finite loss); they need at least 2. ",
           r.stopped_early ? "The loss diverged almost immediately (" + r.stop_reason +
                                 "): lower lr_find.start_lr, or set lr_find.stop_div = false"
                           : "lr_find.num_steps = " + std::to_string(o.num_steps) + " is too small: raise it");
  r.suggestions.clear();
  r.suggestions["valley"] = suggest_valley(c);
  r.suggestions["slide"] = suggest_slide(c);
  r.suggestions["minimum"] = suggest_minimum(c);
  r.suggestions["steep"] = suggest_steep(c);
  r.chosen = o.suggestion;
  r.notes.clear();
  if (!r.suggestions["slide"])
    r.notes.push_back("slide needs at least 16 points after trimming, the sweep left " + std::to_string(n) +
                      ": raise lr_find.num_steps");
  const auto& chosen = r.suggestions.at(r.chosen);
  KG_CHECK(chosen.has_value(), ConfigError, "lr_find.suggestion = \"", r.chosen,
           "\" cannot be computed: ", r.notes.back(), ", or choose valley, minimum or steep");
  r.lr = *chosen;
  double lo = INFINITY, hi = 0;
  for (auto& [name, v] : r.suggestions)
    if (v) lo = std::min(lo, *v), hi = std::max(hi, *v);
  if (hi > 10 * lo)
    r.notes.push_back("the suggestions disagree by more than 10x (" + format_significant(lo, 3) + " to " +
                      format_significant(hi, 3) + "): look at lr_find.png before trusting one");
}

nlohmann::json LrFindResult::to_json() const {
  nlohmann::json s = nlohmann::json::object();
  for (auto& name : suggestion_names()) {
    auto it = suggestions.find(name);
    s[name] = it != suggestions.end() && it->second ? nlohmann::json(*it->second) : nlohmann::json();
  }
  return {{"schema_version", 1},
          {"suggestions", s},
          {"chosen", chosen},
          {"lr", lr},
          {"steps", steps()},
          {"stopped_early", stopped_early},
          {"stop_reason", stop_reason},
          {"notes", notes},
          {"start_lr", options.start_lr},
          {"end_lr", options.end_lr},
          {"num_steps", options.num_steps},
          {"beta", options.beta},
          {"seconds", seconds},
          {"seconds_per_update", steps() > 0 ? seconds / static_cast<double>(steps()) : 0.0}};
}

}  // namespace kg::train
