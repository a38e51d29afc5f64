// show-batch for text: a training batch's rows as the model sees them, their token ids shown as the tokenizer's
// strings (transformers' convert_ids_to_tokens), beside the label and the row's text.
#include <torch/torch.h>

#include "core/error.h"
#include "core/strings.h"
#include "data/loader.h"
#include "jobs/sample_grid.h"
#include "model/model.h"
#include "session/training.h"
#include "text/tokenizer.h"

namespace kg::jobs {
namespace {

// A row's text for one line: its first `max_chars` bytes (cut at a character boundary), newlines as spaces.
std::string excerpt(const std::string& text, size_t max_chars) {
  size_t end = std::min(text.size(), max_chars);
  while (end < text.size() && end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  std::string out = text.substr(0, end);
  for (char& c : out)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return out + (end < text.size() ? " ..." : "");
}

}  // namespace

std::string training_sample_tokens(const session::TrainingContext& s, const std::vector<int64_t>& rows, int64_t n,
                                   int64_t epoch, const std::string& title) {
  KG_CHECK(!rows.empty(), DataError, "no training rows to show");
  const auto tokenizer = text::Tokenizer::from_folder(s.session.recipe.get<model::ModelOptions>().pretrained);
  const std::vector<std::string> tokens = tokenizer.id_to_token();
  auto loader = s.train_loader(rows, epoch, std::max<int64_t>(1, s.epochs));
  data::Batch b;
  KG_CHECK(loader->next(b), DataError, "the training loader gave no batch");
  const at::Tensor ids = b.inputs.ids.to(torch::kCPU).contiguous(), mask = b.inputs.mask.to(torch::kCPU).contiguous();
  const int64_t k = std::min<int64_t>(n, b.size()), L = ids.size(1);
  const auto id_at = ids.accessor<int64_t, 2>(), mask_at = mask.accessor<int64_t, 2>();
  const auto& table = s.data.table;
  std::string out = title + " (" + std::to_string(k) + " of " + std::to_string(b.size()) + " rows, padded to " +
                    std::to_string(L) + " tokens)\n";
  for (int64_t i = 0; i < k; ++i) {
    const int64_t row = b.rows[static_cast<size_t>(i)];
    const auto& r = table.rows[static_cast<size_t>(row)];
    std::string shown;
    int64_t count = 0;
    for (int64_t j = 0; j < L; ++j) {
      if (mask_at[i][j] == 0) continue;
      const int64_t id = id_at[i][j];
      const bool known = id >= 0 && static_cast<size_t>(id) < tokens.size() && !tokens[static_cast<size_t>(id)].empty();
      shown += (count++ ? " " : "") + (known ? tokens[static_cast<size_t>(id)] : "<" + std::to_string(id) + ">");
    }
    std::string label;
    if (b.targets.defined()) label = join(target_caption(b.targets[i], s.data.classes), ", ");
    out += "\n" + r.where + ": id " + r.id + (label.empty() ? "" : ", label " + label) + ", " + std::to_string(count) +
           " tokens\n";
    for (int64_t c = 0; c < table.text_dim; ++c) out += "  text  " + excerpt(table.text(row, c), 200) + "\n";
    out += "  ids   " + shown + "\n";
  }
  return out;
}

}  // namespace kg::jobs
