// One `kgtrain fit` run as an object, one method per idea: the preview (model, optimizer, plan lines;
// --plot-schedule), the run directory (fresh, or the run being resumed), the lr from the finder
// (optim.lr = "find"), each fold's training and out-of-fold predictions, and the finish (cv merge,
// --smoke predictions, summary.json). run_fit (jobs/fit.h) makes one and runs it.
#pragma once
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "jobs/fit.h"
#include "jobs/fit_resume.h"
#include "session/training.h"
#include "train/plan.h"

namespace kg::jobs {

class FitRun {
 public:
  // Resolves train.batch_size = "auto", then sets everything up (session::TrainingContext).
  explicit FitRun(const FitRequest& request);
  int run();

 private:
  struct FoldOutcome {
    std::string status;
    int signal = 0;
    nlohmann::json summary;
  };
  static FitRequest with_auto_batch(const FitRequest& request);
  double elapsed() const;
  void log(const std::string& line) const;
  // The model, optimizer and plan lines of the log; summary.json's "model" block. With --plot-schedule it
  // draws the plan and returns true (nothing else runs).
  bool preview();
  void plot_schedule(const train::Plan& plan) const;
  // The run directory: resumed (checked against the recipe and the split) or created (folds.csv, classes).
  void open_run_dir();
  void write_split_files() const;  // classes.json, folds.csv, bad_rows.csv
  // optim.lr = "find": the finder's lr (or the resumed run's) into the recipe.
  void lr_from_finder();
  FoldOutcome train_fold(size_t index, int64_t k);
  // Out-of-fold predictions of fold k with checkpoints/best (else the final weights): oof_fold.csv.
  void predict_oof(model::Network& net, const std::vector<int64_t>& valid_rows, int64_t k, const std::string& dir,
                   FoldOutcome& out);
  void smoke_predict();
  // samples.png in the fold's `dir`: the first training batch over `train_rows` (log.images; images only).
  void write_samples_png(const std::filesystem::path& dir, const std::vector<int64_t>& train_rows, int64_t k) const;
  // The checkpoint's "input": the image size, or the text columns and data.max_length.
  nlohmann::json input_json() const;
  int finish(double best_single);

  std::chrono::steady_clock::time_point t_start_;
  FitRequest o_;
  session::TrainingContext s_;
  // The recipe the folds train with: the context's, with optim.lr = "find" resolved by the finder (lr_from_finder).
  config::Recipe recipe_;
  bool writer_ = true;
  bool multi_ = false;
  bool resuming_ = false;
  ResumeTarget target_;
  ScratchDir scratch_;
  std::string run_dir_;
  nlohmann::json model_info_;
  nlohmann::json summary_;
};

}  // namespace kg::jobs
