#include "engine/ops/fused_activation.h"

#include <array>
#include <utility>

namespace fb {
namespace {

constexpr std::array<std::pair<ActivationKind, const char*>, 8> kNames{{
    {ActivationKind::None, "none"},
    {ActivationKind::Relu, "relu"},
    {ActivationKind::Clip, "clip"},
    {ActivationKind::Sigmoid, "sigmoid"},
    {ActivationKind::HardSwish, "hardswish"},
    {ActivationKind::Silu, "silu"},
    {ActivationKind::Gelu, "gelu"},
    {ActivationKind::GeluTanh, "gelu_tanh"},
}};

}  // namespace

ActivationKind parse_activation_kind(const std::string& name, const std::string& where) {
  if (name.empty()) return ActivationKind::None;
  std::string known;
  for (const auto& [kind, n] : kNames) {
    if (name == n) return kind;
    known += std::string(known.empty() ? "" : ", ") + n;
  }
  throw Error(where + ": unknown activation '" + name + "' (known: " + known + ")");
}

const char* activation_kind_name(ActivationKind kind) {
  for (const auto& [k, n] : kNames)
    if (k == kind) return n;
  return "none";
}

FusedActivation fused_activation_of(const Node& n) {
  FusedActivation a;
  a.kind = parse_activation_kind(n.attr_string("activation", ""), n.describe());
  if (a.kind == ActivationKind::Clip) {
    a.lo = n.attr_float("activation_min", 0.f);
    a.hi = n.attr_float("activation_max", 6.f);
  }
  return a;
}

}  // namespace fb
