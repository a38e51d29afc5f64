// A restricted reader of Python pickles (protocols 2-5) for torch.save's data.pkl: it builds tensors (through the
// storages the caller loads), dicts, OrderedDicts, lists, tuples, strings, numbers, booleans and None. Any other
// global is never imported or called: it becomes an Object value carrying its name ("argparse.Namespace").
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace kg::model::pickle {

struct Value;
using ValuePtr = Value*;  // owned by the Pickle: a pickle may tie containers in a cycle, or nest them deeply

struct Value {
  enum class Kind { none, boolean, integer, real, text, tensor, list, tuple, dict, global, object };
  Kind kind = Kind::none;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;  // text; global / object: "module.name"
  at::Tensor t;
  std::vector<ValuePtr> items;                       // list, tuple
  std::vector<std::pair<ValuePtr, ValuePtr>> pairs;  // dict, in insertion order

  // "a dict", "an argparse.Namespace object", ...: for messages.
  std::string describe() const;
};

// A storage of torch.save's archive: `key` names its record (data/<key>), `dtype_name` its storage class
// ("FloatStorage"), `numel` its elements. Returns a 1-D tensor of that many elements.
using StorageLoader = std::function<at::Tensor(const std::string& key, const std::string& dtype_name, int64_t numel)>;

// Every value a pickle made, and its result (`root`).
struct Pickle {
  std::vector<std::unique_ptr<Value>> values;
  ValuePtr root = nullptr;
};

// The pickle's value. std::runtime_error with the byte offset for a malformed or truncated pickle, an opcode it
// does not read, or a tensor whose size and strides reach outside its storage.
Pickle unpickle(const char* data, size_t size, const StorageLoader& load_storage);

}  // namespace kg::model::pickle
