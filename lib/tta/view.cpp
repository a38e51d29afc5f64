#include "tta/view.h"

#include <torch/torch.h>

#include <map>

#include "config/schema.h"
#include "config/sections.h"
#include "core/error.h"
#include "core/strings.h"

namespace kg::tta {

ViewRegistry& view_registry() {
  static ViewRegistry r("tta_view");
  return r;
}

namespace {

const config::KeySpec* find_spec(const config::Schema& schema, const std::string& key) {
  for (auto& s : schema)
    if (s.key == key) return &s;
  return nullptr;
}

std::string show(const config::json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

std::string unknown_view(const std::string& name) {
  auto known = view_registry().names();
  return "unknown tta_view \"" + name + "\" (known: " + join(known, ", ") + ")" + did_you_mean(name, known);
}

// Problems of one entry `t` of tta.views; `at` names it ("tta.views[2]").
void entry_problems(const config::json& t, const std::string& at, std::vector<std::string>& out) {
  if (t.is_string()) {
    const std::string name = t.get<std::string>();
    const ComponentInfo* c = view_registry().find_info(name);
    if (!c) return out.push_back(at + ": " + unknown_view(name));
    for (auto& s : c->schema)
      if (s.default_value.is_null() && !s.optional)
        out.push_back(at + ": tta_view " + name + " needs " + s.key + " (" + s.doc +
                      "); write it as a table: " + "{ name = \"" + name + "\", " + s.key + " = ... }");
    return;
  }
  if (!t.is_object()) {
    out.push_back(at + ": expected a view name or a { name = \"...\", options } table, got " + show(t));
    return;
  }
  auto name_it = t.find("name");
  if (name_it == t.end() || !name_it->is_string()) {
    out.push_back(at + ": missing name = \"...\" (known tta_views: " + join(view_registry().names(), ", ") + ")");
    return;
  }
  const std::string name = name_it->get<std::string>();
  const ComponentInfo* c = view_registry().find_info(name);
  if (!c) return out.push_back(at + ".name: " + unknown_view(name));
  std::vector<std::string> allowed{"name"};
  for (auto& s : c->schema) allowed.push_back(s.key);
  for (auto& [k, v] : t.items()) {
    if (k == "name") continue;
    const config::KeySpec* spec = find_spec(c->schema, k);
    if (!spec)
      out.push_back(at + "." + k + ": unknown option for tta_view " + name + " (allowed: " + join(allowed, ", ") + ")" +
                    did_you_mean(k, allowed));
    else if (auto err = config::check_value(*spec, v); !err.empty())
      out.push_back(at + "." + k + ": " + err);
  }
  for (auto& s : c->schema)
    if (s.default_value.is_null() && !s.optional && !t.contains(s.key))
      out.push_back(at + "." + s.key + ": required option of tta_view " + name + " is missing (" + s.doc + ")");
}

std::string check_views(const config::json& v) {
  auto p = view_problems(v, "");
  return join(p, "; ");
}

std::string check_threshold(const config::json& v) {
  auto ok = [](const config::json& x) {
    return (x.is_number_integer() || x.is_number_float()) && x.get<double>() >= 0 && x.get<double>() <= 1;
  };
  if (ok(v)) return "";
  if (v.is_array() && !v.empty()) {
    for (auto& x : v)
      if (!ok(x)) return "expected thresholds in [0, 1], got " + show(x) + " in " + show(v);
    return "";
  }
  return "expected a number in [0, 1] or a non-empty array of them (one per class), got " + show(v);
}

config::Fields<TtaOptions> view_fields() {
  config::Fields<TtaOptions> f;
  f.field("views", &TtaOptions::views,
          "test-time views, in order: names or { name = \"...\", options } tables, e.g. [\"identity\", \"hflip\"] "
          "(the tta_view components below)")
      .check(check_views);
  f.field("merge", &TtaOptions::merge,
          "how views and checkpoints combine: mean of probabilities, geometric (normalized geometric mean of "
          "probabilities), logits (activation of the mean raw output)")
      .choices({"mean", "geometric", "logits"});
  f.field("weights", &TtaOptions::weights,
          "which weights of a kgtrain checkpoint directory predict: best, last, ema or swa")
      .choices({"best", "last", "ema", "swa"});
  f.field("threshold", &TtaOptions::threshold,
          "binary/multilabel decision: a class is predicted when its probability >= threshold; one number or one per "
          "class")
      .check(check_threshold);
  f.field("output", &TtaOptions::output,
          "what the submission's label column(s) hold: auto (multiclass the class, binary the positive probability, "
          "multilabel the labels >= threshold, regression the value), label (decisions: binary the class, per-label "
          "columns 0/1), probability (binary and per-label columns: probabilities)")
      .choices({"auto", "label", "probability"});
  return f;
}

KG_REGISTER_SECTION("tta", "test-time augmentation for tta-predict: views, how predictions merge, which weights",
                    view_fields().schema(), "");

std::string entry_name(const config::json& t) {
  return t.is_string() ? t.get<std::string>() : t.at("name").get<std::string>();
}

}  // namespace

TtaOptions TtaOptions::load(const config::Tree& recipe) { return view_fields().load(config::Options(&recipe, "tta")); }

std::vector<double> thresholds(const TtaOptions& o, int64_t outputs) {
  if (o.threshold.is_number()) return std::vector<double>(static_cast<size_t>(outputs), o.threshold.get<double>());
  auto v = o.threshold.get<std::vector<double>>();
  KG_CHECK(static_cast<int64_t>(v.size()) == outputs, ConfigError, "tta.threshold has ", v.size(),
           " values but the model has ", outputs, " outputs; give one number or one per class");
  return v;
}

std::vector<std::string> view_problems(const config::json& views, const std::string& key) {
  std::vector<std::string> out;
  const std::string head = key.empty() ? "" : key + ": ";
  if (!views.is_array()) {
    out.push_back(head +
                  "expected an array of view names or { name = \"...\" } tables, e.g. [\"identity\", \"hflip\"], got " +
                  show(views));
    return out;
  }
  if (views.empty()) {
    out.push_back(head + "expected at least one view (\"identity\" predicts without augmentation)");
    return out;
  }
  for (size_t i = 0; i < views.size(); ++i) entry_problems(views[i], key + "[" + std::to_string(i) + "]", out);
  return out;
}

std::vector<ViewPtr> build_views(const config::json& views, const data::ImageGeometry& g, const std::string& key) {
  auto problems = view_problems(views, key);
  if (!problems.empty()) throw ConfigError(problems);
  std::vector<ViewPtr> out;
  for (size_t i = 0; i < views.size(); ++i) {
    const auto& t = views[i];
    const std::string at = key + "[" + std::to_string(i) + "]";
    const std::string name = entry_name(t);
    config::json table = t.is_string() ? config::json{{"name", name}} : t;
    out.push_back(with_context(at + " (" + name + ")",
                               [&] { return view_registry().create(name, config::Options(table, at), g); }));
  }
  return out;
}

std::vector<ViewPtr> build_views(const config::Recipe& recipe, const data::ImageGeometry& g) {
  return build_views(recipe.get<TtaOptions>().views, g, "tta.views");
}

std::vector<SubView> expand(const std::vector<ViewPtr>& views) {
  std::vector<SubView> out;
  std::map<std::string, int> seen;
  for (size_t v = 0; v < views.size(); ++v)
    for (int64_t i = 0; i < views[v]->count(); ++i) {
      std::string label = views[v]->label(i);
      int n = ++seen[label];
      if (n > 1) label += "#" + std::to_string(n);
      out.push_back({v, i, label});
    }
  return out;
}

at::Tensor resize_bilinear(const at::Tensor& x, int64_t h, int64_t w) {
  KG_ASSERT(x.dim() == 4, "tta: expected a [B, C, H, W] batch, got ", x.dim(), " dimensions");
  if (x.size(2) == h && x.size(3) == w) return x;
  namespace F = torch::nn::functional;
  auto opts = F::InterpolateFuncOptions().size(std::vector<int64_t>{h, w}).mode(torch::kBilinear).align_corners(false);
  const auto dt = x.scalar_type();
  // CPU bilinear kernels cover float and double only.
  if (x.is_cuda() || dt == torch::kFloat || dt == torch::kDouble) return F::interpolate(x, opts);
  auto y = F::interpolate(x.to(torch::kFloat), opts);
  if (!at::isFloatingType(dt)) y = y.round();
  return y.to(dt);
}

}  // namespace kg::tta
