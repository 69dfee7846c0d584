// The engine's generated elementwise kernel: a chain of unary/binary float ops evaluated
// in one pass over memory. Registers 0..inputs-1 are the node's inputs (broadcast to the
// output shape); each instruction appends one register; the last one is the output.
// Stored on the node as the int attribute "program": [kind, fn, a, b] per instruction
// (kind 0 unary on a, kind 1 binary on a and b).
#pragma once
#include <vector>

#include "engine/ops/elementwise.h"

namespace fb {

struct ChainInstr {
  int kind;  // 0 unary, 1 binary
  int fn;    // UnaryFn or BinaryFn
  int a, b;  // register indices (b unused for unary)
};

std::vector<int64_t> encode_chain(const std::vector<ChainInstr>& prog);
std::vector<ChainInstr> decode_chain(const std::vector<int64_t>& attr, int num_inputs);  // validates; throws Error
// "Sub→Pow→Div": how the build log and inspector name the chain.
std::string describe_chain(const std::vector<ChainInstr>& prog);

}  // namespace fb
