// `kgtrain fit RECIPE... [OVERRIDE...] [--weights F] [--resume auto|DIR] [--nproc N] [--plot-schedule PNG]`
#include <filesystem>

#include "cli_checks.h"
#include "command.h"
#include "core/error.h"
#include "core/strings.h"
#include "jobs/fit.h"
#include "launch.h"
#include "sweep.h"

namespace kg::app {
namespace {

class FitCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    flags_.add(cmd, RecipeFlags::Kind::training);
    cmd.add_option("--weights", weights_,
                   "initial weights (safetensors, timm/torchvision names), as model.pretrained: "
                   "a head of another shape is re-initialised");
    cmd.add_option("--resume", req_.resume,
                   "auto (the newest unfinished run of run.name, or --run-dir), a run directory, latest "
                   "(<paths.runs>/latest, the newest fit), or a checkpoint directory: continue exactly where it "
                   "stopped (RECIPE optional: the run's recipe.toml is used when none is given)");
    cmd.add_option("--nproc", nproc_,
                   "train on N processes of this machine (data parallel, torch.distributed: Gloo on the "
                   "CPU, NCCL on GPUs; one GPU each), as torchrun --no-python --nproc-per-node N would")
        ->check(kCount);
    cmd.add_option("--plot-schedule", req_.plot_schedule,
                   "draw the planned learning rate (and momentum) per update to this PNG and exit");
    cmd.add_flag("-m,--multirun", multirun_,
                 "sweep (Hydra's grammar): key=a,b,c, key=range(start,stop[,step]), key=choice(a,b); one fit run "
                 "per combination in a sweep folder (--run-dir), sweep.csv + a ranked table; --resume SWEEP_DIR "
                 "continues a stopped sweep");
    cmd.add_option("--jobs", jobs_, "with -m: runs at once (CPU threads split between them; one GPU each)")
        ->check(kCount);
  }

  int run() override {
    if (multirun_) return run_multirun();
    KG_CHECK(jobs_ == 1, UsageError, "--jobs is for sweeps: add -m");
    if (nproc_ > 1) {
      const auto env = environment();
      KG_CHECK(!env.count("WORLD_SIZE"), UsageError, "--nproc ", nproc_,
               " inside a launched job (WORLD_SIZE=", env.count("WORLD_SIZE") ? env.at("WORLD_SIZE") : "",
               "): use either torchrun or --nproc, not both");
      const auto [argc, argv] = process_args();
      return launch_local(nproc_, without_nproc(argc, argv));
    }
    install_signal_handlers();
    add_run_recipe();
    if (flags_.words.empty())
      throw UsageError("fit needs RECIPE.toml files (or --resume RUN_DIR, which reuses the run's recipe)");
    static_cast<session::Session&>(req_) = flags_.resolve("fit");
    req_.check_data = flags_.check_data;
    if (!weights_.empty()) req_.weights = {weights_};
    return jobs::run_fit(req_);
  }

 private:
  // --resume DIR without a recipe: the run's own resolved recipe (it holds every key, defaults included).
  void add_run_recipe() {
    if (req_.resume.empty() || req_.resume == "auto") return;
    req_.resume = flags_.run_folder(req_.resume);
    flags_.use_run_recipe(req_.resume);
  }

  int run_multirun() {
    KG_CHECK(nproc_ == 1, UsageError, "-m runs each sweep run as one process: --nproc is not supported with it");
    KG_CHECK(req_.plot_schedule.empty(), UsageError, "--plot-schedule draws one run's schedule: drop -m");
    KG_CHECK(!flags_.check_data, UsageError, "--check-data checks one recipe's data: drop -m");
    install_signal_handlers();
    SweepRequest r;
    r.words = flags_.words_with_flags();
    if (!weights_.empty()) r.run_flags = {"--weights", weights_};
    if (flags_.smoke) r.run_flags.push_back("--smoke");
    r.sweep_dir = flags_.run_dir;
    r.resume = req_.resume;
    KG_CHECK(r.resume != "auto", UsageError, "-m --resume takes the sweep folder: kgtrain fit -m --resume SWEEP_DIR");
    KG_CHECK(r.resume.empty() || flags_.words.empty(), UsageError,
             "-m --resume SWEEP_DIR reruns the sweep's own words (sweep.json): give no recipe or overrides");
    KG_CHECK(!r.resume.empty() || !flags_.words.empty(), UsageError, "fit -m needs RECIPE.toml files and overrides");
    r.jobs = jobs_;
    r.dry_run = flags_.dry_run;
    r.quiet = flags_.quiet;
    r.resolve = [this](const std::vector<std::string>& words) {
      RecipeFlags f = flags_;
      f.words = words;
      f.device.clear();
      f.seed = -1;
      f.run_dir.clear();
      return f.resolve("fit");
    };
    return run_sweep(r);
  }

  RecipeFlags flags_;
  jobs::FitRequest req_;
  bool multirun_ = false;
  int jobs_ = 1;
  std::string weights_;
  int nproc_ = 1;
};

}  // namespace

KG_COMMAND(FitCommand, "fit", 10, "train a model on a recipe (k-fold split, validation, checkpoints)");

}  // namespace kg::app
