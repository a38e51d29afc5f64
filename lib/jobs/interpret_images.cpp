// interpret's pictures: the top-loss grid (fastai's plot_top_losses) and Grad-CAM overlays with their peaks.
#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>

#include <torch/torch.h>

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "data/csv.h"
#include "data/loader.h"
#include "data/transform.h"
#include "jobs/interpret.h"
#include "jobs/sample_grid.h"
#include "model/grad_cam.h"
#include "model/weights/safetensors.h"
#include "report/heatmap.h"
#include "report/image_grid.h"
#include "session/ensemble.h"
#include "session/modality.h"
#include "session/oof.h"
#include "session/training.h"

using nlohmann::json;

namespace kg::jobs {
namespace {

// Validation images of table `rows`, in that order, as the model's input [k, C, H, W] (CPU), and the
// normalization they carry.
struct Shown {
  at::Tensor x;
  std::vector<double> mean, std;
};
Shown load_rows(const session::TrainingContext& s, const std::vector<int64_t>& rows) {
  Shown out;
  std::map<int64_t, int64_t> pos;
  for (size_t i = 0; i < rows.size(); ++i) pos[rows[i]] = static_cast<int64_t>(i);
  auto loader = s.valid_loader(rows);
  data::Batch b;
  std::vector<at::Tensor> parts(rows.size());
  while (loader->next(b)) {
    const at::Tensor x = data::to_model_input(b, torch::kCPU).pixels;
    for (size_t i = 0; i < b.rows.size(); ++i)
      parts[static_cast<size_t>(pos.at(b.rows[i]))] = x[static_cast<int64_t>(i)];
    if (out.mean.empty()) out.mean = b.norm_mean, out.std = b.norm_std;
  }
  if (out.mean.empty()) s.data.eval_pipe->normalization(out.mean, out.std);
  out.x = torch::stack(parts);
  return out;
}

// OOF row i's truth and prediction as caption lines; `wrong` when they differ.
std::vector<std::string> row_caption(const metric::Interpretation& in, const session::OofTable& oof, size_t i,
                                     bool& wrong) {
  const auto name = [&](int64_t k) { return in.names[static_cast<size_t>(k)].substr(0, 16); };
  const int64_t r = static_cast<int64_t>(i);
  std::vector<std::string> c;
  if (in.task == Task::multiclass || in.task == Task::binary) {
    const int64_t t =
        in.task == Task::binary ? (oof.targets[r][0].item<double>() > 0.5 ? 1 : 0) : oof.targets[r].item<int64_t>();
    const int64_t p = in.predicted[r].item<int64_t>();
    const double prob = in.task == Task::binary
                            ? (p == 1 ? oof.preds[r][0].item<double>() : 1 - oof.preds[r][0].item<double>())
                            : oof.preds[r][p].item<double>();
    wrong = t != p;
    c = {"true " + name(t), "pred " + name(p) + " " + format_significant(prob, 3)};
  } else if (in.task == Task::multilabel) {
    std::string t, p;
    for (int64_t k = 0; k < oof.preds.size(1); ++k) {
      if (oof.targets[r][k].item<double>() > 0.5) t += (t.empty() ? "" : " ") + name(k);
      if (oof.preds[r][k].item<double>() >= 0.5) p += (p.empty() ? "" : " ") + name(k);
    }
    wrong = t != p;
    c = {"true " + (t.empty() ? "-" : t), "pred " + (p.empty() ? "-" : p)};
  } else {
    wrong = false;
    c = {"y " + format_significant(oof.targets[r][0].item<double>(), 3),
         "pred " + format_significant(oof.preds[r][0].item<double>(), 3)};
  }
  c.push_back("loss " + format_significant(in.losses[r].item<double>(), 3));
  return c;
}

std::vector<report::Tile> captioned(const session::TrainingContext& s, const Shown& shown,
                                    const metric::Interpretation& in, const session::OofTable& oof,
                                    const std::vector<size_t>& oof_rows) {
  auto tiles = batch_tiles(shown.x, at::Tensor(), shown.mean, shown.std, s.data.classes);
  for (size_t i = 0; i < tiles.size(); ++i) {
    bool wrong = false;
    tiles[i].caption = row_caption(in, oof, oof_rows[i], wrong);
    tiles[i].caption.insert(tiles[i].caption.begin(), oof.ids[oof_rows[i]].substr(0, 16));
    if (wrong) tiles[i].caption_color = {200, 30, 30};
  }
  return tiles;
}

// The output column a CAM explains for OOF row i: the predicted class (label, target 0); negated for binary's
// negative class.
std::pair<int64_t, bool> explained(const metric::Interpretation& in, const session::OofTable& oof, size_t i) {
  const int64_t r = static_cast<int64_t>(i);
  if (in.task == Task::multiclass) return {in.predicted[r].item<int64_t>(), false};
  if (in.task == Task::binary) return {0, in.predicted[r].item<int64_t>() == 0};
  if (in.task == Task::multilabel) return {oof.preds[r].argmax().item<int64_t>(), false};
  return {0, false};
}

struct CamSet {
  std::string name;
  std::vector<size_t> oof_rows;
};

// Grad-CAM of every row of `sets` with its fold's model; overlay PNGs and the peaks in cams.csv.
json write_cams(const InterpretRequest& r, const session::TrainingContext& s, const session::OofTable& oof,
                const metric::Interpretation& in, const std::vector<int64_t>& table_rows,
                const std::vector<CamSet>& sets, const std::string& out) {
  session::ModelSources src;
  src.from_runs = {r.run};
  const session::Ensemble e = session::collect_members(s.session, src);
  auto net = s.build_net().net;
  net->to(s.dev.device);
  const auto member_for = [&](int64_t fold) -> const session::Member& {
    if (e.members.size() == 1) return e.members.front();
    for (auto& m : e.members)
      if (m.fold == fold) return m;
    throw DataError(r.run + " has no checkpoint for fold " + std::to_string(fold) + " (its out-of-fold rows need it)");
  };
  std::string csv = data::csv_line({"set", "id", "fold", "explained", "peak_y", "peak_x", "map_height", "map_width"});
  json files = json::array();
  int64_t loaded_fold = -2;
  for (auto& set : sets) {
    if (set.oof_rows.empty()) continue;
    std::vector<size_t> order = set.oof_rows;  // by fold: each model loaded once
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return oof.folds[a] < oof.folds[b]; });
    std::vector<int64_t> rows;
    for (size_t i : order) rows.push_back(table_rows[i]);
    const Shown shown = load_rows(s, rows);
    auto tiles = captioned(s, shown, in, oof, order);
    const size_t drawn = std::min<size_t>(order.size(), 48);  // every peak goes to cams.csv; 48 overlays at most
    for (size_t i = 0; i < order.size(); ++i) {
      const int64_t fold = oof.folds[order[i]];
      if (fold != loaded_fold) {
        const session::Member& m = member_for(fold);
        model::load_state_dict(*net, m.weights, /*strict=*/true, m.name);
        loaded_fold = fold;
      }
      const auto [col, neg] = explained(in, oof, order[i]);
      const auto cam = model::grad_cam(*net, shown.x.narrow(0, static_cast<int64_t>(i), 1).to(s.dev.device),
                                       torch::tensor({col}), torch::tensor({neg}));
      const at::Tensor c = cam.cams[0];
      const int64_t W = c.size(1), peak = c.flatten().argmax().item<int64_t>();
      csv += data::csv_line({set.name, oof.ids[order[i]], std::to_string(fold),
                             col < static_cast<int64_t>(in.names.size()) ? in.names[static_cast<size_t>(col)] : "0",
                             std::to_string(peak / W), std::to_string(peak % W), std::to_string(cam.map_height),
                             std::to_string(cam.map_width)});
      if (i >= drawn) continue;
      auto& t = tiles[i];  // the image in RGB, half covered by the CAM's colours
      std::vector<uint8_t> rgb;
      auto cv = c.accessor<float, 2>();
      for (int y = 0; y < t.height; ++y)
        for (int x = 0; x < t.width; ++x) {
          const auto j = report::jet(cv[y][x]);
          for (int ch = 0; ch < 3; ++ch) {
            const int src = t.pixels[static_cast<size_t>((y * t.width + x) * t.channels + (t.channels == 3 ? ch : 0))];
            const int over = ch == 0 ? j.r : ch == 1 ? j.g : j.b;
            rgb.push_back(static_cast<uint8_t>((src + over) / 2));
          }
        }
      t.pixels = std::move(rgb);
      t.channels = 3;
    }
    tiles.resize(drawn);
    report::GridOptions go;
    go.title = "Grad-CAM of the predicted output: " + set.name +
               (drawn < order.size() ? " (" + std::to_string(drawn) + " of " + std::to_string(order.size()) + ")" : "");
    const std::string file = "cam_" + set.name + ".png";
    write_file_atomic(out + "/" + file, report::grid_png(tiles, go));
    files.push_back({{"file", file}, {"images", order.size()}});
  }
  write_file_atomic(out + "/cams.csv", csv);
  return {{"files", files}, {"peaks", "cams.csv"}, {"explains", "the predicted class (label, target)"}};
}

}  // namespace

json write_interpret_images(const InterpretRequest& r, const session::TrainingContext& s, const session::OofTable& oof,
                            const metric::Interpretation& in, const std::vector<int64_t>& table_rows,
                            const std::string& out) {
  json info = json::object();
  const size_t n = oof.ids.size();
  std::vector<size_t> by_loss(n);
  std::iota(by_loss.begin(), by_loss.end(), 0);
  auto loss = in.losses.accessor<double, 1>();
  std::stable_sort(by_loss.begin(), by_loss.end(), [&](size_t a, size_t b) { return loss[a] > loss[b]; });
  by_loss.resize(std::min<size_t>(n, static_cast<size_t>(r.flags.top)));
  json top = json::array();
  for (size_t i : by_loss) {
    bool wrong = false;
    const auto c = row_caption(in, oof, i, wrong);
    top.push_back({{"id", oof.ids[i]}, {"fold", oof.folds[i]}, {"caption", c}, {"loss", loss[i]}});
  }
  if (s.data.table.is_text()) {  // texts are listed, not drawn: top_losses.csv with each row's text
    if (r.flags.cam)
      session::modality_of(s.opt.data)
          .require(session::Capability::grad_cam, "interpret --cam",
                   "draws Grad-CAM heat maps over images (drop --cam: top_losses.csv "
                   "lists the texts)");
    std::string csv = data::csv_line({"id", "fold", "true", "predicted", "loss", "text"});
    for (size_t j = 0; j < by_loss.size(); ++j) {
      const size_t i = by_loss[j];
      std::string text = s.data.table.text(table_rows[i], 0);
      for (int64_t k = 1; k < s.data.table.text_dim; ++k) text += " [SEP] " + s.data.table.text(table_rows[i], k);
      top[j]["text"] = text;
      const auto& c = top[j]["caption"];
      csv += data::csv_line({oof.ids[i], std::to_string(oof.folds[i]), c[0].get<std::string>(), c[1].get<std::string>(),
                             format_significant(loss[i], 6), text});
    }
    write_file_atomic(out + "/top_losses.csv", csv);
    info["top_losses"] = top;
    return info;
  }
  info["top_losses"] = top;
  if (!by_loss.empty()) {
    std::vector<int64_t> rows;
    for (size_t i : by_loss) rows.push_back(table_rows[i]);
    report::GridOptions go;
    go.title = "top losses (true, predicted, probability, loss)";
    write_file_atomic(out + "/top_losses.png",
                      report::grid_png(captioned(s, load_rows(s, rows), in, oof, by_loss), go));
  }
  if (r.flags.cam) {
    std::vector<size_t> random(n);
    std::iota(random.begin(), random.end(), 0);
    std::mt19937_64 rng(static_cast<uint64_t>(s.seed) + 0x9e3779b97f4a7c15ULL);
    std::shuffle(random.begin(), random.end(), rng);
    random.resize(std::min<size_t>(n, static_cast<size_t>(r.flags.cam_n)));
    std::sort(random.begin(), random.end());
    info["cam"] = write_cams(r, s, oof, in, table_rows, {{"top_losses", by_loss}, {"random", random}}, out);
  }
  return info;
}

}  // namespace kg::jobs
