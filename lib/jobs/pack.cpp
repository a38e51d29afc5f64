// `kgtrain pack`: turns the recipe's training or test table (csv or folder layout) into ONE file
// the loader memory-maps (lib/data/pack.h): encoded image bytes as they are on disk (bit-exact),
// or pre-resized raw pixels (--raw). Bad rows follow data.on_bad_row, exactly as in fit.
#include "jobs/pack.h"

#include <chrono>
#include <filesystem>
#include <iostream>
#include <thread>

#include "build_info.h"
#include "config/flags.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/parallel_for.h"
#include "data/csv.h"
#include "data/image_io.h"
#include "data/pack.h"
#include "data/source.h"
#include "data/transform.h"
#include "session/modality.h"
#include "session/session.h"

namespace fs = std::filesystem;

namespace kg::jobs {
namespace {

// One split into one pack file; returns the number of items.
int64_t pack_split(const PackRequest& o, const data::DataOptions& dopt, data::Split split,
                   const std::string& out_path) {
  const std::string fmt = data::resolve_format(dopt);
  KG_CHECK(fmt != "pack", UsageError,
           "data.format = \"pack\": the recipe already reads a pack; pack a csv or folder layout");
  const bool train = split == data::Split::train;
  const int threads = std::max<int64_t>(1, o.flags.threads > 0 ? o.flags.threads : std::thread::hardware_concurrency());
  data::OpenedSource s;
  data::open_source(dopt, split, s);
  std::vector<data::BadRow> bad;
  // Labels are checked where they are used (fit); the pack keeps every column of the table.
  data::Table t = data::build_table(dopt, s.src, nullptr, false, bad);
  data::ImageGeometry g = data::geometry(dopt);
  if (o.flags.raw && o.flags.size) g.height = (*o.flags.size)[0], g.width = (*o.flags.size)[1];
  data::scan_images(t, g, threads, bad);
  data::apply_bad_row_policy(t, bad, dopt.on_bad_row);

  // The stored table holds exactly the packed rows, in order: item i = data row i.
  std::string table_csv = data::csv_line(s.csv.header);
  for (auto& r : t.rows) table_csv += data::csv_line(s.csv.rows[static_cast<size_t>(r.csv_row - 1)]);
  nlohmann::json meta = {{"kind", o.flags.raw ? "raw" : "encoded"},
                         {"table_csv", table_csv},
                         {"id_col", s.src.id_col},
                         {"source", fmt + ":" + s.csv.path},
                         {"split", train ? "train" : "test"},
                         {"created_by", std::string("kgtrain ") + KGTRAIN_VERSION}};
  if (o.flags.raw) meta.update({{"height", g.height}, {"width", g.width}, {"channels", g.channels}});
  data::PackWriter w(out_path, meta);

  // Items are prepared by `threads` threads in chunks and written in table order.
  const size_t n = t.rows.size(), chunk = 256;
  std::vector<std::string> items(std::min(n, chunk));
  auto t0 = std::chrono::steady_clock::now();
  for (size_t base = 0; base < n; base += chunk) {
    const size_t m = std::min(chunk, n - base);
    parallel_for(m, threads, [&](size_t k, int) {
      const auto& r = t.rows[base + k];
      if (!o.flags.raw) {
        items[k] = read_file(r.image);
        return;
      }
      data::Image img = data::decode_image(r.image, static_cast<int>(g.channels), t.max_image_pixels);
      data::resize_to(img, g);
      if (!img.isContinuous()) img = img.clone();
      items[k].assign(reinterpret_cast<const char*>(img.data), img.total() * img.elemSize());
    });
    for (size_t k = 0; k < m; ++k) w.add(items[k]);
  }
  std::string hash = w.finish();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::error_code ec;
  auto bytes = fs::file_size(out_path, ec);
  std::cout << "packed " << n << " " << (train ? "training" : "test") << " images ("
            << (o.flags.raw ? "raw " : "encoded")
            << (o.flags.raw
                    ? std::to_string(g.height) + "x" + std::to_string(g.width) + "x" + std::to_string(g.channels)
                    : "")
            << ") from " << s.csv.path << " into " << out_path << ": " << bytes / (1 << 20) << " MiB, hash " << hash
            << ", " << secs << " s"
            << (t.dropped.empty() ? "" : ", " + std::to_string(t.dropped.size()) + " bad rows skipped") << "\n";
  for (auto& b : t.dropped)
    std::cerr << "  bad row skipped: " << b.where << ": id " << b.id << ": " << b.reason << "\n";
  if (!t.dropped.empty()) write_file_atomic(out_path + ".bad_rows.csv", data::bad_rows_csv(t.dropped));
  return static_cast<int64_t>(n);
}

}  // namespace

const config::Fields<PackFlags>& pack_flags() {
  static const config::Fields<PackFlags> f = [] {
    using F = PackFlags;
    config::Fields<F> t;
    t.field("split", &F::split, "the table to pack").choices({"train", "test", "both"});
    t.field("out", &F::out, "pack file (none: DATA_ROOT/<data.train_pack or data.test_pack>)");
    t.field("raw", &F::raw, "store decoded pixels resized to --size (no decoding at training time)");
    t.field("size", &F::size, "with --raw: H W of the stored pixels (none: data.image_size)").size(2).min(1);
    t.field("threads", &F::threads, "decode threads (0: all cores)").min(0);
    return t;
  }();
  return f;
}

int run_pack(const PackRequest& o) {
  config::check_flags(pack_flags(), o.flags);
  session::modality_of(o.recipe).require(session::Capability::pack, "pack", "packs image files into one file");
  auto dopt = o.recipe.get<data::DataOptions>();
  KG_CHECK(o.flags.split != "both" || o.flags.out.empty(), UsageError,
           "--out names one file: use it with --split train or test");
  KG_CHECK(!o.flags.size || o.flags.raw, UsageError,
           "--size H W sets the size of --raw packs' pixels; without --raw the image files are stored as they are");
  for (auto split : {data::Split::train, data::Split::test}) {
    bool train = split == data::Split::train;
    if (o.flags.split != "both" && o.flags.split != (train ? "train" : "test")) continue;
    std::string out =
        !o.flags.out.empty() ? o.flags.out : data::data_path(dopt, train ? dopt.train_pack : dopt.test_pack);
    if (o.dry_run) {
      std::cout << "dry run: would pack the " << (train ? "training" : "test") << " table into " << out << "\n";
      continue;
    }
    pack_split(o, dopt, split, out);
  }
  return kExitOk;
}

}  // namespace kg::jobs
