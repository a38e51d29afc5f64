#include "support/fixtures.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <filesystem>
#include <fstream>
#include <opencv2/core.hpp>

#include "cli.h"
#include "config/resolve.h"
#include "config/validate.h"
#include "core/fs.h"
#include "core/random.h"
#include "data/image_io.h"
#include "data/csv.h"
#include "data/pack.h"
#include "test_paths.h"

namespace kg::test {

namespace {

// Writes the tiny dataset's images either as PNG files (train/, test/) or (packs) as one raw pack per
// split whose table is the split's CSV; the CSV files are written either way.
TinyDataset write_tiny_dataset(const TempDir& dir, int train, int test, int size, bool packs) {
  TinyDataset d;
  d.root = dir / "data";
  d.train = train;
  d.test = test;
  Rng rng(7);
  auto image = [&](bool right) {
    cv::Mat m(size, size, CV_8UC1);
    for (int y = 0; y < size; ++y)
      for (int x = 0; x < size; ++x) {
        bool lit = (x >= size / 2) == right;
        m.at<uint8_t>(y, x) = static_cast<uint8_t>((lit ? 180 : 40) + rng.below(40));
      }
    return m;
  };
  std::vector<std::pair<std::string, cv::Mat>> train_images, test_images;
  std::string train_csv = "id,label\n", test_csv = "id\n", labels = "id,label\n";
  for (int i = 0; i < train; ++i) {
    bool right = i % 2;
    std::string id = "tr" + std::to_string(i);
    train_images.emplace_back(id, image(right));
    train_csv += id + "," + (right ? "right" : "left") + "\n";
  }
  std::vector<std::string> ids;
  for (int i = 0; i < test; ++i) {
    bool right = i % 3 == 0;
    std::string id = "te" + std::to_string(i);
    test_images.emplace_back(id, image(right));
    test_csv += id + "\n";
    labels += id + "," + (right ? "right" : "left") + "\n";
    ids.push_back(id);
  }
  auto save = [&](const std::string& split, const std::vector<std::pair<std::string, cv::Mat>>& images,
                  const std::string& table) {
    if (!packs) {
      for (auto& [id, m] : images) data::write_png_atomic(d.root + "/" + split + "/" + id + ".png", m);
      return;
    }
    std::filesystem::create_directories(d.root);
    data::PackWriter w(
        d.root + "/" + split + ".kgpack",
        {{"kind", "raw"}, {"height", size}, {"width", size}, {"channels", 1}, {"table_csv", table}, {"id_col", "id"}});
    for (auto& [id, m] : images)
      w.add(std::string_view(reinterpret_cast<const char*>(m.data), static_cast<size_t>(m.total())));
    w.finish();
  };
  save("train", train_images, train_csv);
  save("test", test_images, test_csv);
  // The sample submission lists the ids in another order: predictions must follow it.
  for (size_t i = ids.size(); i > 1; --i) std::swap(ids[i - 1], ids[rng.below(i)]);
  std::string sample = "id,label\n";
  for (auto& id : ids) sample += id + ",left\n";
  write_file_atomic(d.root + "/train.csv", train_csv);
  write_file_atomic(d.root + "/test.csv", test_csv);
  write_file_atomic(d.root + "/test_labels.csv", labels);
  write_file_atomic(d.root + "/sample_submission.csv", sample);
  return d;
}

}  // namespace

TinyDataset make_tiny_dataset(const TempDir& dir, int train, int test, int size) {
  return write_tiny_dataset(dir, train, test, size, false);
}

TinyDataset make_tiny_pack_dataset(const TempDir& dir, int train, int test, int size) {
  return write_tiny_dataset(dir, train, test, size, true);
}

TinyTable::TinyTable(int rows) {
  auto ds = make_tiny_dataset(dir, rows, 4);
  opts.root = ds.root;
  opts.channels = 1;
  opts.image_size = 12;
  classes = data::infer_classes(opts);
  table = data::load_table(opts, opts.train_csv, opts.image_dir, &classes, true);
}

config::Recipe resolve_recipe(const std::vector<std::string>& files, const std::vector<std::string>& args) {
  config::ResolveInput in;
  in.recipe_files = files;
  in.args = args;
  in.builtin_recipes_dir = KGTRAIN_SOURCE_DIR "/recipes";
  in.path_exists = [](const std::string&) { return false; };
  in.default_of_in_tree = &config::default_of;
  return config::Recipe::validate(config::resolve(in).tree);
}

RunResult run_shell(const std::string& command) {
  RunResult r;
  FILE* p = popen(("(" + command + ") 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

RunResult run_kgtrain(const std::vector<std::string>& args) {
  if (const char* spawn = std::getenv("KGTRAIN_TEST_SPAWN"); spawn && std::string(spawn) == "1")
    return run_kgtrain_env({}, args);
  std::vector<std::string> words{KGTRAIN_BINARY};  // argv[0]: fit --nproc and sweeps start it as their children
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);

  // File descriptors 1 and 2 go to a file for the call: std::cout, C stdio and any child process write there.
  char path[] = "/tmp/kgtrain-test-output-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) throw std::runtime_error(std::string("run_kgtrain: cannot create ") + path);
  ::unlink(path);
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const int saved_out = ::dup(1), saved_err = ::dup(2);
  ::dup2(fd, 1);
  ::dup2(fd, 2);
  // What a command may leave behind in this process: stream formatting and its SIGINT/SIGTERM handlers.
  std::ios cout_format(nullptr), cerr_format(nullptr);
  cout_format.copyfmt(std::cout);
  cerr_format.copyfmt(std::cerr);
  struct sigaction old_int {}, old_term {};
  ::sigaction(SIGINT, nullptr, &old_int);
  ::sigaction(SIGTERM, nullptr, &old_term);

  RunResult r;
  kg::app::set_executable(KGTRAIN_BINARY);
  r.exit_code = kg::app::run(static_cast<int>(words.size()), argv.data());

  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::cout.copyfmt(cout_format);
  std::cerr.copyfmt(cerr_format);
  std::cout.clear();
  std::cerr.clear();
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  ::dup2(saved_out, 1);
  ::dup2(saved_err, 2);
  ::close(saved_out);
  ::close(saved_err);
  ::lseek(fd, 0, SEEK_SET);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) r.output.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return r;
}

RunResult run_kgtrain_env(const std::vector<std::string>& env, const std::vector<std::string>& args) {
  std::string cmd = env.empty() ? "" : "env";
  for (const auto& e : env) cmd += " " + shell_quote(e);
  cmd += (cmd.empty() ? "" : " ") + shell_quote(KGTRAIN_BINARY);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  return run_shell(cmd);
}

std::string tiny_recipe(const std::string& data_root) {
  return "[run]\nname = \"tiny\"\nseed = 3\n"
         "[data]\nroot = \"" +
         data_root +
         "\"\nsample_submission = \"sample_submission.csv\"\n"
         "channels = 1\nimage_size = 12\nnum_workers = 2\n"
         "augment = [{ name = \"hflip\", p = 0.0 }, { name = \"normalize\", mean = [0.4], std = [0.3] }]\n"
         "[cv]\nfolds = 4\nfold = 1\n"
         "[model]\nname = \"resnet9\"\nwidth = 4\n"
         "[optim]\nlr = 0.02\nweight_decay = 0.0\n"
         "[train]\nepochs = 3\nbatch_size = 8\n"
         "[device]\nthreads = 1\n";
}

// The tiny dataset's images priced by side: "left" 100, "right" 300 (train.csv and test_labels.csv).
void price_by_side(const std::string& root) {
  for (const char* name : {"train.csv", "test_labels.csv"}) {
    auto t = kg::data::read_csv(root + "/" + name);
    std::string out = "id,price\n";
    for (auto& r : t.rows) out += r[0] + "," + (r[1] == "right" ? "300" : "100") + "\n";
    kg::write_file_atomic(root + "/" + name, out);
  }
}

std::string regression_recipe(const std::string& root) {
  return kg::test::tiny_recipe(root) +
         "[loss]\nname = \"mse\"\n[metric]\nnames = [\"rmse\", \"smape\"]\nmonitor = \"rmse\"\n"
         "[tta]\nviews = [\"identity\"]\n";
}

}  // namespace kg::test
