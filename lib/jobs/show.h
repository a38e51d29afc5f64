// `kgtrain show`: the resolved recipe with provenance, and the reference of every key and component.
#pragma once
#include <string>

#include "config/schema.h"
#include "session/session.h"

namespace kg::jobs {

// show's flags, declared once in show_flags(): app/flag_table.h makes them CLI11 options,
// tests/jobs/test_flag_tables.cpp holds --help and docs/commands.md to the table.
struct ShowFlags {
  bool list = false;      // every section and registered component instead of a recipe
  bool markdown = false;  // with list: Markdown
  bool model = false;     // the recipe's model: summary and layer groups
  bool json = false;      // with model: JSON
};
const config::Fields<ShowFlags>& show_flags();
// UsageError when a flag is given without the one it goes with (--json without --model, --markdown without --list).
void check_show_flags(const ShowFlags& f);

// The resolved recipe as TOML, each key annotated with the layer that set it.
std::string show_recipe(const session::Session& o);
// Every section, its keys and every registered component with its keys, defaults and docs.
// `markdown` gives docs/reference.md's recipe reference.
std::string reference(bool markdown);
// `show --model`: the recipe's network built for its data (or data.num_classes when the data is
// absent): the model summary and its layer groups as a table, or as JSON (schema_version 1).
std::string show_model(const session::Session& o, bool as_json);

}  // namespace kg::jobs
