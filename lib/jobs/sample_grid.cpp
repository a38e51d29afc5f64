#include "jobs/sample_grid.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <torch/torch.h>

#include "core/error.h"
#include "core/strings.h"
#include "data/loader.h"
#include "data/table.h"
#include "data/transform.h"
#include "session/training.h"

namespace kg::jobs {
namespace {

std::string short_name(const std::string& s) { return s.size() <= 18 ? s : s.substr(0, 17) + "~"; }

}  // namespace

std::vector<std::string> target_caption(const at::Tensor& row, const data::ClassList& classes) {
  at::Tensor t = row.to(torch::kCPU);
  const auto name = [&](int64_t k) {
    return short_name(k >= 0 && k < classes.size() ? classes.names[static_cast<size_t>(k)] : std::to_string(k));
  };
  if (t.scalar_type() == torch::kLong) return {name(t.item<int64_t>())};
  if (t.dim() == 1 && t.size(0) > classes.outputs()) {  // loss.distill: the labels, then the teacher's logits
    t = t.narrow(0, 0, t.size(0) - classes.outputs());
    if (t.size(0) == 1 && classes.task == data::Task::multiclass) return {name(std::lround(t.item<double>()))};
  }
  const at::Tensor v = t.to(torch::kDouble).reshape({-1}).contiguous();
  const double* p = v.data_ptr<double>();
  const int64_t n = v.numel();
  switch (classes.task) {
    case data::Task::regression: {
      std::string s = "y";
      for (int64_t i = 0; i < std::min<int64_t>(n, 3); ++i) s += " " + format_significant(p[i], 4);
      return {s + (n > 3 ? " ..." : "")};
    }
    case data::Task::binary: {
      const double y = n ? p[0] : 0;
      if (y <= 0.05 || y >= 0.95) return {name(y >= 0.5 ? 1 : 0)};
      return {format_significant(y, 2) + " " + name(1), format_significant(1 - y, 2) + " " + name(0)};
    }
    case data::Task::multilabel: {
      std::vector<std::string> out;
      for (int64_t k = 0; k < n && out.size() < 3; ++k)
        if (p[k] >= 0.05) out.push_back((p[k] >= 0.95 ? std::string() : format_significant(p[k], 2) + " ") + name(k));
      if (out.empty()) out.push_back("(none)");
      return out;
    }
    case data::Task::multiclass:
    default: {
      std::vector<int64_t> idx(static_cast<size_t>(n));
      std::iota(idx.begin(), idx.end(), 0);
      std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
      if (n == 0) return {"?"};
      if (p[idx[0]] >= 0.9) return {name(idx[0])};
      std::vector<std::string> out;
      for (size_t i = 0; i < std::min<size_t>(2, idx.size()); ++i)
        if (p[idx[i]] >= 0.05) out.push_back(format_significant(p[idx[i]], 2) + " " + name(idx[i]));
      return out;
    }
  }
}

std::vector<report::Tile> batch_tiles(const at::Tensor& images, const at::Tensor& targets,
                                      const std::vector<double>& mean, const std::vector<double>& std,
                                      const data::ClassList& classes) {
  at::Tensor x = images.to(torch::kCPU).to(torch::kFloat);
  const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  if (!mean.empty()) {
    auto m = torch::tensor(mean, torch::kDouble).to(torch::kFloat);
    auto s = torch::tensor(std, torch::kDouble).to(torch::kFloat);
    if (m.numel() == 1 && C > 1) m = m.expand({C}), s = s.expand({C});
    x = x * s.view({1, C, 1, 1}) + m.view({1, C, 1, 1});
  }
  // RGB or gray as they are; other channel counts show the first channel.
  if (C != 1 && C != 3) x = x.narrow(1, 0, 1);
  const int64_t c = x.size(1);
  const at::Tensor u8 = (x * 255.0).round().clamp(0, 255).to(torch::kUInt8).permute({0, 2, 3, 1}).contiguous();
  std::vector<report::Tile> tiles;
  for (int64_t i = 0; i < B; ++i) {
    report::Tile t;
    t.height = static_cast<int>(H);
    t.width = static_cast<int>(W);
    t.channels = static_cast<int>(c);
    const uint8_t* p = u8[i].data_ptr<uint8_t>();
    t.pixels.assign(p, p + H * W * c);
    if (targets.defined()) t.caption = target_caption(targets[i], classes);
    tiles.push_back(std::move(t));
  }
  return tiles;
}

std::string training_sample_png(const session::TrainingContext& s, const std::vector<int64_t>& rows, int64_t n,
                                int64_t epoch, const std::string& title) {
  KG_CHECK(!rows.empty(), DataError, "no training rows to show");
  const int64_t epochs = std::max<int64_t>(1, s.epochs);
  auto loader = s.train_loader(rows, epoch, epochs);
  data::Batch b;
  KG_CHECK(loader->next(b), DataError, "the training loader gave no batch");
  const int64_t k = std::min<int64_t>(n, b.size());
  // The whole batch is mixed (partners come from all of it), then the first k are shown.
  at::Tensor x = data::to_model_input(b, torch::kCPU).pixels.clone();
  at::Tensor y = b.targets.defined() ? b.targets.to(torch::kCPU).clone() : at::Tensor();
  if (auto mix = s.mix_fn(); mix && y.defined()) mix(x, y, epoch, b.index);
  x = x.narrow(0, 0, k);
  if (y.defined()) y = y.narrow(0, 0, k);
  std::vector<double> mean = b.norm_mean, std = b.norm_std;
  if (mean.empty())
    s.data.train_pipes[data::stage_at(s.data.stages, std::min(epoch, epochs - 1), epochs)]->normalization(mean, std);
  const auto tiles = batch_tiles(x, y, mean, std, s.data.classes);
  report::GridOptions go;
  go.title = title;
  go.columns = k <= 16 ? 8 : 10;
  return report::grid_png(tiles, go);
}

}  // namespace kg::jobs
