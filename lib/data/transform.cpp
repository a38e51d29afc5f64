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
    if (train || !tr->random()) transforms_.push_back(std::move(tr));
  }
  for (const auto& t : transforms_) presize_ = presize_ && !t->sizes_output();
  if (defer_normalize_) {
    for (size_t i = 0; i + 1 < transforms_.size(); ++i) {
      std::vector<double> m, s;
      KG_CHECK(!transforms_[i]->normalization(m, s), ConfigError,
               "data.uint8_transfer = true needs normalize to be the last transform of data.augment (transforms after it "
               "work on floats, which cannot travel as uint8); move it last or set data.uint8_transfer = false");
    }
    if (!transforms_.empty() && transforms_.back()->normalization(mean_, std_)) transforms_.pop_back();
  }
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
