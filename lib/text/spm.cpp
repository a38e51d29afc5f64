// Tokenizer::from_folder: a transformers tokenizer folder. With a tokenizer.json, that file. With only a
// sentencepiece model (DeBERTa-v2/v3: spm.model), the tokenizer.json that transformers' DebertaV2Tokenizer
// (transformers 5: tokenization_deberta_v2.py, fed by convert_slow_tokenizer.SentencePieceExtractor) builds from it:
//   model      Unigram over every piece (piece, score) in order, unk_id the index of (unk_token, 0.0) or else
//              trainer_spec.unk_id, byte_fallback false;
//   normalizer [Lowercase if do_lower_case], Precompiled(normalizer_spec.precompiled_charsmap), Strip(right),
//              Replace(" {2,}" -> " ");
//   pre_tokenizer Metaspace("▁", prepend "always", or "first" when add_prefix_space is false, split);
//   post_processor [CLS] $A [SEP] / [CLS] $A [SEP] $B:1 [SEP]:1 with cls_token and sep_token;
//   added_tokens the special tokens (bos, eos, unk, sep, pad, cls, mask, the CONTROL pieces, added_tokens.json),
//              raw-matched (normalized false), at their vocabulary id or after the vocabulary.
// The sentencepiece ModelProto is read by a minimal protobuf reader (the fields above only); a truncated or
// malformed file is a ConfigError naming the file and the byte offset.
#include <sys/stat.h>

#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/fs.h"
#include "text/tokenizer.h"

namespace kg::text {
namespace {

using SpmJson = nlohmann::json;

bool spm_path_exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The protobuf wire format, bounds-checked.
struct ProtoReader {
  std::string_view data;
  size_t pos = 0;
  const std::string& where;
  size_t base = 0;  // offset of `data` in the file, for errors

  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(where + ": not a sentencepiece model (protobuf): " + what + " at byte " +
                      std::to_string(base + pos));
  }
  bool done() const { return pos >= data.size(); }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= data.size()) fail("truncated varint");
      const auto b = static_cast<unsigned char>(data[pos++]);
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("varint longer than 10 bytes");
  }
  std::string_view bytes() {
    const uint64_t n = varint();
    if (n > data.size() - pos) fail("a length of " + std::to_string(n) + " past the end of the data");
    const std::string_view out = data.substr(pos, n);
    pos += n;
    return out;
  }
  uint32_t fixed32() {
    if (data.size() - pos < 4) fail("truncated fixed32");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) v |= static_cast<uint32_t>(static_cast<unsigned char>(data[pos + k])) << (8 * k);
    pos += 4;
    return v;
  }
  // Reads a tag; calls on(field, wire_type) which must consume the value or return false to have it skipped.
  template <class On>
  void each(On&& on) {
    while (!done()) {
      const uint64_t tag = varint();
      const uint32_t field = static_cast<uint32_t>(tag >> 3), wire = tag & 7;
      if (field == 0) fail("field number 0");
      if (on(field, wire)) continue;
      switch (wire) {
        case 0: varint(); break;
        case 1:
          if (data.size() - pos < 8) fail("truncated fixed64");
          pos += 8;
          break;
        case 2: bytes(); break;
        case 5: fixed32(); break;
        default: fail("wire type " + std::to_string(wire) + " (groups are not used by sentencepiece)");
      }
    }
  }
};

struct SpmPiece {
  std::string piece;
  float score = 0;
  int type = 1;  // NORMAL 1, UNKNOWN 2, CONTROL 3, USER_DEFINED 4, UNUSED 5, BYTE 6
};

struct SpmModel {
  std::vector<SpmPiece> pieces;
  int model_type = 1;  // UNIGRAM
  int64_t unk_id = 0;
  std::string charsmap;
  bool has_charsmap = false;
};

SpmModel read_spm(const std::string& path) {
  const std::string data = read_file(path);
  SpmModel m;
  ProtoReader r{data, 0, path, 0};
  const auto expect = [&](ProtoReader& rr, uint32_t wire, uint32_t want, const char* what) {
    if (wire != want) rr.fail(std::string("unexpected wire type for ") + what);
  };
  r.each([&](uint32_t field, uint32_t wire) {
    if (field == 1) {  // SentencePiece
      expect(r, wire, 2, "pieces");
      const std::string_view b = r.bytes();
      ProtoReader p{b, 0, path, static_cast<size_t>(b.data() - data.data())};
      SpmPiece piece;
      p.each([&](uint32_t f, uint32_t w) {
        if (f == 1) {
          expect(p, w, 2, "piece");
          piece.piece = std::string(p.bytes());
        } else if (f == 2) {
          expect(p, w, 5, "score");
          const uint32_t bits = p.fixed32();
          std::memcpy(&piece.score, &bits, 4);
        } else if (f == 3) {
          expect(p, w, 0, "type");
          piece.type = static_cast<int>(p.varint());
        } else {
          return false;
        }
        return true;
      });
      m.pieces.push_back(std::move(piece));
      return true;
    }
    if (field == 2) {  // TrainerSpec
      expect(r, wire, 2, "trainer_spec");
      const std::string_view b = r.bytes();
      ProtoReader t{b, 0, path, static_cast<size_t>(b.data() - data.data())};
      t.each([&](uint32_t f, uint32_t w) {
        if (f == 3) {
          expect(t, w, 0, "model_type");
          m.model_type = static_cast<int>(t.varint());
        } else if (f == 40) {
          expect(t, w, 0, "unk_id");
          m.unk_id = static_cast<int32_t>(t.varint());
        } else {
          return false;
        }
        return true;
      });
      return true;
    }
    if (field == 3) {  // NormalizerSpec
      expect(r, wire, 2, "normalizer_spec");
      const std::string_view b = r.bytes();
      ProtoReader n{b, 0, path, static_cast<size_t>(b.data() - data.data())};
      n.each([&](uint32_t f, uint32_t w) {
        if (f != 2) return false;
        expect(n, w, 2, "precompiled_charsmap");
        m.charsmap = std::string(n.bytes());
        m.has_charsmap = true;
        return true;
      });
      return true;
    }
    return false;
  });
  KG_CHECK(!m.pieces.empty(), ConfigError, path, ": a sentencepiece model without pieces");
  return m;
}

SpmJson read_json_file(const std::string& path) {
  const std::string text = read_file(path);
  const size_t depth = json_nesting_depth(text);
  KG_CHECK(depth <= kMaxJsonDepth, ConfigError, path, ": JSON nested ", depth, " deep (kgtrain reads up to ",
           kMaxJsonDepth, ")");
  try {
    return SpmJson::parse(text);
  } catch (const SpmJson::exception& e) {
    throw ConfigError(path + ": not JSON (" + e.what() + ")");
  }
}

// A token given as "text" or as {"content": "text", ...} (an AddedToken's serialized form).
std::string spm_token_text(const SpmJson& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  KG_CHECK(v.is_object() && v.contains("content") && v["content"].is_string(), ConfigError, where,
           ": expected a token (text or {\"content\": ...}), got ", v.dump().substr(0, 200));
  return v["content"].get<std::string>();
}

std::string base64_of(const std::string& in) {
  static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << 16;
    if (i + 1 < in.size()) v |= static_cast<uint32_t>(static_cast<unsigned char>(in[i + 1])) << 8;
    if (i + 2 < in.size()) v |= static_cast<unsigned char>(in[i + 2]);
    out.push_back(digits[(v >> 18) & 63]);
    out.push_back(digits[(v >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? digits[(v >> 6) & 63] : '=');
    out.push_back(i + 2 < in.size() ? digits[v & 63] : '=');
  }
  return out;
}

}  // namespace

std::string Tokenizer::spm_folder_json(const std::string& dir) {
  const std::string spm = dir + "/spm.model";
  const SpmModel m = read_spm(spm);
  KG_CHECK(m.model_type == 1, ConfigError, spm, ": model_type ", m.model_type,
           " is not supported (kgtrain converts Unigram sentencepiece models, type 1)");
  KG_CHECK(m.has_charsmap && !m.charsmap.empty(), ConfigError, spm,
           ": no precompiled_charsmap (an identity-normalized model): transformers then uses NFC, which kgtrain "
           "does not implement");
  // tokenizer_config.json, then special_tokens_map.json for what it leaves out.
  SpmJson config = SpmJson::object(), special_map = SpmJson::object(), added_file = SpmJson::object();
  if (spm_path_exists(dir + "/tokenizer_config.json")) config = read_json_file(dir + "/tokenizer_config.json");
  if (spm_path_exists(dir + "/special_tokens_map.json"))
    special_map = read_json_file(dir + "/special_tokens_map.json");
  if (spm_path_exists(dir + "/added_tokens.json")) added_file = read_json_file(dir + "/added_tokens.json");
  KG_CHECK(config.is_object(), ConfigError, dir, "/tokenizer_config.json: expected an object");
  KG_CHECK(special_map.is_object(), ConfigError, dir, "/special_tokens_map.json: expected an object");
  KG_CHECK(added_file.is_object(), ConfigError, dir, "/added_tokens.json: expected an object");
  const auto flag = [&](const char* name, bool fallback) {
    if (!config.contains(name) || config[name].is_null()) return fallback;
    KG_CHECK(config[name].is_boolean(), ConfigError, dir, "/tokenizer_config.json: ", name, ": expected true or false");
    return config[name].get<bool>();
  };
  const bool lower = flag("do_lower_case", false);
  const bool prefix_space = flag("add_prefix_space", true);
  KG_CHECK(!flag("split_by_punct", false), ConfigError, dir,
           "/tokenizer_config.json: split_by_punct true is not supported (the Punctuation pre-tokenizer)");
  const auto token = [&](const char* name, const char* fallback) {
    for (const SpmJson* src : {&config, &special_map})
      if (src->contains(name) && !(*src)[name].is_null())
        return spm_token_text((*src)[name], dir + ": " + name);
    return std::string(fallback);
  };
  const std::string unk = token("unk_token", "[UNK]"), cls = token("cls_token", "[CLS]"),
                    sep = token("sep_token", "[SEP]"), pad = token("pad_token", "[PAD]"),
                    mask = token("mask_token", "[MASK]"), bos = token("bos_token", "[CLS]"),
                    eos = token("eos_token", "[SEP]");

  SpmJson vocab = SpmJson::array();
  std::map<std::string, int64_t> id_of;  // the first id of each piece, as list.index
  int64_t unk_id = m.unk_id;
  bool unk_found = false;
  for (size_t i = 0; i < m.pieces.size(); ++i) {
    const auto& p = m.pieces[i];
    vocab.push_back(SpmJson::array({p.piece, static_cast<double>(p.score)}));
    id_of.emplace(p.piece, static_cast<int64_t>(i));
    if (!unk_found && p.piece == unk && p.score == 0.0f) {
      unk_id = static_cast<int64_t>(i);
      unk_found = true;
    }
  }
  KG_CHECK(unk_id >= 0 && static_cast<size_t>(unk_id) < m.pieces.size(), ConfigError, spm, ": unk_id ", unk_id,
           " is not a piece");
  // The special tokens: in vocabulary order when they are pieces, else after the vocabulary.
  std::vector<std::string> specials;
  for (const auto& p : m.pieces)
    if (p.type == 3) specials.push_back(p.piece);
  for (const std::string& s : {bos, eos, unk, sep, pad, cls, mask}) specials.push_back(s);
  std::map<int64_t, std::string> added;
  int64_t next_id = static_cast<int64_t>(m.pieces.size());
  std::set<std::string> seen;
  for (const auto& kv : added_file.items()) {
    KG_CHECK(kv.value().is_number_integer() && kv.value().get<int64_t>() >= 0, ConfigError, dir,
             "/added_tokens.json: \"", kv.key(), "\": expected a non-negative id");
    const int64_t id = kv.value().get<int64_t>();
    KG_CHECK(id >= static_cast<int64_t>(m.pieces.size()) || m.pieces[id].piece == kv.key(), ConfigError, dir,
             "/added_tokens.json: \"", kv.key(), "\" at id ", id, ", which is the piece \"",
             m.pieces[static_cast<size_t>(id)].piece, "\"");
    added[id] = kv.key();
    seen.insert(kv.key());
    next_id = std::max(next_id, id + 1);
  }
  for (const auto& s : specials) {
    if (seen.count(s)) continue;
    seen.insert(s);
    const auto it = id_of.find(s);
    added[it != id_of.end() ? it->second : next_id++] = s;
  }
  SpmJson added_tokens = SpmJson::array();
  for (const auto& [id, content] : added)
    added_tokens.push_back({{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
                            {"rstrip", false}, {"normalized", false}, {"special", true}});
  const auto id_for = [&](const std::string& s) {
    for (const auto& [id, content] : added)
      if (content == s) return id;
    throw ConfigError(dir + ": \"" + s + "\" has no id");
  };
  SpmJson normalizers = SpmJson::array();
  if (lower) normalizers.push_back({{"type", "Lowercase"}});
  normalizers.push_back({{"type", "Precompiled"}, {"precompiled_charsmap", base64_of(m.charsmap)}});
  normalizers.push_back({{"type", "Strip"}, {"strip_left", false}, {"strip_right", true}});
  normalizers.push_back({{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}});
  const auto special = [](const std::string& id, int64_t type_id) {
    return SpmJson{{"SpecialToken", {{"id", id}, {"type_id", type_id}}}};
  };
  const auto sequence = [](const char* id, int64_t type_id) {
    return SpmJson{{"Sequence", {{"id", id}, {"type_id", type_id}}}};
  };
  SpmJson t = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added_tokens},
      {"normalizer", {{"type", "Sequence"}, {"normalizers", normalizers}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers", SpmJson::array({{{"type", "Metaspace"}, {"replacement", "\xe2\x96\x81"},
                                        {"prepend_scheme", prefix_space ? "always" : "first"}, {"split", true}}})}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", SpmJson::array({special(cls, 0), sequence("A", 0), special(sep, 0)})},
        {"pair", SpmJson::array({special(cls, 0), sequence("A", 0), special(sep, 0), sequence("B", 1), special(sep, 1)})},
        {"special_tokens",
         {{cls, {{"id", cls}, {"ids", {id_for(cls)}}, {"tokens", {cls}}}},
          {sep, {{"id", sep}, {"ids", {id_for(sep)}}, {"tokens", {sep}}}}}}}},
      {"decoder", nullptr},
      {"model", {{"type", "Unigram"}, {"unk_id", unk_id}, {"vocab", vocab}, {"byte_fallback", false}}}};
  return t.dump();
}

Tokenizer Tokenizer::from_folder(const std::string& dir) {
  if (spm_path_exists(dir + "/tokenizer.json")) return from_file(dir + "/tokenizer.json");
  if (spm_path_exists(dir + "/spm.model"))
    return from_json(spm_folder_json(dir), dir + "/spm.model (converted as transformers' DebertaV2Tokenizer)");
  throw ConfigError(dir + ": no tokenizer.json and no spm.model: kgtrain reads a Hugging Face tokenizer.json, or a "
                    "DeBERTa-v2/v3 sentencepiece folder (spm.model with tokenizer_config.json); save the tokenizer "
                    "with transformers' save_pretrained to get a tokenizer.json");
}

}  // namespace kg::text
