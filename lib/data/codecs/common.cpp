#include "core/error.h"
#include "data/codecs/codecs.h"

namespace kg::data::codecs {

void fail(const std::string& name, const std::string& why) { throw DataError("cannot decode image " + name + ": " + why); }

void damaged(const std::string& name, const std::string& detail) {
  fail(name, "not a supported image or damaged (" + detail + ")");
}

}  // namespace kg::data::codecs
