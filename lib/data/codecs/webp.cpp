// WebP through libwebp (lossy VP8 and lossless VP8L, still images): RGB with any alpha dropped, not composited, as
// OpenCV's WebPDecoder (imgcodecs/src/grfmt_webp.cpp) decoded them for imdecode(IMREAD_ANYCOLOR).
#include "data/codecs/codecs.h"

#if KG_WITH_WEBP
#include <webp/decode.h>
#endif

namespace kg::data::codecs {

#if KG_WITH_WEBP

bool has_webp() { return true; }

Image decode_webp(std::string_view bytes, const std::string& name) {
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  WebPBitstreamFeatures f;
  const VP8StatusCode status = WebPGetFeatures(data, bytes.size(), &f);
  if (status != VP8_STATUS_OK) damaged(name, "libwebp: cannot read the WebP header (status " + std::to_string(status) + ")");
  if (f.has_animation) fail(name, "an animated WebP; kgtrain decodes still images only (convert its frames to PNG)");
  Image img(f.height, f.width, image_type(kDepth8U, 3));
  const size_t step = static_cast<size_t>(f.width) * 3;
  if (!WebPDecodeRGBInto(data, bytes.size(), img.ptr<uint8_t>(0), step * static_cast<size_t>(f.height),
                         static_cast<int>(step)))
    damaged(name, "libwebp could not decode the image data (a damaged or truncated file)");
  return img;
}

#else

bool has_webp() { return false; }

Image decode_webp(std::string_view, const std::string& name) {
  fail(name, "a WebP image, and this kgtrain was built without libwebp (Debian/Ubuntu: apt-get install libwebp-dev, "
             "then rebuild); or convert the images to PNG");
}

#endif

}  // namespace kg::data::codecs
