#include "session/ensemble.h"

#include <torch/torch.h>

#include <filesystem>

#include "core/error.h"
#include "core/run_lock.h"
#include "core/strings.h"
#include "data/loader.h"
#include "data/options.h"
#include "device/device.h"
#include "metric/metric.h"
#include "model/weights/safetensors.h"
#include "model/weights/weights.h"
#include "session/model_input.h"
#include "session/modality.h"
#include "train/checkpoint.h"
#include "train/engine.h"
#include "train/options.h"
#include "tta/merge.h"
#include "tta/view.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kg::session {
namespace {

// The weights tta.weights names inside one checkpoint directory.
Member member_of(const std::string& dir, const std::string& which, data::ClassList& classes, bool& have_classes) {
  auto c = train::load_checkpoint(dir);
  auto cl = data::ClassList::from_json(c.state.at("classes"));
  if (!have_classes) {
    classes = cl;
    have_classes = true;
  }
  KG_CHECK(cl.task == classes.task, UsageError, "checkpoints disagree on the task: ", c.dir, " is ",
           data::task_name(cl.task), ", the first is ", data::task_name(classes.task),
           "; an ensemble predicts one task");
  KG_CHECK(cl.names == classes.names, UsageError, "checkpoints disagree on the classes: ", c.dir, " has ", cl.size(),
           " (", join(cl.names, ", "), "), the first has ", classes.size(), " (", join(classes.names, ", "),
           "); an ensemble needs the same classes");
  Member m;
  m.fold = c.state.value("fold", int64_t{-1});
  if (which == "ema" || which == "swa") {
    auto it = c.extra_weights.find(which);
    KG_CHECK(it != c.extra_weights.end(), UsageError, "tta.weights = \"", which, "\" but ", c.dir, " holds no ", which,
             " weights (train with [", which, "] enabled = true, or use tta.weights = \"best\")");
    m.weights = std::move(it->second);
    m.name = c.dir + "/" + which + ".safetensors";
  } else {
    m.weights = std::move(c.weights);
    m.name = c.dir + "/model.safetensors";
  }
  return m;
}

// A fit run's checkpoint directories: one per fold (fold_<k>/checkpoints/...) or the run's own.
std::vector<std::string> run_checkpoints(const std::string& run, const std::string& which) {
  KG_CHECK(fs::is_directory(run), UsageError, "--from-run ", run, ": no such directory");
  // An unfinished fit (interrupted, or killed before its summary) has folds partly trained or missing.
  const std::string status = run_status(run);
  KG_CHECK(status == "completed", UsageError, "--from-run ", run, ": the fit did not finish (",
           status.empty() ? std::string("no summary.json: killed, or still running")
                          : "summary.json status \"" + status + "\"",
           "), so some of its models are partly trained or missing; finish it first: kgtrain fit --resume ", run);
  std::vector<fs::path> dirs;
  for (auto& e : fs::directory_iterator(run))
    if (e.is_directory() && starts_with(e.path().filename().string(), "fold_") && fs::exists(e.path() / "checkpoints"))
      dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end(), [](const fs::path& a, const fs::path& b) {
    auto k = [](const fs::path& p) { return std::atoll(p.filename().string().substr(5).c_str()); };
    return k(a) < k(b);
  });
  if (dirs.empty()) dirs.push_back(run);
  std::vector<std::string> out;
  const std::string sub = which == "best" ? "best" : "last";  // ema / swa weights live in checkpoints/last
  for (auto& d : dirs) {
    fs::path c = d / "checkpoints" / sub;
    if (sub == "best" && !fs::exists(c)) c = d / "checkpoints" / "last";  // no validation, no best: its final weights
    KG_CHECK(fs::exists(c), UsageError, "--from-run ", run, ": ", (d / "checkpoints").string(), " has no ", sub,
             " checkpoint (did the fit finish? kgtrain fit ... --resume ", run, ")");
    out.push_back(c.string());
  }
  return out;
}

}  // namespace

Ensemble collect_members(const Session& o, const ModelSources& m) {
  KG_CHECK(!m.checkpoints.empty() || !m.weights.empty() || !m.from_runs.empty(), UsageError, o.command,
           " needs --from-run RUN_DIR, --checkpoint DIR (e.g. RUN/checkpoints/best) or --weights FILE.safetensors");
  const auto topt = o.recipe.get<tta::TtaOptions>();
  Ensemble e;
  bool have = false;
  for (auto& run : m.from_runs) {
    // Read only what a finished (or stopped) run holds: refused while a process still writes it.
    if (std::filesystem::is_directory(run)) lock_run_dir(run, o.command, LockMode::shared);
    for (auto& dir : run_checkpoints(run, topt.weights)) {
      auto member = member_of(dir, topt.weights, e.classes, have);
      member.run_dir = run;
      e.members.push_back(std::move(member));
    }
  }
  for (auto& dir : m.checkpoints) e.members.push_back(member_of(dir, topt.weights, e.classes, have));
  if (!m.weights.empty()) {
    auto cl = data::infer_classes(o.recipe.get<data::DataOptions>());
    KG_CHECK(!have || (cl.names == e.classes.names && cl.task == e.classes.task), UsageError,
             "--weights use the recipe's classes (", cl.size(), ") but the checkpoints have ", e.classes.size(),
             "; an ensemble needs the same classes");
    e.classes = cl;
    for (auto& f : m.weights) {
      auto w = model::read_weights_for(f, model::model_name(o.recipe));
      e.members.push_back({w.source, std::move(w.tensors), -1, ""});
    }
  }
  const auto dopt = o.recipe.get<data::DataOptions>();
  KG_CHECK(dopt.task == e.classes.task, UsageError, "the checkpoints predict a ", data::task_name(e.classes.task),
           " task but the recipe says data.task = \"", data::task_name(dopt.task),
           "\"; use the recipe the checkpoints were trained with");
  return e;
}

struct EnsemblePredictor::Impl {
  const Session& o;
  data::ClassList classes;
  data::DataOptions dopt;
  train::TrainOptions topt;
  tta::TtaOptions tta;
  device::DeviceInfo dev;
  data::ImageGeometry geom;
  Task task = Task::multiclass;
  const Modality& modality;
  std::shared_ptr<model::Network> net;
  std::vector<tta::ViewPtr> views;
  std::vector<tta::SubView> subs;
  std::vector<std::string> labels;  // reported views: batch sub-views, then one per train_aug entry
  std::unique_ptr<data::Pipeline> eval_pipe, train_pipe;
  uint64_t seed = 0;
  // data.cache = "ram" (or "device"): each image is decoded once for every member, view pass and train_aug pass.
  std::unique_ptr<data::ImageCache> cache;
  const data::Table* cache_table = nullptr;  // the cache's keys are this table's rows
  // The modality's batches of the table predicted (text's tokens: made at its first member, kept for the others).
  std::unique_ptr<data::Collator> collator;
  const data::Table* collator_table = nullptr;

  Impl(const Session& jo, const data::ClassList& cl, int64_t feature_dim)
      : o(jo),
        classes(cl),
        dopt(jo.recipe.get<data::DataOptions>()),
        topt(jo.recipe.get<train::TrainOptions>()),
        tta(jo.recipe.get<tta::TtaOptions>()),
        dev(device::setup(jo.recipe.get<device::DeviceOptions>())),
        geom(data::geometry(dopt)),
        task(cl.task),
        modality(modality_of(dopt)) {
    seed = static_cast<uint64_t>(jo.recipe.get<train::RunOptions>().seed);
    modality.check(jo.recipe, jo.command);
    net = model::build(jo.recipe,
                       model_context(geom, classes, feature_dim, dopt.target_transform, modality.seq_len(dopt)));
    net->to(dev.device);
    if (dev.channels_last) net->set_channels_last(true);
    views = modality.tta_views(jo.recipe, geom);
    subs = tta::expand(views);
    bool aug = false;
    for (auto& s : subs) {
      if (views[s.view]->uses_train_pipeline())
        aug = true;
      else
        labels.push_back(s.label);
    }
    for (size_t v = 0; v < views.size(); ++v)
      if (views[v]->uses_train_pipeline()) labels.push_back(views[v]->name() + (v ? "#" + std::to_string(v) : ""));
    eval_pipe = std::make_unique<data::Pipeline>(dopt.augment, geom, false, dopt.uint8_transfer, dopt.reduced_decode);
    if (aug)
      train_pipe = std::make_unique<data::Pipeline>(dopt.augment, geom, true, dopt.uint8_transfer, dopt.reduced_decode);
  }

  data::LoaderOptions loader_options(int64_t epoch, uint64_t s) const {
    data::LoaderOptions lo{train::eval_batch_size(topt),
                           false,
                           false,
                           static_cast<int>(dopt.num_workers),
                           static_cast<int>(dopt.prefetch),
                           s,
                           epoch,
                           o.smoke ? 2 : -1,
                           cache.get(),
                           dopt.pin_memory && dev.device.is_cuda()};
    lo.collator = collator.get();
    return lo;
  }

  // A table the modality batches (text), predicted in its order (longest rows first: batches of similar length pad
  // little) and put back in `rows` order. Its views are the identity.
  MemberPrediction predict_collated(const data::Table& table, const std::vector<int64_t>& rows) {
    if (collator_table != &table) {
      collator = modality.collator(o.recipe, table, std::max<int>(1, static_cast<int>(dopt.num_workers)));
      collator_table = &table;
      o.log("  " + collator->describe());
    }
    std::vector<size_t> by_length = collator->prediction_order(rows);
    if (o.smoke)  // a smoke run predicts the first 2 batches of `rows` as they are
      for (size_t i = 0; i < rows.size(); ++i) by_length[i] = i;
    std::vector<int64_t> sorted(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) sorted[i] = rows[by_length[i]];
    data::Loader loader(table, sorted, *eval_pipe, loader_options(0, seed));
    auto vo = train::predict_views(*net, loader, dev.device, dev.precision, {nullptr});
    MemberPrediction r;
    r.images = vo.images;
    r.seconds = vo.seconds;
    const auto n = static_cast<int64_t>(vo.rows.size());
    std::vector<int64_t> back(static_cast<size_t>(n));  // the place in `sorted` of each of rows[0..n)
    if (o.smoke) {
      for (int64_t i = 0; i < n; ++i) back[static_cast<size_t>(i)] = i;
    } else {
      for (int64_t j = 0; j < n; ++j) back[by_length[static_cast<size_t>(j)]] = j;
    }
    const at::Tensor idx = torch::tensor(back, torch::kLong);
    for (int64_t i = 0; i < n; ++i) r.rows.push_back(vo.rows[static_cast<size_t>(back[static_cast<size_t>(i)])]);
    if (vo.targets.defined()) r.targets = vo.targets.index_select(0, idx);
    r.view_labels = {"identity"};
    r.view_probs = {metric::activate(vo.raw[0].index_select(0, idx), task)};
    r.probs = tta::merge({vo.raw[0].index_select(0, idx)}, tta.merge, task);
    return r;
  }

  MemberPrediction predict(const Member& m, const data::Table& table, const std::vector<int64_t>& rows) {
    model::load_weights(*net, m.weights, model::LoadPolicy{/*strict=*/true, /*reinit_head=*/false}, m.name);
    if (!modality.can(Capability::tta_views)) return predict_collated(table, rows);
    MemberPrediction r;
    if (dopt.cache != "none" && cache_table != &table) {  // "device" caches prediction's images in RAM
      cache = std::make_unique<data::ImageCache>(static_cast<size_t>(dopt.cache_max_gb * (1ull << 30)));
      cache_table = &table;
    }
    // Batch-level views in one pass over the data; the identity too when train_aug needs it.
    std::vector<train::InputView> fns;
    int identity = -1;
    bool aug = false;
    for (auto& s : subs) {
      const tta::View* v = views[s.view].get();
      if (v->uses_train_pipeline()) {
        aug = true;
        continue;
      }
      if (v->name() == "identity" && identity < 0) identity = static_cast<int>(fns.size());
      fns.push_back([v, i = s.index](const at::Tensor& x) { return v->apply(x, i); });
    }
    const size_t reported = fns.size();
    if (aug && identity < 0) {
      identity = static_cast<int>(fns.size());
      fns.push_back(nullptr);
    }
    std::vector<at::Tensor> raw;
    if (!fns.empty()) {
      data::Loader loader(table, rows, *eval_pipe, loader_options(0, seed));
      auto vo = train::predict_views(*net, loader, dev.device, dev.precision, fns);
      r.rows = vo.rows;
      r.targets = vo.targets;
      r.images += vo.images * static_cast<int64_t>(fns.size());
      r.seconds += vo.seconds;
      raw = std::move(vo.raw);
    }
    for (size_t i = 0; i < reported; ++i) r.view_probs.push_back(metric::activate(raw[i], task));
    // train_aug: n passes with the training augmentation (seeded per pass), averaged, then
    // lerp(mean_aug, identity, beta) as fastai's Learner.tta.
    for (size_t v = 0; v < views.size(); ++v) {
      if (!views[v]->uses_train_pipeline()) continue;
      at::Tensor sum;
      for (int64_t pass = 0; pass < views[v]->count(); ++pass) {
        data::Loader loader(table, rows, *train_pipe, loader_options(pass, seed + 7919 * (v + 1)));
        auto vo = train::predict_views(*net, loader, dev.device, dev.precision, {nullptr});
        if (r.rows.empty()) r.rows = vo.rows, r.targets = vo.targets;
        r.images += vo.images;
        r.seconds += vo.seconds;
        auto p = metric::activate(vo.raw[0], task);
        sum = sum.defined() ? sum + p : p;
      }
      auto mean_aug = sum / static_cast<double>(views[v]->count());
      const double beta = views[v]->beta();
      auto id = metric::activate(raw[static_cast<size_t>(identity)], task);
      r.view_probs.push_back((1.0 - beta) * mean_aug + beta * id);
    }
    if (!aug) {
      raw.resize(reported);
      r.probs = tta::merge(raw, tta.merge, task);
    } else {
      r.probs = tta::merge_probs(r.view_probs, tta.merge, task);
    }
    r.view_labels = labels;
    return r;
  }
};

EnsemblePredictor::EnsemblePredictor(const Session& o, const data::ClassList& classes, int64_t feature_dim)
    : p_(std::make_unique<Impl>(o, classes, feature_dim)) {}
EnsemblePredictor::~EnsemblePredictor() = default;
MemberPrediction EnsemblePredictor::predict(const Member& m, const data::Table& t, const std::vector<int64_t>& rows) {
  return p_->predict(m, t, rows);
}
void EnsemblePredictor::check(const Member& m) {
  model::load_weights(*p_->net, m.weights, model::LoadPolicy{/*strict=*/true, /*reinit_head=*/false}, m.name);
}
const std::vector<std::string>& EnsemblePredictor::view_labels() const { return p_->labels; }
Task EnsemblePredictor::task() const { return p_->task; }
std::string EnsemblePredictor::device_description() const { return p_->dev.description; }

at::Tensor merge_members(const std::vector<at::Tensor>& probs, const config::Recipe& recipe, Task task) {
  if (probs.size() == 1) return probs.front();
  return tta::merge_probs(probs, recipe.get<tta::TtaOptions>().merge, task);
}

}  // namespace kg::session
