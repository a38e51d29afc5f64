// CRC-32C (Castagnoli), the checksum of TFRecord framing (TensorBoard event files), and its "masked"
// form that TFRecord stores so a CRC of data containing CRCs stays well distributed.
#pragma once
#include <cstdint>
#include <string_view>

namespace kg {

// CRC-32C of `bytes` (reflected polynomial 0x82F63B78); crc32c("123456789") == 0xE3069283.
uint32_t crc32c(std::string_view bytes);
// TFRecord's mask: rotate right by 15 bits, add 0xa282ead8.
uint32_t masked_crc32c(std::string_view bytes);

}  // namespace kg
