#include "engine/runtime/arena_planner.h"

#include <algorithm>
#include <numeric>

namespace fb {

std::vector<size_t> plan_arena(const std::vector<BufferLife>& buffers, size_t* total_bytes) {
  auto align = [](size_t b) { return (b + 63) / 64 * 64; };
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });
  std::vector<size_t> offset(buffers.size(), 0);
  std::vector<size_t> placed;
  size_t total = 0;
  for (size_t i : order) {
    const BufferLife& bi = buffers[i];
    // Intervals already taken by buffers alive at the same time, sorted by offset.
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t j : placed) {
      const BufferLife& bj = buffers[j];
      if (bj.last < bi.first || bi.last < bj.first) continue;
      busy.emplace_back(offset[j], offset[j] + align(bj.bytes));
    }
    std::sort(busy.begin(), busy.end());
    size_t candidate = 0;
    for (const auto& [lo, hi] : busy) {
      if (candidate + align(bi.bytes) <= lo) break;
      candidate = std::max(candidate, hi);
    }
    offset[i] = candidate;
    total = std::max(total, candidate + align(bi.bytes));
    placed.push_back(i);
  }
  *total_bytes = total;
  return offset;
}

}  // namespace fb
