// pad-fusion: a zero Pad over the spatial dimensions becomes the pads of the Conv or
// AveragePool that reads it, which then stays channels-last between convolutions; the
// forms it must leave alone keep their Pad and still agree with the reference.
#include <gtest/gtest.h>

#include "engine/zoo/onnx_builder.h"
#include "tests/pass_test_support.h"

namespace fb {
namespace {

using test::count_kernel;
using test::count_kind;

struct PadCase {
  const char* what;
  std::vector<int64_t> pads;                  // Pad's, [begin per dim..., end per dim...]
  float value = 0.f;                          // Pad's constant
  const char* mode = "constant";
  const char* reader = "Conv";                // or "AveragePool"
  std::vector<int64_t> own_pads = {};        // the reader's pads attribute, when it has one
  std::vector<zoo::Attr> reader_attrs = {};  // beyond kernel_shape, strides and pads
  bool fuses = true;
};

// conv ─▶ Pad ─▶ reader(3x3/2) ─▶ conv, over [batch, 8, 10, 12].
Graph pad_model(const PadCase& c) {
  zoo::OnnxBuilder b("pad", "pad");
  const std::string x = b.input("x", {zoo::kBatch, 3, 10, 12});
  std::string y = zoo::conv2d(b, "/a", "a", x, 3, 8, 3, 1, 1, 1, true, 1.f);
  y = b.node("/pad", "Pad", {y, b.ints("pads", c.pads), b.scalar("value", c.value)}, {zoo::attr_string("mode", c.mode)});
  std::vector<zoo::Attr> attrs = {zoo::attr_ints("kernel_shape", {3, 3}), zoo::attr_ints("strides", {2, 2})};
  if (!c.own_pads.empty()) attrs.push_back(zoo::attr_ints("pads", c.own_pads));
  attrs.insert(attrs.end(), c.reader_attrs.begin(), c.reader_attrs.end());
  int64_t channels = 8 + c.pads[1] + c.pads[5];
  if (std::string(c.reader) == "Conv") {
    y = b.node("/reader", "Conv", {y, b.weight("reader.weight", {6, 8, 3, 3}, zoo::bound(1.f, 72))}, attrs);
    channels = 6;
  } else {
    y = b.node("/reader", c.reader, {y}, attrs);
  }
  y = zoo::conv2d(b, "/b", "b", y, channels, 4, 1, 1, 0, 1, true, 1.f);
  std::vector<int64_t> own = c.own_pads.empty() ? std::vector<int64_t>(4, 0) : c.own_pads;
  const int64_t h = 10 + c.pads[2] + c.pads[6] + own[0] + own[2], w = 12 + c.pads[3] + c.pads[7] + own[1] + own[3];
  const bool ceil = std::string(c.reader) == "AveragePool" && !c.reader_attrs.empty() && c.reader_attrs[0].name == "ceil_mode";
  b.output(y, "y", {zoo::kBatch, 4, (h - 3 + (ceil ? 1 : 0)) / 2 + 1, (w - 3 + (ceil ? 1 : 0)) / 2 + 1});
  return import_onnx(b.finish(), "pad", "");
}

TEST(PadFusion, ZeroSpatialPadsJoinTheWindowAndTheRestStay) {
  const std::vector<PadCase> cases = {
      {"Conv, even pads", {0, 0, 1, 1, 0, 0, 1, 1}},
      {"Conv, TensorFlow's SAME: more at the end", {0, 0, 0, 0, 0, 0, 1, 1}},
      {"Conv with pads of its own", {0, 0, 1, 0, 0, 0, 0, 2}, 0.f, "constant", "Conv", {1, 1, 1, 1}},
      {"AveragePool, PyTorch's count_include_pad export", {0, 0, 1, 1, 0, 0, 1, 1}, 0.f, "constant", "AveragePool"},
      {"AveragePool counting its own pads", {0, 0, 1, 1, 0, 0, 1, 1}, 0.f, "constant", "AveragePool", {1, 0, 0, 1},
       {zoo::attr_int("count_include_pad", 1)}},
      {"a non-zero constant", {0, 0, 1, 1, 0, 0, 1, 1}, 0.5f, "constant", "Conv", {}, {}, false},
      {"reflect", {0, 0, 1, 1, 0, 0, 1, 1}, 0.f, "reflect", "Conv", {}, {}, false},
      {"pads on the channels", {0, 1, 1, 1, 0, 0, 1, 1}, 0.f, "constant", "AveragePool", {}, {}, false},
      {"cropping", {0, 0, -1, 1, 0, 0, 1, 1}, 0.f, "constant", "Conv", {}, {}, false},
      {"MaxPool (zeros are not -inf)", {0, 0, 1, 1, 0, 0, 1, 1}, 0.f, "constant", "MaxPool", {}, {}, false},
      {"AveragePool padding without counting", {0, 0, 1, 1, 0, 0, 1, 1}, 0.f, "constant", "AveragePool", {1, 1, 1, 1}, {},
       false},
      {"AveragePool with ceil_mode", {0, 0, 1, 1, 0, 0, 1, 1}, 0.f, "constant", "AveragePool", {},
       {zoo::attr_int("ceil_mode", 1)}, false},
  };
  for (const PadCase& c : cases) {
    SCOPED_TRACE(c.what);
    const Graph g = pad_model(c);
    BuildConfig cfg;
    cfg.batch = 2;
    auto e = build_engine(g, cfg);
    EXPECT_EQ(count_kind(*e, "Pad"), c.fuses ? 0 : 1);
    EXPECT_EQ(test::log_mentions(*e, "pad-fusion: Pad+"), c.fuses);
    // Fused, the window op reads and writes channels-last between the two convolutions.
    if (c.fuses) {
      EXPECT_EQ(count_kernel(*e, "nhwc→nhwc"), 1);
    }
    test::expect_agrees(g, cfg, 31);
    BuildConfig none = cfg;
    none.fusion = FusionLevel::None;
    test::expect_agrees(g, none, 31);
  }
}

}  // namespace
}  // namespace fb
