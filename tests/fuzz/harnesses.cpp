// The fuzz harnesses (tests/fuzz/harnesses.h). Each drives the code a command runs on a user's input; a clean
// refusal (kg::Error with exit code 2 or 3) is an expected outcome, everything else is a finding.
#include "fuzz/harnesses.h"

#include <torch/torch.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "config/resolve.h"
#include "config/sweep.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/sha256.h"
#include "data/csv.h"
#include "data/folds.h"
#include "data/image_header.h"
#include "data/idx_import.h"
#include "data/image_io.h"
#include "data/jpeg_header.h"
#include "data/jpeg_window.h"
#include "data/options.h"
#include "data/pack.h"
#include "data/submission.h"
#include "data/table.h"
#include "fuzz/checkpoint_rig.h"
#include "model/weights/safetensors.h"
#include "model/weights/unpickle.h"
#include "test_paths.h"
#include "train/checkpoint.h"
#include "train/log_options.h"
#include "train/options.h"

namespace kg::fuzz {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// A folder for the harness's files, made once per process (libFuzzer runs millions of inputs in one).
const std::string& scratch() {
  static const std::string dir = [] {
    std::string tmpl = (fs::temp_directory_path() / "kgtrain-fuzz-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    return tmpl;
  }();
  return dir;
}

}  // namespace

std::vector<std::string> split_parts(const uint8_t* data, size_t size, size_t n) {
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t i = 0; i + 1 < n; ++i) {
    size_t len = 0;
    if (at + 4 <= size)
      len = data[at] | (size_t{data[at + 1]} << 8) | (size_t{data[at + 2]} << 16) | (size_t{data[at + 3]} << 24);
    at = std::min(size, at + 4);
    len = std::min(len, size - at);
    out.emplace_back(reinterpret_cast<const char*>(data + at), len);
    at += len;
  }
  out.emplace_back(reinterpret_cast<const char*>(data + at), size - at);
  return out;
}

std::string join_parts(const std::vector<std::string>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i + 1 < parts.size()) {
      const auto len = static_cast<uint32_t>(parts[i].size());
      for (int b = 0; b < 4; ++b) out.push_back(static_cast<char>((len >> (8 * b)) & 0xff));
    }
    out += parts[i];
  }
  return out;
}

namespace {

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  size_t a = 0;
  while (a < s.size()) {
    size_t b = s.find('\n', a);
    if (b == std::string::npos) b = s.size();
    out.push_back(s.substr(a, b - a));
    a = b + 1;
  }
  return out;
}

// Runs `f`; a user-facing refusal (exit 2 or 3) is fine, anything else propagates to libFuzzer as a finding.
template <class F>
int refusals_ok(F&& f) {
  try {
    f();
  } catch (const kg::Error& e) {
    if (e.exit_code() != kExitConfig && e.exit_code() != kExitData) throw;
  }
  return 0;
}

}  // namespace

int recipe(const uint8_t* data, size_t size) {
  auto p = split_parts(data, size, 2);
  return refusals_ok([&] {
    const std::string file = scratch() + "/recipe.toml";
    write_file_atomic(file, p[0]);
    config::ResolveInput in;
    in.recipe_files = {file};
    in.args = lines(p[1]);
    in.environ = {{"HOME", "/nonexistent"}};
    in.builtin_recipes_dir = KGTRAIN_SOURCE_DIR "/recipes";
    in.path_exists = [](const std::string&) { return false; };
    in.default_of_in_tree = &config::default_of;
    // fit -m reads the same words as a sweep first.
    (void)config::parse_sweep(in.args, 64).runs();
    auto resolved = config::resolve(in);
    auto v = config::Recipe::validate(resolved.tree);
    (void)config::to_toml(v.tree(), true);
    // What every job reads from a validated recipe.
    (void)v.get<data::DataOptions>();
    (void)v.get<data::CvOptions>();
    (void)v.get<train::TrainOptions>();
    (void)v.get<train::CheckpointOptions>();
    (void)v.get<train::LogOptions>();
  });
}

int csv(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  return refusals_ok([&] {
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    auto table = data::parse_csv(text, "train.csv");
    data::DataOptions o;
    o.root = scratch();
    o.task = static_cast<Task>(data[0] & 3);
    o.label_sep = (data[0] & 4) ? " " : "|";
    o.on_bad_row = "skip";
    o.max_classes = 1000;  // the limit's logic at a size that keeps each input fast
    if (data[0] & 8) o.path_col = "path";
    if (data[0] & 16) o.feature_cols = {"f"};
    data::TableSource src;
    src.csv = &table;
    src.image_dir = "train";
    src.id_col = o.id_col;
    src.path_col = o.path_col;
    src.label_cols = o.label_cols;
    auto classes = data::infer_classes(o, src);
    (void)classes.to_json();
    std::vector<data::BadRow> bad;
    auto t = data::build_table(o, src, &classes, true, bad);
    (void)data::bad_rows_csv(bad);
    data::apply_bad_row_policy(t, bad, "skip");
    if (t.size() >= 3) {
      data::CvOptions cv;
      cv.folds = 3;
      (void)data::assign_folds(t, cv, 7);
    }
  });
}

int safetensors(const uint8_t* data, size_t size) {
  return refusals_ok([&] {
    auto m = model::decode_safetensors(std::string(reinterpret_cast<const char*>(data), size), "fuzz.safetensors");
    // What a reader does next: every tensor's values are touched (sums would read any bad offset).
    for (auto& [name, t] : m)
      if (t.numel() > 0) (void)t.to(torch::kDouble).sum().item<double>();
  });
}

// The decoders allocate what a header declares before reading a row: a lower pixel limit than data's default keeps
// each input fast (the limit's logic is the same at any value).
constexpr int64_t kFuzzMaxPixels = 1 << 22;

int pack(const uint8_t* data, size_t size) {
  return refusals_ok([&] {
    const std::string file = scratch() + "/fuzz.kgpack";
    write_file_atomic(file, std::string_view(reinterpret_cast<const char*>(data), size));
    auto r = data::PackReader::open(file);
    (void)r->hash();
    for (int64_t i = 0; i < std::min<int64_t>(r->size(), 4); ++i) {
      (void)r->item(i);
      refusals_ok([&] { (void)r->image(i, 1 + 2 * (i & 1), kFuzzMaxPixels); });
    }
    r->verify();
  });
}

int checkpoint(const uint8_t* data, size_t size) {
  auto p = split_parts(data, size, 3);  // state.json, state.safetensors, MANIFEST.json ("" = a correct one)
  return refusals_ok([&] { CheckpointRig::get().resume_from(p[0], p[1], p[2], scratch() + "/ck"); });
}

int image(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int channels = (data[0] & 1) ? 3 : 1, reduce = 1 << ((data[0] >> 1) & 3);
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  (void)data::jpeg_info(bytes);
  if (data::can_decode_jpeg_windows() && (data[0] & 8))
    (void)data::decode_jpeg_window(bytes, channels, data::Window{1, 1, 6, 6}, 1 + ((data[0] >> 4) & 7));
  return refusals_ok([&] { (void)data::decode_image_bytes(bytes, "fuzz.img", channels, reduce, kFuzzMaxPixels); });
}

int idx(const uint8_t* data, size_t size) {
  auto p = split_parts(data, size, 2);  // images, labels
  return refusals_ok([&] {
    const std::string dir = scratch() + "/idx";
    std::error_code ec;
    remove_tree(dir, ec);
    make_directories(dir);
    write_file_atomic(dir + "/images", p[0]);
    write_file_atomic(dir + "/labels", p[1]);
    data::IdxImportOptions o;
    o.train_images = o.test_images = dir + "/images";
    o.train_labels = o.test_labels = dir + "/labels";
    o.out_dir = dir + "/out";
    o.threads = 1;
    o.packs = true;
    (void)data::import_idx(o);
  });
}

int submission(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  return refusals_ok([&] {
    const std::string root = scratch() + "/sub";
    make_directories(root);
    write_file_atomic(root + "/sample.csv", std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
    data::DataOptions o;
    o.root = root;
    o.sample_submission = "sample.csv";
    o.task = static_cast<Task>(data[0] & 3);
    data::Table test;
    for (const char* id : {"1", "2", "x"}) test.rows.push_back({id, "", "test.csv", 1, -1});
    test.task = o.task;
    data::ClassList classes;
    classes.task = test.task;
    classes.names = test.task == data::Task::binary ? std::vector<std::string>{"no", "yes"}
                                                    : std::vector<std::string>{"a", "b", "c"};
    classes.numeric = false;
    auto preds = torch::rand({3, classes.outputs()});
    data::SubmissionFormat f;
    f.output = (data[0] & 4) ? "label" : (data[0] & 8) ? "probability" : "auto";
    (void)data::format_submission(o, test, preds, classes, f);
  });
}

int torch_pickle(const uint8_t* data, size_t size) {
  return refusals_ok([&] {
    try {
      // Each storage as read_torch_save's reader gives it: zeros, as long as the archive's record would be (bounded
      // here as the record's size bounds it there).
      auto doc = model::pickle::unpickle(reinterpret_cast<const char*>(data), size,
                                         [](const std::string&, const std::string&, int64_t numel) {
                                           if (numel < 0 || numel > (1 << 16)) throw DataError("storage size");
                                           return torch::zeros({numel});
                                         });
      (void)doc.root->describe();
    } catch (const Error&) {
      throw;
    } catch (const std::runtime_error& e) {
      throw CheckpointError(e.what());  // what read_torch_save makes of it
    }
  });
}

}  // namespace kg::fuzz
