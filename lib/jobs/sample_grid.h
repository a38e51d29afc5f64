// A grid of training samples as the network sees them: after augmentation and mixup/cutmix, with their
// (soft) labels. `kgtrain show-batch` writes it; fit writes it as samples.png beside metrics.jsonl (log.images)
// and the TensorBoard logger shows that file as an image.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "report/image_grid.h"

namespace kg::data {
class Pipeline;
struct ClassList;
}  // namespace kg::data

namespace kg::session {
class TrainingContext;
}  // namespace kg::session

namespace kg::jobs {

// Float images [B, C, H, W] normalized with (mean, std) in [0, 1] units (empty: no normalization) back
// to 8-bit tiles; `targets` (int64 class indices [B] or float [B, K]) become captions with class names.
std::vector<report::Tile> batch_tiles(const at::Tensor& images, const at::Tensor& targets,
                                      const std::vector<double>& mean, const std::vector<double>& std,
                                      const data::ClassList& classes);

// The first `n` samples of epoch `epoch`'s first training batch over `rows` (mixed when the recipe mixes then)
// as a PNG grid. DataError when there is no row, or without OpenCV.
std::string training_sample_png(const session::TrainingContext& s, const std::vector<int64_t>& rows, int64_t n,
                                int64_t epoch, const std::string& title);

// The text equivalent (lib/jobs/sample_tokens.cpp): the first `n` rows of that batch as the model sees them, each
// with its id, label and token count, then its token ids shown as the tokenizer's strings ([CLS] the ##re ...),
// padding left out. ConfigError when model.pretrained holds no tokenizer.
std::string training_sample_tokens(const session::TrainingContext& s, const std::vector<int64_t>& rows, int64_t n,
                                   int64_t epoch, const std::string& title);

// A caption line for a (soft) target row: "Coat", "0.62 Shirt", "y 12.5".
std::vector<std::string> target_caption(const at::Tensor& target_row, const data::ClassList& classes);

}  // namespace kg::jobs
