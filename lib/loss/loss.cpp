#include "loss/loss.h"

#include "config/sections.h"

namespace kg::loss {

LossRegistry& loss_registry() {
  static LossRegistry r("loss");
  return r;
}

namespace {
config::Fields<LossOptions> fields() {
  config::Fields<LossOptions> f;
  f.field("name", &LossOptions::name, "loss function").kind("loss");
  return f;
}
KG_REGISTER_SECTION("loss", "the training loss", fields().schema(), "loss");
}  // namespace

LossPtr build(const config::Tree& recipe, const LossContext& ctx) {
  auto o = fields().load(config::Options(&recipe, "loss"));
  return loss_registry().create(o.name, config::Options(&recipe, "loss"), ctx);
}

}  // namespace kg::loss
