// `kgtrain pack RECIPE... [OVERRIDE...] [FLAGS]`: its flags are the table jobs::pack_flags().
#include "command.h"
#include "flag_table.h"
#include "jobs/pack.h"

namespace kg::app {
namespace {

class PackCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    flags_.add(cmd, RecipeFlags::Kind::other);
    table_.add_to(cmd);
  }
  int run() override {
    jobs::PackRequest r;
    static_cast<session::Session&>(r) = flags_.resolve("pack");
    r.flags = table_.values();
    return jobs::run_pack(r);
  }

 private:
  RecipeFlags flags_;
  FlagTable<jobs::PackFlags> table_{jobs::pack_flags()};
};

}  // namespace

KG_COMMAND(PackCommand, "pack", 60, "pack the recipe's training/test table and its images into one memory-mapped file");

}  // namespace kg::app
