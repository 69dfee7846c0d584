// What a fusion pass did with one match: fused it, or refused it and why. The builder
// collects them (engine/passes/pass.h: run_fusion_rule); the build log holds their text,
// the engine keeps them, and `fusebench inspect --format json` lists them.
#pragma once
#include <string>
#include <vector>

namespace fb {

struct FusionEvent {
  std::string pass;                // "layernorm-fusion"
  std::string root;                // the node the rule matched at
  std::vector<std::string> nodes;  // the matched nodes, in graph order
  std::string fused;               // the node that replaced them ("" when refused)
  std::string refused;             // why can_fuse refused ("" when fused)
  std::string text;                // the build-log line
};

}  // namespace fb
