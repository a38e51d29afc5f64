// What a JPEG's markers say before any pixel is decoded: its size, its components, and whether it
// carries EXIF (whose orientation may rotate it at decode). The reduced-decode path (Pipeline::
// process_encoded) draws its crop on this size, then asks libjpeg for a 1/2, 1/4 or 1/8 scale decode.
#pragma once
#include <optional>
#include <string_view>

namespace kg::data {

struct JpegInfo {
  int width = 0, height = 0;
  int components = 0;  // 1 gray, 3 YCbCr/RGB, 4 CMYK
  bool exif = false;   // an APP1 "Exif" segment came before the frame header
};

// The frame header (SOF0..SOF15, not DHT/JPG/DAC) of a JPEG in memory; nullopt when the bytes are not a JPEG or
// its markers end first (the full decoder then reports what is wrong).
std::optional<JpegInfo> jpeg_info(std::string_view bytes);

}  // namespace kg::data
