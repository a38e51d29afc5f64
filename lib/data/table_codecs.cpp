#include "data/table_codecs.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <zlib.h>
#if KG_WITH_ZSTD
#include <zstd.h>
#endif

#include "core/error.h"

namespace kg::data {

namespace {
void check_expected(size_t expected, size_t max_bytes, const std::string& what) {
  KG_CHECK(expected <= max_bytes, DataError, what, ": a block that states ", expected,
           " bytes when decompressed, more than kgtrain accepts (", max_bytes, "): a damaged or hostile file?");
}
}  // namespace

std::string snappy_decompress(std::string_view in, size_t expected, size_t max_bytes, const std::string& what) {
  check_expected(expected, max_bytes, what);
  const auto* p = reinterpret_cast<const uint8_t*>(in.data());
  const uint8_t* end = p + in.size();
  auto bad = [&](const char* why) { return DataError(what + ": damaged Snappy data (" + why + ")"); };
  // Preamble: the uncompressed length as a little-endian varint of at most 5 bytes.
  uint64_t len = 0;
  for (int shift = 0;; shift += 7) {
    if (p == end || shift > 28) throw bad("bad length preamble");
    const uint8_t b = *p++;
    len |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
  }
  if (len != expected) throw bad("its length disagrees with the page header");
  std::string out;
  out.resize(expected);
  char* o = out.data();
  size_t n = 0;
  while (p < end) {
    const uint8_t tag = *p++;
    size_t length = 0, offset = 0;
    switch (tag & 3) {
      case 0: {  // literal
        length = tag >> 2;
        if (length >= 60) {
          const size_t extra = length - 59;
          if (static_cast<size_t>(end - p) < extra) throw bad("truncated literal length");
          length = 0;
          for (size_t i = 0; i < extra; ++i) length |= static_cast<size_t>(p[i]) << (8 * i);
          p += extra;
        }
        length += 1;
        if (static_cast<size_t>(end - p) < length) throw bad("truncated literal");
        if (expected - n < length) throw bad("output longer than stated");
        std::memcpy(o + n, p, length);
        p += length;
        n += length;
        continue;
      }
      case 1:
        if (p == end) throw bad("truncated copy");
        length = 4 + ((tag >> 2) & 7);
        offset = (static_cast<size_t>(tag >> 5) << 8) | *p++;
        break;
      case 2:
        if (end - p < 2) throw bad("truncated copy");
        length = 1 + (tag >> 2);
        offset = p[0] | (static_cast<size_t>(p[1]) << 8);
        p += 2;
        break;
      default:
        if (end - p < 4) throw bad("truncated copy");
        length = 1 + (tag >> 2);
        offset = p[0] | (static_cast<size_t>(p[1]) << 8) | (static_cast<size_t>(p[2]) << 16) |
                 (static_cast<size_t>(p[3]) << 24);
        p += 4;
        break;
    }
    if (offset == 0 || offset > n) throw bad("copy from before the start");
    if (expected - n < length) throw bad("output longer than stated");
    for (size_t i = 0; i < length; ++i, ++n) o[n] = o[n - offset];  // may overlap: byte by byte
  }
  if (n != expected) throw bad("output shorter than stated");
  return out;
}

std::string gzip_decompress(std::string_view in, size_t expected, size_t max_bytes, const std::string& what) {
  check_expected(expected, max_bytes, what);
  std::string out;
  out.resize(expected);
  z_stream s{};
  if (inflateInit2(&s, 15 + 32) != Z_OK) throw DataError(what + ": zlib could not start");  // gzip or zlib header
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  s.avail_in = static_cast<uInt>(std::min<size_t>(in.size(), UINT32_MAX));
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = static_cast<uInt>(expected);
  const int rc = inflate(&s, Z_FINISH);
  const size_t got = expected - s.avail_out;
  inflateEnd(&s);
  KG_CHECK(rc == Z_STREAM_END && got == expected, DataError, what, ": damaged GZIP data (zlib: ",
           rc == Z_STREAM_END ? "decompressed to another size than stated" : (s.msg ? s.msg : "truncated"), ")");
  return out;
}

bool have_zstd() { return KG_WITH_ZSTD != 0; }

std::string zstd_decompress(std::string_view in, size_t expected, size_t max_bytes, const std::string& what) {
  check_expected(expected, max_bytes, what);
#if KG_WITH_ZSTD
  std::string out;
  out.resize(expected);
  const size_t got = ZSTD_decompress(out.data(), expected, in.data(), in.size());
  KG_CHECK(!ZSTD_isError(got) && got == expected, DataError, what, ": damaged ZSTD data (",
           ZSTD_isError(got) ? ZSTD_getErrorName(got) : "decompressed to another size than stated", ")");
  return out;
#else
  (void)in;
  throw DataError(what +
                  ": compressed with ZSTD, which this kgtrain was built without (libzstd was not found when "
                  "it was configured: apt-get install libzstd-dev and rebuild), or rewrite the file with "
                  "compression='snappy'");
#endif
}

}  // namespace kg::data
