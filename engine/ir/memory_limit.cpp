#include "engine/ir/memory_limit.h"

#include <unistd.h>

#include "engine/ir/error.h"

namespace fb {

size_t physical_memory_bytes() {
  static const size_t bytes = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? size_t(pages) * size_t(page) : size_t(1) << 40;
  }();
  return bytes;
}

void check_allocation(size_t bytes, const std::string& what) {
  if (bytes > physical_memory_bytes())
    throw Error(what + " needs " + std::to_string(bytes) + " bytes, more than this machine's memory (" +
                std::to_string(physical_memory_bytes()) + " bytes)");
}

size_t checked_tensor_bytes(const Shape& shape, size_t element_size) {
  unsigned __int128 bytes = element_size;
  for (int64_t d : shape) {
    bytes *= static_cast<uint64_t>(d);
    if (bytes > (unsigned __int128)(INT64_MAX)) throw Error("shape " + shape_str(shape) + " has too many elements");
  }
  return static_cast<size_t>(bytes);
}

}  // namespace fb
