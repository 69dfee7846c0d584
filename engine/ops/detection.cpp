// Detection ops: NonMaxSuppression (its output size depends on the data: the shape is known
// at build time only when every input is a constant) and RoiAlign (avg and max, both
// coordinate_transformation_modes).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "engine/ops/nn_common.h"
#include "engine/ops/strided_copy.h"

namespace fb {

namespace {

// ---- NonMaxSuppression(boxes, scores, max_output_boxes_per_class?, iou_threshold?, score_threshold?)
struct NmsInputs {
  const Tensor* boxes;
  const Tensor* scores;
  int64_t max_out = 0;
  float iou = 0.f, score = -INFINITY;
  bool has_score = false;
};

void check_nms_shapes(const Node& n, const Shape& boxes, const Shape& scores) {
  if (boxes.size() != 3 || boxes[2] != 4) throw Error(n.describe() + ": boxes must be [batch, boxes, 4], got " + shape_str(boxes));
  if (scores.size() != 3 || scores[0] != boxes[0] || scores[2] != boxes[1])
    throw Error(n.describe() + ": scores " + shape_str(scores) + " must be [batch, classes, " + std::to_string(boxes[1]) + "]");
}

// Boxes as columns (corners y1, x1, y2, x2 and area), so that one box is compared with many
// in a vectorized loop.
struct BoxColumns {
  std::vector<float> y1, x1, y2, x2, area;
  explicit BoxColumns(size_t n) : y1(n), x1(n), y2(n), x2(n), area(n) {}
  void set(size_t i, const float* c) {
    y1[i] = c[0], x1[i] = c[1], y2[i] = c[2], x2[i] = c[3];
    area[i] = (c[2] - c[0]) * (c[3] - c[1]);
  }
};

// Whether box `c` (corners, area `a`) has an IoU above `threshold` with any box j in
// [begin, end) of `cols` whose live[j] is 1. Every pair is computed as the scalar
// definition does (no overlap, or no union, is IoU 0), in blocks so that a hit ends it.
bool overlaps_any(const float* c, float a, const BoxColumns& cols, const uint8_t* live, size_t begin, size_t end, float threshold) {
  constexpr size_t kBlock = 256;
  for (size_t s = begin; s < end; s += kBlock) {
    const size_t e = std::min(end, s + kBlock);
    uint8_t hit = 0;
    for (size_t j = s; j < e; ++j) {
      const float ih = std::min(c[2], cols.y2[j]) - std::max(c[0], cols.y1[j]);
      const float iw = std::min(c[3], cols.x2[j]) - std::max(c[1], cols.x1[j]);
      const float inter = ih * iw, uni = a + cols.area[j] - inter, ratio = inter / uni;
      const float iou = (ih > 0.f && iw > 0.f && uni > 0.f) ? ratio : 0.f;
      hit |= live[j] & uint8_t(iou > threshold);
    }
    if (hit) return true;
  }
  return false;
}

// Greedy NMS of one class: `order` holds the candidates (indices into the batch's corners
// `cs`) by descending score; returns the kept ones in selection order. Each candidate is
// checked against the kept boxes, or, where fewer boxes can overlap it than are kept, only
// against those: with the candidates sorted by x1 and the running maximum of their x2, the
// boxes that can overlap candidate p in x lie between the first whose running maximum x2
// passes p's x1 and the last whose x1 is below p's x2 (exact comparisons, no arithmetic).
// Torchvision's batched NMS offsets each class's boxes apart, so there this window is a
// small part of the kept set. The window needs IoU 0 to never suppress (threshold >= 0)
// and ordered coordinates (no NaN); it is built (a sort) only once 64 boxes are kept, as
// against fewer the kept set itself is as short.
std::vector<int64_t> nms_one_class(const std::vector<int64_t>& order, const std::vector<float>& cs, float threshold, int64_t max_out) {
  constexpr size_t kWindowAfter = 64;
  const size_t m = order.size();
  std::vector<int64_t> kept;
  std::vector<size_t> kept_pos;  // their places in `order`
  BoxColumns kept_cols(m);
  const std::vector<uint8_t> all_live(m, 1);
  bool may_window = threshold >= 0.f && m > kWindowAfter && max_out > int64_t(kWindowAfter);
  for (size_t p = 0; p < m && may_window; ++p)
    for (int c = 0; c < 4; ++c) may_window = may_window && !std::isnan(cs[size_t(order[p]) * 4 + size_t(c)]);
  // The x1-sorted view: rank[p] is candidate p's place in it.
  bool windowed = false;
  std::vector<size_t> by_x, rank;
  std::vector<float> sorted_x1, running_x2;
  std::vector<uint8_t> kept_at;
  BoxColumns sorted_cols(0);
  auto build_window = [&] {
    by_x.resize(m), rank.resize(m), sorted_x1.resize(m), running_x2.resize(m), kept_at.assign(m, 0);
    sorted_cols = BoxColumns(m);
    std::iota(by_x.begin(), by_x.end(), size_t(0));
    std::sort(by_x.begin(), by_x.end(), [&](size_t u, size_t v) { return cs[size_t(order[u]) * 4 + 1] < cs[size_t(order[v]) * 4 + 1]; });
    for (size_t q = 0; q < m; ++q) {
      const float* c = &cs[size_t(order[by_x[q]]) * 4];
      rank[by_x[q]] = q;
      sorted_cols.set(q, c);
      sorted_x1[q] = c[1];
      running_x2[q] = q ? std::max(running_x2[q - 1], c[3]) : c[3];
    }
    for (size_t p : kept_pos) kept_at[rank[p]] = 1;
    windowed = true;
  };
  for (size_t p = 0; p < m && int64_t(kept.size()) < max_out; ++p) {
    if (may_window && !windowed && kept.size() >= kWindowAfter) build_window();
    const float* c = &cs[size_t(order[p]) * 4];
    const float a = (c[2] - c[0]) * (c[3] - c[1]);
    bool suppressed;
    size_t lo = 0, hi = m;
    if (windowed) {
      lo = size_t(std::upper_bound(running_x2.begin(), running_x2.end(), c[1]) - running_x2.begin());
      hi = size_t(std::lower_bound(sorted_x1.begin(), sorted_x1.end(), c[3]) - sorted_x1.begin());
    }
    if (windowed && hi - std::min(lo, hi) < kept.size())
      suppressed = lo < hi && overlaps_any(c, a, sorted_cols, kept_at.data(), lo, hi, threshold);
    else
      suppressed = overlaps_any(c, a, kept_cols, all_live.data(), 0, kept.size(), threshold);
    if (suppressed) continue;
    kept_cols.set(kept.size(), c);
    kept.push_back(order[p]);
    kept_pos.push_back(p);
    if (windowed) kept_at[rank[p]] = 1;
  }
  return kept;
}

// Selected (batch, class, box) triples, batch-major, then class, then selection order.
std::vector<int64_t> run_nms(const Node& n, const NmsInputs& in) {
  const Shape& bs = in.boxes->shape();
  const Shape& ss = in.scores->shape();
  check_nms_shapes(n, bs, ss);
  const int64_t batches = bs[0], nb = bs[1], classes = ss[1];
  const bool center = n.attr_int("center_point_box", 0) != 0;
  const float* boxes = in.boxes->data<float>();
  const float* scores = in.scores->data<float>();
  std::vector<int64_t> out;
  if (in.max_out <= 0) return out;
  // Corners as (y1, x1, y2, x2) with y1 <= y2, x1 <= x2.
  auto corners = [&](int64_t b, int64_t i, float* c) {
    const float* p = boxes + (b * nb + i) * 4;
    if (center) {
      c[0] = p[1] - p[3] / 2, c[1] = p[0] - p[2] / 2, c[2] = p[1] + p[3] / 2, c[3] = p[0] + p[2] / 2;
    } else {
      c[0] = std::min(p[0], p[2]), c[1] = std::min(p[1], p[3]), c[2] = std::max(p[0], p[2]), c[3] = std::max(p[1], p[3]);
    }
  };
  std::vector<float> cs(static_cast<size_t>(nb * 4));
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t i = 0; i < nb; ++i) corners(b, i, &cs[i * 4]);
    for (int64_t k = 0; k < classes; ++k) {
      const float* sc = scores + (b * classes + k) * nb;
      std::vector<int64_t> order;
      for (int64_t i = 0; i < nb; ++i)
        if (!in.has_score || sc[i] > in.score) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return sc[x] > sc[y]; });
      for (int64_t i : nms_one_class(order, cs, in.iou, in.max_out)) out.insert(out.end(), {b, k, i});
    }
  }
  return out;
}

template <typename GetT>
NmsInputs nms_inputs(const Node& n, GetT get) {
  NmsInputs in{get(0), get(1)};
  if (in.boxes->dtype() != DType::Float32 || in.scores->dtype() != DType::Float32)
    throw Error(n.describe() + ": boxes and scores must be float32");
  if (const Tensor* t = get(2); t && t->numel()) in.max_out = t->as_int64_vector()[0];
  if (const Tensor* t = get(3); t && t->numel()) in.iou = float(t->scalar_as_double());
  if (const Tensor* t = get(4); t && t->numel()) in.score = float(t->scalar_as_double()), in.has_score = true;
  return in;
}

std::vector<ValueInfo> infer_nms(const ShapeContext& c) {
  check_nms_shapes(c.node, c.in(0).shape, c.in(1).shape);
  require_float(c.node, c.in(0).dtype, "boxes");
  require_float(c.node, c.in(1).dtype, "scores");
  // With every input known (always in the reference executor) the count is computed here.
  bool all_known = true;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.has_input(i) && !c.constant_or_null(i)) all_known = false;
  if (!all_known) return {ValueInfo{DType::Int64, {-1, 3}, false}};
  NmsInputs in = nms_inputs(c.node, [&](size_t i) { return c.has_input(i) ? c.constant_or_null(i) : nullptr; });
  const int64_t count = int64_t(run_nms(c.node, in).size()) / 3;
  return {ValueInfo{DType::Int64, {count, 3}, true}};
}

void compute_nms(OpContext& c) {
  NmsInputs in = nms_inputs(c.node, [&](size_t i) { return c.has_input(i) ? &c.in(i) : nullptr; });
  std::vector<int64_t> sel = run_nms(c.node, in);
  const Shape shape{int64_t(sel.size()) / 3, 3};
  Tensor& out = c.out(0);
  if (!out.defined()) out = Tensor::empty(DType::Int64, shape);
  else if (out.shape() != shape) throw Error("the selection has shape " + shape_str(shape) + ", the plan expected " + shape_str(out.shape()));
  std::copy(sel.begin(), sel.end(), out.data<int64_t>());
}

// ---- RoiAlign(X, rois, batch_indices) -----------------------------------------------------------
std::vector<ValueInfo> infer_roi_align(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  require_float(c.node, x.dtype, "input X");
  require_float(c.node, c.in(1).dtype, "rois");
  if (x.shape.size() != 4) throw Error(c.node.describe() + ": X must be 4-D, got " + shape_str(x.shape));
  const Shape& rois = c.in(1).shape;
  if (rois.size() != 2 || rois[1] != 4) throw Error(c.node.describe() + ": rois must be [num_rois, 4], got " + shape_str(rois));
  if (shape_numel(c.in(2).shape) != rois[0] || c.in(2).shape.size() != 1)
    throw Error(c.node.describe() + ": batch_indices must be [" + std::to_string(rois[0]) + "]");
  const std::string mode = c.node.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") throw Error(c.node.describe() + ": unsupported mode '" + mode + "'");
  const int64_t oh = c.node.attr_int("output_height", 1), ow = c.node.attr_int("output_width", 1);
  if (oh <= 0 || ow <= 0) throw Error(c.node.describe() + ": output_height and output_width must be positive");
  return {ValueInfo{DType::Float32, {rois[0], x.shape[1], oh, ow}, true}};
}

// One bilinear sample of a RoiAlign bin: four offsets into a channel plane and their
// weights, or none where the sample lies outside the input (it then counts as 0).
struct BilinearSample {
  int64_t o[4] = {0, 0, 0, 0};
  float w[4] = {0, 0, 0, 0};
  bool inside = false;
};

struct RoiAlignParams {
  int64_t oh, ow, ratio;
  float scale;
  bool half_pixel, is_max;
};

// A roi's bins: the first bin's corner, a bin's size, and its grid of samples.
struct RoiGrid {
  float x1, y1, bh, bw, count;
  int64_t gh, gw, per_bin;
};

RoiGrid roi_grid(const Node& n, const RoiAlignParams& p, const float* roi, int64_t r) {
  const float off = p.half_pixel ? 0.5f : 0.f;
  RoiGrid g;
  g.x1 = roi[0] * p.scale - off, g.y1 = roi[1] * p.scale - off;
  float rw = roi[2] * p.scale - off - g.x1, rh = roi[3] * p.scale - off - g.y1;
  if (!p.half_pixel) rw = std::max(rw, 1.f), rh = std::max(rh, 1.f);
  g.bh = rh / float(p.oh), g.bw = rw / float(p.ow);
  g.gh = p.ratio > 0 ? p.ratio : int64_t(std::ceil(rh / float(p.oh)));
  g.gw = p.ratio > 0 ? p.ratio : int64_t(std::ceil(rw / float(p.ow)));
  g.count = float(std::max<int64_t>(g.gh * g.gw, 1));
  g.per_bin = std::max<int64_t>(g.gh, 0) * std::max<int64_t>(g.gw, 0);
  if (g.per_bin > (int64_t(1) << 24) / p.ow)
    throw Error(n.describe() + ": roi " + std::to_string(r) + " would take " + std::to_string(g.per_bin) +
                " samples per bin (sampling_ratio 0 over a roi of " + std::to_string(rh) + " x " + std::to_string(rw) + ")");
  return g;
}

// The samples of row `ph` of a roi's bins (the same in every channel), bin by bin; offsets
// count elements of an [H, W] plane.
void row_samples(const RoiGrid& g, int64_t ph, int64_t ow, int64_t H, int64_t W, std::vector<BilinearSample>& samples) {
  samples.assign(size_t(ow * g.per_bin), BilinearSample{});
  for (int64_t pw = 0; pw < ow; ++pw)
    for (int64_t iy = 0; iy < g.gh; ++iy) {
      const float y = g.y1 + float(ph) * g.bh + (float(iy) + 0.5f) * g.bh / float(g.gh);
      for (int64_t ix = 0; ix < g.gw; ++ix) {
        const float xx = g.x1 + float(pw) * g.bw + (float(ix) + 0.5f) * g.bw / float(g.gw);
        if (y < -1.f || y > float(H) || xx < -1.f || xx > float(W)) continue;
        float yy = std::max(y, 0.f), xc = std::max(xx, 0.f);
        int64_t yl = int64_t(yy), xl = int64_t(xc), yh, xh;
        if (yl >= H - 1) yh = yl = H - 1, yy = float(yl);
        else yh = yl + 1;
        if (xl >= W - 1) xh = xl = W - 1, xc = float(xl);
        else xh = xl + 1;
        const float ly = yy - float(yl), lx = xc - float(xl), hy = 1.f - ly, hx = 1.f - lx;
        samples[size_t(pw * g.per_bin + iy * g.gw + ix)] =
            BilinearSample{{yl * W + xl, yl * W + xh, yh * W + xl, yh * W + xh}, {hy * hx, hy * lx, ly * hx, ly * lx}, true};
      }
    }
}

// One bin in `lanes` independent channels: plane values at o * o_step + lane (a lane is a
// channel of a channels-last image, or the one channel of a plane), into dst[lane].
void gather_bin(const float* in, int64_t o_step, int64_t lanes, const BilinearSample* bin, const RoiGrid& g, bool is_max, float* dst) {
  for (int64_t k = 0; k < lanes; ++k) dst[k] = is_max ? -INFINITY : 0.f;
  for (int64_t i = 0; i < g.per_bin; ++i) {
    const BilinearSample& sm = bin[i];
    if (!sm.inside) {  // counts as 0
      for (int64_t k = 0; k < lanes; ++k) dst[k] = !is_max ? dst[k] : i ? std::max(dst[k], 0.f) : 0.f;
      continue;
    }
    const float *p0 = in + sm.o[0] * o_step, *p1 = in + sm.o[1] * o_step, *p2 = in + sm.o[2] * o_step, *p3 = in + sm.o[3] * o_step;
    if (is_max) {
      for (int64_t k = 0; k < lanes; ++k) {
        const float v = std::max(std::max(sm.w[0] * p0[k], sm.w[1] * p1[k]), std::max(sm.w[2] * p2[k], sm.w[3] * p3[k]));
        dst[k] = i ? std::max(dst[k], v) : v;
      }
    } else {
      for (int64_t k = 0; k < lanes; ++k) dst[k] += sm.w[0] * p0[k] + sm.w[1] * p1[k] + sm.w[2] * p2[k] + sm.w[3] * p3[k];
    }
  }
  for (int64_t k = 0; k < lanes; ++k) dst[k] = is_max ? (g.per_bin ? dst[k] : 0.f) : dst[k] / g.count;
}

void compute_roi_align(OpContext& c) {
  const Tensor& x = c.in(0);
  const int64_t N = x.shape()[0], ch = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const float* rois = c.in(1).data<float>();
  const std::vector<int64_t> bidx = c.in(2).as_int64_vector();
  const int64_t n_rois = int64_t(bidx.size());
  const Node& n = c.node;
  const RoiAlignParams p{n.attr_int("output_height", 1), n.attr_int("output_width", 1), n.attr_int("sampling_ratio", 0),
                         n.attr_float("spatial_scale", 1.f),
                         n.attr_string("coordinate_transformation_mode", n.opset != 0 && n.opset < 16 ? "output_half_pixel" : "half_pixel") ==
                             "half_pixel",
                         n.attr_string("mode", "avg") == "max"};
  // A sample's four neighbours need a plane to lie in (an empty one would put them before it).
  if (n_rois && ch && (H == 0 || W == 0)) throw Error(n.describe() + ": X " + shape_str(x.shape()) + " has empty planes to sample");
  std::vector<RoiGrid> grids;
  int64_t taps = 0;
  for (int64_t r = 0; r < n_rois; ++r) {
    if (bidx[r] < 0 || bidx[r] >= N) throw Error("batch index " + std::to_string(bidx[r]) + " is out of range");
    grids.push_back(roi_grid(n, p, rois + r * 4, r));
    taps += p.oh * p.ow * grids.back().per_bin;
  }
  float* out = c.out(0).data<float>();
  const float* in = x.data<float>();
  if (taps * 4 < H * W) {
    // Few samples against the plane: gather from the planes as they are, channels in parallel.
    std::vector<BilinearSample> samples;
    for (int64_t r = 0; r < n_rois; ++r)
      for (int64_t ph = 0; ph < p.oh; ++ph) {
        row_samples(grids[r], ph, p.ow, H, W, samples);
        parallel_range(ch, p.ow * grids[r].per_bin * 8, [&](int64_t k0, int64_t k1) {
          for (int64_t k = k0; k < k1; ++k) {
            const float* plane = in + (bidx[r] * ch + k) * H * W;
            float* dst = out + ((r * ch + k) * p.oh + ph) * p.ow;
            for (int64_t pw = 0; pw < p.ow; ++pw) gather_bin(plane, 1, 1, &samples[size_t(pw * grids[r].per_bin)], grids[r], p.is_max, dst + pw);
          }
        });
      }
    return;
  }
  // Many samples (a detector's hundreds of rois): the input read channels-last, so that each
  // sample is gathered for every channel at once in a loop the compiler vectorizes; rois in
  // parallel, each bin's channels transposed into place.
  Tensor cl = Tensor::empty(DType::Float32, {N, H, W, ch});
  copy_strided(in, {ch * H * W, W, 1, H * W}, cl.shape(), sizeof(float), cl.raw());
  const float* img = cl.data<float>();
  parallel_range(n_rois, taps / std::max<int64_t>(n_rois, 1) * ch * 4, [&](int64_t r0, int64_t r1) {
    std::vector<BilinearSample> samples;
    std::vector<float> bin_values(static_cast<size_t>(ch));
    for (int64_t r = r0; r < r1; ++r) {
      const float* image = img + bidx[r] * H * W * ch;
      for (int64_t ph = 0; ph < p.oh; ++ph) {
        row_samples(grids[r], ph, p.ow, H, W, samples);
        for (int64_t pw = 0; pw < p.ow; ++pw) {
          gather_bin(image, ch, ch, &samples[size_t(pw * grids[r].per_bin)], grids[r], p.is_max, bin_values.data());
          float* dst = out + (r * ch * p.oh + ph) * p.ow + pw;
          for (int64_t k = 0; k < ch; ++k) dst[k * p.oh * p.ow] = bin_values[size_t(k)];
        }
      }
    }
  });
}

}  // namespace

void register_detection_ops(OpRegistry& r) {
  r.add(OpDef{"", "NonMaxSuppression", infer_nms, compute_nms});
  r.add(OpDef{"", "RoiAlign", infer_roi_align, compute_roi_align});
}

}  // namespace fb
