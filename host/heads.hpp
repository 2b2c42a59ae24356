// heads.hpp: the probe heads of a Needle 2 archive (docs/model.md, "Probe heads"): attention pooling
// of every cell of the session by each head's probes, then the head's projection. The pooling is a
// streaming softmax (docs/numerics.md, "Probe heads"), so its memory does not grow with the session,
// and engine.wat performs the same f32 operations in the same order.
#pragma once
#include <cstdint>
#include <vector>

#include "archive.hpp"

namespace needle {

// The running softmax pooling of one probe over the cells seen so far:
// pooled = acc / sum, with sum = sum_cells e^(score - max) and acc = sum_cells e^(score - max) cell.
struct ProbeState {
  float max;                // the highest score so far (-inf before the first cell)
  float sum;                // sum of e^(score - max)
  std::vector<float> acc;   // d: sum of e^(score - max) x cell
};

// The pooling state of every probe head of a model, fed one cell (d floats) at a time.
class HeadPooling {
 public:
  // One state per probe of every head of `heads` (which must outlive this object); d = d_model.
  HeadPooling(const std::vector<ProbeHead>& heads, uint32_t d);

  // Forgets every cell: the next output pools only cells added from now on.
  void clear();
  // Pools one cell into every probe of every head.
  void addCell(const float* cell);

  size_t heads() const { return heads_.size(); }
  uint64_t cells() const { return cells_; }
  // The pooled probes of head h, probe-major (P x d): acc / sum per probe. Error for a missing head
  // or before the first cell.
  std::vector<float> pooled(size_t h) const;
  // The output of head h: proj x pooled + bias; L2-normalised for a contrastive head (out floats),
  // the logit for a confidence head (one float). Errors as pooled().
  std::vector<float> output(size_t h) const;

 private:
  const std::vector<ProbeHead>& heads_;
  uint32_t d_;
  float sqrtD_;                                // f32 sqrt(d): scores are (cell . probe) / sqrt(d)
  std::vector<std::vector<ProbeState>> state_; // [head][probe]
  uint64_t cells_ = 0;
};

// "contrastive" or "confidence".
const char* headKindName(HeadKind kind);

}  // namespace needle
