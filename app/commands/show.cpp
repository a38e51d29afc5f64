// `kgtrain show RECIPE... [OVERRIDE...] [--model [--json]]` and `kgtrain show --list [--markdown]`: its own flags are
// the table jobs::show_flags().
#include <iostream>

#include "command.h"
#include "core/error.h"
#include "flag_table.h"
#include "jobs/show.h"

namespace kg::app {
namespace {

class ShowCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    cmd.add_option("RECIPE", flags_.words, "RECIPE.toml files and overrides");
    flags_.add_only(cmd, {"device", "seed"});
    table_.add_to(cmd);
  }
  int run() override {
    const jobs::ShowFlags f = table_.values();
    jobs::check_show_flags(f);
    if (f.list) {
      std::cout << jobs::reference(f.markdown);
      return kExitOk;
    }
    if (flags_.words.empty())
      throw UsageError(f.model ? "show --model needs RECIPE.toml files" : "show needs RECIPE.toml files (or --list)");
    const session::Session o = flags_.resolve("show");
    std::cout << (f.model ? jobs::show_model(o, f.json) : jobs::show_recipe(o));
    return kExitOk;
  }

 private:
  RecipeFlags flags_;
  FlagTable<jobs::ShowFlags> table_{jobs::show_flags()};
};

}  // namespace

KG_COMMAND(ShowCommand, "show", 80, "print the resolved recipe with the origin of each key, or the key reference");

}  // namespace kg::app
