#include "model/model.h"

#include "config/sections.h"

namespace kg::model {

ModelRegistry& model_registry() {
  static ModelRegistry r("model");
  return r;
}

namespace {
config::Fields<ModelOptions> fields() {
  config::Fields<ModelOptions> f;
  f.field("name", &ModelOptions::name, "network architecture").kind("model");
  return f;
}
KG_REGISTER_SECTION("model", "the network", fields().schema(), "model");
}  // namespace

std::string model_name(const config::Tree& recipe) { return fields().load(config::Options(&recipe, "model")).name; }

NetworkPtr build(const config::Tree& recipe, const ModelContext& ctx) {
  config::Options opts(&recipe, "model");
  return model_registry().create(model_name(recipe), opts, ctx);
}

int64_t count_parameters(const torch::nn::Module& m, bool trainable_only) {
  int64_t n = 0;
  for (const auto& p : m.parameters())
    if (!trainable_only || p.requires_grad()) n += p.numel();
  return n;
}

}  // namespace kg::model
