// A build asked for a reduced precision in which no layer can run (a model with no
// int8-capable node, or every such node constrained to fp32). For a case it is an error
// like any other; for `debug precision`, which constrains nodes on purpose, it is an answer.
#pragma once
#include "engine/ir/error.h"

namespace fb {

class NoLayerInPrecision : public Error {
 public:
  using Error::Error;
};

}  // namespace fb
