// A dataset whose evidence sits in one known place (the Grad-CAM localisation test): gray noise images with
// one bright mark at a random position; the class is the mark's shape ("cross": a plus, "ring": a hollow
// square), so nothing but the mark tells the classes apart.
#pragma once
#include <map>
#include <string>

#include "support/temp_dir.h"

namespace kg::test {

struct MarkBox {
  int y0 = 0, x0 = 0, size = 0;  // the mark's square, in pixels of the size x size image
};

struct MarksDataset {
  std::string root;                      // DATA folder: train.csv (id,label), train/<id>.png
  std::map<std::string, MarkBox> marks;  // id -> where its mark is
};

MarksDataset make_marks_dataset(const TempDir& dir, int rows, int size = 64, int mark = 12);

}  // namespace kg::test
