#include "model/weights/torch_save.h"

#include <fstream>
#include <map>

#include <caffe2/serialize/inline_container.h>
#include <torch/torch.h>

#include "core/error.h"
#include "core/strings.h"
#include "model/weights/unpickle.h"

namespace kg::model {
namespace {

using pickle::Value;
using pickle::ValuePtr;

// torch.save's storage classes (TypedStorage's pickled names).
const std::map<std::string, at::ScalarType>& storage_dtypes() {
  static const std::map<std::string, at::ScalarType> m{{"FloatStorage", at::kFloat},
                                                       {"DoubleStorage", at::kDouble},
                                                       {"HalfStorage", at::kHalf},
                                                       {"BFloat16Storage", at::kBFloat16},
                                                       {"LongStorage", at::kLong},
                                                       {"IntStorage", at::kInt},
                                                       {"ShortStorage", at::kShort},
                                                       {"CharStorage", at::kChar},
                                                       {"ByteStorage", at::kByte},
                                                       {"BoolStorage", at::kBool},
                                                       {"ComplexFloatStorage", at::kComplexFloat},
                                                       {"ComplexDoubleStorage", at::kComplexDouble}};
  return m;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// The archive's storages, each read once (tensors may share one).
class Storages {
 public:
  Storages(caffe2::serialize::PyTorchStreamReader& zip, const std::string& path) : zip_(zip), path_(path) {}
  at::Tensor load(const std::string& key, const std::string& cls, int64_t numel) {
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    const auto dt = storage_dtypes().find(cls);
    KG_CHECK(dt != storage_dtypes().end(), CheckpointError, path_, ": a tensor of storage type ", cls,
             " (kgtrain reads float, double, half, bfloat16, integer, bool and complex tensors)");
    const std::string record = "data/" + key;
    KG_CHECK(zip_.hasRecord(record), CheckpointError, path_, ": the archive lacks ", record, " (truncated?)");
    auto [ptr, bytes] = zip_.getRecord(record);
    const size_t item = c10::elementSize(dt->second);
    KG_CHECK(numel >= 0 && bytes == static_cast<size_t>(numel) * item, CheckpointError, path_, ": ", record, " holds ",
             bytes, " bytes for ", numel, " elements of ", item, " bytes (truncated or corrupt)");
    at::Tensor t = torch::empty({numel}, torch::TensorOptions().dtype(dt->second));
    if (bytes) std::memcpy(t.data_ptr(), ptr.get(), bytes);
    return cache_[key] = t;
  }

 private:
  caffe2::serialize::PyTorchStreamReader& zip_;
  std::string path_;
  std::map<std::string, at::Tensor> cache_;
};

// A dict of string keys and tensors (a state dict); "" or why not.
std::string state_dict_problem(const Value& v) {
  if (v.kind != Value::Kind::dict) return v.describe();
  if (v.pairs.empty()) return "an empty dict";
  for (auto& [k, x] : v.pairs) {
    if (k->kind != Value::Kind::text) return "a dict with " + k->describe() + " as a key";
    if (x->kind != Value::Kind::tensor) return "a dict whose " + k->s + " is " + x->describe();
  }
  return "";
}

TensorMap tensors_of(const Value& v) {
  TensorMap m;
  for (auto& [k, x] : v.pairs) m[k->s] = x->t;
  return m;
}

const ValuePtr* entry(const Value& dict, const std::string& key) {
  for (auto& [k, x] : dict.pairs)
    if (k->kind == Value::Kind::text && k->s == key) return &x;
  return nullptr;
}

std::string keys_text(const Value& dict) {
  std::vector<std::string> keys;
  for (auto& [k, x] : dict.pairs) keys.push_back(k->kind == Value::Kind::text ? k->s : k->describe());
  if (keys.size() > 12) {
    keys.resize(12);
    keys.push_back("...");
  }
  return join(keys, ", ");
}

const std::vector<std::string> kStateDictKeys{"state_dict", "model", "model_state_dict", "module", "state_dict_ema",
                                              "model_ema",  "ema"};

TorchSaveWeights pick_state_dict(const ValuePtr& root, const std::string& path) {
  if (state_dict_problem(*root).empty()) return {tensors_of(*root), ""};
  KG_CHECK(root->kind == Value::Kind::dict, CheckpointError, path, " holds ", root->describe(),
           root->kind == Value::Kind::object ? " (torch.save(model) pickles the class itself, which kgtrain never runs)"
                                             : "",
           "; kgtrain reads a state dict: torch.save(model.state_dict(), path)");
  for (const auto& key : kStateDictKeys) {
    const ValuePtr* v = entry(*root, key);
    if (!v) continue;
    if (state_dict_problem(**v).empty()) return {tensors_of(**v), key};
    if ((*v)->kind == Value::Kind::dict)
      for (const auto& inner : kStateDictKeys)
        if (const ValuePtr* w = entry(**v, inner); w && state_dict_problem(**w).empty())
          return {tensors_of(**w), key + "." + inner};
    throw CheckpointError(path + ": its " + key + " is " + state_dict_problem(**v) +
                          ", not a state dict (a dict of tensors)");
  }
  throw CheckpointError(path + " holds no state dict: " + state_dict_problem(*root) + " (keys: " + keys_text(*root) +
                        "); kgtrain reads a dict of tensors, or one under " + join(kStateDictKeys, ", "));
}

}  // namespace

bool is_zip_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "PK\x03\x04", 4) == 0;
}

TorchSaveWeights read_torch_save(const std::string& path) {
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> zip;
  try {
    zip = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
  } catch (const c10::Error& e) {
    throw CheckpointError(path + ": not a readable torch.save archive (truncated or corrupt?): " +
                          first_line(e.what_without_backtrace()));
  }
  // torch.jit.save writes data.pkl too, beside its code and constants.
  KG_CHECK(!zip->hasRecord("constants.pkl"), CheckpointError, path,
           " is a TorchScript module (torch.jit.save): load it with model.name = \"torchscript\", or save its state "
           "dict with torch.save(model.state_dict(), path)");
  KG_CHECK(zip->hasRecord("data.pkl"), CheckpointError, path,
           ": a zip archive without data.pkl, so not a torch.save file");
  if (zip->hasRecord("byteorder")) {
    auto [ptr, n] = zip->getRecord("byteorder");
    const std::string order(static_cast<const char*>(ptr.get()), n);
    KG_CHECK(order == "little", CheckpointError, path, ": saved with byte order ", order, "; kgtrain reads little");
  }
  Storages storages(*zip, path);
  pickle::Pickle doc;
  try {
    auto [ptr, n] = zip->getRecord("data.pkl");
    doc = pickle::unpickle(
        static_cast<const char*>(ptr.get()), n,
        [&](const std::string& key, const std::string& cls, int64_t numel) { return storages.load(key, cls, numel); });
  } catch (const c10::Error& e) {
    throw CheckpointError(path + ": truncated or corrupt: " + first_line(e.what_without_backtrace()));
  } catch (const std::runtime_error& e) {
    if (dynamic_cast<const Error*>(&e)) throw;
    throw CheckpointError(path + ": corrupt, or a pickle torch.save does not write (" + e.what() + ")");
  }
  return pick_state_dict(doc.root, path);
}

}  // namespace kg::model
