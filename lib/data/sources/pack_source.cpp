// pack: one file made by `kgtrain pack` (lib/data/pack.h) holding the table and every image; the
// loader memory-maps it and opens no per-image file. The same label/feature keys apply to the
// table stored inside.
#include <filesystem>
#include <mutex>
#include <set>
#include <tuple>

#include "core/error.h"
#include "data/pack.h"
#include "data/source.h"

namespace kg::data {
namespace {

// Checks the pack's content hash the first time this process opens that file as it is now (path, size,
// modification time, stored hash): a flipped label or pixel is a DataError, not silent training on it.
// Hashing runs at several GB/s and reads the file ahead of the first epoch; folds and TTA members that
// open it again skip it.
void verify_once(const PackReader& pack) {
  namespace fs = std::filesystem;
  static std::mutex mu;
  static std::set<std::tuple<std::string, uintmax_t, int64_t, std::string>> verified;
  std::error_code ec;
  const auto mtime = fs::last_write_time(pack.path(), ec).time_since_epoch().count();
  auto key = std::make_tuple(fs::absolute(pack.path(), ec).string(), fs::file_size(pack.path(), ec),
                             static_cast<int64_t>(mtime), pack.hash());
  {
    std::lock_guard<std::mutex> lock(mu);
    if (verified.count(key)) return;
  }
  pack.verify();
  std::lock_guard<std::mutex> lock(mu);
  verified.insert(std::move(key));
}

class PackSource : public Source {
 public:
  void open(const DataOptions& o, Split split, OpenedSource& out) const override {
    const std::string path = data_path(o, split == Split::train ? o.train_pack : o.test_pack);
    auto pack = PackReader::open(path);
    verify_once(*pack);
    out.csv = parse_csv(pack->table_csv(), path);
    out.src.pack = pack;
    out.src.id_col = pack->id_col();
    out.src.label_cols = o.label_cols;
  }
};

KG_REGISTER(source_registry(), "pack",
            "a kgtrain pack file (train_pack / test_pack): table and images in one memory-mapped file",
            "[data]\nformat = \"pack\"\ntrain_pack = \"train.kgpack\"", config::Fields<config::NoOptions>(),
            [](const config::NoOptions&) -> SourcePtr { return std::make_unique<PackSource>(); });

}  // namespace
}  // namespace kg::data
