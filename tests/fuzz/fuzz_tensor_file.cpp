// Tensor files as `exec --input` reads them: bytes that start with numpy's magic are read
// as a .npy file, the rest as an ONNX TensorProto .pb file.
#include <cstring>

#include "fuzz_guard.h"
#include "harness/cases/tensor_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const bool npy = size >= 6 && std::memcmp(data, "\x93NUMPY", 6) == 0;
  const std::string path = fb::fuzz::write_scratch(npy ? "input.npy" : "input.pb", data, size);
  fb::fuzz::refusals_only([&] { fb::read_tensor_file(path); });
  return 0;
}
