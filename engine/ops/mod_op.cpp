// Mod: the remainder with numpy broadcasting. fmod=0 (the default) takes the divisor's
// sign, like Python's %; fmod=1 takes the dividend's, like C's fmod. Integer division by
// zero is an Error rather than a trap.
#include <cmath>

#include "engine/ops/typed_kernels.h"

namespace fb {

namespace {

std::vector<ValueInfo> infer_mod(const ShapeContext& c) {
  return {ValueInfo{c.in(0).dtype, broadcast_all(c, 0, 2), true}};
}

void compute_mod(OpContext& c) {
  if (run_widened(c, compute_mod)) return;
  const bool fmod = c.node.attr_int("fmod", 0) != 0;
  visit_dtype(c.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      throw Error("Mod on bool is not supported");
    } else if constexpr (std::is_floating_point_v<T>) {
      map_binary<T, T, T>(c.in(0), c.in(1), c.out(0), [=](T x, T y) {
        T r = std::fmod(x, y);
        if (!fmod && r != T(0) && ((r < T(0)) != (y < T(0)))) r += y;
        return r;
      });
    } else {
      const T* pb = c.in(1).data<T>();
      for (int64_t i = 0, n = c.in(1).numel(); i < n; ++i)
        if (pb[i] == T(0)) throw Error("integer modulo by zero");
      map_binary<T, T, T>(c.in(0), c.in(1), c.out(0), [=](T x, T y) {
        T r = T(x % y);
        if constexpr (std::is_signed_v<T>)
          if (!fmod && r != T(0) && ((r < T(0)) != (y < T(0)))) r = T(r + y);
        return r;
      });
    }
  });
}

}  // namespace

void register_mod_op(OpRegistry& r) { r.add(OpDef{"", "Mod", infer_mod, compute_mod}); }

}  // namespace fb
