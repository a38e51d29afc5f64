// SHA-256 against the NIST FIPS 180-4 example vectors (csrc.nist.gov, "SHA256.pdf" / "SHA2_Additional.pdf").
#include <catch2/catch.hpp>

#include <string>
#include <utility>

#include "core/error.h"
#include "core/sha256.h"
#include "support/temp_dir.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {
const std::string k448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
const std::string k896 =
    "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
}  // namespace

TEST_CASE("sha256: NIST one-shot vectors", "[unit][sha256]") {
  CHECK(kg::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(kg::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(kg::sha256_hex(k448) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(kg::sha256_hex(k896) == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  CHECK(kg::sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256: streaming in any chunking equals one shot", "[unit][sha256]") {
  // One million 'a' fed in uneven pieces crosses every buffer boundary case.
  for (size_t chunk : {1, 3, 55, 56, 63, 64, 65, 1000, 4097}) {
    kg::Sha256 h;
    std::string piece(chunk, 'a');
    size_t left = 1000000;
    while (left > 0) {
      size_t n = std::min(left, chunk);
      h.update(piece.data(), n);
      left -= n;
    }
    CHECK(h.hex_digest() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  }
  kg::Sha256 h;
  h.update("ab").update("").update("c");
  auto d = h.digest();
  CHECK(d[0] == 0xba);
  CHECK(d[31] == 0xad);
  CHECK_THROWS_AS(h.update("x"), kg::InternalError);  // spent
}

TEST_CASE("sha256: lengths around the padding boundary", "[unit][sha256]") {
  // Reference digests from Python's hashlib.sha256(b"a" * n): 55 bytes is the longest message whose
  // padding fits one block; 56..63 need a second one.
  const std::pair<size_t, const char*> cases[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"}};
  for (const auto& [n, hex] : cases) CHECK(kg::sha256_hex(std::string(n, 'a')) == hex);
}

TEST_CASE("sha256: files", "[unit][sha256]") {
  kg::test::TempDir d;
  CHECK(kg::sha256_file_hex(d.write("m", std::string(1000000, 'a'))) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  CHECK(kg::sha256_file_hex(d.write("e", "")) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK_THROWS_AS(kg::sha256_file_hex(d / "absent"), kg::DataError);
}

}  // namespace KG_UNITY_ID
}  // namespace
