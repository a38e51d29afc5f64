// Every committed fuzz input runs through its harness in the ordinary test suite (no clang, no libFuzzer needed):
// the seeds of tests/fuzz/corpus/<harness>/ and the inputs that once were findings, tests/fuzz/regressions/<harness>/
// (each named after what it found; docs/reliability.md lists them). The seeds are written by kgtrain's own writers
// with the hidden test below: kgtrain_tests "[.fuzz-seeds]".
#include <catch2/catch.hpp>
#include <opencv2/core.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "data/pack.h"
#include "fuzz/checkpoint_rig.h"
#include "fuzz/harnesses.h"
#include "model/weights/safetensors.h"
#include "support/encode.h"
#include "support/temp_dir.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace fs = std::filesystem;

namespace {

struct Harness {
  const char* name;
  int (*run)(const uint8_t*, size_t);
};
#define KG_FUZZ_ENTRY(name, what) Harness{#name, &kg::fuzz::name},
const Harness kHarnesses[] = {KG_FUZZ_HARNESSES(KG_FUZZ_ENTRY)};
#undef KG_FUZZ_ENTRY

const std::string kFuzzDir = KGTRAIN_SOURCE_DIR "/tests/fuzz";

std::vector<fs::path> files_in(const std::string& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

int run_file(const Harness& h, const fs::path& p) {
  const std::string bytes = kg::read_file(p.string());
  return h.run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace

TEST_CASE("split_parts reads what join_parts writes, and short inputs give short parts", "[unit][fuzz]") {
  const std::vector<std::string> parts{"state", std::string("\0\1", 2), "", "last part"};
  const auto joined = kg::fuzz::join_parts(parts);
  CHECK(kg::fuzz::split_parts(reinterpret_cast<const uint8_t*>(joined.data()), joined.size(), 4) == parts);
  const uint8_t cut[] = {200, 0, 0, 0, 'a', 'b'};  // says 200 bytes, has 2
  CHECK(kg::fuzz::split_parts(cut, sizeof cut, 3) == std::vector<std::string>{"ab", "", ""});
  CHECK(kg::fuzz::split_parts(cut, 2, 2) == std::vector<std::string>{"", ""});
}

TEST_CASE("every fuzz seed and past finding runs through its harness without a finding", "[unit][fuzz]") {
  for (const auto& h : kHarnesses) {
    const auto seeds = files_in(kFuzzDir + "/corpus/" + h.name);
    INFO("harness " << h.name);
    CHECK(seeds.size() >= 2);
    for (const auto& dir : {"/corpus/", "/regressions/"})
      for (const auto& p : files_in(kFuzzDir + dir + h.name)) {
        INFO(p.string());
        CHECK_NOTHROW(run_file(h, p));
      }
  }
}

TEST_CASE("the checkpoint harness's seed is a checkpoint the rig resumes from", "[unit][fuzz]") {
  // Otherwise the fuzzer would start from inputs refused at the first check and never reach the state parsing.
  const auto seeds = files_in(kFuzzDir + "/corpus/checkpoint");
  REQUIRE(std::count_if(seeds.begin(), seeds.end(),
                        [](auto& p) { return p.filename().string().rfind("rig_", 0) == 0; }) > 0);
  kg::test::TempDir dir;
  for (const auto& p : seeds) {
    if (p.filename().string().rfind("rig_", 0) != 0) continue;  // the other seeds are refusals
    const std::string bytes = kg::read_file(p.string());
    auto parts = kg::fuzz::split_parts(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 3);
    INFO(p.string());
    CHECK_NOTHROW(kg::fuzz::CheckpointRig::get().resume_from(parts[0], parts[1], parts[2], dir / "ck"));
  }
}

// --- the seed corpora ------------------------------------------------------------------------------------------

namespace {

void seed(const std::string& harness, const std::string& name, const std::string& bytes) {
  const std::string dir = kFuzzDir + "/corpus/" + harness;
  kg::make_directories(dir);
  kg::write_file_atomic(dir + "/" + name, bytes);
}

std::string flag(int f, const std::string& rest) { return std::string(1, static_cast<char>(f)) + rest; }

std::string encoded(const std::string& ext, int channels, int size) {
  cv::Mat m(size, size, channels == 1 ? CV_8UC1 : CV_8UC3);
  cv::randu(m, 0, 255);
  if (ext == ".jpg") return kg::test::encode_jpeg(m);
  return ext == ".bmp" ? kg::test::encode_bmp(m) : kg::test::encode_png(m);
}

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

}  // namespace

TEST_CASE("write the fuzz seed corpora", "[.fuzz-seeds]") {
  cv::setRNGSeed(1);
  torch::manual_seed(1);
  using kg::fuzz::join_parts;
  // recipe: recipe text, then override words one per line.
  seed("recipe", "fashion_mnist",
       join_parts({kg::read_file(KGTRAIN_SOURCE_DIR "/recipes/fashion_mnist.toml"),
                   "optim.lr=3e-4\ntrain.epochs=2\n+run.tag=fuzz\n~tta.views\ndata.augment=[{name=\"hflip\"}]"}));
  seed("recipe", "interpolation_groups",
       join_parts({"[run]\nname = \"${model.name}-${optim.lr}\"\n[model]\nname = \"resnet18\"\n"
                   "[data]\nroot = \"${env:KG_DATA,/tmp}\"\nimage_size = 32\n[optim]\nlr = 1e-3\n",
                   "model=resnet18\noptim=sgd\nschedule.name=cosine"}));
  seed("recipe", "sweep",
       join_parts({"[train]\nepochs = 1\n",
                   "optim.lr=1e-3,3e-4\ntrain.epochs=range(1,4)\n"
                   "model.name=choice(resnet9,resnet18)"}));
  // csv: a flag byte (task, label separator, path and feature columns), then the CSV.
  seed("csv", "multiclass", flag(0, "id,label\n1,cat\n2,dog\n3,cat\n4,bird\n5,dog\n"));
  seed("csv", "multilabel_paths",
       flag(1 | 8 | 16,
            "\xEF\xBB\xBFid,label,path,f\r\n1,a b,x/1.png,0.5\r\n2,b,x/2.png,1\r\n"
            "\"3\",\"a,\"\"b\"\"\",3.png,2e3\r\n4,,4.png,-1\r\n"));
  seed("csv", "binary", flag(2, "id,label\n1,0\n2,1\n3,1\n4,0\n"));
  seed("csv", "regression", flag(3 | 16, "id,label,f\n1,0.5,1\n2,1e9,2\n3,-3,3\n4,nan,4\n"));
  // safetensors: kgtrain's writer, several dtypes and shapes, and an empty file.
  seed("safetensors", "dtypes",
       kg::model::encode_safetensors({{"a.weight", torch::randn({2, 3})},
                                      {"b.half", torch::randn({4}).to(torch::kHalf)},
                                      {"c.bf16", torch::randn({1, 2}).to(torch::kBFloat16)},
                                      {"d.long", torch::arange(5)},
                                      {"e.bool", torch::tensor({true, false})},
                                      {"f.scalar", torch::tensor(3.5)}}));
  seed("safetensors", "empty", kg::model::encode_safetensors({}));
  // pack: kgtrain's writer, a raw pack and an encoded one.
  kg::test::TempDir dir;
  {
    kg::data::PackWriter w(dir / "raw.kgpack", {{"kind", "raw"},
                                                {"height", 4},
                                                {"width", 4},
                                                {"channels", 1},
                                                {"table_csv", "id,label\n1,a\n2,b\n"},
                                                {"id_col", "id"}});
    w.add(std::string(16, '\x10'));
    w.add(std::string(16, '\x80'));
    w.finish();
    seed("pack", "raw", kg::read_file(dir / "raw.kgpack"));
    kg::data::PackWriter e(dir / "encoded.kgpack",
                           {{"kind", "encoded"}, {"table_csv", "id\n1\n2\n"}, {"id_col", "id"}, {"source", "fuzz"}});
    e.add(encoded(".png", 1, 6));
    e.add(encoded(".png", 3, 5));
    e.finish();
    seed("pack", "encoded", kg::read_file(dir / "encoded.kgpack"));
  }
  // checkpoint: the rig's own state after one update; the manifest part empty (the harness writes a correct one).
  {
    auto f = kg::fuzz::CheckpointRig::get().files();
    auto state = f.state;
    state["schema_version"] = 2;
    seed("checkpoint", "rig_after_one_update",
         join_parts({state.dump(2) + "\n", kg::model::encode_safetensors(f.state_tensors), ""}));
    seed("checkpoint", "weights_only",
         join_parts({"{\"schema_version\": 2, \"epoch\": 1}\n", kg::model::encode_safetensors({}), ""}));
  }
  // image: a flag byte (channels, reduce, window path), then the file.
  seed("image", "png_gray", flag(0, encoded(".png", 1, 9)));
  seed("image", "png_rgb", flag(1, encoded(".png", 3, 7)));
  seed("image", "jpeg_window", flag(1 | 2 | 8 | 16, encoded(".jpg", 3, 24)));
  seed("image", "jpeg_gray", flag(4, encoded(".jpg", 1, 16)));
  seed("image", "bmp", flag(1, encoded(".bmp", 3, 5)));
  // idx: the images file, then the labels file (MNIST's big-endian headers).
  seed("idx", "two_images",
       join_parts({be32(0x803) + be32(2) + be32(3) + be32(3) + std::string(18, '\x7f'),
                   be32(0x801) + be32(2) + std::string("\x01\x02", 2)}));
  seed("idx", "no_images", join_parts({be32(0x803) + be32(0) + be32(28) + be32(28), be32(0x801) + be32(0)}));
  // submission: a flag byte (task, output), then sample_submission.csv for test ids 1, 2, x.
  seed("submission", "multiclass", flag(0, "id,label\nx,a\n1,a\n2,a\n"));
  seed("submission", "per_class", flag(8, "id,a,b,c\n1,0,0,0\n2,0,0,0\nx,0,0,0\n"));
  seed("submission", "binary", flag(2 | 4, "id,label\n1,no\n2,no\nx,no\n"));
  seed("submission", "regression", flag(3, "id,a,b,c\n2,0,0,0\n1,0,0,0\nx,0,0,0\n"));
}

}  // namespace KG_UNITY_ID
}  // namespace
