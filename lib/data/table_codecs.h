// The block decompressors of the Parquet and Arrow IPC readers (lib/data/parquet.cpp, arrow_ipc.cpp):
// Snappy (our own, the raw format of google/snappy's format_description.txt), GZIP (zlib) and ZSTD (libzstd,
// when the build found it: KG_WITH_ZSTD). Every problem is a DataError starting with `what`.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace kg::data {

// Decompresses `in` into exactly `expected` bytes (the size the container states); DataError when the data
// is damaged, decompresses to another size, or `expected` exceeds `max_bytes`.
std::string snappy_decompress(std::string_view in, size_t expected, size_t max_bytes, const std::string& what);
std::string gzip_decompress(std::string_view in, size_t expected, size_t max_bytes, const std::string& what);
std::string zstd_decompress(std::string_view in, size_t expected, size_t max_bytes, const std::string& what);
// Whether this build reads ZSTD (libzstd was found when it was configured).
bool have_zstd();

}  // namespace kg::data
