#include "jobs/bench_util.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/fs.h"
#include "core/parallel_for.h"
#include "core/random.h"
#include "data/loader.h"
#include "data/table.h"
#include "data/transform.h"

namespace kg::jobs::bench {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string grouped(double v) {
  std::string digits = fixed(std::abs(v), 0), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 && digits != "0" ? "-" : "") + out;
}

double time_parallel(int threads, size_t n, const std::function<void(size_t, int)>& work) {
  auto t0 = Clock::now();
  parallel_for(n, std::max(1, threads), work);
  return seconds_since(t0);
}

nlohmann::json rate_json(int threads, int64_t images, double secs) {
  double ips = secs > 0 ? static_cast<double>(images) / secs : 0.0;
  return {{"threads", threads},
          {"images", images},
          {"seconds", secs},
          {"images_per_s", ips},
          {"images_per_s_per_thread", ips / std::max(1, threads)}};
}

namespace {
// A row's image; a failure names the row as the loader's does (bench-data scans nothing beforehand).
data::Image row_image(const data::Table& t, int64_t row, int channels) {
  const data::Row& r = t.rows[static_cast<size_t>(row)];
  return with_context(r.where + " (id " + r.id + ")", [&] { return t.image(static_cast<size_t>(row), channels); });
}
}  // namespace

double time_decode(const data::Table& t, const std::vector<int64_t>& rows, size_t n, int channels, int threads) {
  return time_parallel(threads, n, [&](size_t i, int) { row_image(t, rows[i], channels); });
}

double time_decode_augment(const data::Table& t, const std::vector<int64_t>& rows, size_t n, const data::Pipeline& pipe,
                           uint64_t seed, int threads, const data::ImageCache* cache, int64_t epoch) {
  const auto& g = pipe.geometry();
  const size_t per_image = static_cast<size_t>(g.channels * g.height * g.width);
  const bool u8 = pipe.outputs_u8();
  std::vector<std::vector<float>> out(static_cast<size_t>(threads), std::vector<float>(u8 ? 0 : per_image));
  std::vector<std::vector<uint8_t>> out8(static_cast<size_t>(threads), std::vector<uint8_t>(u8 ? per_image : 0));
  return time_parallel(threads, n, [&](size_t i, int w) {
    const auto row = rows[i];
    Rng rng = data::sample_rng(seed, epoch, row);  // the loader's stream
    const auto& r = t.rows[static_cast<size_t>(row)];
    if (!cache && pipe.decodes_reduced() && !(t.pack && r.item >= 0)) {  // as the loader: JPEGs decoded reduced
      with_context(r.where + " (id " + r.id + ")", [&] {
        pipe.process_encoded(read_file(r.image), r.image, static_cast<int>(g.channels), t.max_image_pixels, rng,
                             u8 ? nullptr : out[static_cast<size_t>(w)].data(),
                             u8 ? out8[static_cast<size_t>(w)].data() : nullptr);
      });
      return;
    }
    data::Image img = cache ? cache->get(row) : data::Image();
    if (img.empty()) img = row_image(t, row, static_cast<int>(g.channels));
    if (u8)
      pipe.process_u8(std::move(img), rng, out8[static_cast<size_t>(w)].data());
    else
      pipe.process(std::move(img), rng, out[static_cast<size_t>(w)].data());
  });
}

Windowed median_window(const std::vector<double>& step_seconds, const std::vector<int64_t>& step_images, int64_t warmup,
                       int64_t steps, int64_t repeats) {
  Windowed w;
  const int64_t n = static_cast<int64_t>(step_seconds.size());
  if (n == 0) return w;
  w.warmup = std::min(warmup, n - 1);
  const int64_t usable = n - w.warmup;
  w.steps_per_window = std::max<int64_t>(1, std::min(steps, usable));
  w.windows = std::max<int64_t>(1, std::min(repeats, usable / w.steps_per_window));
  std::vector<std::pair<double, int64_t>> wins;  // (seconds, images)
  for (int64_t r = 0; r < w.windows; ++r) {
    double secs = 0;
    int64_t images = 0;
    for (int64_t i = w.warmup + r * w.steps_per_window; i < w.warmup + (r + 1) * w.steps_per_window; ++i) {
      secs += step_seconds[static_cast<size_t>(i)];
      images += i < static_cast<int64_t>(step_images.size()) ? step_images[static_cast<size_t>(i)] : 0;
    }
    wins.emplace_back(secs, images);
  }
  std::sort(wins.begin(), wins.end());
  const auto& mid = wins[wins.size() / 2];
  w.seconds_per_step = mid.first / static_cast<double>(w.steps_per_window);
  w.images_per_s = mid.first > 0 ? static_cast<double>(mid.second) / mid.first : 0.0;
  return w;
}

}  // namespace kg::jobs::bench
