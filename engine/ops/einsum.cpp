// Einsum: explicit and implicit outputs, ellipsis broadcasting and repeated labels
// (diagonals). A float32 contraction of two operands that is a batched matrix product
// runs as one, the way torch.einsum does (operands permuted to [batch, M, K] and
// [batch, K, N], oneDNN's product, the result permuted into place): MaxViT's attention
// ran 35 ms per Einsum through the general loop. The general loop gives every label a
// stride per operand (0 where the operand lacks it or broadcasts it), walks output
// indices in parallel and sums over the rest.
#include <algorithm>
#include <map>

#include "engine/ops/bound_kernels.h"
#include "engine/ops/nn_common.h"
#include "engine/ops/strided_copy.h"

namespace fb {

namespace {

constexpr int kEllipsisBase = 100;  // labels 100.. stand for the ellipsis dims

struct EinsumPlan {
  std::vector<std::vector<int>> operand_labels;  // per operand, per dim
  std::vector<int> out_labels;
  std::vector<int> sum_labels;
  std::map<int, int64_t> size;
  Shape out;
};

int letter_label(const Node& n, char ch) {
  if (ch >= 'a' && ch <= 'z') return ch - 'a';
  if (ch >= 'A' && ch <= 'Z') return 26 + ch - 'A';
  throw Error(n.describe() + ": unexpected character '" + std::string(1, ch) + "' in the equation");
}

// Labels of one term; `ellipsis_at` is set where "..." appears (-1 when absent).
std::vector<int> parse_term(const Node& n, const std::string& term, int* ellipsis_at) {
  std::vector<int> labels;
  *ellipsis_at = -1;
  for (size_t i = 0; i < term.size(); ++i) {
    const char ch = term[i];
    if (ch == ' ') continue;
    if (ch == '.') {
      if (term.compare(i, 3, "...") != 0 || *ellipsis_at >= 0) throw Error(n.describe() + ": malformed ellipsis in the equation");
      *ellipsis_at = int(labels.size());
      i += 2;
      continue;
    }
    labels.push_back(letter_label(n, ch));
  }
  return labels;
}

EinsumPlan einsum_plan(const Node& n, const std::vector<Shape>& shapes) {
  std::string eq = n.attr_string("equation", "");
  EinsumPlan p;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != shapes.size())
    throw Error(n.describe() + ": the equation names " + std::to_string(terms.size()) + " operands, the node has " + std::to_string(shapes.size()));
  int ell_rank = 0;
  std::vector<int> ell_at(terms.size());
  std::vector<std::vector<int>> letters(terms.size());
  for (size_t k = 0; k < terms.size(); ++k) {
    letters[k] = parse_term(n, terms[k], &ell_at[k]);
    const int extra = int(shapes[k].size()) - int(letters[k].size());
    if (extra < 0 || (extra > 0 && ell_at[k] < 0))
      throw Error(n.describe() + ": operand " + std::to_string(k) + " " + shape_str(shapes[k]) + " does not match '" + terms[k] + "'");
    ell_rank = std::max(ell_rank, extra);
  }
  for (size_t k = 0; k < terms.size(); ++k) {
    std::vector<int> labels = letters[k];
    if (ell_at[k] >= 0) {
      const int extra = int(shapes[k].size()) - int(letters[k].size());
      std::vector<int> ell;
      for (int j = 0; j < extra; ++j) ell.push_back(kEllipsisBase + ell_rank - extra + j);
      labels.insert(labels.begin() + ell_at[k], ell.begin(), ell.end());
    }
    for (size_t d = 0; d < labels.size(); ++d) {
      const int64_t dim = shapes[k][d];
      auto it = p.size.find(labels[d]);
      if (it == p.size.end() || it->second == 1) p.size[labels[d]] = dim;
      else if (dim != it->second && dim != 1)
        throw Error(n.describe() + ": label sizes disagree (" + std::to_string(dim) + " vs " + std::to_string(it->second) + ")");
    }
    p.operand_labels.push_back(labels);
  }
  if (arrow != std::string::npos) {
    int at;
    std::vector<int> out = parse_term(n, eq.substr(arrow + 2), &at);
    if (at >= 0) {
      std::vector<int> ell;
      for (int j = 0; j < ell_rank; ++j) ell.push_back(kEllipsisBase + j);
      out.insert(out.begin() + at, ell.begin(), ell.end());
    }
    p.out_labels = out;
  } else {
    // Implicit: the ellipsis dims, then labels used once, alphabetically.
    for (int j = 0; j < ell_rank; ++j) p.out_labels.push_back(kEllipsisBase + j);
    std::map<int, int> uses;
    for (const auto& labels : p.operand_labels)
      for (int l : labels) ++uses[l];
    for (const auto& [l, u] : uses)
      if (l < kEllipsisBase && u == 1) p.out_labels.push_back(l);
  }
  for (int l : p.out_labels) {
    if (!p.size.count(l)) throw Error(n.describe() + ": output label not found among the operands");
    p.out.push_back(p.size[l]);
  }
  for (const auto& [l, _] : p.size)
    if (std::find(p.out_labels.begin(), p.out_labels.end(), l) == p.out_labels.end()) p.sum_labels.push_back(l);
  return p;
}

std::vector<ValueInfo> infer_einsum(const ShapeContext& c) {
  std::vector<Shape> shapes;
  const DType dt = c.in(0).dtype;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.in(i).dtype != dt) throw Error(c.node.describe() + ": operands differ in type");
    shapes.push_back(c.in(i).shape);
  }
  if (dt != DType::Float32 && dt != DType::Float64 && dt != DType::Int64 && dt != DType::Int32)
    throw Error(c.node.describe() + ": input type " + dtype_name(dt) + " is not supported");
  return {ValueInfo{dt, einsum_plan(c.node, shapes).out, true}};
}

template <typename T>
void einsum_typed(OpContext& c, const EinsumPlan& p) {
  const size_t nops = c.inputs.size();
  // Stride of every label in every operand (summed over repeats: a diagonal).
  auto label_strides = [&](const std::vector<int>& labels_out) {
    std::vector<std::vector<int64_t>> st(labels_out.size(), std::vector<int64_t>(nops, 0));
    for (size_t k = 0; k < nops; ++k) {
      const Shape& s = c.in(k).shape();
      const auto str = shape_strides(s);
      for (size_t d = 0; d < s.size(); ++d) {
        const size_t li = size_t(std::find(labels_out.begin(), labels_out.end(), p.operand_labels[k][d]) - labels_out.begin());
        if (li < labels_out.size() && s[d] != 1) st[li][k] += str[d];
      }
    }
    return st;
  };
  const auto out_st = label_strides(p.out_labels);
  const auto sum_st = label_strides(p.sum_labels);
  Shape sum_shape;
  for (int l : p.sum_labels) sum_shape.push_back(p.size.at(l));
  const int64_t sum_n = shape_numel(sum_shape);
  std::vector<const T*> src(nops);
  for (size_t k = 0; k < nops; ++k) src[k] = c.in(k).template data<T>();
  T* dst = c.out(0).data<T>();
  const Shape& out = p.out;
  parallel_range(shape_numel(out), sum_n * int64_t(nops), [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> base(nops), off(nops), sidx(sum_shape.size());
    for (int64_t o = lo; o < hi; ++o) {
      std::fill(base.begin(), base.end(), 0);
      int64_t rem = o;
      for (size_t d = out.size(); d-- > 0;) {
        const int64_t i = rem % out[d];
        rem /= out[d];
        for (size_t k = 0; k < nops; ++k) base[k] += i * out_st[d][k];
      }
      double acc = 0;
      std::fill(sidx.begin(), sidx.end(), 0);
      for (int64_t s = 0; s < sum_n; ++s) {
        double prod = 1;
        for (size_t k = 0; k < nops; ++k) {
          int64_t at = base[k];
          for (size_t d = 0; d < sidx.size(); ++d) at += sidx[d] * sum_st[d][k];
          prod *= double(src[k][at]);
        }
        acc += prod;
        for (size_t d = sidx.size(); d-- > 0;) {
          if (++sidx[d] < sum_shape[d]) break;
          sidx[d] = 0;
        }
      }
      dst[o] = T(acc);
    }
  });
}

// The labels of a two-operand contraction sorted into a batched product's roles: batch
// (both operands and the output), M (first operand and output), N (second and output),
// K (both operands, summed). Each operand is then read as [batch, M, K] / [batch, K, N]
// and the product lies as [batch, M, N].
struct BatchedProduct {
  std::vector<int> batch, m, n, k;
};

// False where the contraction is not a plain batched product: a label repeated within an
// operand or the output (a diagonal), summed within one operand only, broadcast (size 1
// against a larger size), or any dimension empty.
bool as_batched_product(const EinsumPlan& p, const std::vector<Shape>& shapes, BatchedProduct* bp) {
  if (p.operand_labels.size() != 2) return false;
  auto count = [](const std::vector<int>& v, int l) { return std::count(v.begin(), v.end(), l); };
  for (size_t k = 0; k < 2; ++k)
    for (size_t d = 0; d < shapes[k].size(); ++d) {
      const int l = p.operand_labels[k][d];
      if (count(p.operand_labels[k], l) != 1 || shapes[k][d] != p.size.at(l) || shapes[k][d] == 0) return false;
    }
  for (int l : p.out_labels)
    if (count(p.out_labels, l) != 1) return false;
  for (const auto& [l, size] : p.size) {
    const bool a = count(p.operand_labels[0], l), b = count(p.operand_labels[1], l), out = count(p.out_labels, l);
    if (a && b && out) bp->batch.push_back(l);
    else if (a && out) bp->m.push_back(l);
    else if (b && out) bp->n.push_back(l);
    else if (a && b) bp->k.push_back(l);
    else return false;
  }
  return true;
}

// The strides (in elements) with which a dense tensor laid out by `labels` / `shape` is read
// to visit `order`'s labels, in order.
std::vector<int64_t> label_order_strides(const std::vector<int>& labels, const Shape& shape, const std::vector<int>& order) {
  const auto strides = shape_strides(shape);
  std::vector<int64_t> out;
  for (int l : order) out.push_back(strides[size_t(std::find(labels.begin(), labels.end(), l) - labels.begin())]);
  return out;
}

void einsum_batched_product(OpContext& c, const EinsumPlan& p, const BatchedProduct& bp) {
  auto cat = [](std::initializer_list<const std::vector<int>*> parts) {
    std::vector<int> v;
    for (const auto* part : parts) v.insert(v.end(), part->begin(), part->end());
    return v;
  };
  auto extent = [&](const std::vector<int>& labels) {
    int64_t e = 1;
    for (int l : labels) e *= p.size.at(l);
    return e;
  };
  auto shape_of = [&](const std::vector<int>& labels) {
    Shape s;
    for (int l : labels) s.push_back(p.size.at(l));
    return s;
  };
  // Operand k as the product reads it: in place when its labels already lie in that order.
  std::vector<float> scratch[2];
  auto operand = [&](size_t k, const std::vector<int>& order) -> const float* {
    const float* data = c.in(k).data<float>();
    if (p.operand_labels[k] == order) return data;
    scratch[k].resize(size_t(shape_numel(c.in(k).shape())));
    copy_strided(data, label_order_strides(p.operand_labels[k], c.in(k).shape(), order), shape_of(order), sizeof(float),
                 scratch[k].data());
    return scratch[k].data();
  };
  const float* a = operand(0, cat({&bp.batch, &bp.m, &bp.k}));
  const float* b = operand(1, cat({&bp.batch, &bp.k, &bp.n}));
  const int64_t batch = extent(bp.batch), m = extent(bp.m), n = extent(bp.n), k = extent(bp.k);
  const std::vector<int> product_labels = cat({&bp.batch, &bp.m, &bp.n});
  float* out = c.out(0).data<float>();
  std::vector<float> product;
  float* dst = out;
  if (product_labels != p.out_labels) {
    product.resize(size_t(batch * m * n));
    dst = product.data();
  }
  float_matmul(c.node, MatMulSpec{{batch, m, k}, {batch, k, n}}, a, b, nullptr, dst);
  if (dst != out)
    copy_strided(dst, label_order_strides(product_labels, shape_of(product_labels), p.out_labels), p.out, sizeof(float), out);
}

void compute_einsum(OpContext& c) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < c.inputs.size(); ++i) shapes.push_back(c.in(i).shape());
  EinsumPlan p = einsum_plan(c.node, shapes);
  BatchedProduct bp;
  if (c.in(0).dtype() == DType::Float32 && as_batched_product(p, shapes, &bp)) return einsum_batched_product(c, p, bp);
  switch (c.in(0).dtype()) {
    case DType::Float32: return einsum_typed<float>(c, p);
    case DType::Float64: return einsum_typed<double>(c, p);
    case DType::Int64: return einsum_typed<int64_t>(c, p);
    case DType::Int32: return einsum_typed<int32_t>(c, p);
    default: throw Error("input type " + dtype_name(c.in(0).dtype()) + " is not supported");
  }
}

}  // namespace

void register_einsum_ops(OpRegistry& r) { r.add(OpDef{"", "Einsum", infer_einsum, compute_einsum}); }

}  // namespace fb
