#include "model/weights/safetensors.h"

#include <algorithm>
#include <cstring>
#include <tuple>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"

namespace kg::model {
namespace {

constexpr uint64_t kMaxHeader = 100u << 20;  // the reference implementation's cap (100 MB)

struct DType {
  const char* name;
  at::ScalarType type;
};
constexpr DType kTypes[] = {{"F64", at::kDouble}, {"F32", at::kFloat}, {"F16", at::kHalf},  {"BF16", at::kBFloat16},
                            {"I64", at::kLong},   {"I32", at::kInt},   {"I16", at::kShort}, {"I8", at::kChar},
                            {"U8", at::kByte},    {"BOOL", at::kBool}};

const char* dtype_name(at::ScalarType t) {
  for (auto& d : kTypes)
    if (d.type == t) return d.name;
  throw InternalError(std::string("safetensors: unsupported tensor type ") + c10::toString(t));
}

}  // namespace

std::string encode_safetensors(const TensorMap& tensors) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  std::vector<at::Tensor> data;
  for (const auto& [name, t0] : tensors) {
    at::Tensor t = t0.detach().to(at::kCPU).contiguous();
    uint64_t n = static_cast<uint64_t>(t.numel()) * t.element_size();
    header[name] = {
        {"dtype", dtype_name(t.scalar_type())}, {"shape", t.sizes().vec()}, {"data_offsets", {offset, offset + n}}};
    offset += n;
    data.push_back(t);
  }
  std::string h = header.dump();
  while ((h.size() + 8) % 8) h += ' ';  // align the data to 8 bytes, as the reference writer does
  std::string out(8, '\0');
  uint64_t len = h.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((len >> (8 * i)) & 0xff);
  out += h;
  out.reserve(out.size() + offset);
  for (auto& t : data)
    out.append(static_cast<const char*>(t.data_ptr()), static_cast<size_t>(t.numel()) * t.element_size());
  return out;
}

void write_safetensors(const std::string& path, const TensorMap& tensors) {
  write_file_atomic(path, encode_safetensors(tensors));
}

TensorMap decode_safetensors(const std::string& bytes, const std::string& name) {
  auto bad = [&](const std::string& why) { return CheckpointError(name + ": not a valid safetensors file: " + why); };
  if (bytes.size() < 8)
    throw bad("file is " + std::to_string(bytes.size()) + " bytes, shorter than the 8-byte header length");
  uint64_t len = 0;
  for (int i = 0; i < 8; ++i)
    len |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[static_cast<size_t>(i)])) << (8 * i);
  if (len > kMaxHeader) throw bad("header length " + std::to_string(len) + " exceeds the 100 MB limit");
  if (8 + len > bytes.size())
    throw bad("header length " + std::to_string(len) + " runs past the end of the file (" +
              std::to_string(bytes.size()) + " bytes)");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(len));
  } catch (const std::exception& e) {
    throw bad(std::string("header is not JSON: ") + e.what());
  }
  if (!header.is_object()) throw bad("header is not a JSON object");
  const uint64_t data_size = bytes.size() - 8 - len;
  const char* data = bytes.data() + 8 + len;
  TensorMap out;
  std::vector<std::tuple<uint64_t, uint64_t, std::string>> spans;  // every tensor's [begin, end)
  for (auto& [key, v] : header.items()) {
    if (key == "__metadata__") continue;
    std::string where = "tensor \"" + key + "\": ";
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
      throw bad(where + "needs dtype, shape and data_offsets");
    const DType* dt = nullptr;
    for (auto& d : kTypes)
      if (v["dtype"].is_string() && v["dtype"].get<std::string>() == d.name) dt = &d;
    if (!dt) throw bad(where + "unsupported dtype " + v["dtype"].dump());
    std::vector<int64_t> shape;
    uint64_t numel = 1;
    if (!v["shape"].is_array()) throw bad(where + "shape must be an array, got " + v["shape"].dump());
    for (auto& s : v["shape"]) {
      if (!s.is_number_unsigned()) throw bad(where + "shape must hold non-negative integers, got " + v["shape"].dump());
      uint64_t d = s.get<uint64_t>();
      // A hostile header must not make us allocate or overflow: every size is bounded by the file.
      if (d > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(numel, d, &numel))
        throw bad(where + "shape " + v["shape"].dump() + " overflows");
      shape.push_back(static_cast<int64_t>(d));
    }
    auto& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      throw bad(where + "data_offsets must be [begin, end]");
    uint64_t b = off[0].get<uint64_t>(), e = off[1].get<uint64_t>();
    if (b > e || e > data_size)
      throw bad(where + "data_offsets [" + std::to_string(b) + ", " + std::to_string(e) +
                "] point past the end of the data (" + std::to_string(data_size) + " bytes)");
    uint64_t need = 0;
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(c10::elementSize(dt->type)), &need) || need > data_size)
      throw bad(where + "shape " + v["shape"].dump() + " of " + dt->name + " needs more bytes than the file holds");
    if (e - b != need)
      throw bad(where + "shape " + v["shape"].dump() + " of " + dt->name + " needs " + std::to_string(need) +
                " bytes, offsets give " + std::to_string(e - b));
    spans.emplace_back(b, e, key);
    at::Tensor t = at::empty(shape, at::TensorOptions().dtype(dt->type));
    if (need) std::memcpy(t.data_ptr(), data + b, need);
    out.emplace(key, t);
  }
  // As the reference reader: the tensors tile the data exactly, with no gap, overlap or trailing bytes.
  std::sort(spans.begin(), spans.end());
  uint64_t pos = 0;
  for (auto& [b, e, key] : spans) {
    if (b != pos)
      throw bad("tensor \"" + key + "\" starts at byte " + std::to_string(b) +
                " of the data but the previous tensor ends at " + std::to_string(pos) +
                (b < pos ? " (overlapping tensors)" : " (a gap)"));
    pos = e;
  }
  if (pos != data_size)
    throw bad("the tensors cover " + std::to_string(pos) + " bytes of data but the file holds " +
              std::to_string(data_size) + " (trailing bytes)");
  return out;
}

TensorMap read_safetensors(const std::string& path) {
  std::string bytes;
  try {
    bytes = read_file(path);
  } catch (const Error& e) {
    throw CheckpointError(std::string("cannot read weights: ") + e.what());
  }
  return decode_safetensors(bytes, path);
}

TensorMap state_dict(const torch::nn::Module& m) {
  TensorMap out;
  for (const auto& p : m.named_parameters(true)) out.emplace(p.key(), p.value().detach().to(at::kCPU));
  for (const auto& b : m.named_buffers(true)) out.emplace(b.key(), b.value().detach().to(at::kCPU));
  return out;
}

std::string LoadReport::str() const {
  std::string s;
  auto part = [&](const char* what, const std::vector<std::string>& v) {
    if (v.empty()) return;
    if (!s.empty()) s += "; ";
    s += std::string(what) + " (" + std::to_string(v.size()) +
         "): " + join(std::vector<std::string>(v.begin(), v.begin() + std::min<size_t>(v.size(), 8)), ", ");
    if (v.size() > 8) s += ", ...";
  };
  part("missing", missing);
  part("unexpected", unexpected);
  part("shape mismatch", mismatched);
  part("head re-initialised for the new task", reinitialized);
  part("first conv adapted", adapted);
  part("names", renamed);
  part("re-initialised (model.reinit_layers)", reinit_layers);
  return s.empty() ? "all tensors matched" : s;
}

LoadReport load_state_dict(torch::nn::Module& m, const TensorMap& tensors, bool strict, const std::string& source) {
  LoadReport r;
  torch::NoGradGuard no_grad;
  std::map<std::string, at::Tensor> targets;
  for (auto& p : m.named_parameters(true)) targets.emplace(p.key(), p.value());
  for (auto& b : m.named_buffers(true)) targets.emplace(b.key(), b.value());
  for (auto& [name, dst] : targets) {
    auto it = tensors.find(name);
    if (it == tensors.end()) {
      r.missing.push_back(name);
    } else if (it->second.sizes() != dst.sizes()) {
      r.mismatched.push_back(name + " " + c10::str(it->second.sizes()) + " vs model " + c10::str(dst.sizes()));
    } else {
      dst.copy_(it->second.to(dst.dtype()));
      ++r.loaded;
    }
  }
  for (auto& [name, t] : tensors)
    if (!targets.count(name)) r.unexpected.push_back(name);
  if (strict && !r.clean()) throw CheckpointError(source + " does not match the model: " + r.str());
  return r;
}

}  // namespace kg::model
