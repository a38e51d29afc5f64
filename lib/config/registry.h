// Name -> factory registries, one per component kind, filled by static self-registration in each
// component's own .cpp (Caffe's layer registry). lib/ is an OBJECT library so the linker keeps them.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/schema.h"
#include "core/macros.h"

namespace kg {

struct ComponentInfo {
  std::string name;
  std::string doc;      // one line
  std::string example;  // a recipe snippet that builds it
  config::Schema schema;
};

class RegistryBase {
 public:
  virtual ~RegistryBase() = default;
  const std::string& kind() const { return kind_; }
  virtual std::vector<const ComponentInfo*> components() const = 0;  // sorted by name
  const ComponentInfo* find_info(const std::string& name) const;
  std::vector<std::string> names() const;
  // ConfigError 'unknown model "resnt9" at x.toml:3:8 (known: resnet9, ...) (did you mean resnet9?)'.
  [[noreturn]] void unknown(const std::string& name, const std::string& where) const;
  // Components left out of this build (e.g. the OpenCV transforms in a build without OpenCV): naming one
  // is an error that gives `reason` instead of "unknown".
  void mark_unavailable(const std::string& name, const std::string& reason) { unavailable_[name] = reason; }
  // "" unless `name` was marked unavailable; then 'transform "resize" is not in this build: <reason>'.
  std::string unavailable(const std::string& name) const;

  static const std::map<std::string, const RegistryBase*>& all();
  static const RegistryBase* by_kind(const std::string& kind);
  // Fails start-up (InternalError) when a name was registered twice in any registry.
  static void check_all();

 protected:
  explicit RegistryBase(std::string kind);
  void note_duplicate(const std::string& name) { duplicates_.push_back(name); }

 private:
  static std::map<std::string, const RegistryBase*>& mutable_all();
  std::string kind_;
  std::vector<std::string> duplicates_;
  std::map<std::string, std::string> unavailable_;
};

template <class Signature>
class Registry;

// Factories take the component's options (from its recipe table) plus kind-specific arguments.
template <class R, class... Args>
class Registry<R(Args...)> : public RegistryBase {
 public:
  using Factory = std::function<R(const config::Options&, Args...)>;
  struct Item : ComponentInfo {
    Factory factory;
  };

  explicit Registry(std::string kind) : RegistryBase(std::move(kind)) {}

  // Registers `name`; `make(const Opt&, Args...)` builds it from the loaded options struct.
  template <class Opt, class Make>
  bool add(std::string name, std::string doc, std::string example, config::Fields<Opt> fields, Make make) {
    if (items_.count(name)) {
      note_duplicate(name);
      return false;
    }
    Item it;
    it.name = name;
    it.doc = std::move(doc);
    it.example = std::move(example);
    it.schema = fields.schema();
    it.factory = [fields, make](const config::Options& o, Args... a) -> R {
      return make(fields.load(o), std::forward<Args>(a)...);
    };
    items_.emplace(name, std::move(it));
    return true;
  }

  R create(const std::string& name, const config::Options& opts, Args... a) const {
    auto it = items_.find(name);
    if (it == items_.end()) unknown(name, opts.where("name"));
    return it->second.factory(opts, std::forward<Args>(a)...);
  }

  std::vector<const ComponentInfo*> components() const override {
    std::vector<const ComponentInfo*> out;
    for (auto& [n, it] : items_) out.push_back(&it);
    return out;
  }

 private:
  std::map<std::string, Item> items_;
};

}  // namespace kg

// KG_REGISTER(model_registry(), "resnet9", doc, example, fields(), make)
#define KG_REGISTER(registry, ...) \
  static const bool KG_CONCAT(kg_registered_, __COUNTER__) = (registry).add(__VA_ARGS__)
