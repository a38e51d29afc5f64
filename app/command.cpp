#include "command.h"

#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "cli.h"
#include "config/resolve.h"
#include "config/sections.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/stop.h"
#include "core/strings.h"
#include "session/effective_recipe.h"
#include "session/latest_run.h"
#include "test_hooks.h"
#include "train/options.h"
#include "train/progress.h"

extern char** environ;
namespace fs = std::filesystem;

namespace kg::app {
namespace {

std::vector<CommandSpec>& table() {
  static std::vector<CommandSpec> t;
  return t;
}
std::vector<std::string>& duplicates() {
  static std::vector<std::string> d;
  return d;
}

// The shipped recipes/ folder: KGTRAIN_RECIPES, else beside the binary (build tree or install prefix).
std::string builtin_recipes_dir(const std::map<std::string, std::string>& env) {
  if (auto it = env.find("KGTRAIN_RECIPES"); it != env.end() && !it->second.empty()) return it->second;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (fs::path dir = exe.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
    if (fs::is_directory(dir / "recipes" / "env")) return (dir / "recipes").string();
    if (fs::is_directory(dir / "share" / "kgtrain" / "recipes"))
      return (dir / "share" / "kgtrain" / "recipes").string();
  }
  return "";
}

// stderr's terminal width: the terminal's own, else COLUMNS, else 0 (unknown).
int terminal_columns(const std::map<std::string, std::string>& env) {
  struct winsize ws {};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  const auto it = env.find("COLUMNS");
  return it == env.end() ? 0 : std::max(0, std::atoi(it->second.c_str()));
}

void store_signal(int sig) { stop_signal().store(sig); }

std::pair<int, char**>& args() {
  static std::pair<int, char**> a{0, nullptr};
  return a;
}

}  // namespace

bool register_command(CommandSpec spec) {
  for (const auto& c : table())
    if (c.name == spec.name) {
      duplicates().push_back(spec.name);
      return false;
    }
  table().push_back(std::move(spec));
  return true;
}

std::vector<const CommandSpec*> commands_in_order() {
  KG_ASSERT(duplicates().empty(), "command registered twice: ", duplicates().front());
  std::vector<const CommandSpec*> out;
  for (const auto& c : table()) out.push_back(&c);
  std::stable_sort(out.begin(), out.end(),
                   [](const CommandSpec* a, const CommandSpec* b) { return a->order < b->order; });
  return out;
}

void set_process_args(int argc, char** argv) { args() = {argc, argv}; }

namespace {
std::string& executable_path() {
  static std::string path = "/proc/self/exe";
  return path;
}
}  // namespace
void set_executable(const std::string& path) { executable_path() = path; }
const std::string& executable() { return executable_path(); }
std::pair<int, char**> process_args() { return args(); }

std::map<std::string, std::string> environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = store_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;  // a second Ctrl-C kills at once
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

void RecipeFlags::add(CLI::App& cmd, Kind kind) {
  auto* w =
      cmd.add_option("RECIPE", words, "RECIPE.toml files, then overrides: key=value, +key=value, ~key, group=option");
  if (kind == Kind::finding || kind == Kind::other) w->required();
  std::vector<std::string> keys{"run_dir", "device", "seed", "dry_run"};
  if (kind != Kind::other) keys.push_back("smoke");
  if (kind == Kind::training) keys.push_back("check_data");
  keys.push_back("quiet");
  add_only(cmd, keys);
}

void RecipeFlags::add_only(CLI::App& cmd, const std::vector<std::string>& keys) {
  table_ = std::make_shared<FlagTable<session::CommonFlags>>(session::common_flags());
  table_->add_to(cmd, keys);
  // A UsageError here (--seed -1) reaches cli.cpp's handler as any job's does.
  cmd.parse_complete_callback([this, table = table_] {
    static_cast<session::CommonFlags&>(*this) = table->values();
    config::check_flags(session::common_flags(), static_cast<const session::CommonFlags&>(*this));
  });
}

std::vector<std::string> RecipeFlags::words_with_flags() const {
  std::vector<std::string> w = words;
  if (!device.empty()) w.push_back("device.name=" + device);
  if (seed) w.push_back("run.seed=" + std::to_string(*seed));
  return w;
}

namespace {
bool is_recipe_file(const std::string& w) {
  return ends_with(w, ".toml") && w.find('=') == std::string::npos && !starts_with(w, "~");
}

config::ResolveInput resolve_input(const RecipeFlags& f) {
  config::ResolveInput in;
  for (auto& w : f.words) {
    bool is_file = is_recipe_file(w);
    if (is_file && !in.args.empty())
      throw UsageError("recipe file " + w + " comes after an override; give recipe files first, then overrides");
    (is_file ? in.recipe_files : in.args).push_back(w);
  }
  if (!f.device.empty()) in.args.push_back("device.name=" + f.device);
  if (f.seed) in.args.push_back("run.seed=" + std::to_string(*f.seed));
  in.environ = environment();
  in.builtin_recipes_dir = builtin_recipes_dir(in.environ);
  in.path_exists = [](const std::string& p) {
    std::error_code ec;
    return fs::exists(p, ec);
  };
  in.default_of_in_tree = &config::default_of;
  return in;
}
}  // namespace

bool RecipeFlags::has_recipe_file() const { return std::any_of(words.begin(), words.end(), is_recipe_file); }

std::string RecipeFlags::runs_root() const {
  const auto resolved = config::resolve(resolve_input(*this));
  const config::Entry* runs = resolved.tree.find("paths.runs");
  if (runs && runs->value.is_string()) return runs->value.get<std::string>();
  return train::PathsOptions{}.runs;
}

std::string RecipeFlags::run_folder(const std::string& run) const {
  if (run != session::kLatestWord) return run;
  const std::string dir = session::resolve_latest(runs_root());
  if (!quiet) std::cerr << "latest: " << dir << "\n";
  return dir;
}

bool RecipeFlags::use_run_recipe(const std::string& run) {
  if (has_recipe_file()) return false;
  fs::path p(run);
  for (int up = 0; up < 4 && !p.empty() && !fs::exists(p / "recipe.toml"); ++up) p = p.parent_path();
  if (p.empty() || !fs::exists(p / "recipe.toml")) return false;
  words.insert(words.begin(), (p / "recipe.toml").string());
  return true;
}

session::Session RecipeFlags::resolve(const std::string& command) const {
  config::ResolveInput in = resolve_input(*this);
  if (in.recipe_files.empty()) throw UsageError(command + " needs at least one RECIPE.toml before the overrides");
  auto resolved = config::resolve(in);
  session::Session o;
  o.recipe = config::Recipe::validate(resolved.tree);
  for (auto& w : o.recipe.warnings()) std::cerr << "warning: " << w << "\n";
  session::Resolutions weights_only;
  weights_only.follow_weights = true;  // model.pretrained's config.json, where the recipe is silent
  auto followed = session::effective_recipe(o.recipe, weights_only);
  o.recipe = std::move(followed.recipe);
  o.preprocessing_notes = std::move(followed.notes);
  o.command = command;
  o.layers = resolved.layers;
  o.env_name = resolved.env_name + (resolved.env_file.empty() ? "" : " (" + resolved.env_file + ")");
  o.run_dir = run_dir;
  o.dry_run = dry_run;
  o.smoke = smoke;
  o.quiet = quiet;
  // A notebook's `!kgtrain` runs under a pseudo-terminal that re-renders \r poorly: plain lines there.
  o.tty = ::isatty(STDERR_FILENO) && !train::in_notebook(in.environ);
  o.columns = terminal_columns(in.environ);
  o.dist = device::dist_env_from(in.environ);
  if (command == "fit") {
    if (o.dist.active() && !o.dist.writer()) o.quiet = true;  // rank 0 alone reports progress
  } else {
    // N copies of another command would each do the whole job and race on its outputs.
    KG_CHECK(!o.dist.active(), UsageError, "kgtrain ", command, " runs as one process, and this is rank ", o.dist.rank,
             " of ", o.dist.world_size, " started by ", o.dist.launcher == "slurm" ? "srun" : "torchrun",
             ": only fit trains across processes. Run ", command, " once, on one node",
             command == "pseudo-label" ? " without --rounds (predict and select), then train on its rows across nodes: "
                                         "kgtrain fit RECIPE.toml OUT/pseudo.toml "
                                         "under torchrun or srun, with OUT on a disk every node reads"
                                       : "");
    o.dist = {};
  }
  read_test_hooks(in.environ);
  return o;
}

}  // namespace kg::app
