#include "harness/cases/inputs.h"

namespace fb {

namespace {
// splitmix64: tiny, portable, and the same stream on every platform.
uint64_t next(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

std::vector<Tensor> make_inputs(const Graph& g, const std::vector<Shape>& shapes, uint64_t seed) {
  std::vector<Tensor> r;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    uint64_t s = seed * 1000003ull + i;
    Tensor t;
    try {
      t = Tensor(g.inputs[i].dtype, shapes.at(i));
    } catch (const Error& e) {
      throw Error("input '" + g.inputs[i].name + "': " + e.what());
    }
    const int64_t n = t.numel();
    switch (t.dtype()) {
      case DType::Float32: {
        float* p = t.data<float>();
        for (int64_t k = 0; k < n; ++k) p[k] = float(double(next(s) >> 11) * 0x1.0p-53 * 2.0 - 1.0);
        break;
      }
      case DType::Int64: {
        int64_t* p = t.data<int64_t>();
        for (int64_t k = 0; k < n; ++k) p[k] = int64_t(next(s) % 8);
        break;
      }
      case DType::Int32: {
        int32_t* p = t.data<int32_t>();
        for (int64_t k = 0; k < n; ++k) p[k] = int32_t(next(s) % 8);
        break;
      }
      case DType::Bool: {
        bool* p = t.data<bool>();
        for (int64_t k = 0; k < n; ++k) p[k] = k % 2 == 0;
        break;
      }
      default: throw Error("input '" + g.inputs[i].name + "' has type " + dtype_name(t.dtype()) + ", which fusebench cannot generate yet");
    }
    r.push_back(std::move(t));
  }
  return r;
}

std::vector<Tensor> unbound_inputs(const Graph& g, const std::vector<Tensor>& inputs,
                                   const std::map<std::string, Tensor>& constants) {
  std::vector<Tensor> out;
  for (size_t k = 0; k < inputs.size() && k < g.inputs.size(); ++k)
    if (!constants.count(g.inputs[k].name)) out.push_back(inputs[k]);
  return out;
}

}  // namespace fb
