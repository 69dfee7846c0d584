// The batch question's arithmetic (harness/judge/batch_scaling.h) on profiles made by hand, with
// exact answers, and `profile --batch-sweep` through the binary.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

#include "harness/judge/batch_scaling.h"

namespace fb {
namespace {

LayerProfile layer(const char* name, double ms, double flops, double bytes) {
  LayerProfile l;
  l.name = name;
  l.kind = "k";
  l.median_ms = ms;
  l.flops = flops;
  l.bytes = bytes;
  return l;
}

Profile profile(std::vector<LayerProfile> layers) {
  Profile p;
  for (const LayerProfile& l : layers) p.total_ms += l.median_ms;
  p.layers = std::move(layers);
  return p;
}

// Peaks 1000 GFLOP/s and 100 GB/s: 1e9 flops take 1 ms, 1e8 bytes 1 ms.
TEST(BatchScaling, EachLayerIsLimitedByWhatItsTimeAndGrowthSay) {
  const MachinePeaks peaks{1000, 100};
  const Profile b1 = profile({layer("mm", 0.2, 1.25e8, 0), layer("copy", 0.02, 0, 1e6), layer("tiny", 0.01, 1e3, 1e3),
                              layer("slow", 0.1, 1e3, 1e3)});
  const Profile b8 = profile({layer("mm", 1.25, 1e9, 0), layer("copy", 0.1, 0, 8e6), layer("tiny", 0.012, 8e3, 8e3),
                              layer("slow", 0.7, 8e3, 8e3)});
  const BatchScaling s = analyze_batch_scaling({1, 8}, {b1, b8}, {0.5, 3.0}, peaks);
  ASSERT_EQ(s.layers.size(), 4u);
  const LayerScaling& mm = s.layers[0];
  EXPECT_EQ(mm.limit[0], Limit::Compute);
  EXPECT_EQ(mm.limit[1], Limit::Compute);
  EXPECT_NEAR(mm.of_roof[0], 0.625, 1e-12);  // 0.125 ms of arithmetic in 0.2 ms
  EXPECT_NEAR(mm.of_roof[1], 0.8, 1e-12);
  EXPECT_NEAR(mm.growth, 6.25, 1e-12);
  EXPECT_EQ(s.layers[1].limit[1], Limit::Memory);  // 0.08 ms of bytes in 0.1 ms
  EXPECT_EQ(s.layers[2].limit[0], Limit::Launch);  // 1.2x the time for 8x the work
  EXPECT_EQ(s.layers[2].limit[1], Limit::Launch);
  EXPECT_EQ(s.layers[3].limit[1], Limit::Kernel);  // 7x the time, far from both roofs
  EXPECT_NEAR(s.share[0][size_t(Limit::Compute)], 0.2 / 0.33, 1e-12);
  EXPECT_NEAR(s.share[0][size_t(Limit::Launch)], 0.01 / 0.33, 1e-12);
  EXPECT_NEAR(s.share[1][size_t(Limit::Kernel)], 0.7 / 2.062, 1e-12);
  EXPECT_NEAR(s.share[1][size_t(Limit::Memory)], 0.1 / 2.062, 1e-12);
  const std::string text = format_batch_scaling(s, 2);
  EXPECT_NE(text.find("      1     0.3300      0.5000     1.52x"), std::string::npos) << text;
  EXPECT_NE(text.find("  6.25x  compute   80.0%  k"), std::string::npos) << text;
  EXPECT_EQ(text.find("tiny"), std::string::npos) << "only the top 2 layers: " << text;
}

// A layer one batch lacks (a fusion that differs by batch) has no time there and is left
// out of that batch's shares; fewer than two batches, or batches out of order, are refused.
TEST(BatchScaling, MissingLayersAndBadSweepsAreHandled) {
  const MachinePeaks peaks{1000, 100};
  const BatchScaling s = analyze_batch_scaling({1, 4}, {profile({layer("a", 1, 0, 0)}), profile({layer("a", 2, 0, 0), layer("b", 1, 0, 0)})},
                                               {0, 0}, peaks);
  ASSERT_EQ(s.layers.size(), 2u);
  EXPECT_EQ(s.layers[1].ms[0], 0.0);
  EXPECT_EQ(s.layers[1].growth, 0.0);
  EXPECT_NEAR(s.share[0][size_t(Limit::Kernel)], 1.0, 1e-12);
  EXPECT_THROW(analyze_batch_scaling({1}, {profile({})}, {0}, peaks), Error);
  EXPECT_THROW(analyze_batch_scaling({8, 1}, {profile({}), profile({})}, {0, 0}, peaks), Error);
}

std::string run_binary(const std::string& args, int* status) {
  const std::string cmd = std::string(FUSEBENCH_BINARY) + " " + args + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe.get())) out.append(buf, n);
  *status = pclose(pipe.release());
  return out;
}

// Through the binary: a table per batch and the layers, or one error naming the flag.
TEST(BatchScaling, ProfileBatchSweepPrintsEveryBatchOrRefusesByName) {
  int status = 0;
  const std::string out = run_binary("profile zoo:mlp --batch-sweep 1,4 --iterations 3 --top 3", &status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("batches 1 4"), std::string::npos) << out;
  EXPECT_NE(out.find("batch scaling: where each batch's time goes"), std::string::npos) << out;
  EXPECT_NE(out.find("layers by time at batch 4 (growth: time at batch 4 over batch 1, for 4x the work)"), std::string::npos) << out;
  for (const char* bad : {"4,1", "1", "1,x"}) {
    const std::string err = run_binary(std::string("profile zoo:mlp --batch-sweep ") + bad, &status);
    EXPECT_NE(status, 0) << bad;
    EXPECT_NE(err.find("--batch-sweep"), std::string::npos) << err;
  }
}

}  // namespace
}  // namespace fb
