// dump.hpp: the parity ladder dump of needle-ref --dump (docs/dump-format.md), written as JSON.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "geometry.hpp"
#include "reference.hpp"

namespace needle {

// Everything one dump holds, in the order docs/dump-format.md lists it.
struct Dump {
  std::string archive;                 // the archive path as given on the command line
  ReferenceOptions options;
  Geometry geometry;
  std::vector<uint32_t> ids;           // the teacher-forced prompt, BOS included
  std::string dequantTensor = "embedding";
  uint32_t dequantRow = 0;
  std::vector<float> dequantValues;
  std::string matvecTensor;            // e.g. "layers.0.q_proj"
  std::vector<float> matvecInput, matvecOutput;
  Trace position0;                     // the step at position 0
  std::vector<std::vector<float>> logits;  // one row per prompt position
  std::vector<uint32_t> generated;
};

// The input of the dump's matvec rung: input_i = sin(0.37 i + 0.11), in f32.
std::vector<float> dumpMatvecInput(uint32_t cols);

// The dump as one JSON object: floats with %.9g (every f32 round-trips), non-finite values as null.
std::string dumpJson(const Dump& dump);

// A JSON string literal (quotes included) for UTF-8 text: ", \ and control characters escaped.
std::string jsonString(const std::string& utf8);
// One f32 as JSON: %.9g, or null for NaN and infinities.
std::string jsonFloat(float value);

}  // namespace needle
