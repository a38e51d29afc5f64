// `kgtrain fit RECIPE... [OVERRIDE...] [FLAGS]`: its flags are the table jobs::fit_flags().
#include <filesystem>

#include "command.h"
#include "config/flags.h"
#include "core/error.h"
#include "core/strings.h"
#include "device/distributed.h"
#include "flag_table.h"
#include "jobs/fit.h"
#include "launch.h"
#include "sweep.h"

namespace fs = std::filesystem;

namespace kg::app {
namespace {

class FitCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    flags_.add(cmd, RecipeFlags::Kind::training);
    table_.add_to(cmd);
  }

  int run() override {
    req_.flags = table_.values();
    config::check_flags(jobs::fit_flags(), req_.flags);  // before any rank or sweep run starts
    if (req_.flags.multirun) return run_multirun();
    KG_CHECK(req_.flags.jobs == 1, UsageError, "--jobs is for sweeps: add -m");
    if (req_.flags.nproc > 1) {
      const auto env = environment();
      KG_CHECK(!env.count("WORLD_SIZE"), UsageError, "--nproc ", req_.flags.nproc,
               " inside a launched job (WORLD_SIZE=", env.count("WORLD_SIZE") ? env.at("WORLD_SIZE") : "",
               "): use either torchrun or --nproc, not both");
      const auto [argc, argv] = process_args();
      return launch_local(static_cast<int>(req_.flags.nproc), without_nproc(argc, argv));
    }
    install_signal_handlers();
    add_run_recipe();
    if (flags_.words.empty())
      throw UsageError("fit needs RECIPE.toml files (or --resume RUN_DIR, which reuses the run's recipe)");
    static_cast<session::Session&>(req_) = flags_.resolve("fit");
    req_.check_data = flags_.check_data;
    return jobs::run_fit(req_);
  }

 private:
  // --resume DIR without a recipe: the run's own resolved recipe (it holds every key, defaults included).
  void add_run_recipe() {
    auto& resume = req_.flags.resume;
    if (resume.empty() || resume == "auto") return;
    resume = flags_.run_folder(resume);
    if (flags_.use_run_recipe(resume) || flags_.has_recipe_file()) return;
    // No recipe file and none in the run: on a node that does not share rank 0's disk the run is not here.
    const auto dist = device::dist_env_from(environment());  // torchrun's or srun's variables, as fit reads them
    KG_CHECK(dist.writer(), UsageError, "--resume ", resume, ": rank ", dist.rank, " finds no run recipe there (",
             resume,
             "/recipe.toml is not on this node's disk): where the nodes do not share rank 0's disk, give every rank "
             "the recipe files as well, kgtrain fit RECIPE.toml ... --resume ",
             resume, "; rank 0 reads the run and sends its checkpoint to the other ranks");
    KG_CHECK(fs::exists(resume), UsageError, "--resume ", resume,
             ": no such directory (give a run directory, a checkpoint such as RUN/checkpoints/last, or \"auto\")");
  }

  int run_multirun() {
    KG_CHECK(req_.flags.nproc == 1, UsageError,
             "-m runs each sweep run as one process: --nproc is not supported with it");
    KG_CHECK(req_.flags.plot_schedule.empty(), UsageError, "--plot-schedule draws one run's schedule: drop -m");
    KG_CHECK(!flags_.check_data, UsageError, "--check-data checks one recipe's data: drop -m");
    install_signal_handlers();
    SweepRequest r;
    r.words = flags_.words_with_flags();
    if (!req_.flags.weights.empty()) r.run_flags = {"--weights", req_.flags.weights};
    if (flags_.smoke) r.run_flags.push_back("--smoke");
    r.sweep_dir = flags_.run_dir;
    r.resume = req_.flags.resume;
    KG_CHECK(r.resume != "auto", UsageError, "-m --resume takes the sweep folder: kgtrain fit -m --resume SWEEP_DIR");
    KG_CHECK(r.resume.empty() || flags_.words.empty(), UsageError,
             "-m --resume SWEEP_DIR reruns the sweep's own words (sweep.json): give no recipe or overrides");
    KG_CHECK(!r.resume.empty() || !flags_.words.empty(), UsageError, "fit -m needs RECIPE.toml files and overrides");
    r.jobs = static_cast<int>(req_.flags.jobs);
    r.dry_run = flags_.dry_run;
    r.quiet = flags_.quiet;
    r.resolve = [this](const std::vector<std::string>& words) {
      RecipeFlags f = flags_;
      f.words = words;
      f.device.clear();
      f.seed.reset();
      f.run_dir.clear();
      return f.resolve("fit");
    };
    return run_sweep(r);
  }

  RecipeFlags flags_;
  FlagTable<jobs::FitFlags> table_{jobs::fit_flags()};
  jobs::FitRequest req_;
};

}  // namespace

KG_COMMAND(FitCommand, "fit", 10, "train a model on a recipe (k-fold split, validation, checkpoints)");

}  // namespace kg::app
