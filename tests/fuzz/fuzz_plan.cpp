// Plan files: the input is a plan without its trailing SHA-256, which the target appends
// (a mutated plan would otherwise stop at the checksum), so the header's JSON, the stamp,
// the build config, both embedded ModelProtos and the engine made from them are reached.
// Seeds are plans written by this same build (a plan names the commit that wrote it).
#include <string>

#include "engine/plan/plan_format.h"
#include "engine/runtime/thread_scope.h"
#include "engine/util/sha256.h"
#include "fuzz_guard.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  bytes += fb::sha256_hex(bytes);
  fb::fuzz::refusals_only([&] {
    const fb::Plan plan = fb::parse_plan(bytes, "fuzz.plan");
    fb::ThreadScope scope(1);
    scope.run([&] { fb::engine_from_plan(plan, "fuzz.plan"); });
    fb::plan_source_model(plan, "fuzz.plan");
  });
  return 0;
}
