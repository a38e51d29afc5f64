// PBM/PGM/PPM (P1-P6) and PAM (P7), our own decoder: plain (ASCII) and raw samples, maxval up to 65535 (two
// big-endian bytes above 255). As OpenCV's PxM and PAM decoders (imgcodecs/src/grfmt_pxm.cpp, grfmt_pam.cpp) read
// them: raw 8-bit samples are taken as they are, plain ones scale maxval to 255, 16-bit ones are rounded to 8 bits,
// bitmaps are 1 = black, PAM's alpha is dropped.
#include <cctype>
#include <vector>

#include "data/codecs/codecs.h"
#include "data/image_header.h"

namespace kg::data::codecs {
namespace {

struct Reader {
  std::string_view s;
  size_t at = 0;
  const std::string& name;

  void skip_space() {
    while (at < s.size() && (std::isspace(static_cast<unsigned char>(s[at])) || s[at] == '#')) {
      if (s[at] == '#')
        while (at < s.size() && s[at] != '\n') ++at;
      else
        ++at;
    }
  }
  // A decimal number (header fields, plain samples); `what` names it in the message.
  uint32_t number(const char* what) {
    skip_space();
    uint64_t v = 0;
    const size_t start = at;
    while (at < s.size() && std::isdigit(static_cast<unsigned char>(s[at])) && v <= UINT32_MAX)
      v = v * 10 + static_cast<uint64_t>(s[at++] - '0');
    // Tokens end at white space, a comment or the end (as data/image_header.cpp reads the header: "999P1" is no size).
    const bool ends = at == s.size() || std::isspace(static_cast<unsigned char>(s[at])) || s[at] == '#';
    if (at == start || v > UINT32_MAX || !ends) damaged(name, std::string("the PNM file has no valid ") + what);
    return static_cast<uint32_t>(v);
  }
  // A plain bitmap's sample: one digit, with or without space between them.
  uint32_t bit() {
    skip_space();
    if (at >= s.size() || (s[at] != '0' && s[at] != '1')) damaged(name, "the PBM file has no valid bitmap sample");
    return static_cast<uint32_t>(s[at++] - '0');
  }
  std::string word() {
    skip_space();
    const size_t start = at;
    while (at < s.size() && !std::isspace(static_cast<unsigned char>(s[at]))) ++at;
    return std::string(s.substr(start, at - start));
  }
};

struct Header {
  int kind = 0;  // 1..7 from "P1".."P7"
  uint32_t width = 0, height = 0, depth = 1, maxval = 1;
};

void read_pam_header(Reader& r, Header& h) {
  for (std::string key = r.word(); key != "ENDHDR"; key = r.word()) {
    if (key.empty()) damaged(r.name, "the PAM header has no ENDHDR");
    if (key == "WIDTH")
      h.width = r.number("WIDTH");
    else if (key == "HEIGHT")
      h.height = r.number("HEIGHT");
    else if (key == "DEPTH")
      h.depth = r.number("DEPTH");
    else if (key == "MAXVAL")
      h.maxval = r.number("MAXVAL");
    else if (key == "TUPLTYPE")
      r.word();
    else
      damaged(r.name, "the PAM header has an unknown field " + key);
  }
}

}  // namespace

Image decode_pnm(std::string_view bytes, const std::string& name, int64_t max_pixels) {
  Reader r{bytes, 2, name};
  Header h;
  h.kind = bytes.size() >= 2 && bytes[0] == 'P' ? bytes[1] - '0' : 0;
  if (h.kind < 1 || h.kind > 7) damaged(name, "not a PNM/PAM signature");
  if (h.kind == 7) {
    read_pam_header(r, h);
  } else {
    h.width = r.number("width");
    h.height = r.number("height");
    h.depth = h.kind == 3 || h.kind == 6 ? 3 : 1;
    if (h.kind != 1 && h.kind != 4) h.maxval = r.number("maxval");
  }
  if (h.width == 0 || h.height == 0 || h.width > INT32_MAX / 4 || h.height > INT32_MAX / 4)
    damaged(name, "the PNM header gives no usable image size");
  // data.max_image_pixels again, on the size this reader found (check_image_header read it first).
  if (uint64_t{h.width} * h.height > static_cast<uint64_t>(max_pixels))
    damaged(name, "the PNM header declares " + std::to_string(h.width) + " x " + std::to_string(h.height) +
                      " pixels, more than data.max_image_pixels = " + std::to_string(max_pixels));
  if (h.maxval == 0 || h.maxval > 65535) damaged(name, "a PNM maxval of " + std::to_string(h.maxval));
  if (h.depth < 1 || h.depth > 4) damaged(name, "a PAM depth of " + std::to_string(h.depth));
  const bool plain = h.kind <= 3, bitmap = h.kind == 1 || h.kind == 4, wide = h.maxval > 255;
  const int out_channels = h.depth >= 3 ? 3 : 1;
  Image img(static_cast<int>(h.height), static_cast<int>(h.width), image_type(kDepth8U, out_channels));
  if (!plain) ++r.at;  // the one whitespace byte before raw samples
  const size_t row_bytes = bitmap ? (h.width + 7) / 8 : size_t{h.width} * h.depth * (wide ? 2 : 1);
  if (!plain && (r.at > bytes.size() || row_bytes * h.height > bytes.size() - r.at))
    damaged(name, "the PNM pixel data ends early: a truncated file");
  const auto* raw = reinterpret_cast<const uint8_t*>(bytes.data());
  for (uint32_t y = 0; y < h.height; ++y) {
    uint8_t* dst = img.ptr<uint8_t>(static_cast<int>(y));
    const uint8_t* row = raw + r.at + row_bytes * y;
    for (uint32_t x = 0; x < h.width; ++x) {
      for (uint32_t c = 0; c < h.depth; ++c) {
        uint32_t v;
        if (bitmap) {
          v = plain ? r.bit() : (row[x / 8] >> (7 - x % 8)) & 1;
          v = v ? 0 : 255;
        } else if (plain) {
          v = r.number("sample");
          v = wide ? to_8bit(std::min(v, 65535u)) : (std::min(v, h.maxval) * 255 + h.maxval / 2) / h.maxval;
        } else {
          const size_t i = (size_t{x} * h.depth + c) * (wide ? 2 : 1);
          v = wide ? to_8bit((row[i] << 8) | row[i + 1]) : row[i];
        }
        if (c < static_cast<uint32_t>(out_channels)) dst[size_t{x} * out_channels + c] = static_cast<uint8_t>(v);
      }
    }
  }
  return img;
}

}  // namespace kg::data::codecs
