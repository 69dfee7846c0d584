#include "engine/backend/cpu/shared_weights.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "engine/backend/cpu/dnnl_context.h"

namespace fb {

namespace {

struct Entry {
  const void* constant;
  dnnl::memory::desc given, wanted;
  std::weak_ptr<const dnnl::memory> reordered;
};

std::mutex& table_mutex() {
  static std::mutex m;
  return m;
}

std::vector<Entry>& table() {
  static std::vector<Entry> t;
  return t;
}

}  // namespace

std::shared_ptr<const dnnl::memory> shared_reordered_weights(const void* constant, const dnnl::memory::desc& given,
                                                             const dnnl::memory::desc& wanted) {
  std::lock_guard<std::mutex> lock(table_mutex());
  std::vector<Entry>& t = table();
  t.erase(std::remove_if(t.begin(), t.end(), [](const Entry& e) { return e.reordered.expired(); }), t.end());
  for (const Entry& e : t)
    if (e.constant == constant && e.given == given && e.wanted == wanted)
      if (std::shared_ptr<const dnnl::memory> kept = e.reordered.lock()) return kept;
  // Reordered under the lock: a second context asking meanwhile waits and then shares it.
  dnnl::engine& eng = dnnl_cpu_engine();
  auto made = std::make_shared<dnnl::memory>(wanted, eng);
  dnnl::memory from(given, eng, const_cast<void*>(constant));
  dnnl::reorder(from, *made).execute(dnnl_cpu_stream(), from, *made);
  dnnl_cpu_stream().wait();
  t.push_back(Entry{constant, given, wanted, made});
  return made;
}

size_t live_reordered_weights() {
  std::lock_guard<std::mutex> lock(table_mutex());
  return size_t(std::count_if(table().begin(), table().end(), [](const Entry& e) { return !e.reordered.expired(); }));
}

}  // namespace fb
