#include "cli.h"

#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>

#include "build_info.h"
#include "cli_checks.h"
#include "config/registry.h"
#include "config/resolve.h"
#include "config/sections.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/stop.h"
#include "core/strings.h"
#include "data/idx_import.h"
#include "data/image_io.h"
#include "device/compat.h"
#include "device/device.h"
#include "device/distributed.h"
#include "device/math_libs.h"
#include "jobs/job.h"
#include "jobs/show.h"
#include "launch.h"
#include "test_hooks.h"

extern char** environ;
namespace fs = std::filesystem;

namespace kg::app {
namespace {

std::map<std::string, std::string> environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

// The shipped recipes/ folder: KGTRAIN_RECIPES, else beside the binary (build tree or install prefix).
std::string builtin_recipes_dir(const std::map<std::string, std::string>& env) {
  if (auto it = env.find("KGTRAIN_RECIPES"); it != env.end() && !it->second.empty()) return it->second;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (fs::path dir = exe.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
    if (fs::is_directory(dir / "recipes" / "env")) return (dir / "recipes").string();
    if (fs::is_directory(dir / "share" / "kgtrain" / "recipes"))
      return (dir / "share" / "kgtrain" / "recipes").string();
  }
  return "";
}

std::string version_text() {
  const std::string cv = data::opencv_version();
  std::string s =
      std::string("kgtrain ") + KGTRAIN_VERSION + "\nLibTorch " + compat::torch_version() + "\n" +
      (cv.empty()
           ? "OpenCV: not built (no image decoding, no resizing/colour/warp transforms, no PNG charts)"
           : "OpenCV " + cv + (data::can_decode_images() ? "" : " (no image codecs: PNG/JPEG decoding disabled)")) +
      "\n";
  std::string cuda = device::cuda_build_info();
  s += cuda.empty() ? "CUDA: not built (CPU-only LibTorch)\n" : cuda + "\n";
  s += device::math_libs_text();
  if (auto w = device::reference_blas_warning(); !w.empty()) s += w + "\n";
  return s;
}

struct Common {
  std::vector<std::string> words;  // recipes and overrides
  std::string run_dir, device;
  int64_t seed = -1;
  bool dry_run = false, smoke = false, quiet = false, check_data = false;
};

void add_common(CLI::App* cmd, Common& c, bool training, bool smoke = true) {
  auto* words = cmd->add_option("RECIPE", c.words,
                                "RECIPE.toml files, then overrides: key=value, +key=value, ~key, group=option");
  if (!training) words->required();
  cmd->add_option("--run-dir", c.run_dir, "write every output exactly into DIR");
  cmd->add_option("--device", c.device, "auto | cpu | cuda | cuda:N (same as device.name=...)");
  cmd->add_option("--seed", c.seed, "same as run.seed=N")->check(kCountOrZero);
  cmd->add_flag("--dry-run", c.dry_run,
                "resolve, validate, build every component, check the data, print the plan; no training");
  if (training) {
    cmd->add_flag("--smoke", c.smoke, "the whole recipe on 2 training, 2 validation and 2 prediction batches");
    cmd->add_flag("--check-data", c.check_data,
                  "load the table and decode every image with the loader's threads; list bad rows (exit 3 unless "
                  "data.on_bad_row = skip); no training");
  } else if (smoke)
    cmd->add_flag("--smoke", c.smoke, "predict only 2 batches");
  cmd->add_flag("--quiet,-q", c.quiet, "no progress output");
}

jobs::JobOptions resolve_job(const std::string& command, const Common& c) {
  config::ResolveInput in;
  for (auto& w : c.words) {
    bool is_file = ends_with(w, ".toml") && w.find('=') == std::string::npos && !starts_with(w, "~");
    if (is_file && !in.args.empty())
      throw UsageError("recipe file " + w + " comes after an override; give recipe files first, then overrides");
    (is_file ? in.recipe_files : in.args).push_back(w);
  }
  if (in.recipe_files.empty()) throw UsageError(command + " needs at least one RECIPE.toml before the overrides");
  if (!c.device.empty()) in.args.push_back("device.name=" + c.device);
  if (c.seed >= 0) in.args.push_back("run.seed=" + std::to_string(c.seed));
  in.environ = environment();
  in.builtin_recipes_dir = builtin_recipes_dir(in.environ);
  in.path_exists = [](const std::string& p) {
    std::error_code ec;
    return fs::exists(p, ec);
  };
  in.default_of_in_tree = &config::default_of;
  auto resolved = config::resolve(in);
  auto validated = config::validate(resolved.tree);
  for (auto& w : validated.warnings) std::cerr << "warning: " << w << "\n";
  jobs::JobOptions o;
  o.command = command;
  o.recipe = std::move(validated.tree);
  o.layers = resolved.layers;
  o.env_name = resolved.env_name + (resolved.env_file.empty() ? "" : " (" + resolved.env_file + ")");
  o.run_dir = c.run_dir;
  o.dry_run = c.dry_run;
  o.check_data = c.check_data;
  o.smoke = c.smoke;
  o.quiet = c.quiet;
  o.tty = ::isatty(STDERR_FILENO);
  if (command == "fit") {
    o.dist = device::dist_env_from(in.environ);
    if (o.dist.active() && !o.dist.writer()) o.quiet = true;  // rank 0 alone reports progress
  }
  read_test_hooks(in.environ, o);
  return o;
}

void on_signal(int sig) { stop_signal().store(sig); }

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;  // a second Ctrl-C kills at once
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int dispatch(int argc, char** argv) {
  CLI::App app{"kgtrain: train, predict and ensemble image models for Kaggle competitions"};
  app.require_subcommand(0, 1);
  bool version = false;
  app.add_flag("--version", version, "print kgtrain, LibTorch, OpenCV, CUDA, BLAS/LAPACK and oneDNN versions");

  Common fit_c, pred_c, show_c;
  auto* fit = app.add_subcommand("fit", "train a model on a recipe (k-fold split, validation, checkpoints)");
  add_common(fit, fit_c, true);
  std::string fit_weights, fit_resume, fit_plot;
  fit->add_option("--weights", fit_weights,
                  "initial weights (safetensors, timm/torchvision names), as model.pretrained: "
                  "a head of another shape is re-initialised");
  fit->add_option("--resume", fit_resume,
                  "auto (the newest unfinished run of run.name, or --run-dir), a run directory, or a "
                  "checkpoint directory: continue exactly where it stopped (RECIPE optional: the "
                  "run's recipe.toml is used when none is given)");
  int fit_nproc = 1;
  fit->add_option("--nproc", fit_nproc,
                  "train on N processes of this machine (data parallel, torch.distributed: Gloo on the "
                  "CPU, NCCL on GPUs; one GPU each), as torchrun --no-python --nproc-per-node N would")
      ->check(kCount);
  fit->add_option("--plot-schedule", fit_plot,
                  "draw the planned learning rate (and momentum) per update to this PNG and exit");

  Common lrf_c;
  auto* lrf = app.add_subcommand("lr-find",
                                 "fastai's learning-rate finder on the recipe's training stream: an exponential "
                                 "lr sweep, the smoothed loss curve (lr_find.png) and four suggestions");
  add_common(lrf, lrf_c, false, false);
  lrf->add_flag("--smoke", lrf_c.smoke, "at most 20 sweep updates from 2 updates' worth of batches per epoch");

  auto* merge = app.add_subcommand("merge-oof",
                                   "merge out-of-fold predictions of fold runs (fit cv.fold=k on several "
                                   "machines, or cv.fold=all) into oof.csv + cv.json");
  std::vector<std::string> merge_dirs;
  std::string merge_out;
  merge->add_option("dirs", merge_dirs, "run directories or fold directories holding oof_fold.csv + fold.json")
      ->required();
  merge->add_option("--out", merge_out, "folder for oof.csv and cv.json")->required();

  auto* pred = app.add_subcommand("tta-predict", "predict the test table with checkpoints, write the submission");
  add_common(pred, pred_c, false);
  std::vector<std::string> checkpoints;
  std::string out, probs;
  std::vector<std::string> pred_weights;
  pred->add_option("--checkpoint", checkpoints, "checkpoint directory (repeat to ensemble), e.g. RUN/checkpoints/best");
  pred->add_option("--weights", pred_weights,
                   "a safetensors weights file for the recipe's model and the classes of its "
                   "data (repeat to ensemble; mixes with --checkpoint)");
  pred->add_option("--out", out, "submission CSV path (default RUN_DIR/submission.csv)");
  pred->add_option("--probs", probs, "also write per-class probabilities to this CSV");
  std::vector<std::string> pred_runs;
  bool pred_oof = false;
  pred->add_option("--from-run", pred_runs,
                   "a fit run directory: every fold's checkpoint (tta.weights picks best, last, "
                   "ema or swa); repeat to ensemble runs");
  pred->add_flag("--oof", pred_oof,
                 "with --from-run: predict each fold's validation rows with its own model and the views; "
                 "writes oof_tta.csv and cv_tta.json (TTA measured on CV)");

  Common pl_c;
  auto* pl = app.add_subcommand("pseudo-label",
                                "label the confident test rows with the ensemble and TTA views; writes "
                                "pseudo.csv and a recipe layer pseudo.toml to retrain with");
  add_common(pl, pl_c, false);
  std::vector<std::string> pl_ckpts, pl_runs;
  std::string pl_out;
  int64_t pl_rounds = 0;
  pl->add_option("--checkpoint", pl_ckpts, "checkpoint directory (repeat to ensemble)");
  pl->add_option("--from-run", pl_runs, "a fit run directory: every fold's checkpoint (repeat to ensemble runs)");
  pl->add_option("--out", pl_out, "output folder for pseudo.csv, pseudo.toml and the rounds")->required();
  pl->add_option("--rounds", pl_rounds,
                 "predict -> select -> retrain cycles: each retrains the recipe with the pseudo rows "
                 "(OUT/round_<r>/fit), reports its CV score and predicts the next round with it "
                 "(default 0: predict and select only)")
      ->check(kCountOrZero);

  Common pack_c;
  auto* pack =
      app.add_subcommand("pack", "pack the recipe's training/test table and its images into one memory-mapped file");
  add_common(pack, pack_c, false, false);
  std::string pack_split = "train", pack_out;
  bool pack_raw = false;
  std::vector<int64_t> pack_size;
  int pack_threads = 0;
  pack->add_option("--split", pack_split, "train | test | both (default train)");
  pack->add_option("--out", pack_out, "pack file (default DATA_ROOT/<data.train_pack or data.test_pack>)");
  pack->add_flag("--raw", pack_raw, "store decoded pixels resized to --size (no decoding at training time)");
  pack->add_option("--size", pack_size, "--raw: H W of the stored pixels (default data.image_size)")->expected(2);
  pack->add_option("--threads", pack_threads, "decode threads (default: all cores)")->check(kCountOrZero);

  Common bench_c;
  auto* bench = app.add_subcommand("bench-data",
                                   "time the recipe's input pipeline without the model: decode, "
                                   "decode + augmentation, the loader end to end");
  add_common(bench, bench_c, false, false);
  std::string bench_batches = "20", bench_split = "train", bench_json;
  std::vector<int> bench_threads;
  std::vector<std::string> bench_sections{"decode", "augment", "loader"};
  double bench_rate = 0;
  int bench_repeats = 3;
  bench->add_option("--batches", bench_batches,
                    "loader batches timed after one warm-up batch, or \"all\": one whole "
                    "epoch timed from the start (default 20)");
  bench->add_option("--threads", bench_threads, "loader worker counts, e.g. 0,1,4 (default 0,1,data.num_workers)")
      ->delimiter(',')
      ->check(kCountOrZero);
  bench
      ->add_option("--split", bench_split,
                   "train (training folds, training augmentation) | valid (held-out fold, "
                   "evaluation transforms); default train")
      ->check(CLI::IsMember({"train", "valid"}));
  bench->add_option("--json", bench_json, "also write the report as JSON (schema_version 1) to FILE");
  bench
      ->add_option("--compute-rate", bench_rate,
                   "the model's training img/s (fit's train_images_per_s): "
                   "say whether the loader is the bottleneck")
      ->check(kPositive);
  bench->add_option("--sections", bench_sections, "what to time: decode,augment,loader (default all three)")
      ->delimiter(',')
      ->check(CLI::IsMember({"decode", "augment", "loader"}));
  bench->add_option("--repeats", bench_repeats, "loader repeats, the median reported (default 3)")->check(kCount);

  auto* show =
      app.add_subcommand("show", "print the resolved recipe with the origin of each key, or the key reference");
  bool list = false, markdown = false;
  show->add_option("RECIPE", show_c.words, "RECIPE.toml files and overrides");
  show->add_option("--device", show_c.device, "same as device.name=...");
  show->add_option("--seed", show_c.seed, "same as run.seed=N")->check(kCountOrZero);
  show->add_flag("--list", list, "list every section and registered component with keys and defaults");
  show->add_flag("--markdown", markdown, "with --list: Markdown (the README's recipe reference)");
  bool show_model = false, show_json = false;
  show->add_flag("--model", show_model,
                 "build the recipe's model for its data (data.num_classes when the data is "
                 "absent): summary (parameters, GFLOPs, training memory) and layer groups");
  show->add_flag("--json", show_json, "with --model: JSON (schema_version 1)");

  Common bm_c;
  auto* bm = app.add_subcommand("bench-model",
                                "time training steps (forward, backward, AdamW) of the recipe's model or "
                                "others on synthetic input: NCHW vs channels_last, grad checkpointing");
  add_common(bm, bm_c, false, false);
  jobs::JobOptions bm_o;
  bm->add_option("--models", bm_o.bench_model_models,
                 "model names, e.g. resnet18,efficientnet_b0 (default: the recipe's model)")
      ->delimiter(',');
  bm->add_option("--size", bm_o.bench_model_size, "square input side in pixels (default data.image_size)")
      ->check(kCount);
  bm->add_option("--batch", bm_o.bench_model_batch, "images per step (default train.batch_size)")->check(kCount);
  bm->add_option("--steps", bm_o.bench_model_steps, "timed steps per configuration, the median reported (default 5)")
      ->check(kCount);
  bm->add_option("--warmup", bm_o.bench_model_warmup, "untimed steps before them (default 1)")->check(kCountOrZero);
  bm->add_option("--layouts", bm_o.bench_model_layouts, "memory layouts: nchw,channels_last (default both)")
      ->delimiter(',')
      ->check(CLI::IsMember({"nchw", "channels_last"}));
  bm->add_flag(
      "--grad-checkpointing", bm_o.bench_model_grad_checkpointing,
      "also time each configuration with gradient checkpointing, with the activation memory held after forward");
  bm->add_option("--json", bm_o.bench_model_json, "also write the report as JSON (schema_version 1) to FILE");

  Common bn_c;
  auto* bn = app.add_subcommand("bench",
                                "time the recipe's training as fit runs it: decode + augment, loader, copy, forward, "
                                "backward, optimizer step, training and evaluation steps, peak memory, TFLOP/s, the "
                                "bottleneck; --ablate times toggles one at a time, --suggest combines the faster ones");
  add_common(bn, bn_c, false, false);
  jobs::JobOptions bn_o;
  bn->add_option("--ablate", bn_o.bench_ablate,
                 "toggles to time one at a time: precision, channels_last, workers, accum, "
                 "tf32, cudnn_benchmark, cuda_graphs, grad_checkpointing, cache, eval_batch")
      ->delimiter(',');
  bn->add_flag("--suggest", bn_o.bench_suggest,
               "the fastest combination of the toggles faster by more than 3% (timed), as "
               "overrides to paste (every toggle when --ablate is not given)");
  bn->add_option("--json", bn_o.bench_json, "report path (default RUN_DIR/bench.json)");
  bn->add_option("--steps", bn_o.bench_steps, "timed steps per window (default 20)")->check(kCount);
  bn->add_option("--warmup", bn_o.bench_warmup, "untimed steps first (default 3)")->check(kCountOrZero);
  bn->add_option("--repeats", bn_o.bench_repeats, "timed windows per phase, the median reported (default 3)")
      ->check(kCount);

  auto* imp =
      app.add_subcommand("import-idx", "convert MNIST-format IDX files (.gz or raw) into the Kaggle CSV + PNG layout");
  data::IdxImportOptions io;
  imp->add_option("--train-images", io.train_images, "training images IDX file")->required();
  imp->add_option("--train-labels", io.train_labels, "training labels IDX file")->required();
  imp->add_option("--test-images", io.test_images, "test images IDX file")->required();
  imp->add_option("--test-labels", io.test_labels, "test labels IDX file")->required();
  imp->add_option("--out", io.out_dir, "output folder (DATA)")->required();
  imp->add_option("--threads", io.threads, "PNG encoding threads")->check(kCount);
  imp->add_flag("--packs", io.packs,
                "write raw packs DATA/train.kgpack + DATA/test.kgpack (tables inside) instead of PNG folders and "
                "train/test CSVs: no decoding when training");

  one_value_per_flag(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitConfig;
  }
  if (version) {
    std::cout << version_text();
    return kExitOk;
  }
  RegistryBase::check_all();
  config::check_sections();
  if (*fit) {
    if (fit_nproc > 1) {
      const auto env = environment();
      KG_CHECK(!env.count("WORLD_SIZE"), UsageError, "--nproc ", fit_nproc,
               " inside a launched job (WORLD_SIZE=", env.at("WORLD_SIZE"),
               "): use either torchrun or --nproc, not both");
      return launch_local(fit_nproc, without_nproc(argc, argv));
    }
    install_signal_handlers();
    bool has_recipe = false;
    for (auto& w : fit_c.words) has_recipe = has_recipe || (ends_with(w, ".toml") && w.find('=') == std::string::npos);
    if (!has_recipe && !fit_resume.empty() && fit_resume != "auto") {
      // The run's own resolved recipe (it holds every key, defaults included).
      fs::path p(fit_resume);
      for (int up = 0; up < 4 && !fs::exists(p / "recipe.toml"); ++up) p = p.parent_path();
      if (fs::exists(p / "recipe.toml")) fit_c.words.insert(fit_c.words.begin(), (p / "recipe.toml").string());
    }
    if (fit_c.words.empty())
      throw UsageError("fit needs RECIPE.toml files (or --resume RUN_DIR, which reuses the run's recipe)");
    auto o = resolve_job("fit", fit_c);
    if (!fit_weights.empty()) o.weights = {fit_weights};
    o.resume = fit_resume;
    o.plot_schedule = fit_plot;
    if (!fit_resume.empty() && fit_resume != "auto" && o.run_dir.empty()) o.run_dir = "";
    return jobs::run_fit(o);
  }
  if (*lrf) {
    install_signal_handlers();
    return jobs::run_lr_find(resolve_job("lr-find", lrf_c));
  }
  if (*merge) return jobs::run_merge_oof(merge_dirs, merge_out);
  if (*pred) {
    install_signal_handlers();
    auto o = resolve_job("tta-predict", pred_c);
    o.checkpoints = checkpoints;
    o.weights = pred_weights;
    o.out = out;
    o.probs = probs;
    o.from_runs = pred_runs;
    o.oof = pred_oof;
    return jobs::run_tta_predict(o);
  }
  if (*pl) {
    install_signal_handlers();
    auto o = resolve_job("pseudo-label", pl_c);
    o.checkpoints = pl_ckpts;
    o.from_runs = pl_runs;
    o.out = pl_out;
    o.rounds = pl_rounds;
    return jobs::run_pseudo_label(o);
  }
  if (*pack) {
    auto o = resolve_job("pack", pack_c);
    o.pack_split = pack_split;
    o.out = pack_out;
    o.pack_raw = pack_raw;
    if (!pack_size.empty()) {
      if (pack_size[0] <= 0 || pack_size[1] <= 0) throw UsageError("--size takes two positive integers H W");
      if (!pack_raw)
        throw UsageError(
            "--size H W sets the size of --raw packs' pixels; without --raw the image files are stored as they are");
      o.pack_height = pack_size[0];
      o.pack_width = pack_size[1];
    }
    o.pack_threads = pack_threads;
    return jobs::run_pack(o);
  }
  if (*bench) {
    auto o = resolve_job("bench-data", bench_c);
    if (bench_batches == "all")
      o.bench_batches = -1;
    else {
      size_t used = 0;
      try {
        o.bench_batches = std::stoll(bench_batches, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != bench_batches.size() || o.bench_batches <= 0)
        throw UsageError("--batches takes a positive count or \"all\", got \"" + bench_batches + "\"");
    }
    o.bench_threads = bench_threads;
    o.bench_split = bench_split;
    o.bench_json = bench_json;
    o.bench_compute_rate = bench_rate;
    o.bench_sections = bench_sections;
    o.bench_repeats = bench_repeats;
    return jobs::run_bench_data(o);
  }
  if (*bm) {
    auto o = resolve_job("bench-model", bm_c);
    o.bench_model_models = bm_o.bench_model_models;
    o.bench_model_size = bm_o.bench_model_size;
    o.bench_model_batch = bm_o.bench_model_batch;
    o.bench_model_steps = bm_o.bench_model_steps;
    o.bench_model_warmup = bm_o.bench_model_warmup;
    o.bench_model_layouts = bm_o.bench_model_layouts;
    o.bench_model_grad_checkpointing = bm_o.bench_model_grad_checkpointing;
    o.bench_model_json = bm_o.bench_model_json;
    return jobs::run_bench_model(o);
  }
  if (*bn) {
    auto o = resolve_job("bench", bn_c);
    o.bench_words = bn_c.words;
    if (!bn_c.device.empty()) o.bench_words.push_back("device.name=" + bn_c.device);
    if (bn_c.seed >= 0) o.bench_words.push_back("run.seed=" + std::to_string(bn_c.seed));
    o.bench_ablate = bn_o.bench_ablate;
    o.bench_suggest = bn_o.bench_suggest;
    o.bench_json = bn_o.bench_json;
    o.bench_steps = bn_o.bench_steps;
    o.bench_warmup = bn_o.bench_warmup;
    o.bench_repeats = bn_o.bench_repeats;
    return jobs::run_bench(o);
  }
  if (*show) {
    if (show_model) {
      if (show_c.words.empty()) throw UsageError("show --model needs RECIPE.toml files");
      std::cout << jobs::show_model(resolve_job("show", show_c), show_json);
      return kExitOk;
    }
    if (show_json) throw UsageError("--json goes with show --model");
    if (list) {
      std::cout << jobs::reference(markdown);
      return kExitOk;
    }
    if (show_c.words.empty()) throw UsageError("show needs RECIPE.toml files (or --list)");
    std::cout << jobs::show_recipe(resolve_job("show", show_c));
    return kExitOk;
  }
  if (*imp) {
    auto r = data::import_idx(io);
    std::cout << "imported " << r.train << " training and " << r.test << " test images (" << r.height << "x" << r.width
              << ") into " << io.out_dir << "\n";
    return kExitOk;
  }
  std::cout << app.help();
  return kExitConfig;
}

}  // namespace

// "[rank 1/2] " in a multi-process job, so each line says which process failed.
std::string rank_prefix() {
  const char* rank = std::getenv("RANK");
  const char* world = std::getenv("WORLD_SIZE");
  if (!rank || !world || std::string(world).empty() || std::string(world) == "1") return "";
  return std::string("[rank ") + rank + "/" + world + "] ";
}

int run(int argc, char** argv) {
  const std::string who = rank_prefix();
  try {
    return dispatch(argc, argv);
  } catch (const Interrupted& e) {
    // Rank 0 says where the run is saved; the other ranks' outputs were scratch.
    const char* rank = std::getenv("RANK");
    if (who.empty() || !rank || std::string(rank) == "0") std::cerr << who << "error: " << e.what() << "\n";
    return e.exit_code();
  } catch (const Error& e) {
    std::cerr << who << "error: " << e.what() << "\n";
    return e.exit_code();
  } catch (const c10::Error& e) {
    std::string msg = e.what_without_backtrace();
    bool oom = msg.find("out of memory") != std::string::npos;
    std::cerr << who << "error: " << (oom ? "out of memory: " : "LibTorch runtime error: ") << msg << "\n";
    return kExitDevice;
  } catch (const std::bad_alloc&) {
    std::cerr << who << "error: out of host memory\n";
    return kExitDevice;
  } catch (const std::filesystem::filesystem_error& e) {  // a path the OS refused (a file in the way, permissions)
    std::cerr << who << "error: " << e.what() << "\n";
    return kExitData;
  } catch (const std::exception& e) {
    std::cerr << who << "internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace kg::app
