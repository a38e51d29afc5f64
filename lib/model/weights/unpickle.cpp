#include "model/weights/unpickle.h"

#include <cstring>
#include <map>
#include <stdexcept>

#include <torch/torch.h>

namespace kg::model::pickle {
namespace {

using Kind = Value::Kind;

class Unpickler {
 public:
  Unpickler(const char* data, size_t size, const StorageLoader& load) : p_(data), n_(size), load_(load) {}

  Pickle run() {
    while (step()) {
    }
    if (stack_.size() != 1) fail("the pickle ends with " + std::to_string(stack_.size()) + " values, not one");
    doc_.root = stack_.back();
    return std::move(doc_);
  }

 private:
  // A value of `kind`: `n` is an integer's value or a boolean's, `text` a string's or a global's name.
  ValuePtr make(Kind kind, int64_t n = 0, std::string text = {}) {
    doc_.values.push_back(std::make_unique<Value>());
    ValuePtr v = doc_.values.back().get();
    v->kind = kind;
    v->i = n;
    v->b = n != 0;
    v->s = std::move(text);
    return v;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("pickle byte " + std::to_string(pos_) + ": " + what);
  }
  void need(size_t k) const {
    if (k > n_ - pos_) fail("truncated (" + std::to_string(k) + " more bytes needed)");
  }
  uint8_t byte() {
    need(1);
    return static_cast<uint8_t>(p_[pos_++]);
  }
  uint64_t le(size_t bytes) {
    need(bytes);
    uint64_t v = 0;
    for (size_t k = 0; k < bytes; ++k) v |= static_cast<uint64_t>(static_cast<uint8_t>(p_[pos_ + k])) << (8 * k);
    pos_ += bytes;
    return v;
  }
  std::string take(uint64_t k) {
    if (k > n_ - pos_) fail("truncated (a string of " + std::to_string(k) + " bytes)");
    std::string s(p_ + pos_, static_cast<size_t>(k));
    pos_ += static_cast<size_t>(k);
    return s;
  }
  std::string line() {
    const void* end = std::memchr(p_ + pos_, '\n', n_ - pos_);
    if (!end) fail("truncated (a line without its end)");
    std::string s(p_ + pos_, static_cast<const char*>(end));
    pos_ += s.size() + 1;
    return s;
  }
  ValuePtr pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) fail("a value is missing (stack empty)");
    ValuePtr v = stack_.back();
    stack_.pop_back();
    return v;
  }
  ValuePtr& top() {
    if (stack_.empty()) fail("a value is missing (stack empty)");
    return stack_.back();
  }
  std::vector<ValuePtr> pop_mark() {
    if (marks_.empty()) fail("no mark to pop to");
    std::vector<ValuePtr> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  ValuePtr tuple(std::vector<ValuePtr> items) {
    auto v = make(Kind::tuple);
    v->items = std::move(items);
    return v;
  }
  void set_items(const ValuePtr& target, const std::vector<ValuePtr>& kv) {
    if (kv.size() % 2) fail("SETITEMS with an odd number of values");
    if (target->kind == Kind::object) return;  // never built: its state is not kept
    if (target->kind != Kind::dict) fail("SETITEMS on " + target->describe());
    for (size_t k = 0; k < kv.size(); k += 2) target->pairs.emplace_back(kv[k], kv[k + 1]);
  }
  void append(const ValuePtr& target, const std::vector<ValuePtr>& items) {
    if (target->kind == Kind::object) return;
    if (target->kind != Kind::list) fail("APPENDS on " + target->describe());
    target->items.insert(target->items.end(), items.begin(), items.end());
  }
  static int64_t int_at(const Value& args, size_t k) {
    if (args.items.size() <= k || args.items[k]->kind != Kind::integer)
      throw std::runtime_error("a tensor's rebuild arguments are malformed");
    return args.items[k]->i;
  }
  static std::vector<int64_t> ints_at(const Value& args, size_t k) {
    if (args.items.size() <= k || args.items[k]->kind != Kind::tuple)
      throw std::runtime_error("a tensor's size or stride is not a tuple");
    std::vector<int64_t> out;
    for (auto& x : args.items[k]->items) {
      if (x->kind != Kind::integer || x->i < 0) throw std::runtime_error("a tensor's size or stride is malformed");
      out.push_back(x->i);
    }
    return out;
  }
  // torch._utils._rebuild_tensor(_v2)(storage, offset, size, stride, ...): a view of the storage, copied.
  ValuePtr rebuild_tensor(const Value& args) {
    if (args.items.empty() || args.items[0]->kind != Kind::tensor) fail("a tensor without its storage");
    const at::Tensor& storage = args.items[0]->t;
    const int64_t offset = int_at(args, 1);
    const auto size = ints_at(args, 2), stride = ints_at(args, 3);
    if (size.size() != stride.size()) fail("a tensor's size and stride differ in length");
    int64_t last = offset, numel = 1, reach = 0;
    for (size_t d = 0; d < size.size(); ++d) {
      if (__builtin_mul_overflow(numel, size[d], &numel) ||
          (size[d] > 0 &&
           (__builtin_mul_overflow(size[d] - 1, stride[d], &reach) || __builtin_add_overflow(last, reach, &last))))
        fail("a tensor's size or stride overflows");
    }
    if (offset < 0 || (numel > 0 && last >= storage.numel()))
      fail("a tensor reaches outside its storage (" + std::to_string(storage.numel()) + " elements)");
    auto v = make(Kind::tensor);
    v->t = storage.as_strided(size, stride, offset).clone(at::MemoryFormat::Contiguous);
    return v;
  }
  ValuePtr call(const ValuePtr& fn, const ValuePtr& args, int depth = 0) {
    if (fn->kind != Kind::global || args->kind != Kind::tuple) return make(Kind::object, 0, fn->s);
    const std::string& name = fn->s;
    if (name == "torch._utils._rebuild_tensor_v2" || name == "torch._utils._rebuild_tensor")
      return rebuild_tensor(*args);
    if (name == "torch._utils._rebuild_parameter" || name == "torch._utils._rebuild_parameter_with_state") {
      if (args->items.empty() || args->items[0]->kind != Kind::tensor) fail("a parameter without its tensor");
      return args->items[0];
    }
    if (name == "torch._tensor._rebuild_from_type_v2" && args->items.size() >= 3 && depth < 2) {
      const ValuePtr inner = call(args->items[0], args->items[2], depth + 1);
      if (inner->kind == Kind::tensor) return inner;
    }
    if (name == "collections.OrderedDict" && args->items.empty()) return make(Kind::dict);
    return make(Kind::object, 0, name);  // never imported, never called
  }
  // BINPERSID ("storage", torch.FloatStorage, key, location, numel): the archive's record data/<key>.
  ValuePtr persistent(const ValuePtr& pid) {
    const auto& it = pid->items;
    if (pid->kind != Kind::tuple || it.size() < 5 || it[0]->s != "storage" || it[1]->kind != Kind::global ||
        it[2]->kind != Kind::text || it[4]->kind != Kind::integer)
      fail("a persistent id that is not a torch storage");
    const std::string& cls = it[1]->s;
    auto v = make(Kind::tensor);
    v->t = load_(it[2]->s, cls.substr(cls.rfind('.') + 1), it[4]->i);
    return v;
  }
  void memo_put(uint64_t id) { memo_[id] = top(); }
  void push(ValuePtr v) { stack_.push_back(v); }
  bool step();
  bool scalar(uint8_t op);
  bool container(uint8_t op);
  bool object(uint8_t op);
  void set_items_from_mark() {
    auto items = pop_mark();
    set_items(top(), items);
  }
  void append_from_mark() {
    auto items = pop_mark();
    append(top(), items);
  }

  const char* p_;
  size_t n_;
  size_t pos_ = 0;
  const StorageLoader& load_;
  Pickle doc_;
  std::vector<ValuePtr> stack_;
  std::vector<size_t> marks_;
  std::map<uint64_t, ValuePtr> memo_;
};

bool Unpickler::step() {
  const uint8_t op = byte();
  if (op == '.') return false;  // STOP
  if (!scalar(op) && !container(op) && !object(op)) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", op);
    fail(std::string("opcode ") + hex + " is not one torch.save writes");
  }
  return true;
}

// Numbers, strings, None, booleans; the protocol and frame markers.
bool Unpickler::scalar(uint8_t op) {
  switch (op) {
    case 0x80:
      byte();
      return true;  // PROTO
    case 0x95:
      le(8);
      return true;  // FRAME
    case 'N':
      push(make(Kind::none));
      return true;
    case 0x88:
    case 0x89:
      push(make(Kind::boolean, op == 0x88));
      return true;
    case 'J':
      push(make(Kind::integer, static_cast<int32_t>(le(4))));
      return true;
    case 'K':
      push(make(Kind::integer, static_cast<int64_t>(le(1))));
      return true;
    case 'M':
      push(make(Kind::integer, static_cast<int64_t>(le(2))));
      return true;
    case 0x8a:
    case 0x8b: {  // LONG1, LONG4: little-endian two's complement
      const uint64_t k = le(op == 0x8a ? 1 : 4);
      if (k > 8) fail("an integer of " + std::to_string(k) + " bytes");
      const uint64_t raw = k ? le(static_cast<size_t>(k)) : 0;
      const bool neg = k && ((raw >> (8 * k - 1)) & 1);
      push(make(Kind::integer,
                neg && k < 8 ? static_cast<int64_t>(raw | (~uint64_t{0} << (8 * k))) : static_cast<int64_t>(raw)));
      return true;
    }
    case 'G': {  // BINFLOAT, big-endian
      need(8);
      uint64_t bits = 0;
      for (int k = 0; k < 8; ++k) bits = (bits << 8) | static_cast<uint8_t>(p_[pos_ + k]);
      pos_ += 8;
      auto v = make(Kind::real);
      std::memcpy(&v->f, &bits, 8);
      push(v);
      return true;
    }
    case 'X':
    case 'T':
    case 'B':
      push(make(Kind::text, 0, take(le(4))));
      return true;
    case 0x8c:
    case 'U':
    case 'C':
      push(make(Kind::text, 0, take(le(1))));
      return true;
    case 0x8d:
    case 0x8e:
      push(make(Kind::text, 0, take(le(8))));
      return true;
    default:
      return false;
  }
}

// Marks, tuples, lists, dicts and their items; the memo.
bool Unpickler::container(uint8_t op) {
  switch (op) {
    case '(':
      marks_.push_back(stack_.size());
      return true;  // MARK
    case '}':
      push(make(Kind::dict));
      return true;
    case ']':
    case 0x8f:
      push(make(Kind::list));
      return true;  // EMPTY_LIST, EMPTY_SET (as a list)
    case ')':
      push(tuple({}));
      return true;
    case 't':
      push(tuple(pop_mark()));
      return true;
    case 0x85:
    case 0x86:
    case 0x87: {
      std::vector<ValuePtr> items(static_cast<size_t>(op - 0x84));
      for (auto it = items.rbegin(); it != items.rend(); ++it) *it = pop();
      push(tuple(std::move(items)));
      return true;
    }
    case 'l': {
      auto v = make(Kind::list);
      v->items = pop_mark();
      push(v);
      return true;
    }
    case 'd': {
      auto items = pop_mark();
      push(make(Kind::dict));
      set_items(top(), items);
      return true;
    }
    case 's': {
      auto value = pop(), key = pop();
      set_items(top(), {key, value});
      return true;
    }
    case 'u':
      set_items_from_mark();
      return true;
    case 'a': {
      auto value = pop();
      append(top(), {value});
      return true;
    }
    case 'e':
    case 0x90:
      append_from_mark();
      return true;  // APPENDS, ADDITEMS
    case 'q':
      memo_put(le(1));
      return true;
    case 'r':
      memo_put(le(4));
      return true;
    case 0x94:
      memo_put(memo_.size());
      return true;
    case 'h':
    case 'j': {
      const uint64_t id = le(op == 'h' ? 1 : 4);
      auto it = memo_.find(id);
      if (it == memo_.end()) fail("a memo entry that was never stored");
      push(it->second);
      return true;
    }
    default:
      return false;
  }
}

// Globals, calls, objects and torch's storages.
bool Unpickler::object(uint8_t op) {
  switch (op) {
    case 'c': {
      std::string module = line();
      push(make(Kind::global, 0, module + "." + line()));
      return true;
    }
    case 0x93: {  // STACK_GLOBAL
      auto name = pop(), module = pop();
      if (name->kind != Kind::text || module->kind != Kind::text) fail("STACK_GLOBAL without two strings");
      push(make(Kind::global, 0, module->s + "." + name->s));
      return true;
    }
    case 'R': {
      auto args = pop(), fn = pop();
      push(call(fn, args));
      return true;
    }
    case 0x81:
    case 0x92: {  // NEWOBJ, NEWOBJ_EX: an object of a class, never built
      pop();
      if (op == 0x92) pop();
      push(make(Kind::object, 0, pop()->s));
      return true;
    }
    case 'b':
      pop();
      top();
      return true;  // BUILD: an object's state is not applied (objects are never built)
    case 'Q': {
      auto pid = pop();
      push(persistent(pid));
      return true;
    }
    default:
      return false;
  }
}

}  // namespace

std::string Value::describe() const {
  static const char* const kNames[] = {"None",     "a bool", "an int",  "a float", "a string",
                                       "a tensor", "a list", "a tuple", "a dict"};
  if (kind == Kind::global) return "the global " + s;
  if (kind == Kind::object) return "a pickled " + s + " object";
  return kNames[static_cast<int>(kind)];
}

Pickle unpickle(const char* data, size_t size, const StorageLoader& load_storage) {
  return Unpickler(data, size, load_storage).run();
}

}  // namespace kg::model::pickle
