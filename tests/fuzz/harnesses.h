// libFuzzer harnesses: one per kind of input a user hands kgtrain. Each takes arbitrary bytes, drives the same code
// path the commands use, and treats a kg::Error with exit code 2 or 3 (a clean refusal) as success. Anything else
// escaping (another exception type, an internal error, a crash, a sanitizer report, a hang) is a finding.
// Built into one executable, kgtrain_fuzz (KG_FUZZ_HARNESS=<name>; KGTRAIN_FUZZ=ON, scripts/fuzz.sh), and replayed
// over their committed corpora and regression inputs by the Catch2 suite (tests/fuzz/test_fuzz_corpus.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

// X(name, what it reads). CMake reads the names from these lines: keep one per line.
#define KG_FUZZ_HARNESSES(X)                                                         \
  X(recipe, "a recipe file + override words: parse, layer, interpolate, validate")   \
  X(csv, "a train.csv: parse, label/target columns, folds, UTF-8 checks")            \
  X(safetensors, "a .safetensors file: header, offsets, dtypes, tensors")            \
  X(pack, "a .kgpack file: header, index, hashes, records")                          \
  X(checkpoint, "a checkpoint folder: MANIFEST.json, state.json, state.safetensors") \
  X(image, "image bytes through the decode path and its size limits")                \
  X(idx, "IDX (MNIST) image + label files through import-idx")                       \
  X(submission, "a sample_submission.csv matched against test ids and classes")      \
  X(torch_pickle, "a torch.save pickle (data.pkl): the restricted unpickler, storages, tensor views") \
  X(parquet, "a .parquet table: footer (Thrift), pages, codecs, encodings, UTF-8 checks")             \
  X(arrow, "an Arrow IPC stream (a datasets .arrow shard): FlatBuffers metadata, buffers, dictionaries")

namespace kg::fuzz {

#define KG_FUZZ_DECLARE(name, what) int name(const uint8_t* data, size_t size);
KG_FUZZ_HARNESSES(KG_FUZZ_DECLARE)
#undef KG_FUZZ_DECLARE

// Inputs with several files: each part but the last is prefixed by its length (u32, little-endian); bytes that run
// out give shorter or empty parts. join_parts writes seeds in that form.
std::vector<std::string> split_parts(const uint8_t* data, size_t size, size_t n);
std::string join_parts(const std::vector<std::string>& parts);

}  // namespace kg::fuzz
