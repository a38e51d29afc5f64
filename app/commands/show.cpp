// `kgtrain show RECIPE... [OVERRIDE...] [--model [--json]]` and `kgtrain show --list [--markdown]`
#include <iostream>

#include "cli_checks.h"
#include "command.h"
#include "core/error.h"
#include "jobs/show.h"

namespace kg::app {
namespace {

class ShowCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    cmd.add_option("RECIPE", flags_.words, "RECIPE.toml files and overrides");
    cmd.add_option("--device", flags_.device, "same as device.name=...");
    cmd.add_option("--seed", flags_.seed, "same as run.seed=N")->check(kCountOrZero);
    cmd.add_flag("--list", list_, "list every section and registered component with keys and defaults");
    cmd.add_flag("--markdown", markdown_, "with --list: Markdown (docs/reference.md, the recipe reference)");
    cmd.add_flag("--model", model_,
                 "build the recipe's model for its data (data.num_classes when the data is "
                 "absent): summary (parameters, GFLOPs, training memory) and layer groups");
    cmd.add_flag("--json", json_, "with --model: JSON (schema_version 1)");
  }
  int run() override {
    if (model_) {
      if (flags_.words.empty()) throw UsageError("show --model needs RECIPE.toml files");
      std::cout << jobs::show_model(flags_.resolve("show"), json_);
      return kExitOk;
    }
    if (json_) throw UsageError("--json goes with show --model");
    if (list_) {
      std::cout << jobs::reference(markdown_);
      return kExitOk;
    }
    if (flags_.words.empty()) throw UsageError("show needs RECIPE.toml files (or --list)");
    std::cout << jobs::show_recipe(flags_.resolve("show"));
    return kExitOk;
  }

 private:
  RecipeFlags flags_;
  bool list_ = false, markdown_ = false, model_ = false, json_ = false;
};

}  // namespace

KG_COMMAND(ShowCommand, "show", 80, "print the resolved recipe with the origin of each key, or the key reference");

}  // namespace kg::app
