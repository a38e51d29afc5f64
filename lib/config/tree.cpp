#include "config/tree.h"

#include "core/error.h"

namespace kg::config {

namespace {
bool is_below(const std::string& key, const std::string& prefix) {
  return key.size() > prefix.size() && key.compare(0, prefix.size(), prefix) == 0 && key[prefix.size()] == '.';
}
}  // namespace

std::string Origin::str() const {
  auto pos = [this] {
    if (line <= 0) return file;
    return file + ":" + std::to_string(line) + ":" + std::to_string(column);
  };
  switch (kind) {
    case Kind::File:
      return pos();
    case Kind::CommandLine:
      return "command line";
    case Kind::EnvLayer:
      return "env layer " + layer + " (" + pos() + ")";
    case Kind::Default:
      break;
  }
  return "default";
}

const Entry* Tree::find(const std::string& key) const {
  auto it = map_.find(key);
  return it == map_.end() ? nullptr : &it->second;
}

const Entry& Tree::at(const std::string& key) const {
  const Entry* e = find(key);
  KG_ASSERT(e != nullptr, "no recipe key ", key);
  return *e;
}

void Tree::set(const std::string& key, Entry e) {
  erase(key);
  // A leaf at a prefix ("a" when setting "a.b") would otherwise shadow the new table.
  for (size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1))
    map_.erase(key.substr(0, dot));
  map_[key] = std::move(e);
}

size_t Tree::erase(const std::string& key) {
  size_t n = map_.erase(key);
  // Keys below `key` sort right after "key." in the map, contiguous.
  auto it = map_.lower_bound(key + ".");
  while (it != map_.end() && is_below(it->first, key)) {
    it = map_.erase(it);
    ++n;
  }
  return n;
}

void Tree::merge(const Tree& other) {
  for (const auto& [key, e] : other.map_) set(key, e);
}

std::vector<std::string> Tree::keys_under(const std::string& prefix) const {
  std::vector<std::string> out;
  if (prefix.empty()) {
    for (const auto& kv : map_) out.push_back(kv.first);
    return out;
  }
  for (auto it = map_.lower_bound(prefix + "."); it != map_.end() && is_below(it->first, prefix); ++it)
    out.push_back(it->first);
  return out;
}

}  // namespace kg::config
