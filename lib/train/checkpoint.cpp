#include "train/checkpoint.h"

#include <unistd.h>

#include <filesystem>

#include "core/error.h"
#include "core/fs.h"

namespace fs = std::filesystem;

namespace kg::train {

void save_checkpoint(const std::string& dir, const model::TensorMap& weights, const nlohmann::json& state,
                     const std::string& recipe_toml, const nlohmann::json& provenance) {
  fs::path target(dir);
  fs::path tmp = target.parent_path() / (".tmp-" + target.filename().string() + "-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  KG_CHECK(!ec, DataError, "cannot create checkpoint folder ", tmp.string(), ": ", ec.message());
  model::write_safetensors((tmp / "model.safetensors").string(), weights);
  write_file_atomic((tmp / "recipe.toml").string(), recipe_toml);
  write_file_atomic((tmp / "provenance.json").string(), provenance.dump(2) + "\n");
  // state.json last: its presence marks a complete checkpoint.
  write_file_atomic((tmp / "state.json").string(), state.dump(2) + "\n");
  replace_directory(tmp.string(), target.string());
}

Checkpoint load_checkpoint(const std::string& dir) {
  Checkpoint c;
  c.dir = dir;
  fs::path p(dir);
  KG_CHECK(fs::is_directory(p), CheckpointError, "checkpoint ", dir,
           " is not a directory (expected a folder such as RUN/checkpoints/best holding model.safetensors and state.json)");
  KG_CHECK(fs::exists(p / "state.json"), CheckpointError, "checkpoint ", dir,
           " has no state.json: it is incomplete (interrupted while saving?) or not a kgtrain checkpoint");
  try {
    c.state = nlohmann::json::parse(read_file((p / "state.json").string()));
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError("checkpoint " + dir + "/state.json is not valid JSON: " + e.what());
  } catch (const Error& e) {
    throw CheckpointError(e.what());
  }
  KG_CHECK(c.state.is_object() && c.state.value("schema_version", 0) == kCheckpointSchema, CheckpointError, "checkpoint ",
           dir, "/state.json: unsupported schema_version (this kgtrain reads version ", kCheckpointSchema, ")");
  c.weights = model::read_safetensors((p / "model.safetensors").string());
  return c;
}

}  // namespace kg::train
