#include "data/transform.h"

#include <opencv2/imgproc.hpp>

#include "core/error.h"
#include "data/image_io.h"

namespace kg::data {

TransformRegistry& transform_registry() {
  static TransformRegistry r("transform");
  return r;
}

Pipeline::Pipeline(const config::json& augment, const ImageGeometry& g, bool train, bool defer_normalize)
    : g_(g), defer_normalize_(defer_normalize) {
  for (size_t i = 0; i < augment.size(); ++i) {
    const auto& t = augment[i];
    std::string where = "data.augment[" + std::to_string(i) + "]";
    auto tr = transform_registry().create(t.at("name").get<std::string>(), config::Options(t, where), g);
    if (train || !tr->random()) {
      transforms_.push_back(std::move(tr));
      names_.push_back(where + " (" + t.at("name").get<std::string>() + ")");
    }
  }
  for (const auto& t : transforms_) presize_ = presize_ && !t->sizes_output();
  if (defer_normalize_) {
    for (size_t i = 0; i + 1 < transforms_.size(); ++i) {
      std::vector<double> m, s;
      KG_CHECK(!transforms_[i]->normalization(m, s), ConfigError,
               "data.uint8_transfer = true needs normalize to be the last transform of data.augment (transforms after it "
               "work on floats, which cannot travel as uint8); move it last or set data.uint8_transfer = false");
    }
    if (!transforms_.empty() && transforms_.back()->normalization(mean_, std_)) {
      transforms_.pop_back();
      names_.pop_back();
    }
  }
}

std::string Pipeline::without_index_map() const {
  for (size_t i = 0; i < transforms_.size(); ++i)
    if (!transforms_[i]->has_index_map()) return names_[i];
  return "";
}

void Pipeline::index_maps(Rng& rng, std::vector<int64_t>& ys, std::vector<int64_t>& xs) const {
  const int64_t h = g_.height, w = g_.width;
  // Draw every transform's map in order (the order apply() draws in), then compose them from the
  // output back: out -> last transform's input -> ... -> the stored image.
  std::vector<std::vector<int64_t>> my(transforms_.size()), mx(transforms_.size());
  for (size_t i = 0; i < transforms_.size(); ++i) {
    KG_ASSERT(transforms_[i]->has_index_map(), names_[i], " has no index map");
    my[i].resize(static_cast<size_t>(h));
    mx[i].resize(static_cast<size_t>(w));
    transforms_[i]->index_map(rng, h, w, my[i], mx[i]);
  }
  auto compose = [&](std::vector<int64_t>& out, const std::vector<std::vector<int64_t>>& maps, int64_t n) {
    out.resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      int64_t c = j;
      for (size_t i = maps.size(); i-- > 0 && c >= 0;) c = maps[i][static_cast<size_t>(c)];
      out[static_cast<size_t>(j)] = c;
    }
  };
  compose(ys, my, h);
  compose(xs, mx, w);
}

void resize_to(cv::Mat& img, const ImageGeometry& g) {
  if (img.rows == g.height && img.cols == g.width) return;
  cv::Mat resized;
  bool shrink = img.rows > g.height || img.cols > g.width;
  cv::resize(img, resized, cv::Size(static_cast<int>(g.width), static_cast<int>(g.height)), 0, 0,
             shrink ? cv::INTER_AREA : cv::INTER_LINEAR);
  img = resized;
}

void Pipeline::transform(cv::Mat& img, Rng& rng) const {
  if (presize_) resize_to(img, g_);
  for (const auto& t : transforms_) t->apply(img, rng);
  resize_to(img, g_);
}

void Pipeline::process_u8(cv::Mat img, Rng& rng, uint8_t* out) const {
  transform(img, rng);
  KG_CHECK(img.depth() == CV_8U, DataError, "data.uint8_transfer: a transform produced float pixels; only a final normalize may");
  const int c = img.channels();
  const int64_t plane = g_.height * g_.width;
  for (int y = 0; y < img.rows; ++y) {
    const uint8_t* row = img.ptr<uint8_t>(y);
    for (int x = 0; x < img.cols; ++x)
      for (int k = 0; k < c; ++k) out[k * plane + y * img.cols + x] = row[x * c + k];
  }
}

void Pipeline::process(cv::Mat img, Rng& rng, float* out) const {
  transform(img, rng);
  // Without a normalize transform pixels are scaled to [0, 1].
  const int c = img.channels();
  const int64_t plane = g_.height * g_.width;
  const bool u8 = img.depth() == CV_8U;
  for (int y = 0; y < img.rows; ++y) {
    const uint8_t* row8 = img.ptr<uint8_t>(y);
    const float* rowf = img.ptr<float>(y);
    for (int x = 0; x < img.cols; ++x)
      for (int k = 0; k < c; ++k) {
        float v = u8 ? row8[x * c + k] * (1.0f / 255.0f) : rowf[x * c + k];
        out[k * plane + y * img.cols + x] = v;
      }
  }
}

}  // namespace kg::data
