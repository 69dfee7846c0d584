#include "engine/backend/cpu/int8_matmul.h"

#include <cmath>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/backend/cpu/dnnl_context.h"
#include "engine/ops/int8_quantize.h"
#include "engine/ops/fused_activation.h"

namespace fb {

using dnnl::memory;

struct Int8MatMulKernel::Impl {
  Int8MatMulSpec spec;
  int64_t m = 0, k = 0, n = 0;
  float input_scale = 1;
  std::vector<float> out_scales;   // alpha · input scale · weight scale, per column
  std::vector<float> bias_scaled;  // the bias in accumulator units (oneDNN 2 adds it before the scale)
  dnnl::matmul prim;
  memory src, wei, dst, bias;
  std::unordered_map<int, memory> args;
  std::string impl;
  // With a tabled activation: the output byte for each s8 product byte (indexed as u8).
  std::vector<uint8_t> activation_table;
};

namespace {

bool tabled_activation(const Int8MatMulSpec& s) {
  return s.activation_input_amax > 0 && s.output_amax > 0 && is_tabled_activation(activation_kind_name(s.activation));
}

}  // namespace

Int8MatMulKernel::Int8MatMulKernel(const Int8MatMulSpec& spec, const float* b) : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.spec = spec;
  if (spec.a.size() < 2 || spec.b.size() != 2) throw Error("int8 matmul takes A of rank >= 2 and 2-D weights");
  im.k = spec.a.back();
  im.m = shape_numel(spec.a) / std::max<int64_t>(im.k, 1);
  im.n = spec.trans_b ? spec.b[0] : spec.b[1];
  if ((spec.trans_b ? spec.b[1] : spec.b[0]) != im.k)
    throw Error("int8 matmul inner dimensions differ: " + shape_str(spec.a) + " x " + shape_str(spec.b));
  if (!(spec.input_amax > 0)) throw Error("int8 matmul without a calibrated input threshold");
  im.input_scale = int8_input_scale(spec.input_amax, spec.input_unsigned);

  // Weights per output column: [K, N] has the columns inner, [N, K] (transposed) outer.
  std::vector<int8_t> w_q(size_t(im.k * im.n));
  std::vector<float> w_scales;
  if (spec.trans_b) quantize_weights_per_channel(b, 1, im.n, im.k, w_q.data(), w_scales);
  else quantize_weights_per_channel(b, im.k, im.n, 1, w_q.data(), w_scales);
  im.out_scales.resize(im.n);
  for (int64_t j = 0; j < im.n; ++j) im.out_scales[j] = spec.alpha * im.input_scale * w_scales[j];
  im.bias_scaled.resize(spec.has_bias ? im.n : 0);

  auto& eng = dnnl_cpu_engine();
  const auto src_type = spec.input_unsigned || spec.input_zero_point ? memory::data_type::u8 : memory::data_type::s8;
  memory::desc src_md({im.m, im.k}, src_type, memory::format_tag::ab);
  memory::desc w_user_md({im.k, im.n}, memory::data_type::s8, spec.trans_b ? memory::dims{1, im.k} : memory::dims{im.n, 1});
  memory::desc w_any({im.k, im.n}, memory::data_type::s8, memory::format_tag::any);
  const bool requantize = spec.output_amax > 0;
  const bool tabled = tabled_activation(spec);
  const auto dst_type = !requantize                                                ? memory::data_type::f32
                        : !tabled && (spec.output_unsigned || spec.output_zero_point) ? memory::data_type::u8
                                                                                    : memory::data_type::s8;
  memory::desc dst_md({im.m, im.n}, dst_type, memory::format_tag::ab);
  memory::desc bias_md({1, im.n}, memory::data_type::f32, memory::format_tag::ab);
  dnnl::primitive_attr attr;
  attr.set_output_scales(1 << 1, im.out_scales);
  if (spec.input_zero_point) attr.set_zero_points(DNNL_ARG_SRC, 0, {spec.input_zero_point});
  dnnl::post_ops po;
  if (tabled) {
    // The activation's input, as s8 at its own threshold; the table does the rest.
    po.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, 1.f / int8_input_scale(spec.activation_input_amax, false), 0.f);
    im.activation_table = activation_table(activation_kind_name(spec.activation), int8_input_scale(spec.activation_input_amax, false),
                                           int8_input_scale(spec.output_amax, spec.output_unsigned),
                                           spec.output_unsigned || spec.output_zero_point != 0, spec.output_zero_point);
  } else {
    append_matmul_activation(po, spec.activation);
  }
  // The output scale dequantizes before the activation; the reader's scale comes after it.
  if (requantize && !tabled)
    po.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, 1.f / int8_input_scale(spec.output_amax, spec.output_unsigned),
                      float(spec.output_zero_point));
  attr.set_post_ops(po);
  try {
    auto desc = spec.has_bias ? dnnl::matmul::desc(src_md, w_any, bias_md, dst_md) : dnnl::matmul::desc(src_md, w_any, dst_md);
    dnnl::matmul::primitive_desc pd(desc, attr, eng);
    im.prim = dnnl::matmul(pd);
    im.impl = pd.impl_info_str();
    // The weights, once, in the layout the primitive chose.
    memory w_user(w_user_md, eng, w_q.data());
    im.wei = memory(pd.weights_desc(), eng);
    dnnl::reorder(w_user, im.wei).execute(dnnl_cpu_stream(), w_user, im.wei);
    dnnl_cpu_stream().wait();
  } catch (const dnnl::error& e) {
    throw Error("oneDNN could not create an int8 matmul for " + shape_str(spec.a) + " x " + shape_str(spec.b) + ": " +
                e.what());
  }
  im.src = memory(src_md, eng, DNNL_MEMORY_NONE);
  im.dst = memory(dst_md, eng, DNNL_MEMORY_NONE);
  im.args = {{DNNL_ARG_SRC, im.src}, {DNNL_ARG_WEIGHTS, im.wei}, {DNNL_ARG_DST, im.dst}};
  if (spec.has_bias) {
    im.bias = memory(bias_md, eng, im.bias_scaled.data());
    im.args.emplace(DNNL_ARG_BIAS, im.bias);
  }
}

Int8MatMulKernel::~Int8MatMulKernel() = default;

double Int8MatMulKernel::flops() const { return 2.0 * double(impl_->m) * double(impl_->n) * double(impl_->k); }

std::string Int8MatMulKernel::describe() const {
  const Int8MatMulSpec& s = impl_->spec;
  auto type = [](bool is_unsigned, int zero_point) -> std::string {
    if (is_unsigned) return "u8";
    if (zero_point == kSignedAsU8ZeroPoint) return "s8(as u8+128)";
    return zero_point ? "u8(zero point " + std::to_string(zero_point) + ")" : "s8";
  };
  return "onednn.matmul[" + impl_->impl + "] " + type(s.input_unsigned, s.input_zero_point) + "×s8→" +
         (impl_->activation_table.empty() ? "" : "s8 →" + std::string(activation_kind_name(s.activation)) + " table→") +
         (s.output_amax > 0 ? type(s.output_unsigned, s.output_zero_point) : "f32");
}

void Int8MatMulKernel::run(const void* a, const float* bias, void* out) {
  Impl& im = *impl_;
  im.src.set_data_handle(const_cast<void*>(a));
  if (im.spec.has_bias)
    for (int64_t j = 0; j < im.n; ++j) im.bias_scaled[j] = bias[j] / im.out_scales[j];
  im.dst.set_data_handle(out);
  im.prim.execute(dnnl_cpu_stream(), im.args);
  dnnl_cpu_stream().wait();
  if (!im.activation_table.empty()) apply_table(static_cast<uint8_t*>(out), im.m * im.n, im.activation_table.data());
}

}  // namespace fb
