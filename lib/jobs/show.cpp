#include "jobs/show.h"

#include <cstdio>

#include "config/registry.h"
#include "config/resolve.h"
#include "config/sections.h"
#include "core/error.h"
#include "core/strings.h"
#include "data/options.h"
#include "device/device.h"
#include "model/model.h"
#include "optim/optimizer.h"
#include "optim/param_groups.h"
#include "model/summary.h"
#include "session/model_input.h"
#include "train/options.h"

namespace kg::jobs {
namespace {

std::string default_text(const config::KeySpec& k) {
  if (k.default_value.is_null()) return "(none)";
  config::Tree t;
  config::Entry e;
  e.value = k.default_value;
  t.set("x", e);
  std::string s = config::to_toml(t, false);  // "x = <value>\n"
  auto eq = s.find(" = ");
  return trim(s.substr(eq + 3));
}

std::string constraint_text(const config::KeySpec& k) {
  std::string c = config::type_name(k.type);
  if (!k.choices.empty()) c += ", one of " + join(k.choices, " | ");
  if (k.size >= 0) c += ", " + std::to_string(k.size) + " values";
  return c;
}

// A Markdown table cell: a bare '|' would end the cell.
std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

void keys_table(std::string& out, const std::string& prefix, const config::Schema& schema, bool md) {
  for (auto& k : schema) {
    std::string key = prefix.empty() ? k.key : prefix + "." + k.key;
    if (md)
      out += "| `" + key + "` | " + cell(constraint_text(k)) + " | `" + cell(default_text(k)) + "` | " + cell(k.doc) +
             " |\n";
    else
      out += "  " + key + " = " + default_text(k) + "    # " + k.doc + " (" + constraint_text(k) + ")\n";
  }
}

}  // namespace

const config::Fields<ShowFlags>& show_flags() {
  static const config::Fields<ShowFlags> f = [] {
    using F = ShowFlags;
    config::Fields<F> t;
    t.field("list", &F::list, "list every section and registered component with keys and defaults");
    t.field("markdown", &F::markdown, "with --list: Markdown (docs/reference.md, the recipe reference)");
    t.field("model", &F::model,
            "build the recipe's model for its data (data.num_classes when the data is absent): summary (parameters, "
            "GFLOPs, training memory) and layer groups");
    t.field("json", &F::json, "with --model: JSON (schema_version 1)");
    return t;
  }();
  return f;
}

void check_show_flags(const ShowFlags& f) {
  KG_CHECK(!f.json || f.model, UsageError, "--json goes with show --model");
  KG_CHECK(!f.markdown || f.list, UsageError, "--markdown goes with show --list");
  KG_CHECK(!(f.list && f.model), UsageError, "show --list prints the reference, show RECIPE --model a model: not both");
}

std::string show_recipe(const session::Session& o) {
  std::string out = "# kgtrain resolved recipe\n# env: " + o.env_name + "\n";
  for (auto& l : o.layers) out += "# layer: " + l + "\n";
  return out + "\n" + config::to_toml(o.recipe.tree(), true);
}

std::string reference(bool md) {
  std::string out;
  if (md) out += "### Sections\n\n";
  for (auto& [name, sec] : config::sections()) {
    if (md)
      out += "#### `[" + name + "]` — " + sec.doc + "\n\n| key | type | default | meaning |\n|---|---|---|---|\n";
    else
      out += "[" + name + "]  " + sec.doc + "\n";
    keys_table(out, name, sec.schema, md);
    if (!sec.component_kind.empty())
      out += md ? "\nOther `" + name + ".*` keys belong to the selected " + sec.component_kind + " (below).\n\n"
                : "  (+ the keys of the selected " + sec.component_kind + ")\n";
    else if (md)
      out += "\n";
  }
  if (md) out += "### Components\n\n";
  for (auto& [kind, reg] : RegistryBase::all()) {
    for (auto* c : reg->components()) {
      if (md) {
        out += "#### " + kind + " `" + c->name + "`\n\n" + c->doc + "\n\n";
        if (!c->schema.empty()) {
          out += "| key | type | default | meaning |\n|---|---|---|---|\n";
          keys_table(out, "", c->schema, md);
          out += "\n";
        }
        out += "```toml\n" + c->example + "\n```\n\n";
      } else {
        out += kind + " " + c->name + ": " + c->doc + "\n";
        keys_table(out, "", c->schema, md);
      }
    }
  }
  return out;
}

std::string show_model(const session::Session& o, bool as_json) {
  const auto in = session::recipe_model_input(o.recipe);
  const auto& ctx = in.ctx;
  auto net = model::build(o.recipe, ctx);
  if (o.recipe.get<device::DeviceOptions>().channels_last) net->set_channels_last(true);
  // The memory estimate is for the largest training stage's batch, as fit would run it.
  const auto stages = data::size_schedule(o.recipe.get<data::DataOptions>());
  const int64_t batch =
      stages.back().batch_size > 0 ? stages.back().batch_size : o.recipe.get<train::TrainOptions>().batch_size;
  auto s = model::summarize(*net, ctx, batch);
  s.set_optimizer(o.recipe.get<optim::OptimOptions>().name,
                  optim::build(optim::with_numeric_lr(o.recipe), *net)->state_slots());
  const std::string name = model::model_name(o.recipe);

  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : net->layer_groups()) {
    int64_t trainable = 0;
    for (const auto& [pname, t] : g.params)
      if (t.requires_grad()) trainable += t.numel();
    groups.push_back({{"name", g.name},
                      {"parameters", g.numel()},
                      {"trainable_parameters", trainable},
                      {"trainable", trainable == g.numel()}});
  }
  if (as_json) {
    nlohmann::json j = {{"schema_version", 1},
                        {"command", "show --model"},
                        {"recipe", o.layers},
                        {"model", name},
                        {"task", data::task_name(in.classes.task)},
                        {"outputs", ctx.num_outputs},
                        {"outputs_from", in.outputs_from},
                        {"pool", net->pool()},
                        {"pooled_features", net->num_features()},
                        {"first_conv", net->first_conv()},
                        {"classifier", net->classifier()},
                        {"summary", s.to_json()},
                        {"layer_groups", groups}};
    return j.dump(2) + "\n";
  }
  std::string out = "model " + name + ": " + std::to_string(ctx.num_outputs) + " output" +
                    (ctx.num_outputs == 1 ? "" : "s") + " (" + data::task_name(in.classes.task) + ", from " +
                    in.outputs_from + "), " + net->pool() + " pool over " + std::to_string(net->num_features()) +
                    " features, classifier " + net->classifier() + "\n" + s.str() + "\n\n";
  char buf[160];
  std::snprintf(buf, sizeof buf, "%-16s %14s %14s\n", "layer group", "parameters", "trainable");
  out += buf;
  for (const auto& g : groups) {
    std::snprintf(buf, sizeof buf, "%-16s %14lld %14lld\n", g["name"].get<std::string>().c_str(),
                  static_cast<long long>(g["parameters"].get<int64_t>()),
                  static_cast<long long>(g["trainable_parameters"].get<int64_t>()));
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "%-16s %14lld %14lld\n", "total", static_cast<long long>(s.total_params),
                static_cast<long long>(s.trainable_params));
  return out + buf;
}

}  // namespace kg::jobs
