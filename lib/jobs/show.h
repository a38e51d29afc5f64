// `kgtrain show`: the resolved recipe with provenance, and the reference of every key and component.
#pragma once
#include <string>

#include "jobs/job.h"

namespace kg::jobs {

// The resolved recipe as TOML, each key annotated with the layer that set it.
std::string show_recipe(const JobOptions& o);
// Every section, its keys and every registered component with its keys, defaults and docs.
// `markdown` gives the README's recipe reference.
std::string reference(bool markdown);

}  // namespace kg::jobs
