#include "data/transform.h"

#include <algorithm>
#include <string>

#if KG_WITH_OPENCV
#include <opencv2/imgproc.hpp>
#endif

#include "core/error.h"
#include "data/image_header.h"
#include "data/image_io.h"
#include "data/jpeg_header.h"
#include "data/jpeg_window.h"
#include "transform_names.h"

namespace kg::data {

TransformRegistry& transform_registry() {
  static TransformRegistry r("transform");
  return r;
}

#if !KG_WITH_OPENCV
namespace {
// The transforms that compute new pixels are OpenCV calls (KG_TRANSFORMS_NEED_OPENCV): named in a recipe, they say so.
const bool kMarked = [] {
  std::string plain;
  for (const char* name : {KG_PLAIN_TRANSFORM_NAMES}) plain += (plain.empty() ? "" : ", ") + std::string(name);
  for (const char* name : {KG_OPENCV_TRANSFORM_NAMES})
    transform_registry().mark_unavailable(
        name,
        "it needs OpenCV, which this kgtrain was built without (Debian/Ubuntu: apt-get install libopencv-dev, "
        "then rebuild); this build has " +
            plain);
  return true;
}();
}  // namespace
#endif

void apply_index_map(const Transform& t, Image& img, Rng& rng) {
  std::vector<int64_t> ys(static_cast<size_t>(img.rows)), xs(static_cast<size_t>(img.cols));
  t.index_map(rng, img.rows, img.cols, ys, xs);
  const Image in = img;
  const size_t px = in.elemSize();
  Image out(static_cast<int>(ys.size()), static_cast<int>(xs.size()), in.type());
  for (size_t y = 0; y < ys.size(); ++y) {
    uint8_t* dst = out.ptr<uint8_t>(static_cast<int>(y));
    if (ys[y] < 0) {
      std::fill(dst, dst + xs.size() * px, uint8_t{0});
      continue;
    }
    const uint8_t* src = in.ptr<uint8_t>(static_cast<int>(ys[y]));
    for (size_t x = 0; x < xs.size(); ++x) {
      if (xs[x] < 0)
        std::fill(dst + x * px, dst + (x + 1) * px, uint8_t{0});
      else
        std::copy(src + static_cast<size_t>(xs[x]) * px, src + static_cast<size_t>(xs[x] + 1) * px, dst + x * px);
    }
  }
  img = out;
}

Pipeline::Pipeline(const config::json& augment, const ImageGeometry& g, bool train, bool defer_normalize,
                   bool reduced_decode)
    : g_(g), defer_normalize_(defer_normalize), reduced_(reduced_decode) {
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
      KG_CHECK(
          !transforms_[i]->normalization(m, s), ConfigError,
          "data.uint8_transfer = true needs normalize to be the last transform of data.augment (transforms after it "
          "work on floats, which cannot travel as uint8); move it last or set data.uint8_transfer = false");
    }
    if (!transforms_.empty() && transforms_.back()->normalization(mean_, std_)) {
      transforms_.pop_back();
      names_.pop_back();
    }
  } else if (!transforms_.empty() && transforms_.back()->normalization(host_mean_, host_std_)) {
    transforms_.pop_back();
    names_.pop_back();
    const float to_unit = static_cast<float>(1.0 / 255.0);  // Normalize::apply's convertTo scale, in float
    for (size_t k = 0; k < host_mean_.size(); ++k)
      for (int v = 0; v < 256; ++v)
        host_table_.push_back(static_cast<float>((static_cast<float>(v) * to_unit - host_mean_[k]) / host_std_[k]));
  }
}

bool Pipeline::normalization(std::vector<double>& mean, std::vector<double>& std) const {
  if (!host_mean_.empty() || !mean_.empty()) {
    mean = host_mean_.empty() ? mean_ : host_mean_;
    std = host_mean_.empty() ? std_ : host_std_;
    return true;
  }
  for (size_t i = transforms_.size(); i-- > 0;)
    if (transforms_[i]->normalization(mean, std)) return true;
  return false;
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

void resize_to(Image& img, const ImageGeometry& g) {
  if (img.rows == g.height && img.cols == g.width) return;
#if KG_WITH_OPENCV
  Image resized;
  bool shrink = img.rows > g.height || img.cols > g.width;
  cv::resize(img, resized, cv::Size(static_cast<int>(g.width), static_cast<int>(g.height)), 0, 0,
             shrink ? cv::INTER_AREA : cv::INTER_LINEAR);
  img = resized;
#else
  throw DataError("an image is " + std::to_string(img.cols) + "x" + std::to_string(img.rows) + ", data.image_size is " +
                  std::to_string(g.width) + "x" + std::to_string(g.height) +
                  ": resizing needs OpenCV, which this kgtrain "
                  "was built without. Set data.image_size to the images' size, or make a raw pack at that size with "
                  "`kgtrain pack --raw --size H W` where kgtrain has OpenCV");
#endif
}

void Pipeline::transform(Image& img, Rng& rng, size_t first) const {
  if (presize_) resize_to(img, g_);
  for (size_t i = first; i < transforms_.size(); ++i) transforms_[i]->apply(img, rng);
  resize_to(img, g_);
}

void Pipeline::process_u8(Image img, Rng& rng, uint8_t* out) const {
  transform(img, rng);
  write_u8(img, out);
}

void Pipeline::process(Image img, Rng& rng, float* out) const {
  transform(img, rng);
  write(img, out);
}

void Pipeline::process_encoded(std::string_view bytes, const std::string& name, int channels, int64_t max_pixels,
                               Rng& rng, float* out, uint8_t* out8) const {
  Image img;
  size_t first = 0;
  const auto info = decodes_reduced() ? jpeg_info(bytes) : std::nullopt;
  if (info && !info->exif) {  // EXIF may rotate the pixels away from the header's size: decode in full
    check_image_header(bytes, name, max_pixels);
    const Window win = transforms_[0]->plan_window(info->height, info->width, rng);
    const int w = static_cast<int>(g_.width), h = static_cast<int>(g_.height);
    if (auto part = decode_jpeg_window(bytes, channels, win, jpeg_scale_for(win, w, h))) {
      img = std::move(part->img);  // only the window, at M/8
      transforms_[0]->apply_window(img, win, part->sx, part->sy, part->x, part->y);
    } else {  // OpenCV: the whole file at 1/2, 1/4 or 1/8
      int f = 8;
      while (f > 1 && (win.w < f * w || win.h < f * h)) f /= 2;
      img = decode_image_bytes(bytes, name, channels, f, max_pixels);
      transforms_[0]->apply_window(img, win, static_cast<double>(img.cols) / info->width,
                                   static_cast<double>(img.rows) / info->height);
    }
    first = 1;
  } else {
    img = decode_image_bytes(bytes, name, channels, 1, max_pixels);
  }
  transform(img, rng, first);
  if (out8)
    write_u8(img, out8);
  else
    write(img, out);
}

void Pipeline::write_u8(const Image& img, uint8_t* out) const {
  KG_CHECK(img.depth() == kDepth8U, DataError,
           "data.uint8_transfer: a transform produced float pixels; only a final normalize may");
  const int c = img.channels();
  const int64_t plane = g_.height * g_.width;
  for (int y = 0; y < img.rows; ++y) {
    const uint8_t* row = img.ptr<uint8_t>(y);
    for (int x = 0; x < img.cols; ++x)
      for (int k = 0; k < c; ++k) out[k * plane + y * img.cols + x] = row[x * c + k];
  }
}

void Pipeline::write(const Image& img, float* out) const {
  // Without a normalize transform pixels are scaled to [0, 1].
  const int c = img.channels();
  const int64_t plane = g_.height * g_.width;
  const bool u8 = img.depth() == kDepth8U, fused = !host_mean_.empty();
  for (int y = 0; y < img.rows; ++y) {
    const uint8_t* row8 = img.ptr<uint8_t>(y);
    const float* rowf = img.ptr<float>(y);
    for (int k = 0; k < c; ++k) {
      float* dst = out + k * plane + static_cast<int64_t>(y) * img.cols;
      if (u8 && fused) {
        const float* table = host_table_.data() + 256 * k;
        for (int x = 0; x < img.cols; ++x) dst[x] = table[row8[x * c + k]];
      } else if (u8) {
        for (int x = 0; x < img.cols; ++x) dst[x] = row8[x * c + k] * (1.0f / 255.0f);
      } else if (fused) {
        const double m = host_mean_[static_cast<size_t>(k)], s = host_std_[static_cast<size_t>(k)];
        for (int x = 0; x < img.cols; ++x) dst[x] = static_cast<float>((rowf[x * c + k] - m) / s);
      } else {
        for (int x = 0; x < img.cols; ++x) dst[x] = rowf[x * c + k];
      }
    }
  }
}

}  // namespace kg::data
