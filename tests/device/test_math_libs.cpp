// Which BLAS/LAPACK/oneDNN LibTorch runs with: classification of Debian's alternatives folders, what this test
// process itself loaded, and what `kgtrain --version` and fit's device line say.
#include <catch2/catch.hpp>

#include "device/math_libs.h"
#include "support/fixtures.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::device::classify_math_library;

TEST_CASE("BLAS and LAPACK files are named by the folder Debian's alternatives put them in", "[unit][device]") {
  const std::string lib = "/usr/lib/x86_64-linux-gnu/";
  CHECK(classify_math_library(lib + "blas/libblas.so.3.11.0", false) == "reference BLAS (Netlib)");
  CHECK(classify_math_library(lib + "lapack/liblapack.so.3.11.0", true) == "reference LAPACK (Netlib)");
  CHECK(classify_math_library(lib + "openblas-openmp/libblas.so.3", false) == "OpenBLAS");
  CHECK(classify_math_library(lib + "openblas-pthread/liblapack.so.3", true) == "OpenBLAS");
  CHECK(classify_math_library("/opt/x/libopenblasp-r0.3.21.so", false) == "OpenBLAS");
  CHECK(classify_math_library(lib + "blis-openmp/libblas.so.3", false) == "BLIS (blis-openmp)");
  CHECK(classify_math_library(lib + "atlas/libblas.so.3", false) == "ATLAS");
  CHECK(classify_math_library("/opt/intel/lib/libmkl_rt.so.2", false) == "MKL");
  CHECK(classify_math_library("/somewhere/libfancyblas.so", false) == "libfancyblas.so");
}

TEST_CASE("this process's math libraries are found and the reference BLAS is warned about", "[unit][device]") {
  const auto& m = kg::device::math_libs();
  INFO(kg::device::math_libs_text());
  CHECK_FALSE(m.blas.name.empty());
  CHECK_FALSE(m.lapack.name.empty());
  CHECK(m.blas.name != "none found");  // Debian's LibTorch loads libblas.so.3; PyPI's carries MKL
  CHECK(m.reference_blas == (m.blas.name.rfind("reference", 0) == 0));
  CHECK(kg::device::reference_blas_warning().empty() == !m.reference_blas);
  if (m.reference_blas)
    CHECK_THAT(kg::device::reference_blas_warning(), Catch::Contains("apt-get install libopenblas0-openmp"));
  if (!m.blas.path.empty()) CHECK(m.blas.path.front() == '/');  // resolved through the alternatives' links
  CHECK_THAT(kg::device::math_libs_brief(), Catch::StartsWith("BLAS " + m.blas.name));
}

TEST_CASE("kgtrain --version names the BLAS, LAPACK and oneDNN it runs with", "[integration][device]") {
  auto r = kg::test::run_kgtrain({"--version"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("\nBLAS: ") && Catch::Contains("\nLAPACK: ") && Catch::Contains("oneDNN"));
  CHECK_THAT(r.output, Catch::Contains("BLAS: " + kg::device::math_libs().blas.name));
  CHECK((r.output.find("warning: LibTorch is calling the reference BLAS") != std::string::npos) ==
        kg::device::math_libs().reference_blas);
}

}  // namespace KG_UNITY_ID
}  // namespace
