// pack: one file made by `kgtrain pack` (lib/data/pack.h) holding the table and every image; the
// loader memory-maps it and opens no per-image file. The same label/feature keys apply to the
// table stored inside.
#include "core/error.h"
#include "data/pack.h"
#include "data/source.h"

namespace kg::data {
namespace {

struct NoOptions {};

class PackSource : public Source {
 public:
  void open(const DataOptions& o, Split split, OpenedSource& out) const override {
    const std::string path = data_path(o, split == Split::train ? o.train_pack : o.test_pack);
    auto pack = PackReader::open(path);
    out.csv = parse_csv(pack->table_csv(), path);
    out.src.pack = pack;
    out.src.id_col = pack->id_col();
    out.src.label_cols = o.label_cols;
  }
};

KG_REGISTER(source_registry(), "pack", "a kgtrain pack file (train_pack / test_pack): table and images in one memory-mapped file",
            "[data]\nformat = \"pack\"\ntrain_pack = \"train.kgpack\"", config::Fields<NoOptions>(),
            [](const NoOptions&) -> SourcePtr { return std::make_unique<PackSource>(); });

}  // namespace
}  // namespace kg::data
