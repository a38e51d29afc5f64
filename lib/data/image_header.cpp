#include "data/image_header.h"

#include <cctype>
#include <cstdio>
#include <optional>

#include "core/error.h"
#include "data/jpeg_header.h"

namespace kg::data {
namespace {

uint64_t hdr_le(std::string_view b, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<size_t>(i)]);
  return v;
}

uint64_t hdr_be(std::string_view b, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<size_t>(i)]);
  return v;
}

bool hdr_starts(std::string_view b, std::string_view sig, size_t at = 0) {
  return b.size() >= at + sig.size() && b.substr(at, sig.size()) == sig;
}

void parse_bmp(std::string_view b, ImageHeader& h) {
  if (b.size() < 26) return;
  if (hdr_le(b, 14, 4) == 12) {  // BITMAPCOREHEADER: 16-bit sizes
    h.width = static_cast<int64_t>(hdr_le(b, 18, 2));
    h.height = static_cast<int64_t>(hdr_le(b, 20, 2));
    return;
  }
  const auto w = static_cast<int32_t>(hdr_le(b, 18, 4)), ht = static_cast<int32_t>(hdr_le(b, 22, 4));
  h.width = w < 0 ? -static_cast<int64_t>(w) : w;
  h.height = ht < 0 ? -static_cast<int64_t>(ht) : ht;  // negative: rows stored top-down
}

void parse_webp(std::string_view b, ImageHeader& h) {
  if (hdr_starts(b, "VP8 ", 12) && b.size() >= 30) {
    h.width = static_cast<int64_t>(hdr_le(b, 26, 2) & 0x3fff);
    h.height = static_cast<int64_t>(hdr_le(b, 28, 2) & 0x3fff);
  } else if (hdr_starts(b, "VP8L", 12) && b.size() >= 25) {
    const uint64_t bits = hdr_le(b, 21, 4);
    h.width = static_cast<int64_t>(bits & 0x3fff) + 1;
    h.height = static_cast<int64_t>((bits >> 14) & 0x3fff) + 1;
  } else if (hdr_starts(b, "VP8X", 12) && b.size() >= 30) {
    h.width = static_cast<int64_t>(hdr_le(b, 24, 3)) + 1;
    h.height = static_cast<int64_t>(hdr_le(b, 27, 3)) + 1;
  }
}

// ImageWidth (256) and ImageLength (257) of the first IFD.
void parse_tiff(std::string_view b, ImageHeader& h) {
  const bool le = b[0] == 'I';
  auto get = [&](size_t at, int n) { return le ? hdr_le(b, at, n) : hdr_be(b, at, n); };
  const uint64_t ifd = get(4, 4);
  if (ifd + 2 > b.size()) return;
  const uint64_t count = get(ifd, 2);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t e = ifd + 2 + 12 * i;
    if (e + 12 > b.size()) return;
    const uint64_t tag = get(e, 2), type = get(e, 2 + 2);
    if (tag != 256 && tag != 257) continue;
    const int64_t v = static_cast<int64_t>(type == 3 ? get(e + 8, 2) : get(e + 8, 4));  // SHORT or LONG
    (tag == 256 ? h.width : h.height) = v;
  }
}

// "P1".."P6": whitespace- and comment-separated width and height; "P7" (PAM): WIDTH and HEIGHT lines.
void parse_pnm(std::string_view b, ImageHeader& h) {
  size_t at = 2;
  auto token = [&]() -> std::string {
    while (at < b.size()) {
      if (b[at] == '#') {
        while (at < b.size() && b[at] != '\n') ++at;
      } else if (std::isspace(static_cast<unsigned char>(b[at]))) {
        ++at;
      } else {
        break;
      }
    }
    std::string t;
    while (at < b.size() && !std::isspace(static_cast<unsigned char>(b[at])) && t.size() < 24) t += b[at++];
    return t;
  };
  auto number = [](const std::string& t) -> int64_t {
    if (t.empty() || t.size() > 18) return 0;
    for (char c : t)
      if (!std::isdigit(static_cast<unsigned char>(c))) return 0;
    return std::stoll(t);
  };
  if (b[1] != '7') {
    h.width = number(token());
    h.height = number(token());
    return;
  }
  for (int i = 0; i < 32; ++i) {
    const std::string t = token();
    if (t.empty() || t == "ENDHDR") return;
    if (t == "WIDTH") h.width = number(token());
    if (t == "HEIGHT") h.height = number(token());
  }
}

}  // namespace

ImageHeader read_image_header(std::string_view b) {
  ImageHeader h;
  if (hdr_starts(b, "\x89PNG\r\n\x1a\n")) {
    h.format = ImageFormat::png;
    if (b.size() >= 24 && hdr_starts(b, "IHDR", 12)) {
      h.width = static_cast<int64_t>(hdr_be(b, 16, 4));
      h.height = static_cast<int64_t>(hdr_be(b, 20, 4));
    }
  } else if (hdr_starts(b, "\xff\xd8\xff")) {
    h.format = ImageFormat::jpeg;
    if (auto info = jpeg_info(b)) {
      h.width = info->width;
      h.height = info->height;
    }
  } else if (hdr_starts(b, "BM")) {
    h.format = ImageFormat::bmp;
    parse_bmp(b, h);
  } else if (hdr_starts(b, "RIFF") && hdr_starts(b, "WEBP", 8)) {
    h.format = ImageFormat::webp;
    parse_webp(b, h);
  } else if (hdr_starts(b, std::string_view("II*\0", 4)) || hdr_starts(b, std::string_view("MM\0*", 4))) {
    h.format = ImageFormat::tiff;
    if (b.size() >= 8) parse_tiff(b, h);
  } else if (b.size() >= 3 && b[0] == 'P' && b[1] >= '1' && b[1] <= '7' &&
             std::isspace(static_cast<unsigned char>(b[2]))) {
    h.format = ImageFormat::pnm;
    parse_pnm(b, h);
  }
  return h;
}

const char* image_format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::png:
      return "PNG";
    case ImageFormat::jpeg:
      return "JPEG";
    case ImageFormat::bmp:
      return "BMP";
    case ImageFormat::webp:
      return "WebP";
    case ImageFormat::tiff:
      return "TIFF";
    case ImageFormat::pnm:
      return "PNM";
    case ImageFormat::unknown:
      break;
  }
  return "unknown";
}

ImageHeader check_image_header(std::string_view bytes, const std::string& name, int64_t max_pixels) {
  KG_ASSERT(max_pixels > 0, "max_image_pixels ", max_pixels);
  const ImageHeader h = read_image_header(bytes);
  if (h.format == ImageFormat::unknown) {
    std::string first;
    for (size_t i = 0; i < std::min<size_t>(bytes.size(), 8); ++i) {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%s%02x", i ? " " : "",
                    static_cast<unsigned>(static_cast<unsigned char>(bytes[i])));
      first += hex;
    }
    throw DataError("cannot decode image " + name + ": not PNG, JPEG, BMP, WebP, TIFF or PNM (it starts with " + first +
                    "); kgtrain decodes those formats only: convert others (DICOM, EXR, GIF, ...) to PNG first");
  }
  const int64_t limit = max_pixels;
  KG_CHECK(h.height <= 0 || h.width <= limit / h.height, DataError, "image ", name, ": its ",
           image_format_name(h.format), " header declares ", h.width, " x ", h.height, " pixels, more than ",
           "data.max_image_pixels = ", limit,
           " (a guard against decompression bombs, as PIL's); raise it if the image is real");
  return h;
}

}  // namespace kg::data
