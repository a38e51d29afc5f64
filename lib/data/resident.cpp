#include "data/resident.h"

#include <algorithm>
#include <cstring>

#include <ATen/ATen.h>

#include "core/error.h"
#include "core/parallel_for.h"
#include "core/strings.h"
#include "data/loader.h"
#include "data/table.h"
#include "data/transform.h"

namespace kg::data {

void ResidentImages::check_pipeline(const Pipeline& p, size_t stages) {
  KG_CHECK(stages <= 1, ConfigError,
           "data.cache = \"device\" keeps every image at one size, but data.image_size is a progressive-resizing "
           "schedule of ",
           stages, " sizes; use data.cache = \"ram\" with a schedule, or one image size");
  const std::string bad = p.without_index_map();
  KG_CHECK(bad.empty(), ConfigError, "data.cache = \"device\" augments on the device, where ", bad,
           " has no version; there the transforms may be pad_crop, hflip and vflip, then normalize last; "
           "remove it or use data.cache = \"ram\"");
}

ResidentImages::ResidentImages(const Table& t, const ImageGeometry& g, const c10::Device& device, size_t max_bytes,
                               int threads, const ImageCache* cache)
    : g_(g), n_(t.size()) {
  const int64_t H = g.height, W = g.width, C = g.channels;
  const double need = static_cast<double>(n_) * (H + 1) * (W + 1) * C;
  KG_CHECK(need <= static_cast<double>(max_bytes), ConfigError, "data.cache = \"device\": ", n_, " images of ", C, "x",
           H, "x", W, " take ", format_significant(need / (1 << 30), 3),
           " GiB, more than data.cache_max_gb = ", format_significant(static_cast<double>(max_bytes) / (1 << 30), 3),
           " GiB; raise data.cache_max_gb if the device has the memory, or use data.cache = \"ram\"");
  at::Tensor host = at::zeros({n_, H + 1, W + 1, C}, at::kByte);
  uint8_t* base = host.data_ptr<uint8_t>();
  parallel_for(static_cast<size_t>(n_), std::max(1, threads), [&](size_t row, int) {
    const auto i = static_cast<int64_t>(row);
    try {
      Image img = cache ? cache->get(i) : Image();
      if (img.empty()) img = t.image(row, static_cast<int>(C));
      resize_to(img, g);
      KG_ASSERT(img.channels() == C && img.depth() == kDepth8U, "decoded image of ", img.channels(), " channels");
      for (int64_t y = 0; y < H; ++y)
        std::memcpy(base + ((i * (H + 1) + y) * (W + 1)) * C, img.ptr<uint8_t>(static_cast<int>(y)),
                    static_cast<size_t>(W * C));
    } catch (...) {
      with_context(t.rows[row].where + " (id " + t.rows[row].id + ")", [] { throw; });
    }
  });
  images_ = host.to(device);
}

int64_t ResidentImages::bytes() const { return images_.numel(); }

at::Tensor ResidentImages::batch(const std::vector<int64_t>& rows, const Pipeline& p, uint64_t seed,
                                 int64_t epoch) const {
  const int64_t B = static_cast<int64_t>(rows.size()), H = g_.height, W = g_.width;
  KG_ASSERT(p.geometry().height == H && p.geometry().width == W, "pipeline size differs from the resident images");
  at::Tensor r = at::empty({B, 1, 1}, at::kLong), ys = at::empty({B, H, 1}, at::kLong),
             xs = at::empty({B, 1, W}, at::kLong);
  int64_t *pr = r.data_ptr<int64_t>(), *py = ys.data_ptr<int64_t>(), *px = xs.data_ptr<int64_t>();
  std::vector<int64_t> my, mx;
  for (int64_t i = 0; i < B; ++i) {
    const int64_t row = rows[static_cast<size_t>(i)];
    KG_ASSERT(row >= 0 && row < n_, "row ", row, " of ", n_, " resident images");
    Rng rng = sample_rng(seed, epoch, row);
    p.index_maps(rng, my, mx);
    pr[i] = row;
    for (int64_t y = 0; y < H; ++y) py[i * H + y] = my[static_cast<size_t>(y)] < 0 ? H : my[static_cast<size_t>(y)];
    for (int64_t x = 0; x < W; ++x) px[i * W + x] = mx[static_cast<size_t>(x)] < 0 ? W : mx[static_cast<size_t>(x)];
  }
  const auto dev = images_.device();
  // One gather: [B, H, W, C] uint8, then float NCHW, laid out as every other batch (the network picks
  // its memory format; a channels-last layout here would change convolution algorithms when C = 1).
  at::Tensor x = images_.index({r.to(dev), ys.to(dev), xs.to(dev)}).permute({0, 3, 1, 2});
  x = x.to(at::kFloat, false, false, at::MemoryFormat::Contiguous).div_(255.0);
  const auto& mean = p.device_mean();
  if (!mean.empty()) {
    const int64_t c = x.size(1);
    auto stat = [&](const std::vector<double>& v) {
      return at::tensor(std::vector<float>(v.begin(), v.end())).view({1, c, 1, 1}).to(dev);
    };
    x.sub_(stat(mean)).div_(stat(p.device_std()));
  }
  return x;
}

}  // namespace kg::data
