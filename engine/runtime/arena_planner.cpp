#include "engine/runtime/arena_planner.h"

#include <algorithm>
#include <numeric>

namespace fb {

std::vector<size_t> plan_arena(const std::vector<BufferLife>& buffers, size_t* total_bytes) {
  auto align = [](size_t b) { return (b + 63) / 64 * 64; };
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });
  // The buffers placed so far, listed under every layer they are alive at: a buffer looks
  // only at those alive during its own life (scanning every placed buffer was quadratic).
  int steps = 0;
  for (const BufferLife& b : buffers) steps = std::max(steps, b.last + 1);
  std::vector<std::vector<size_t>> placed_at(static_cast<size_t>(steps));
  std::vector<size_t> offset(buffers.size(), 0);
  std::vector<size_t> seen_by(buffers.size(), buffers.size());  // the buffer that last collected it
  std::vector<std::pair<size_t, size_t>> busy;
  size_t total = 0;
  for (size_t i : order) {
    const BufferLife& bi = buffers[i];
    // Intervals already taken by buffers alive at the same time, sorted by offset.
    busy.clear();
    for (int t = bi.first; t <= bi.last; ++t)
      for (size_t j : placed_at[static_cast<size_t>(t)]) {
        if (seen_by[j] == i) continue;
        seen_by[j] = i;
        busy.emplace_back(offset[j], offset[j] + align(buffers[j].bytes));
      }
    std::sort(busy.begin(), busy.end());
    size_t candidate = 0;
    for (const auto& [lo, hi] : busy) {
      if (candidate + align(bi.bytes) <= lo) break;
      candidate = std::max(candidate, hi);
    }
    offset[i] = candidate;
    total = std::max(total, candidate + align(bi.bytes));
    for (int t = bi.first; t <= bi.last; ++t) placed_at[static_cast<size_t>(t)].push_back(i);
  }
  *total_bytes = total;
  return offset;
}

ActivationPlan plan_activations(const std::vector<PlanValue>& values, const std::vector<PlanLayer>& layers,
                                bool allow_in_place) {
  const int n = int(values.size()), n_layers = int(layers.size());
  ActivationPlan plan;
  plan.root.resize(size_t(n));
  std::iota(plan.root.begin(), plan.root.end(), 0);
  std::vector<int>& root = plan.root;
  // Views share their input's root (already resolved: layers come in topological order).
  for (const PlanLayer& l : layers)
    if (l.view && !l.inputs.empty() && l.inputs[0] >= 0 && !l.outputs.empty() && l.outputs[0] >= 0)
      root[size_t(l.outputs[0])] = root[size_t(l.inputs[0])];
  // The last layer reading each root through any of its values; kept values read "after" the end.
  std::vector<int> first(size_t(n), -1), last(size_t(n), -1);
  for (int i = 0; i < n_layers; ++i)
    for (int v : layers[size_t(i)].inputs)
      if (v >= 0) last[size_t(root[size_t(v)])] = std::max(last[size_t(root[size_t(v)])], i);
  for (int v = 0; v < n; ++v)
    if (values[size_t(v)].kept) last[size_t(root[size_t(v)])] = n_layers;
  std::vector<std::vector<int>> members(static_cast<size_t>(n));
  for (int v = 0; v < n; ++v) members[size_t(root[size_t(v)])].push_back(v);

  plan.in_place_input.assign(size_t(n_layers), -1);
  for (int i = 0; allow_in_place && i < n_layers; ++i) {
    const PlanLayer& l = layers[size_t(i)];
    if (!l.in_place || l.view || l.outputs.empty() || l.outputs[0] < 0) continue;
    const int out = l.outputs[0];
    const PlanValue& ov = values[size_t(out)];
    if (root[size_t(out)] != out || ov.home != PlanValue::Home::Arena) continue;
    for (size_t k = 0; k < l.inputs.size(); ++k) {
      if (l.in_place_only >= 0 && int(k) != l.in_place_only) continue;
      const int v = l.inputs[k];
      if (v < 0) continue;
      const int r = root[size_t(v)];
      const PlanValue &iv = values[size_t(v)], &rv = values[size_t(r)];
      // The buffer must be the engine's, die at this layer, and fit the output exactly.
      if (rv.home != PlanValue::Home::Arena || last[size_t(r)] != i) continue;
      if (iv.shape != ov.shape || iv.dtype != ov.dtype || rv.bytes != ov.bytes || rv.host != ov.host) continue;
      // Another input reading the same buffer under another name (a view of another
      // shape) would see its elements overwritten out of order; for a layer limited to
      // one input, so would the same value read as another operand.
      bool other_alias = false;
      for (size_t j = 0; j < l.inputs.size(); ++j) {
        const int u = l.inputs[j];
        if (j == k || u < 0 || root[size_t(u)] != r) continue;
        other_alias = other_alias || u != v || l.in_place_only >= 0;
      }
      if (other_alias) continue;
      for (int m : members[size_t(out)]) root[size_t(m)] = r;
      members[size_t(r)].insert(members[size_t(r)].end(), members[size_t(out)].begin(), members[size_t(out)].end());
      members[size_t(out)].clear();
      last[size_t(r)] = std::max(last[size_t(r)], last[size_t(out)]);
      plan.in_place_input[size_t(i)] = v;
      ++plan.in_place_layers;
      break;
    }
  }

  // Lives of the arena roots: from the first layer writing any of their values.
  for (int i = n_layers; i-- > 0;)
    for (int v : layers[size_t(i)].outputs)
      if (v >= 0) first[size_t(root[size_t(v)])] = i;
  plan.offset.assign(size_t(n), 0);
  for (const bool host : {false, true}) {
    std::vector<BufferLife> lives;
    std::vector<int> owners;
    for (int v = 0; v < n; ++v) {
      if (root[size_t(v)] != v || values[size_t(v)].home != PlanValue::Home::Arena || values[size_t(v)].host != host)
        continue;
      const int f = std::max(first[size_t(v)], 0);
      lives.push_back({values[size_t(v)].bytes, f, std::max(last[size_t(v)], f)});
      owners.push_back(v);
    }
    const std::vector<size_t> offsets = plan_arena(lives, host ? &plan.host_arena_bytes : &plan.arena_bytes);
    for (size_t k = 0; k < owners.size(); ++k) plan.offset[size_t(owners[k])] = offsets[k];
  }
  for (int v = 0; v < n; ++v) plan.offset[size_t(v)] = plan.offset[size_t(root[size_t(v)])];
  return plan;
}

}  // namespace fb
