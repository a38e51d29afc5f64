#include "train/window_pool.h"

#include <ATen/ATen.h>

#include "core/error.h"

namespace kg::train {

std::vector<int64_t> window_starts(const std::vector<int64_t>& windows) {
  std::vector<int64_t> starts;
  for (size_t i = 0; i < windows.size(); ++i)
    if (windows[i] == 0) starts.push_back(static_cast<int64_t>(i));
  return starts;
}

at::Tensor pool_windows(const at::Tensor& raw, const std::vector<int64_t>& starts, const std::string& pool) {
  KG_ASSERT(pool == "mean" || pool == "max", "pool_windows: unknown pool \"", pool, "\"");
  const int64_t n = raw.size(0);
  KG_ASSERT(starts.empty() ? n == 0 : starts.front() == 0, "pool_windows: the first sample starts no row");
  std::vector<at::Tensor> rows;
  rows.reserve(starts.size());
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t end = i + 1 < starts.size() ? starts[i + 1] : n;
    const at::Tensor w = raw.narrow(0, starts[i], end - starts[i]);
    rows.push_back(pool == "mean" ? w.mean(0) : std::get<0>(w.max(0)));
  }
  return rows.empty() ? raw.narrow(0, 0, 0) : at::stack(rows);
}

}  // namespace kg::train
