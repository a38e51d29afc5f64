#include "support/marks.h"

#include <opencv2/core.hpp>

#include "core/fs.h"
#include "core/random.h"
#include "data/image_io.h"

namespace kg::test {

MarksDataset make_marks_dataset(const TempDir& dir, int rows, int size, int mark) {
  MarksDataset d;
  d.root = dir / "marks";
  Rng rng(11);
  std::string csv = "id,label\n";
  for (int i = 0; i < rows; ++i) {
    const bool cross = i % 2 == 0;
    cv::Mat m(size, size, CV_8UC1);
    for (int y = 0; y < size; ++y)
      for (int x = 0; x < size; ++x) m.at<uint8_t>(y, x) = static_cast<uint8_t>(rng.below(70));
    MarkBox b{static_cast<int>(rng.below(static_cast<uint64_t>(size - mark))),
              static_cast<int>(rng.below(static_cast<uint64_t>(size - mark))), mark};
    for (int y = 0; y < mark; ++y)
      for (int x = 0; x < mark; ++x) {
        const bool bar = y >= mark / 2 - 1 && y <= mark / 2 || x >= mark / 2 - 1 && x <= mark / 2;
        const bool edge = y < 2 || x < 2 || y >= mark - 2 || x >= mark - 2;
        if (cross ? bar : edge) m.at<uint8_t>(b.y0 + y, b.x0 + x) = 230;
      }
    const std::string id = "m" + std::to_string(i);
    data::write_png_atomic(d.root + "/train/" + id + ".png", m);
    csv += id + "," + (cross ? "cross" : "ring") + "\n";
    d.marks[id] = b;
  }
  write_file_atomic(d.root + "/train.csv", csv);
  return d;
}

}  // namespace kg::test
