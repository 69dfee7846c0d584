#include "engine/backend/backend.h"

#include "engine/backend/cpu/cpu_backend.h"

namespace fb {

std::shared_ptr<const Backend> backend_named(const std::string& name) {
  if (name == "cpu") {
    static const auto cpu = std::make_shared<const CpuBackend>();
    return cpu;
  }
  throw Error("unknown backend '" + name + "' (known: cpu)");
}

}  // namespace fb
