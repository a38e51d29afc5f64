// Top-level recipe sections (run, data, model, optim, ...). Each declares its own keys; a section
// with a component kind also accepts the keys of the component its `name` key selects.
#pragma once
#include <functional>
#include <map>
#include <string>

#include "config/schema.h"
#include "core/macros.h"

namespace kg::config {

class Tree;

struct SectionInfo {
  std::string name;  // "optim"
  std::string doc;
  Schema schema;               // keys relative to the section
  std::string component_kind;  // registry whose component `<section>.name` selects ("" for none)
  // The component selected when no layer sets `<section>.name`, read from other keys (loss: the default
  // loss of data.task); empty function or "" = the schema default.
  std::function<std::string(const Tree&)> default_name;
};

const std::map<std::string, SectionInfo>& sections();
bool add_section(SectionInfo info);  // a duplicate name is recorded and fails start-up

// Throws InternalError when a section was declared twice or names a registry that does not exist.
void check_sections();

}  // namespace kg::config

// KG_REGISTER_SECTION("optim", "doc", fields.schema(), "optimizer")
#define KG_REGISTER_SECTION(name, doc, schema, kind) \
  static const bool KG_CONCAT(kg_section_, __COUNTER__) = ::kg::config::add_section({name, doc, schema, kind, {}})
