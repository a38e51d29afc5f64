// What tta-predict and pseudo-label share: the ensemble's members (checkpoints, fit runs expanded to
// their folds, weights files) and the prediction of a table with one member and the tta.views, merged
// per member (tta.merge); members are merged by the caller with tta::merge_probs.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/tasks.h"
#include "data/table.h"
#include "model/model.h"
#include "session/session.h"

namespace kg::session {

struct Member {
  std::string name;  // what predicted: "RUN/fold_2/checkpoints/best/ema.safetensors"
  model::TensorMap weights;
  int64_t fold = -1;    // the fold the checkpoint trained for (-1: unknown / a weights file)
  std::string run_dir;  // --from-run: the run directory (folds.csv lives there)
};

struct Ensemble {
  std::vector<Member> members;
  data::ClassList classes;
};

// --checkpoint dirs, --from-run dirs (each fold's checkpoints/<tta.weights>; ema/swa from checkpoints/last)
// and --weights files. UsageError (exit 2) when none is given, when members disagree on the classes or the
// task, or when the recipe's data.task differs from the checkpoints'.
Ensemble collect_members(const Session& o, const ModelSources& models);

struct MemberPrediction {
  std::vector<std::string> view_labels;  // "identity", "hflip", "d4/rot90", "train_aug" ...
  std::vector<at::Tensor> view_probs;    // activated, [N, K] each
  at::Tensor probs;                      // the member's views merged (tta.merge)
  at::Tensor targets;                    // undefined when unlabeled
  std::vector<int64_t> rows;             // table row of each prediction
  int64_t images = 0;                    // images through the model (all views)
  double seconds = 0;
};

class EnsemblePredictor {
 public:
  EnsemblePredictor(const Session& o, const data::ClassList& classes, int64_t feature_dim);
  ~EnsemblePredictor();
  // `member`'s weights predict `rows` of `table` with every view; smoke runs stop after 2 batches per pass.
  MemberPrediction predict(const Member& member, const data::Table& table, const std::vector<int64_t>& rows);
  // Loads the member's weights into the model (exit 3 naming the tensors when they do not fit): dry runs.
  void check(const Member& member);
  const std::vector<std::string>& view_labels() const;
  Task task() const;
  std::string device_description() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> p_;
};

// Ensemble-level helpers.
at::Tensor merge_members(const std::vector<at::Tensor>& probs, const config::Recipe& recipe, Task task);

}  // namespace kg::session
