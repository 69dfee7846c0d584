// Scenario text → Scenario (strict JSON-with-comments reading, every field checked) → the
// case matrix.
#include <string>

#include "fuzz_guard.h"
#include "harness/cases/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  fb::fuzz::refusals_only([&] {
    const fb::Scenario s = fb::parse_scenario(text, (fb::fuzz::scratch_dir() / "fuzz.json").string());
    fb::expand_cases(s);
  });
  return 0;
}
