// Text's sliding windows at prediction (lib/train/window_pool.h): a row's pooled output is the mean (or max) of the
// model run on each of its windows alone, through predict (validation) and predict_views (OOF, tta-predict), one
// row per text in the rows' order, targets the row's.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include <string>
#include <vector>

#include "config/recipe.h"
#include "config/resolve.h"
#include "data/csv.h"
#include "data/loader.h"
#include "data/table.h"
#include "data/text_inputs.h"
#include "data/transform.h"
#include "model/model.h"
#include "support/temp_dir.h"
#include "support/text_fixtures.h"
#include "train/engine.h"
#include "train/window_pool.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

TEST_CASE("window pooling: mean or max over each row's consecutive samples", "[unit][train]") {
  const at::Tensor raw = torch::tensor({1.0f, -1.0f, 3.0f, 5.0f, 2.0f, 0.0f, 7.0f, 7.0f}).reshape({4, 2});
  const std::vector<int64_t> windows{0, 1, 2, 0};
  const auto starts = kg::train::window_starts(windows);
  CHECK(starts == std::vector<int64_t>{0, 3});
  const at::Tensor mean = kg::train::pool_windows(raw, starts, "mean");
  CHECK(torch::allclose(mean, torch::tensor({2.0f, 4.0f / 3, 7.0f, 7.0f}).reshape({2, 2})));
  const at::Tensor max = kg::train::pool_windows(raw, starts, "max");
  CHECK(torch::equal(max, torch::tensor({3.0f, 5.0f, 7.0f, 7.0f}).reshape({2, 2})));
  CHECK(torch::equal(kg::train::pool_windows(raw, {0, 1, 2, 3}, "mean"), raw));  // one window a row: as it was
}

TEST_CASE("window pooling: a text's prediction is the pool of the model on each of its windows alone",
          "[integration][train][text]") {
  kg::test::TempDir dir;
  const std::string data = kg::test::make_tiny_text_task(dir, 12, 1);
  const std::string folder = kg::test::make_tiny_deberta(dir);
  kg::data::CsvTable csv = kg::data::read_csv(data + "/train.csv");
  kg::data::DataOptions o;
  o.text_cols = {"text"};
  o.root = data;
  o.max_length = 16;
  o.stride = 4;
  kg::data::TableSource src;
  src.csv = &csv;
  src.id_col = "id";
  src.label_cols = {"label"};
  std::vector<kg::data::BadRow> bad;
  const kg::data::ClassList classes = kg::data::infer_classes(o, src);
  const kg::data::Table table = kg::data::build_table(o, src, &classes, true, bad);
  REQUIRE(bad.empty());
  kg::data::TextSpec spec;
  spec.folder = folder;
  const auto recipe = kg::config::Recipe::validate(kg::config::parse_toml_string(
      "[model]\nname = \"deberta-v2\"\npretrained = \"" + folder + "\"\n", "windows.toml"));
  kg::model::ModelContext ctx;
  ctx.num_outputs = 2;
  ctx.seq_len = 16;
  auto net = kg::model::build(recipe, ctx);
  net->eval();
  torch::NoGradGuard no_grad;
  const kg::data::Pipeline pipe(kg::config::json::array(), {16, 16, 3}, false);
  const std::vector<int64_t> rows{5, 0, 11, 3, 7, 1};
  for (const std::string pool : {"mean", "max"}) {
    INFO(pool);
    o.window_pool = pool;
    const kg::data::TextInputs in(o, table, spec);
    REQUIRE(in.tokens().truncated >= 3);  // several rows have several windows
    // Each window alone, pooled by hand.
    std::vector<at::Tensor> expected;
    for (int64_t r : rows) {
      std::vector<at::Tensor> w;
      for (int64_t e = in.tokens().first_entry(r); e < in.tokens().first_entry(r) + in.tokens().entries_of(r); ++e)
        w.push_back(net->forward(in.batch({e})));
      const at::Tensor all = torch::cat(w);
      expected.push_back(pool == "mean" ? all.mean(0) : std::get<0>(all.max(0)));
    }
    const at::Tensor want = torch::stack(expected);
    kg::data::LoaderOptions lo;
    lo.batch_size = 3;  // windows of one text span batches
    lo.collator = &in;
    kg::data::Loader views_loader(table, rows, pipe, lo);
    const auto vo = kg::train::predict_views(*net, views_loader, at::kCPU, kg::device::Precision::fp32, {nullptr});
    CHECK(vo.rows == rows);
    REQUIRE(vo.raw[0].sizes() == want.sizes());
    CHECK(torch::allclose(vo.raw[0], want, 1e-5, 1e-5));
    CHECK(vo.images == static_cast<int64_t>(in.samples(rows).size()));
    REQUIRE(vo.targets.defined());
    CHECK(vo.targets.size(0) == static_cast<int64_t>(rows.size()));
    for (size_t i = 0; i < rows.size(); ++i)
      CHECK(vo.targets[static_cast<int64_t>(i)].item<int64_t>() == table.targets[static_cast<size_t>(rows[i])]);
    kg::data::Loader loader(table, rows, pipe, lo);
    const auto p = kg::train::predict(*net, loader, at::kCPU, nullptr, kg::Task::multiclass);
    CHECK(p.rows == rows);
    CHECK(torch::allclose(p.probs, torch::softmax(want, 1), 1e-5, 1e-5));
    CHECK(p.images == static_cast<int64_t>(rows.size()));
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
