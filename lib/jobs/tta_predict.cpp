// `kgtrain tta-predict`: predict the test table with one or more checkpoints, average the class
// probabilities, write the submission (and optionally the probabilities); score when labels exist.
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <iostream>

#include "core/error.h"
#include "core/fs.h"
#include "data/loader.h"
#include "data/options.h"
#include "data/submission.h"
#include "data/table.h"
#include "device/device.h"
#include "jobs/job.h"
#include "metric/metric.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "train/checkpoint.h"
#include "train/engine.h"
#include "train/options.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kg::jobs {

int run_tta_predict(const JobOptions& o) {
  KG_CHECK(!o.checkpoints.empty(), UsageError, "tta-predict needs at least one --checkpoint DIR (e.g. RUN/checkpoints/best)");
  const auto& recipe = o.recipe;
  auto t0 = std::chrono::steady_clock::now();
  auto topt = train::load_train_options(recipe);
  auto dopt = data::load_data_options(recipe);
  auto dev = device::setup(device::load_options(recipe));
  const auto geom = data::geometry(dopt);

  // The class list travels with each checkpoint, so predictions use the training spelling.
  std::vector<train::Checkpoint> ckpts;
  for (auto& dir : o.checkpoints) ckpts.push_back(train::load_checkpoint(dir));
  data::ClassList classes = data::ClassList::from_json(ckpts[0].state.at("classes"));
  for (auto& c : ckpts) {
    auto other = data::ClassList::from_json(c.state.at("classes"));
    KG_CHECK(other.names == classes.names, UsageError, "checkpoints disagree on the classes: ", o.checkpoints[0], " has ",
             classes.size(), ", ", c.dir, " has ", other.size(), "; ensembles need the same classes");
  }
  KG_CHECK(classes.task == data::Task::multiclass, ConfigError, "tta-predict: checkpoints of a ", data::task_name(classes.task),
           " task cannot be predicted yet; only multiclass models train in this version");
  // Every test row needs a prediction: a bad test row is an error whatever data.on_bad_row says.
  dopt.on_bad_row = "error";
  data::Table test = data::load_split(dopt, data::Split::test, classes, /*scan=*/true,
                                      std::max<int>(1, static_cast<int>(dopt.num_workers)));
  log(o, "kgtrain tta-predict: " + dev.description + "; " + std::to_string(test.size()) + " rows from " + test.csv_path +
             "; " + std::to_string(ckpts.size()) + " checkpoint(s)");
  auto net = model::build(recipe, {geom.channels, classes.size()});
  for (auto& c : ckpts) model::load_state_dict(*net, c.weights, true, c.dir + "/model.safetensors");  // shape check up front
  if (o.dry_run) {
    log(o, "dry run: recipe valid, checkpoints match the model, every test image readable; nothing predicted");
    return kExitOk;
  }
  const std::string run_dir = prepare_run_dir(o);
  net->to(dev.device);

  data::Pipeline pipe(dopt.augment, geom, false, dopt.uint8_transfer);
  std::vector<int64_t> rows(static_cast<size_t>(test.size()));
  for (int64_t i = 0; i < test.size(); ++i) rows[static_cast<size_t>(i)] = i;
  const int64_t max_batches = o.smoke ? 2 : -1;
  at::Tensor sum;
  json per_ckpt = json::array();
  auto metric = metric::create(topt.metric, {classes.size()});
  int64_t predicted = 0;
  for (auto& c : ckpts) {
    model::load_state_dict(*net, c.weights, true, c.dir + "/model.safetensors");
    data::LoaderOptions lo{train::eval_batch_size(topt), false, false, static_cast<int>(dopt.num_workers),
                           static_cast<int>(dopt.prefetch), 0, 0, max_batches, nullptr,
                           dopt.pin_memory && dev.device.is_cuda()};
    data::Loader loader(test, rows, pipe, lo);
    auto pred = train::predict(*net, loader, dev.device, nullptr);
    predicted = pred.images;
    sum = sum.defined() ? sum + pred.probs : pred.probs;
    json entry = {{"checkpoint", c.dir}, {"images_per_s", pred.seconds > 0 ? pred.images / pred.seconds : 0.0}};
    if (pred.targets.defined()) {
      metric->reset();
      metric->update(pred.probs, pred.targets);
      entry[topt.metric] = metric->compute();
    }
    per_ckpt.push_back(entry);
  }
  at::Tensor probs = sum / static_cast<double>(ckpts.size());
  data::Table scored = test;
  if (predicted < test.size()) {  // smoke: only the predicted rows
    scored.rows.resize(static_cast<size_t>(predicted));
    if (scored.labeled()) scored.targets.resize(static_cast<size_t>(predicted));
  }
  json summary = {{"command", "tta-predict"}, {"run_dir", run_dir}, {"checkpoints", per_ckpt}, {"rows", predicted}};
  if (scored.labeled()) {
    metric->reset();
    metric->update(probs, torch::tensor(scored.targets));
    double v = metric->compute();
    summary["metric"] = {{"name", topt.metric}, {"value", v}};
    std::cout << topt.metric << " on " << test.csv_path << ": " << v << "\n";
  }
  std::string out = o.out.empty() ? (fs::path(run_dir) / "submission.csv").string() : o.out;
  data::DataOptions fmt = dopt;
  if (o.smoke) fmt.sample_submission.clear();  // a partial prediction cannot follow the full sample
  write_file_atomic(out, data::format_submission(fmt, scored, probs, classes));
  summary["submission"] = out;
  if (!o.probs.empty()) {
    write_file_atomic(o.probs, data::format_probabilities(dopt, scored, probs, classes));
    summary["probs"] = o.probs;
  }
  summary["status"] = "completed";
  summary["wall_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  write_summary(run_dir, summary);
  std::cout << "submission: " << out << " (" << predicted << " rows)\n";
  return kExitOk;
}

}  // namespace kg::jobs
