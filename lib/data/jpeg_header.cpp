#include "data/jpeg_header.h"

#include <cstdint>

namespace kg::data {

std::optional<JpegInfo> jpeg_info(std::string_view b) {
  auto byte = [&](size_t i) { return static_cast<uint8_t>(b[i]); };
  auto u16 = [&](size_t i) { return static_cast<int>(byte(i)) << 8 | byte(i + 1); };
  if (b.size() < 4 || byte(0) != 0xFF || byte(1) != 0xD8) return std::nullopt;  // SOI
  JpegInfo info;
  size_t i = 2;
  while (i + 4 <= b.size()) {
    if (byte(i) != 0xFF) return std::nullopt;
    const uint8_t m = byte(i + 1);
    if (m == 0xFF) {  // fill byte
      ++i;
      continue;
    }
    if (m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {  // markers without a length
      i += 2;
      continue;
    }
    if (m == 0xD9 || m == 0xDA) return std::nullopt;  // EOI / SOS before any frame header
    const size_t len = static_cast<size_t>(u16(i + 2));
    if (len < 2 || i + 2 + len > b.size()) return std::nullopt;
    const bool sof = m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
    if (sof) {
      if (len < 8) return std::nullopt;
      info.height = u16(i + 5);
      info.width = u16(i + 7);
      info.components = byte(i + 9);
      if (info.width <= 0 || info.height <= 0) return std::nullopt;  // height 0: defined later (DNL), rare
      return info;
    }
    if (m == 0xE1 && len >= 8 && b.substr(i + 4, 6) == std::string_view("Exif\0\0", 6)) info.exif = true;
    i += 2 + len;
  }
  return std::nullopt;
}

}  // namespace kg::data
