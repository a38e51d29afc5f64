// The C++ side of scripts/check_tokenizer_parity.py (compiled by that script with g++, not part of the build):
//   tokenizer_parity_driver encode TOKENIZER.json CASES.jsonl OUT.jsonl
//     each case {"a": text, "b": text or null, "max_length": n or null, "strategy": s, "direction": "right"|"left",
//     "special": bool} gives one line {"ids": [...], "type_ids": [...], "attention_mask": [...]} or {"error": why}
//   tokenizer_parity_driver bench TOKENIZER.json LINES.txt
//     encodes each line once on this thread and prints {"lines": n, "tokens": n, "seconds": s}
//   tokenizer_parity_driver folder-json DIR
//     prints the tokenizer.json kgtrain builds from a sentencepiece folder (Tokenizer::spm_folder_json)
// TOKENIZER.json may be a folder: Tokenizer::from_folder reads it.
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/tokenizer.h"

using nlohmann::json;

namespace {

kg::text::Tokenizer load(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return kg::text::Tokenizer::from_folder(path);
  return kg::text::Tokenizer::from_file(path);
}

int encode(const std::string& tok_path, const std::string& cases_path, const std::string& out_path) {
  const auto base = load(tok_path);
  std::ifstream in(cases_path);
  std::ofstream out(out_path);
  std::string line;
  while (std::getline(in, line)) {
    const json c = json::parse(line);
    auto t = base;
    if (c.contains("max_length") && !c["max_length"].is_null()) {
      kg::text::TruncationOptions o;
      o.max_length = c["max_length"].get<size_t>();
      o.strategy = kg::text::truncation_strategy(c["strategy"].get<std::string>(), "strategy");
      o.direction = c.value("direction", "right") == "left" ? kg::text::TruncationOptions::kLeft
                                                            : kg::text::TruncationOptions::kRight;
      t.set_truncation(o);
    } else {
      t.set_truncation(std::nullopt);
    }
    const bool special = c.value("special", true);
    json r;
    try {
      const std::string a = c["a"].get<std::string>();
      kg::text::Encoding e;
      if (c.contains("b") && !c["b"].is_null())
        e = t.encode_pair(a, c["b"].get<std::string>(), special);
      else
        e = t.encode(a, special);
      r["ids"] = e.ids;
      r["type_ids"] = e.type_ids;
      r["attention_mask"] = e.attention_mask;
    } catch (const kg::Error& e) {
      r["error"] = e.what();
    }
    out << r.dump() << "\n";
  }
  return 0;
}

int bench(const std::string& tok_path, const std::string& lines_path) {
  const auto t = load(tok_path);
  std::ifstream in(lines_path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  size_t tokens = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& l : lines) tokens += t.encode(l).ids.size();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << json{{"lines", lines.size()}, {"tokens", tokens}, {"seconds", s}}.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "encode" && argc == 5) return encode(argv[2], argv[3], argv[4]);
    if (mode == "bench" && argc == 4) return bench(argv[2], argv[3]);
    if (mode == "folder-json" && argc == 3) {
      std::cout << kg::text::Tokenizer::spm_folder_json(argv[2]) << "\n";
      return 0;
    }
    std::cerr << "usage: " << argv[0] << " encode TOKENIZER.json CASES.jsonl OUT.jsonl | bench TOKENIZER.json LINES\n";
    return 2;
  } catch (const kg::Error& e) {
    std::cerr << e.what() << "\n";
    return e.exit_code();
  }
}
