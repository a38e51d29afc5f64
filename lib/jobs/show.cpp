#include "jobs/show.h"

#include "config/resolve.h"
#include "config/sections.h"
#include "core/registry.h"
#include "core/strings.h"

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
      out += "| `" + key + "` | " + cell(constraint_text(k)) + " | `" + cell(default_text(k)) + "` | " + cell(k.doc) + " |\n";
    else out += "  " + key + " = " + default_text(k) + "    # " + k.doc + " (" + constraint_text(k) + ")\n";
  }
}

}  // namespace

std::string show_recipe(const JobOptions& o) {
  std::string out = "# kgtrain resolved recipe\n# env: " + o.env_name + "\n";
  for (auto& l : o.layers) out += "# layer: " + l + "\n";
  return out + "\n" + config::to_toml(o.recipe, true);
}

std::string reference(bool md) {
  std::string out;
  if (md) out += "### Sections\n\n";
  for (auto& [name, sec] : config::sections()) {
    if (md) out += "#### `[" + name + "]` — " + sec.doc + "\n\n| key | type | default | meaning |\n|---|---|---|---|\n";
    else out += "[" + name + "]  " + sec.doc + "\n";
    keys_table(out, name, sec.schema, md);
    if (!sec.component_kind.empty())
      out += md ? "\nOther `" + name + ".*` keys belong to the selected " + sec.component_kind + " (below).\n\n"
                : "  (+ the keys of the selected " + sec.component_kind + ")\n";
    else if (md) out += "\n";
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

}  // namespace kg::jobs
