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
#include "jobs/model_setup.h"
#include "metric/metric.h"
#include "metric/metric_set.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "model/weights.h"
#include "train/checkpoint.h"
#include "train/engine.h"
#include "train/options.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kg::jobs {

int run_tta_predict(const JobOptions& o) {
  KG_CHECK(!o.checkpoints.empty() || !o.weights.empty(), UsageError,
           "tta-predict needs at least one --checkpoint DIR (e.g. RUN/checkpoints/best) or --weights FILE.safetensors");
  const auto& recipe = o.recipe;
  auto t0 = std::chrono::steady_clock::now();
  auto topt = train::load_train_options(recipe);
  auto dopt = data::load_data_options(recipe);
  auto dev = device::setup(device::load_options(recipe));
  const auto geom = data::geometry(dopt);

  // Each model to average: a kgtrain checkpoint (weights + class list) or a bare weights file, which
  // uses the recipe's model and the class list of the recipe's data.
  struct Source {
    std::string name;
    model::TensorMap weights;
  };
  std::vector<Source> sources;
  data::ClassList classes;
  bool have_classes = false;
  for (auto& dir : o.checkpoints) {
    auto c = train::load_checkpoint(dir);
    auto cl = data::ClassList::from_json(c.state.at("classes"));
    if (!have_classes) classes = cl, have_classes = true;
    KG_CHECK(cl.names == classes.names, UsageError, "checkpoints disagree on the classes: ", o.checkpoints[0], " has ",
             classes.size(), ", ", c.dir, " has ", cl.size(), "; ensembles need the same classes");
    sources.push_back({c.dir + "/model.safetensors", std::move(c.weights)});
  }
  if (!o.weights.empty()) {
    auto cl = data::infer_classes(dopt);
    if (have_classes)
      KG_CHECK(cl.names == classes.names, UsageError, "--weights use the recipe's classes (", cl.size(),
               ") but the checkpoints have ", classes.size(), "; ensembles need the same classes");
    classes = cl;
    for (auto& f : o.weights) sources.push_back({f, model::read_safetensors(f)});
  }
  KG_CHECK(classes.task == data::Task::multiclass, ConfigError, "tta-predict: checkpoints of a ", data::task_name(classes.task),
           " task cannot be predicted yet; only multiclass models train in this version");
  // Every test row needs a prediction: a bad test row is an error whatever data.on_bad_row says.
  dopt.on_bad_row = "error";
  data::Table test = data::load_split(dopt, data::Split::test, classes, /*scan=*/true,
                                      std::max<int>(1, static_cast<int>(dopt.num_workers)));
  log(o, "kgtrain tta-predict: " + dev.description + "; " + std::to_string(test.size()) + " rows from " + test.csv_path +
             "; " + std::to_string(sources.size()) + " model(s)");
  auto net = model::build(recipe, model_context(geom, classes, test.feature_dim));
  // Every source must fit the model exactly (head included) before anything is predicted.
  const model::LoadPolicy exact{/*strict=*/true, /*reinit_head=*/false};
  for (auto& src : sources) model::load_weights(*net, src.weights, exact, src.name);
  if (o.dry_run) {
    log(o, "dry run: recipe valid, checkpoints match the model, every test image readable; nothing predicted");
    return kExitOk;
  }
  const std::string run_dir = prepare_run_dir(o);
  net->to(dev.device);
  if (dev.channels_last) net->set_channels_last(true);

  data::Pipeline pipe(dopt.augment, geom, false, dopt.uint8_transfer);
  std::vector<int64_t> rows(static_cast<size_t>(test.size()));
  for (int64_t i = 0; i < test.size(); ++i) rows[static_cast<size_t>(i)] = i;
  const int64_t max_batches = o.smoke ? 2 : -1;
  at::Tensor sum;
  json per_ckpt = json::array();
  const metric::MetricSet metrics(recipe, data::task_name(classes.task), classes.outputs());
  int64_t predicted = 0;
  for (auto& src : sources) {
    model::load_weights(*net, src.weights, exact, src.name);
    data::LoaderOptions lo{train::eval_batch_size(topt), false, false, static_cast<int>(dopt.num_workers),
                           static_cast<int>(dopt.prefetch), 0, 0, max_batches, nullptr,
                           dopt.pin_memory && dev.device.is_cuda()};
    data::Loader loader(test, rows, pipe, lo);
    auto pred = train::predict(*net, loader, dev.device, nullptr);
    predicted = pred.images;
    sum = sum.defined() ? sum + pred.probs : pred.probs;
    json entry = {{"weights", src.name}, {"images_per_s", pred.seconds > 0 ? pred.images / pred.seconds : 0.0}};
    if (pred.targets.defined())
      for (auto& [name, v] : metrics.compute(pred.probs, pred.targets)) entry[name] = v;
    per_ckpt.push_back(entry);
  }
  at::Tensor probs = sum / static_cast<double>(sources.size());
  data::Table scored = test;
  if (predicted < test.size()) {  // smoke: only the predicted rows
    scored.rows.resize(static_cast<size_t>(predicted));
    if (scored.labeled()) scored.targets.resize(static_cast<size_t>(predicted));
  }
  json summary = {{"command", "tta-predict"}, {"run_dir", run_dir}, {"models", per_ckpt}, {"rows", predicted}};
  if (scored.labeled()) {
    auto values = metrics.compute(probs, torch::tensor(scored.targets));
    json all = json::object();
    for (auto& [name, v] : values) all[name] = v;
    const std::string name = metrics.names().front();
    summary["metric"] = {{"name", name}, {"value", values.at(name)}};
    summary["metrics"] = all;
    for (auto& n : metrics.names()) std::cout << n << " on " << test.csv_path << ": " << values.at(n) << "\n";
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
