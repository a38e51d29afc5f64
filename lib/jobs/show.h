// `kgtrain show`: the resolved recipe with provenance, and the reference of every key and component.
#pragma once
#include <string>

#include "session/session.h"

namespace kg::jobs {

// The resolved recipe as TOML, each key annotated with the layer that set it.
std::string show_recipe(const session::Session& o);
// Every section, its keys and every registered component with its keys, defaults and docs.
// `markdown` gives docs/reference.md's recipe reference.
std::string reference(bool markdown);
// `show --model`: the recipe's network built for its data (or data.num_classes when the data is
// absent): the model summary and its layer groups as a table, or as JSON (schema_version 1).
std::string show_model(const session::Session& o, bool as_json);

}  // namespace kg::jobs
