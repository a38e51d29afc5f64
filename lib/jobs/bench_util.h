// What the bench commands (bench-data, bench-model, bench) share: the clock, medians, work timed on
// threads, the decode and decode + augmentation rates of a recipe's pipeline, and how a run of step
// timings becomes one number (warm-up dropped, the median of repeated windows).
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kg::data {
struct Table;
class Pipeline;
class ImageCache;
}  // namespace kg::data

namespace kg::jobs::bench {

using Clock = std::chrono::steady_clock;
// schema_version of the JSON reports bench-data and bench-model write (--json).
constexpr int kSchemaVersion = 1;

double seconds_since(Clock::time_point t0);
double median(std::vector<double> v);
// "%.*f": fixed(1234.56, 1) = "1234.6".
std::string fixed(double v, int decimals);
// Rounded, thousands grouped: grouped(1899.6) = "1,900".
std::string grouped(double v);

// Runs work(i, worker) for i in [0, n) on `threads` threads; returns the wall time. The first
// exception stops the others and is rethrown.
double time_parallel(int threads, size_t n, const std::function<void(size_t, int)>& work);

// {threads, images, seconds, images_per_s, images_per_s_per_thread}
nlohmann::json rate_json(int threads, int64_t images, double secs);

// Seconds to decode rows[0, n) of `t` on `threads` threads.
double time_decode(const data::Table& t, const std::vector<int64_t>& rows, size_t n, int channels, int threads);

// Seconds to produce rows[0, n) the way the loader's workers do: the image from `cache` when it holds
// it (data.cache = "ram"), else decoded; then `pipe` with the loader's per-sample random stream of
// `epoch`.
double time_decode_augment(const data::Table& t, const std::vector<int64_t>& rows, size_t n, const data::Pipeline& pipe,
                           uint64_t seed, int threads, const data::ImageCache* cache = nullptr, int64_t epoch = 0);

// A run of step timings summarised: the first `warmup` steps are dropped, the rest cut into at most
// `repeats` windows of `steps` consecutive steps, and the window with the median time is reported
// (a window's mean, not a single step's median: a prefetching loader delivers in bursts). A run
// shorter than asked gets fewer or shorter windows (at least one step; the warm-up shrinks last).
struct Windowed {
  double seconds_per_step = 0;                            // the median window's time / its steps
  double images_per_s = 0;                                // the median window's images / its time
  int64_t windows = 0, steps_per_window = 0, warmup = 0;  // what was actually used
};
Windowed median_window(const std::vector<double>& step_seconds, const std::vector<int64_t>& step_images, int64_t warmup,
                       int64_t steps, int64_t repeats);

}  // namespace kg::jobs::bench
