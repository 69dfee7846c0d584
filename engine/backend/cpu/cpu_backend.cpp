#include "engine/backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "engine/backend/cpu/cpu_kernels.h"
#include "engine/backend/cpu/dnnl_context.h"

namespace fb {

CpuBackend::CpuBackend() { bind_cpu_kernels(); }

std::string CpuBackend::reduced_precision_note() const {
  if (use_onednn_bf16())
    return std::string("oneDNN dispatches to ") + dnnl_isa_name() +
           ": bf16 matrix products, attention and convolutions run on oneDNN's bf16 kernels (bf16 in and out, "
           "float32 accumulation" +
           (dnnl_has_bf16_kernels() ? "" : "; emulated without AVX512_BF16, as FUSEBENCH_ONEDNN_BF16=1 asks") +
           "); other bf16 layers and fp16 ones keep their tensors in 16 bits and widen them to compute in float32";
  return std::string("oneDNN dispatches to ") + dnnl_isa_name() +
         (dnnl_has_bf16_kernels() ? " (its bf16 kernels are off: FUSEBENCH_ONEDNN_BF16=0)"
                                  : " (no bf16 dot products there: no AVX512_BF16 or AMX)") +
         ": bf16 and fp16 layers keep their tensors in 16 bits and widen them to compute in float32, "
         "weights rounded to 16-bit values";
}

std::map<std::string, std::string> CpuBackend::library_versions() const {
  const dnnl_version_t* d = dnnl_version();
  if (!d) return {};
  return {{"onednn", std::to_string(d->major) + "." + std::to_string(d->minor) + "." + std::to_string(d->patch)}};
}

PrecisionSet CpuBackend::supported_precisions(const Node& node, const OpDef& def) const {
  // A float32 kernel also runs bf16 and fp16 layers: HalfStorageLayer keeps their tensors
  // in 16 bits and widens them for it (oneDNN 2.6 without AVX-512 has no 16-bit gemms).
  PrecisionSet s = def.precisions;
  if (s.contains(Precision::FP32)) {
    s.insert(Precision::BF16);
    s.insert(Precision::FP16);
  }
  // int8: every weighted form, matrix products and convolutions (with constant weights and a
  // calibrated input, which precision lowering checks: engine/passes/int8_lowering.h) and
  // attention.
  if (def.weighted != WeightedForm::kNone) s.insert(Precision::INT8);
  return s;
}

std::unique_ptr<Layer> CpuBackend::make_layer(const LayerRequest& request) const { return make_cpu_layer(request); }

DeviceBuffer CpuBackend::allocate(size_t bytes) const {
  // 64-byte aligned (a cache line, an AVX-512 vector); aligned_alloc wants a multiple.
  const size_t size = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, size);
  if (!p) throw Error("out of memory allocating " + std::to_string(bytes) + " bytes");
  return DeviceBuffer(p, bytes, Device::Host, std::free);
}

void CpuBackend::copy_to_device(void* dst, const void* host_src, size_t bytes) const { std::memcpy(dst, host_src, bytes); }
void CpuBackend::copy_to_host(void* host_dst, const void* src, size_t bytes) const { std::memcpy(host_dst, src, bytes); }

}  // namespace fb
