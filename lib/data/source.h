// Where a dataset is: data_path (a file under data.root) and resolve_format (its layout). Data sources,
// selected by data.format: each turns a dataset layout into the CSV table and image location a Table is
// built from (lib/data/table.h). One self-registering file per layout in sources/.
#pragma once
#include <memory>
#include <string>

#include "config/registry.h"
#include "data/csv.h"
#include "data/table.h"

namespace kg::data {

// A split's table as the source found it. `src.csv` points at `csv`: keep the object where it is.
struct OpenedSource {
  CsvTable csv;
  TableSource src;
  OpenedSource() = default;
  OpenedSource(const OpenedSource&) = delete;
  OpenedSource& operator=(const OpenedSource&) = delete;
};

// Where a dataset's files are: `rel` under data.root unless absolute.
std::string data_path(const DataOptions& o, const std::string& rel);

class Source {
 public:
  virtual ~Source() = default;
  // Reads the split's table; DataError when the layout is not there. `out` is filled in place.
  virtual void open(const DataOptions& o, Split split, OpenedSource& out) const = 0;
};
using SourcePtr = std::unique_ptr<Source>;

using SourceRegistry = Registry<SourcePtr()>;
SourceRegistry& source_registry();

// data.format, with "auto" resolved: "pack" when data.format says so, "csv" when the training CSV
// exists, "folder" when the image folder holds one sub-folder per class.
std::string resolve_format(const DataOptions& o);

// Opens the recipe's source for a split.
void open_source(const DataOptions& o, Split split, OpenedSource& out);

// The classes a model is built for: the training table's (infer_classes) when the data is on disk, else what the
// recipe states (data.num_classes, data.task, data.label_cols), numbered "0".."n-1". DataError (infer_classes's,
// plus a hint) when the data is absent and the recipe does not state the number of outputs.
struct RecipeClasses {
  ClassList classes;
  std::string from;  // where they came from, for the printout
};
RecipeClasses classes_for_model(const DataOptions& d);

}  // namespace kg::data
