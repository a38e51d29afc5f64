#include "jobs/show_batch.h"

#include <iostream>

#include "config/flags.h"
#include "core/error.h"
#include "core/fs.h"
#include "data/loader.h"
#include "data/table.h"
#include "data/transform.h"
#include "jobs/sample_grid.h"
#include "session/modality.h"
#include "session/training.h"
#include "tta/view.h"

namespace kg::jobs {
namespace {

// Every sub-view of tta.views applied to test row `id` (the first without one), as tta-predict makes them:
// batch views on the evaluation transform's image, train_aug's passes through the training augmentation.
std::string views_png(const session::TrainingContext& s, const std::string& id) {
  data::DataOptions dopt = s.opt.data;
  const data::Table test = data::load_split(dopt, data::Split::test, s.data.classes, /*scan=*/false, 1);
  KG_CHECK(test.size() > 0, DataError, test.csv_path, " has no rows");
  int64_t row = 0;
  if (!id.empty()) {
    row = -1;
    for (int64_t i = 0; i < test.size() && row < 0; ++i)
      if (test.rows[static_cast<size_t>(i)].id == id) row = i;
    KG_CHECK(row >= 0, UsageError, "--id ", id, " is not a row of ", test.csv_path);
  }
  const auto views = tta::build_views(s.session.recipe, s.data.geom);
  const auto load = [&](const data::Pipeline& pipe, int64_t epoch, uint64_t seed) {
    data::LoaderOptions lo;
    lo.batch_size = 1;
    lo.seed = seed;
    lo.epoch = epoch;
    data::Loader loader(test, {row}, pipe, lo);
    data::Batch b;
    KG_CHECK(loader.next(b), DataError, "cannot load test row ", test.rows[static_cast<size_t>(row)].where);
    std::vector<double> mean = b.norm_mean, std = b.norm_std;
    if (mean.empty()) pipe.normalization(mean, std);
    return std::make_tuple(data::to_model_input(b, torch::kCPU).pixels, mean, std);
  };
  const auto [x, mean, std] = load(*s.data.eval_pipe, 0, s.seed);
  std::vector<report::Tile> tiles;
  const auto add = [&](const at::Tensor& img, const std::vector<double>& m, const std::vector<double>& sd,
                       const std::string& label) {
    auto t = batch_tiles(img, at::Tensor(), m, sd, s.data.classes);
    t[0].caption = {label, std::to_string(img.size(2)) + "x" + std::to_string(img.size(3))};
    tiles.push_back(std::move(t[0]));
  };
  for (const auto& sub : tta::expand(views)) {
    const auto& v = *views[sub.view];
    if (!v.uses_train_pipeline()) {
      add(v.apply(x, sub.index), mean, std, sub.label);
      continue;
    }
    // tta-predict's seeds for this entry's passes (lib/session/ensemble.cpp)
    const auto [a, am, as] = load(*s.data.train_pipes.back(), sub.index, s.seed + 7919 * (sub.view + 1));
    add(a, am, as, sub.label);
  }
  report::GridOptions go;
  go.title = "tta.views of test image " + test.rows[static_cast<size_t>(row)].id;
  return report::grid_png(tiles, go);
}

}  // namespace

const config::Fields<ShowBatchFlags>& show_batch_flags() {
  static const config::Fields<ShowBatchFlags> f = [] {
    using F = ShowBatchFlags;
    config::Fields<F> t;
    t.field("out", &F::out, "PNG to write (a text recipe prints its tokens instead)");
    t.field("n", &F::n, "images in the grid (text: rows printed)").range(1, 256);
    t.field("epoch", &F::epoch, "epoch whose augmentation, size and mixing to show (1-based)").min(1);
    t.field("views", &F::views, "instead: every TTA view (tta.views) of one test image, as tta-predict makes them");
    t.field("id", &F::id, "with --views: the test row's id (none: the first row of data.test_csv)");
    return t;
  }();
  return f;
}

int run_show_batch(const ShowBatchRequest& req) {
  config::check_flags(show_batch_flags(), req.flags);
  const auto& modality = session::modality_of(req.recipe);
  const ShowBatchFlags& r = req.flags;
  if (r.views)
    modality.require(session::Capability::tta_views, "show-batch --views", "draws the TTA views of an image");
  KG_CHECK(r.id.empty() || r.views, UsageError, "--id picks the test image of --views: add --views");
  const bool grid = modality.can(session::Capability::show_batch);  // text: the tokens, printed
  session::Session o = req;
  // One batch is shown: decode just it (no RAM or device cache filled up front), in this thread, on the CPU.
  o.recipe = o.recipe.with({{"data.cache", "none"},
                            {"data.num_workers", 0},
                            {"device.name", "cpu"},
                            {"train.batch_size", std::max<int64_t>(r.n, 2)},
                            {"train.accum_steps", 1}},
                           config::Origin::command_line());
  session::TrainingContext s(o, "show-batch");
  KG_CHECK(r.epoch <= s.epochs, UsageError,
           "--epoch " + std::to_string(r.epoch) + ": the recipe trains " + std::to_string(s.epochs) + " epochs");
  const int64_t fold = s.opt.cv.run_folds.front();
  const auto rows = s.split_of(fold).first;
  const std::string title = "training batch, epoch " + std::to_string(r.epoch) + " of " + std::to_string(s.epochs) +
                            ", fold " + std::to_string(fold) + (s.mix_fn() ? " (mixup/cutmix as configured)" : "");
  if (o.dry_run) {
    o.log(grid ? "dry run: would write " + r.out : "dry run: would print the batch's tokens");
    return kExitOk;
  }
  if (!grid) {
    std::cout << training_sample_tokens(s, rows, r.n, r.epoch - 1, title) << std::flush;
    return kExitOk;
  }
  const std::string png = r.views ? views_png(s, r.id) : training_sample_png(s, rows, r.n, r.epoch - 1, title);
  with_context("while writing " + r.out, [&] { write_file_atomic(r.out, png); });
  o.log("wrote " + r.out + " (" + std::to_string(std::min<int64_t>(r.n, static_cast<int64_t>(rows.size()))) +
        " images)");
  return kExitOk;
}

}  // namespace kg::jobs
