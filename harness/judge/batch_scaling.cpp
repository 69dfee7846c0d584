#include "harness/judge/batch_scaling.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "engine/ir/error.h"

namespace fb {

const char* limit_name(Limit l) {
  switch (l) {
    case Limit::Compute: return "compute";
    case Limit::Memory: return "memory";
    case Limit::Launch: return "launch";
    case Limit::Kernel: return "kernel";
  }
  return "?";
}

namespace {

// What limits a layer that took `ms`, given how its time grew (scale_time) against the
// batch (scale_batch) between the smallest batch and this one (the next one, at the smallest).
Limit limit_of(const LayerProfile& l, double ms, double scale_time, double scale_batch, const MachinePeaks& peaks,
               double* of_roof) {
  const double compute_ms = peaks.gflops > 0 ? l.flops / (peaks.gflops * 1e6) : 0;
  const double memory_ms = peaks.gbps > 0 ? l.bytes / (peaks.gbps * 1e6) : 0;
  *of_roof = ms > 0 ? std::max(compute_ms, memory_ms) / ms : 0;
  if (*of_roof >= kNearRoof) return compute_ms >= memory_ms ? Limit::Compute : Limit::Memory;
  return scale_time < 0.5 * scale_batch ? Limit::Launch : Limit::Kernel;
}

}  // namespace

BatchScaling analyze_batch_scaling(const std::vector<int64_t>& batches, const std::vector<Profile>& profiles,
                                   const std::vector<double>& unfused_ms, const MachinePeaks& peaks) {
  if (batches.size() < 2 || profiles.size() != batches.size() || unfused_ms.size() != batches.size())
    throw Error("a batch sweep needs a profile at each of at least two batches");
  for (size_t i = 1; i < batches.size(); ++i)
    if (batches[i] <= batches[i - 1]) throw Error("a batch sweep's batches must ascend");
  const size_t nb = batches.size();
  BatchScaling s;
  s.batches = batches;
  s.unfused_ms = unfused_ms;
  s.share.assign(nb, std::vector<double>(4, 0.0));
  // Each layer's profile per batch, by name.
  std::vector<std::map<std::string, const LayerProfile*>> by_name(nb);
  for (size_t b = 0; b < nb; ++b) {
    s.total_ms.push_back(profiles[b].total_ms);
    for (const LayerProfile& l : profiles[b].layers) by_name[b][l.name] = &l;
  }
  for (const LayerProfile& last : profiles.back().layers) {
    LayerScaling row;
    row.name = last.name;
    row.kind = last.kind;
    std::vector<const LayerProfile*> at(nb, nullptr);
    for (size_t b = 0; b < nb; ++b) {
      auto it = by_name[b].find(last.name);
      at[b] = it == by_name[b].end() ? nullptr : it->second;
      row.ms.push_back(at[b] ? at[b]->median_ms : 0.0);
    }
    row.growth = row.ms.front() > 0 ? row.ms.back() / row.ms.front() : 0;
    for (size_t b = 0; b < nb; ++b) {
      double of_roof = 0;
      Limit limit = Limit::Kernel;
      if (at[b]) {
        // Growth against the smallest batch; the smallest batch is judged by the next one.
        const size_t hi = b == 0 ? 1 : b;
        const double scale_time = row.ms[0] > 0 && row.ms[hi] > 0 ? row.ms[hi] / row.ms[0] : 1.0;
        const double scale_batch = double(batches[hi]) / double(batches[0]);
        limit = limit_of(*at[b], row.ms[b], scale_time, scale_batch, peaks, &of_roof);
        if (profiles[b].total_ms > 0) s.share[b][size_t(limit)] += row.ms[b] / profiles[b].total_ms;
      }
      row.of_roof.push_back(of_roof);
      row.limit.push_back(limit);
    }
    s.layers.push_back(std::move(row));
  }
  return s;
}

std::string format_batch_scaling(const BatchScaling& s, int top) {
  std::string out;
  char line[512];
  auto add = [&](const char* fmt, auto... args) {
    if constexpr (sizeof...(args) == 0) {
      out += fmt;  // a plain line: not a format
    } else {
      std::snprintf(line, sizeof line, fmt, args...);
      out += line;
    }
  };
  add("batch scaling: where each batch's time goes (shares of the engine's time; limits against the peaks above)\n");
  add("  %6s %10s %11s %9s %8s %8s %8s %8s\n", "batch", "engine ms", "unfused ms", "unfused/", "launch", "kernel", "memory",
      "compute");
  for (size_t b = 0; b < s.batches.size(); ++b) {
    char ratio[32] = "-";
    if (s.unfused_ms[b] > 0 && s.total_ms[b] > 0) std::snprintf(ratio, sizeof ratio, "%.2fx", s.unfused_ms[b] / s.total_ms[b]);
    add("  %6lld %10.4f %11.4f %9s %7.1f%% %7.1f%% %7.1f%% %7.1f%%\n", (long long)s.batches[b], s.total_ms[b], s.unfused_ms[b],
        ratio, 100 * s.share[b][size_t(Limit::Launch)], 100 * s.share[b][size_t(Limit::Kernel)],
        100 * s.share[b][size_t(Limit::Memory)], 100 * s.share[b][size_t(Limit::Compute)]);
  }
  std::vector<const LayerScaling*> rows;
  for (const LayerScaling& l : s.layers) rows.push_back(&l);
  std::sort(rows.begin(), rows.end(), [](const LayerScaling* a, const LayerScaling* b) { return a->ms.back() > b->ms.back(); });
  const long long b0 = s.batches.front(), b1 = s.batches.back();
  add("\nlayers by time at batch %lld (growth: time at batch %lld over batch %lld, for %.0fx the work):\n", b1, b1, b0,
      double(b1) / double(b0));
  std::string head = "  ";
  for (int64_t b : s.batches) {
    char h[32];
    std::snprintf(h, sizeof h, " %9s", ("ms@" + std::to_string(b)).c_str());
    head += h;
  }
  add("%s %7s  %-8s %6s  %-26s %s\n", head.c_str(), "growth", "limit", "roof", "kind", "name");
  for (int i = 0; i < std::min<int>(top, int(rows.size())); ++i) {
    const LayerScaling& l = *rows[size_t(i)];
    std::string times = "  ";
    for (double ms : l.ms) {
      char t[32];
      std::snprintf(t, sizeof t, " %9.4f", ms);
      times += t;
    }
    add("%s %6.2fx  %-8s %5.1f%%  %-26s %s\n", times.c_str(), l.growth, limit_name(l.limit.back()), 100 * l.of_roof.back(),
        l.kind.c_str(), l.name.c_str());
  }
  return out;
}

}  // namespace fb
