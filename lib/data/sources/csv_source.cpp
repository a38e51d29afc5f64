// csv: a table (data.train_csv / data.test_csv) naming each image by id + extension or by a
// relative path column, images under data.image_dir / data.test_image_dir (Kaggle's usual layout).
#include "core/error.h"
#include "data/source.h"
#include "data/table_read.h"

namespace kg::data {
namespace {

class CsvSource : public Source {
 public:
  void open(const DataOptions& o, Split split, OpenedSource& out) const override {
    const bool train = split == Split::train;
    out.csv = read_table(data_path(o, train ? o.train_csv : o.test_csv));
    out.src.image_dir = train ? o.image_dir : o.test_image_dir;
    out.src.id_col = o.id_col;
    out.src.path_col = o.path_col;
    out.src.label_cols = o.label_cols;
  }
};

KG_REGISTER(source_registry(), "csv",
            "a CSV table + an image folder: image = image_dir/<id><image_ext> or image_dir/<path_col>",
            "[data]\nformat = \"csv\"\ntrain_csv = \"train.csv\"\nid_col = \"image_id\"\nlabel_cols = [\"label\"]",
            config::Fields<config::NoOptions>(),
            [](const config::NoOptions&) -> SourcePtr { return std::make_unique<CsvSource>(); });

}  // namespace
}  // namespace kg::data
