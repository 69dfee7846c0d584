#include "engine/ops/broadcast.h"

#include "engine/ir/error.h"

namespace fb {

BroadcastPlan::BroadcastPlan(const Shape& out, const std::vector<Shape>& inputs) {
  const size_t r = out.size();
  const size_t n = inputs.size();
  // Each input's dims right-aligned to the output rank, with its strides (0 where broadcast).
  std::vector<std::vector<int64_t>> dims(n, std::vector<int64_t>(r, 1)), strides(n, std::vector<int64_t>(r, 0));
  for (size_t i = 0; i < n; ++i) {
    const Shape& s = inputs[i];
    FB_CHECK(s.size() <= r, "input rank exceeds output rank");
    for (size_t d = 0; d < s.size(); ++d) dims[i][r - s.size() + d] = s[d];
    int64_t acc = 1;
    for (size_t d = r; d-- > 0;) {
      strides[i][d] = dims[i][d] == 1 ? 0 : acc;
      acc *= dims[i][d];
      FB_CHECK(dims[i][d] == 1 || dims[i][d] == out[d], "input does not broadcast to output");
    }
  }
  // Merge dimension d into d+1 when, for every input, both are broadcast or both are dense.
  std::vector<int64_t> mdims;
  std::vector<std::vector<int64_t>> mstrides(n);
  for (size_t d = 0; d < r; ++d) {
    if (out[d] == 1) continue;  // size-1 dims contribute nothing
    bool mergeable = !mdims.empty();
    for (size_t i = 0; i < n && mergeable; ++i) {
      bool prev_b = mstrides[i].back() == 0, cur_b = strides[i][d] == 0;
      mergeable = prev_b == cur_b;
    }
    if (mergeable) {
      mdims.back() *= out[d];
      for (size_t i = 0; i < n; ++i) mstrides[i].back() = strides[i][d];
    } else {
      mdims.push_back(out[d]);
      for (size_t i = 0; i < n; ++i) mstrides[i].push_back(strides[i][d]);
    }
  }
  inner_stride_.assign(n, 0);
  strides_.assign(n, {});
  if (mdims.empty()) return;  // a single element
  inner_ = mdims.back();
  for (size_t i = 0; i < n; ++i) {
    inner_stride_[i] = mstrides[i].back() == 0 ? 0 : 1;
    strides_[i].assign(mstrides[i].begin(), mstrides[i].end() - 1);
  }
  outer_.assign(mdims.begin(), mdims.end() - 1);
  rows_ = shape_numel(outer_);
}

int64_t BroadcastPlan::row_offset(size_t i, int64_t row) const {
  int64_t off = 0;
  const std::vector<int64_t>& st = strides_[i];
  for (size_t d = outer_.size(); d-- > 0;) {
    int64_t idx = row % outer_[d];
    row /= outer_[d];
    off += idx * st[d];
  }
  return off;
}

}  // namespace fb
