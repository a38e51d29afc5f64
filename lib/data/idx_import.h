// Converts MNIST-format IDX files (gzip or raw) into the Kaggle layout kgtrain reads, so the classic
// data sets can be used like any competition download.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kg::data {

struct IdxImportOptions {
  std::string train_images, train_labels, test_images, test_labels;  // IDX(.gz) paths, all required
  std::string out_dir;                                               // DATA
  int threads = 2;                                                   // PNG encoding threads
  std::vector<std::string> class_names;  // optional; written to DATA/classes.csv (index,name)
  // Raw packs DATA/train.kgpack and DATA/test.kgpack (tables inside) instead of PNG folders and
  // train.csv/test.csv: no image decoding at training time, and no OpenCV image codecs needed.
  bool packs = false;
};

struct IdxImportReport {
  int64_t train = 0, test = 0;
  int height = 0, width = 0;
};

// Writes DATA/train/<id>.png and DATA/test/<id>.png (8-bit gray), DATA/train.csv (id,label),
// DATA/test.csv (id), DATA/sample_submission.csv (id,label with label 0), DATA/test_labels.csv
// (id,label) and, with class names, DATA/classes.csv (index,name); with `packs`, DATA/train.kgpack
// and DATA/test.kgpack replace the PNG folders and train.csv/test.csv. Ids are 1..N_train for train
// and N_train+1..N_train+N_test for test. A new image directory is built aside and renamed into
// place; an existing one is updated file by file (unchanged images are not rewritten, stale files
// are removed). CSVs are written atomically after the images. A re-run gives identical bytes.
// DATA must be new, empty or an earlier import's output (marked by DATA/.kgtrain-import.json); a re-import
// in the other layout removes the earlier layout's files. DataError for unreadable, malformed or
// inconsistent IDX files; UsageError for missing options or a DATA that holds anything else.
IdxImportReport import_idx(const IdxImportOptions& options);

}  // namespace kg::data
