#include "harness/measure/precision_debug.h"

#include <algorithm>


namespace fb {

namespace {

std::vector<size_t> with(std::vector<size_t> set, const std::vector<size_t>& more) {
  set.insert(set.end(), more.begin(), more.end());
  std::sort(set.begin(), set.end());
  return set;
}

}  // namespace

std::optional<std::vector<size_t>> bisect_needed_items(size_t n,
                                                       const std::function<bool(const std::vector<size_t>&)>& meets,
                                                       int* checks) {
  int calls = 0;
  auto ask = [&](const std::vector<size_t>& set) {
    ++calls;
    return meets(set);
  };
  std::vector<size_t> needed;
  if (!ask(needed)) {
    std::vector<size_t> all(n);
    for (size_t i = 0; i < n; ++i) all[i] = i;
    if (!ask(all)) {
      if (checks) *checks = calls;
      return std::nullopt;
    }
    do {
      // The items not yet needed, in order; the shortest prefix of them that passes.
      std::vector<size_t> rest;
      for (size_t i = 0; i < n; ++i)
        if (!std::binary_search(needed.begin(), needed.end(), i)) rest.push_back(i);
      size_t lo = 1, hi = rest.size();  // a prefix of hi items passes (all of them do)
      while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (ask(with(needed, std::vector<size_t>(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(mid)))))
          hi = mid;
        else
          lo = mid + 1;
      }
      needed = with(needed, {rest[hi - 1]});
    } while (!ask(needed));
    // Items found early may have become redundant once later ones joined.
    for (size_t k = needed.size(); k-- > 0;) {
      std::vector<size_t> without = needed;
      without.erase(without.begin() + static_cast<std::ptrdiff_t>(k));
      if (ask(without)) needed = without;
    }
  }
  if (checks) *checks = calls;
  return needed;
}

}  // namespace fb
