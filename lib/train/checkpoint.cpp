#include "train/checkpoint.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <optional>

#include "core/error.h"
#include "core/fs.h"
#include "core/sha256.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kg::train {
namespace {

constexpr const char* kManifest = "MANIFEST.json";
const char* const kRequired[] = {"model.safetensors", "state.safetensors", "state.json"};

struct FileEntry {
  std::string name;
  uint64_t bytes = 0;
  std::string sha256;
};

// What inspect() found: the manifest's schema and files, and their bytes when asked to keep them.
struct Inspection {
  int schema = 0;
  std::vector<FileEntry> files;
  std::map<std::string, std::string> contents;
};

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// A manifest names files inside the checkpoint folder only: no separators, no hidden or parent entries.
bool plain_name(const std::string& n) { return !n.empty() && n[0] != '.' && n.find('/') == std::string::npos; }

bool valid_extra_name(const std::string& n) {
  if (n.empty() || n == "model" || n == "state") return false;
  return std::all_of(n.begin(), n.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'; });
}

std::optional<json> parse_json(const std::string& text) {
  try {
    return json::parse(text);
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

// Schema 1 had no manifest: state.json (schema_version 1) was written last and marked completeness.
std::string inspect_schema1(const fs::path& dir, Inspection& out) {
  std::error_code ec;
  if (!fs::exists(dir / "state.json", ec) || !fs::exists(dir / "model.safetensors", ec))
    return std::string("no ") + kManifest + " (interrupted while saving, or not a kgtrain checkpoint)";
  std::string text;
  try {
    text = read_file((dir / "state.json").string());
  } catch (const Error& e) {
    return e.what();
  }
  auto j = parse_json(text);
  if (!j || !j->is_object() || j->value("schema_version", 0) != 1)
    return std::string("no ") + kManifest +
           " and state.json is not a schema-1 checkpoint's: the checkpoint is incomplete (interrupted while saving?)";
  out.schema = 1;
  return "";
}

// "" when `dir` is complete; else the reason. `keep` reads every file into out.contents (load path: each
// file is read once, hashed and decoded from the same bytes).
std::string inspect(const std::string& dir_s, bool deep, bool keep, Inspection& out) {
  const fs::path dir(dir_s);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return fs::exists(dir, ec) ? "not a directory" : "does not exist";
  if (!fs::exists(dir / kManifest, ec)) return inspect_schema1(dir, out);
  std::string text;
  try {
    text = read_file((dir / kManifest).string());
  } catch (const Error& e) {
    return e.what();
  }
  auto m = parse_json(text);
  if (!m) return std::string(kManifest) + " is not valid JSON (damaged)";
  if (!m->is_object() || !m->contains("files") || !(*m)["files"].is_array() ||
      !(*m)["schema_version"].is_number_integer())
    return std::string(kManifest) + " is malformed: expected {\"schema_version\", \"files\": [...]}";
  // The manifest guards itself too: a hash of its own dump without this field (nlohmann's dump is canonical:
  // sorted keys, fixed number format), so a flipped byte in a name or a hash is not read as another file.
  auto self = m->find("manifest_sha256");
  if (self == m->end() || !self->is_string())
    return std::string(kManifest) + " is malformed: it has no manifest_sha256";
  const std::string recorded = self->get<std::string>();
  m->erase("manifest_sha256");
  if (sha256_hex(m->dump()) != recorded) return std::string(kManifest) + " is corrupt: its own SHA-256 does not match";
  out.schema = (*m)["schema_version"].get<int>();
  if (out.schema < 2 || out.schema > kCheckpointSchema)
    return std::string(kManifest) + " has schema_version " + std::to_string(out.schema) + "; this kgtrain reads 1 to " +
           std::to_string(kCheckpointSchema) + " (written by a newer kgtrain?)";
  for (const auto& e : (*m)["files"]) {
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || !e.contains("bytes") ||
        !e["bytes"].is_number_unsigned() || !e.contains("sha256") || !e["sha256"].is_string() ||
        !plain_name(e["name"].get<std::string>()))
      return std::string(kManifest) + " is malformed: a file entry needs a plain name, bytes and sha256, got " +
             e.dump();
    out.files.push_back({e["name"].get<std::string>(), e["bytes"].get<uint64_t>(), e["sha256"].get<std::string>()});
  }
  for (const char* req : kRequired)
    if (std::none_of(out.files.begin(), out.files.end(), [&](const FileEntry& f) { return f.name == req; }))
      return std::string(kManifest) + " does not list " + req;
  for (const auto& f : out.files) {
    const fs::path p = dir / f.name;
    uint64_t size = fs::file_size(p, ec);
    if (ec) return f.name + " is missing";
    if (size != f.bytes)
      return f.name + " is truncated or altered: " + std::to_string(size) + " bytes, the manifest says " +
             std::to_string(f.bytes);
    std::string got;
    if (keep) {
      std::string bytes;
      try {
        bytes = read_file(p.string());
      } catch (const Error& e) {
        return e.what();
      }
      if (bytes.size() != f.bytes) return f.name + " changed while being read";
      if (deep) got = sha256_hex(bytes);
      out.contents[f.name] = std::move(bytes);
    } else if (deep) {
      try {
        got = sha256_file_hex(p.string());
      } catch (const Error& e) {
        return e.what();
      }
    }
    if (deep && got != f.sha256) return f.name + " is corrupt: its SHA-256 differs from the manifest's";
  }
  return "";
}

[[noreturn]] void fail(const std::string& dir, const std::string& problem) {
  throw CheckpointError("checkpoint " + dir + " is incomplete or damaged: " + problem +
                        " (use another checkpoint, e.g. an older step-* or best, or train again)");
}

json parse_state(const std::string& dir, const std::string& text) {
  auto j = parse_json(text);
  KG_CHECK(j && j->is_object(), CheckpointError, "checkpoint ", dir, "/state.json is not a JSON object (damaged)");
  return *j;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool process_alive(long pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

// Removes .tmp-<name>-<pid> folders of saves that crashed (ours or of a process that is gone). A live
// process's temp folder is left alone: it may be mid-save.
// Also removes .trash-<anything>-<pid> folders: checkpoints discard_directory() had renamed away when killed.
void clean_stale_temps(const fs::path& parent, const std::string& name) {
  const std::string prefix = ".tmp-" + name + "-";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(parent, ec)) {
    const std::string n = e.path().filename().string();
    const bool trash = n.rfind(".trash-", 0) == 0;
    if (n.rfind(prefix, 0) != 0 && !trash) continue;
    const std::string suffix = trash ? n.substr(n.rfind('-') + 1) : n.substr(prefix.size());
    long pid = -1;
    if (!suffix.empty() && std::all_of(suffix.begin(), suffix.end(), is_digit) && suffix.size() < 10)
      pid = std::stol(suffix);
    if (pid == static_cast<long>(::getpid()) || !process_alive(pid)) remove_tree(e.path().string(), ec);
  }
}

}  // namespace

void save_checkpoint(const std::string& dir, const CheckpointFiles& f, const std::string& rotate_to) {
  fs::path target = fs::path(dir).lexically_normal();
  if (!target.has_filename()) target = target.parent_path();  // "checkpoints/last/"
  const std::string name = target.filename().string();
  KG_ASSERT(plain_name(name), "checkpoint folder ", dir);
  for (const auto& [extra, tensors] : f.extra_weights)
    KG_ASSERT(valid_extra_name(extra), "extra weights name \"", extra, "\"");
  KG_ASSERT(f.state.is_object() || f.state.is_null(), "checkpoint state must be a JSON object");
  const fs::path parent = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  fs::path rotated;
  if (!rotate_to.empty()) {
    rotated = parent / fs::path(rotate_to).filename();
    KG_ASSERT(plain_name(rotated.filename().string()) && rotated.filename() != target.filename(), "rotate_to ",
              rotate_to);
  }
  with_context("while saving checkpoint " + dir, [&] {
    std::error_code ec;
    fs::create_directories(parent, ec);
    KG_CHECK(!ec, DataError, "cannot create ", parent.string(), ": ", ec.message());
    clean_stale_temps(parent, name);
    const fs::path tmp = parent / (".tmp-" + name + "-" + std::to_string(::getpid()));
    fs::create_directories(tmp, ec);
    KG_CHECK(!ec, DataError, "cannot create checkpoint folder ", tmp.string(), ": ", ec.message());
    try {
      json files = json::array();
      auto put = [&](const std::string& file, const std::string& bytes) {
        write_file_atomic((tmp / file).string(), bytes);  // written, fsynced, renamed
        files.push_back(
            {{"name", file}, {"bytes", static_cast<uint64_t>(bytes.size())}, {"sha256", sha256_hex(bytes)}});
      };
      put("model.safetensors", model::encode_safetensors(f.model));
      put("state.safetensors", model::encode_safetensors(f.state_tensors));
      for (const auto& [extra, tensors] : f.extra_weights)
        put(extra + ".safetensors", model::encode_safetensors(tensors));
      put("recipe.toml", f.recipe_toml);
      put("provenance.json", (f.provenance.is_null() ? json::object() : f.provenance).dump(2) + "\n");
      json state = f.state.is_null() ? json::object() : f.state;
      state["schema_version"] = kCheckpointSchema;
      put("state.json", state.dump(2) + "\n");
      // The manifest last: its presence (and matching sizes and hashes) marks a complete checkpoint.
      json manifest = {{"schema_version", kCheckpointSchema}, {"files", files}, {"created_utc", utc_now()}};
      manifest["manifest_sha256"] = sha256_hex(manifest.dump());
      write_file_atomic((tmp / kManifest).string(), manifest.dump(2) + "\n");
      fsync_directory(tmp.string());

      const bool rotate =
          !rotated.empty() && fs::exists(target, ec) && checkpoint_problem(target.string(), false).empty();
      replace_directory(tmp.string(), target.string(), rotate ? rotated.string() : "");
    } catch (...) {
      remove_tree(tmp.string(), ec);
      throw;
    }
  });
}

void save_checkpoint(const std::string& dir, const model::TensorMap& weights, const nlohmann::json& state,
                     const std::string& recipe_toml, const nlohmann::json& provenance) {
  CheckpointFiles f;
  f.model = weights;
  f.state = state;
  f.recipe_toml = recipe_toml;
  f.provenance = provenance;
  save_checkpoint(dir, f);
}

std::string checkpoint_problem(const std::string& dir, bool deep) {
  Inspection ins;
  return inspect(dir, deep, false, ins);
}

Checkpoint load_checkpoint(const std::string& dir, bool verify) {
  Inspection ins;
  std::string problem = inspect(dir, verify, true, ins);
  if (problem == "does not exist" || problem == "not a directory")
    throw CheckpointError(
        "checkpoint " + dir + " " + problem +
        " (expected a folder such as RUN/checkpoints/best holding MANIFEST.json, model.safetensors and state.json)");
  if (!problem.empty()) fail(dir, problem);
  Checkpoint c;
  c.dir = dir;
  c.schema_version = ins.schema;
  const fs::path p(dir);
  if (ins.schema == 1) {
    c.state = parse_state(dir, read_file((p / "state.json").string()));
    c.weights = model::read_safetensors((p / "model.safetensors").string());
    std::error_code ec;
    if (fs::exists(p / "recipe.toml", ec)) c.recipe_toml = read_file((p / "recipe.toml").string());
    return c;
  }
  auto& bytes = ins.contents;
  auto decode = [&](const std::string& file) { return model::decode_safetensors(bytes.at(file), dir + "/" + file); };
  c.weights = decode("model.safetensors");
  c.state_tensors = decode("state.safetensors");
  for (const auto& f : ins.files) {
    const std::string suffix = ".safetensors";
    if (f.name == "model.safetensors" || f.name == "state.safetensors" || f.name.size() <= suffix.size() ||
        f.name.compare(f.name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    c.extra_weights[f.name.substr(0, f.name.size() - suffix.size())] = decode(f.name);
  }
  c.state = parse_state(dir, bytes.at("state.json"));
  if (bytes.count("recipe.toml")) c.recipe_toml = bytes.at("recipe.toml");
  return c;
}

}  // namespace kg::train
