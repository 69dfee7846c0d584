// What the builder is asked for: precision, fusion level and its limits, batch, threads.
#pragma once
#include <string>
#include <vector>

namespace fb {

enum class FusionLevel { None, Standard };
FusionLevel parse_fusion_level(const std::string& s);  // throws Error listing the levels
const char* fusion_level_name(FusionLevel l);

struct BuildConfig {
  std::string precision = "fp32";
  FusionLevel fusion = FusionLevel::Standard;
  int64_t batch = 1;
  int threads = 1;
  std::vector<std::string> exclude_nodes;     // node-name globs fusion leaves alone
  std::vector<std::string> exclude_op_types;  // op types fusion leaves alone
  std::vector<std::string> partition_points;  // tensor names fusion may not cross
};

}  // namespace fb
