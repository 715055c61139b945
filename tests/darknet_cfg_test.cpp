// Darknet cfg parsing and model building: the three tiny YOLO cfgs, and clear errors for bad cfgs.
#include <fmt/format.h>

#include <functional>

#include "corgy/io/darknet.h"
#include "test_util.h"

namespace corgy::testing {
namespace {

std::string cfg_path(const std::string& name) { return fixture_path("../../data/darknet/" + name + ".cfg"); }

// A cfg of [net] (32 x 32 x 3) and the given sections.
std::string cfg_with(const std::string& layers) { return "[net]\nwidth=32\nheight=32\nchannels=3\n\n" + layers; }

const std::string conv = "[convolutional]\nfilters=4\nsize=3\npad=1\nactivation=leaky\n";

std::string build_error(const std::string& text) {
  return error_of([&] { build_darknet_model(parse_darknet_cfg(text, "test.cfg")); });
}

TEST(DarknetCfg, YoloV2TinyVocBuildsWithItsHead) {
  const DarknetModel net = build_darknet_model(read_darknet_cfg(cfg_path("yolov2-tiny-voc")));
  EXPECT_EQ(net.input_shape(), (Shape{1, 3, 416, 416}));
  ASSERT_EQ(net.cfg.layers.size(), 16u);
  ASSERT_EQ(net.heads.size(), 1u);
  const auto& region = std::get<RegionHead>(net.heads[0].params);
  EXPECT_EQ(region.classes, 20);
  EXPECT_EQ(region.num, 5);
  EXPECT_TRUE(region.softmax);
  EXPECT_EQ(region.anchors,
            (std::vector<float>{1.08f, 1.19f, 3.42f, 4.41f, 6.63f, 11.38f, 9.42f, 5.11f, 16.62f, 10.52f}));
  EXPECT_EQ(net.heads[0].cfg_layer, 15);
  const std::vector<Shape> shapes = net.model.infer_shapes(net.input_shape());
  EXPECT_EQ(shapes[net.heads[0].layer], (Shape{1, 125, 13, 13}));
  // maxpool size 2 stride 1 keeps 13 x 13 with darknet's bottom/right padding
  EXPECT_EQ(shapes[net.layer_of_cfg[11]], (Shape{1, 512, 13, 13}));
}

TEST(DarknetCfg, YoloV2TinyCocoBuilds) {
  const DarknetModel net = build_darknet_model(read_darknet_cfg(cfg_path("yolov2-tiny")));
  ASSERT_EQ(net.heads.size(), 1u);
  EXPECT_EQ(std::get<RegionHead>(net.heads[0].params).classes, 80);
  EXPECT_EQ(net.model.infer_shapes(net.input_shape())[net.heads[0].layer], (Shape{1, 425, 13, 13}));
}

TEST(DarknetCfg, YoloV3TinyBuildsWithTwoHeads) {
  const DarknetModel net = build_darknet_model(read_darknet_cfg(cfg_path("yolov3-tiny")));
  ASSERT_EQ(net.heads.size(), 2u);
  const auto& first = std::get<YoloHead>(net.heads[0].params);
  const auto& second = std::get<YoloHead>(net.heads[1].params);
  EXPECT_EQ(first.mask, (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(second.mask, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(first.anchors.size(), 12u);
  EXPECT_EQ(first.classes, 80);
  const std::vector<Shape> shapes = net.model.infer_shapes(net.input_shape());
  EXPECT_EQ(shapes[net.heads[0].layer], (Shape{1, 255, 13, 13}));
  EXPECT_EQ(shapes[net.heads[1].layer], (Shape{1, 255, 26, 26}));
  // [route] -4 after the first [yolo] names layer 13, not the head: a route of one layer is that layer.
  EXPECT_EQ(net.layer_of_cfg[17], net.layer_of_cfg[13]);
  EXPECT_EQ(net.layer_of_cfg[16], DarknetModel::head_layer);
}

TEST(DarknetCfg, InputSizeCanBeOverridden) {
  const DarknetModel net =
      build_darknet_model(read_darknet_cfg(cfg_path("yolov3-tiny")), {.width = 320, .height = 192});
  EXPECT_EQ(net.input_shape(2), (Shape{2, 3, 192, 320}));
  const std::vector<Shape> shapes = net.model.infer_shapes(net.input_shape());
  EXPECT_EQ(shapes[net.heads[1].layer], (Shape{1, 255, 12, 20}));
}

TEST(DarknetCfg, TrainingKeysAreIgnoredWithAWarning) {
  const DarknetCfg cfg = read_darknet_cfg(cfg_path("yolov2-tiny-voc"));
  const auto warned = [&](const std::string& key) {
    for (const std::string& w : cfg.warnings) {
      if (contains(w, "'" + key + "'")) return true;
    }
    return false;
  };
  for (const char* key : {"learning_rate", "momentum", "jitter", "thresh", "random", "batch", "steps", "hue"}) {
    EXPECT_TRUE(warned(key)) << key;
  }
  EXPECT_TRUE(contains(cfg.warnings[0], "yolov2-tiny-voc.cfg:3: [net] key 'batch' ignored")) << cfg.warnings[0];
}

TEST(DarknetCfg, ParsesDarknetSyntax) {
  const DarknetCfg cfg = parse_darknet_cfg(
      "# comment\n[net]\n width = 32\nheight=16\nchannels=3\n; also a comment\n\n[conv]\nfilters=2\nsize=3\n"
      "stride=2\npad=1\nactivation=linear\n[max]\nsize=3\nstride=1\n[route]\nlayers = -1, 0\n",
      "syntax.cfg");
  EXPECT_EQ(cfg.width, 32);
  EXPECT_EQ(cfg.height, 16);
  ASSERT_EQ(cfg.layers.size(), 3u);
  EXPECT_EQ(cfg.layers[0].type, "convolutional");
  const auto& c = std::get<DarknetConvolutional>(cfg.layers[0].params);
  EXPECT_EQ(c.padding, 1);
  EXPECT_EQ(c.stride, 2);
  EXPECT_EQ(c.activation, Activation::none());
  const auto& pool = std::get<DarknetMaxpool>(cfg.layers[1].params);
  EXPECT_EQ(pool.padding, 2);  // darknet's default: size - 1
  EXPECT_EQ(std::get<DarknetRoute>(cfg.layers[2].params).layers, (std::vector<int>{1, 0}));
  EXPECT_EQ(cfg.location(1), "syntax.cfg:14 [maxpool] (layer 1)");
  // A conv without an activation key is logistic, as in darknet.
  const DarknetCfg bare = parse_darknet_cfg(cfg_with("[convolutional]\nfilters=1\n"), "bare.cfg");
  EXPECT_EQ(std::get<DarknetConvolutional>(bare.layers[0].params).activation, Activation::sigmoid());
}

TEST(DarknetCfg, UnknownLayerTypeNamesTheLine) {
  const std::string e = build_error(cfg_with(conv + "\n[reorg]\nstride=2\n"));
  EXPECT_TRUE(contains(e, "test.cfg:12: unknown or unsupported layer type [reorg]")) << e;
}

TEST(DarknetCfg, UnknownKeyNamesTheLine) {
  const std::string e = build_error(cfg_with("[convolutional]\nfilters=4\nsize=3\nfliters=5\n"));
  EXPECT_TRUE(contains(e, "test.cfg:9: unknown key 'fliters' in [convolutional]")) << e;
}

TEST(DarknetCfg, MalformedFilesAreRejected) {
  EXPECT_TRUE(contains(build_error(cfg_with("[convolutional]\nfilters=four\n")),
                       "test.cfg:7: [convolutional] key 'filters' expects an integer, got 'four'"));
  EXPECT_TRUE(contains(build_error(cfg_with("[convolutional]\nfilters\n")), "test.cfg:7: expected 'key=value'"));
  EXPECT_TRUE(contains(build_error("width=3\n[net]\n"), "test.cfg:1: 'width=3' comes before the first [section]"));
  EXPECT_TRUE(contains(build_error("[convolutional]\nfilters=1\n"), "first section must be [net]"));
  EXPECT_TRUE(contains(build_error("[net]\nwidth=32\nchannels=3\n" + conv), "needs a positive height"));
  EXPECT_TRUE(contains(build_error(cfg_with("[convolutional]\nfilters=2\nfilters=3\n")),
                       "test.cfg:8: key 'filters' is set twice in [convolutional] (first at line 7)"));
  EXPECT_TRUE(
      contains(build_error(cfg_with("[convolutional]\nactivation=elu\n")), "activation 'elu' is not supported"));
  EXPECT_TRUE(contains(build_error(cfg_with("[yolo]\nanchors=1,2,3\nnum=2\n")), "needs 2 * num = 4 anchor values"));
  EXPECT_TRUE(
      contains(build_error(cfg_with("[yolo]\nmask=0,5\nnum=2\nanchors=1,1,2,2\n")), "mask names anchor 5, but num=2"));
  EXPECT_TRUE(contains(build_error(cfg_with("[region]\ncoords=6\nnum=1\nanchors=1,1\n")), "coords=6 is not supported"));
  EXPECT_TRUE(contains(error_of([] { read_darknet_cfg("/nonexistent/x.cfg"); }), "/nonexistent/x.cfg: cannot open"));
}

TEST(DarknetCfg, ZeroFiltersAreRejected) {
  const std::string e = build_error(cfg_with("[convolutional]\nfilters=0\nsize=3\n"));
  EXPECT_TRUE(contains(e, "test.cfg:7: [convolutional] filters must be positive, got 0")) << e;
  EXPECT_TRUE(contains(build_error(cfg_with("[convolutional]\nfilters=2\nstride=0\n")), "stride must be positive"));
  EXPECT_TRUE(contains(build_error(cfg_with("[connected]\noutput=0\n")), "output must be positive"));
}

TEST(DarknetCfg, RouteToANonexistentLayerIsRejected) {
  const std::string e = build_error(cfg_with(conv + "[route]\nlayers=-1,-3\n"));
  EXPECT_TRUE(contains(e,
                       "test.cfg:12: [route] layers=-3 names layer -2, which does not exist: layer 1 can only use "
                       "layers 0..0"))
      << e;
  EXPECT_TRUE(contains(build_error(cfg_with(conv + "[route]\nlayers=1\n")), "layers=1 names layer 1"));
  EXPECT_TRUE(contains(build_error(cfg_with(conv + "[shortcut]\nfrom=-5\n")), "from=-5 names layer -4"));
  EXPECT_TRUE(contains(build_error(cfg_with(conv + "[route]\n")), "needs 'layers'"));
}

TEST(DarknetCfg, LayersThatDoNotFitNameTheCfgLine) {
  const std::string sizes = build_error(cfg_with(conv + "[maxpool]\nsize=2\nstride=2\n[route]\nlayers=-1,0\n"));
  EXPECT_TRUE(contains(sizes, "test.cfg:14 [route] (layer 2): expects input 1 to match")) << sizes;
  const std::string head = build_error(cfg_with(conv + "[yolo]\nclasses=1\nnum=1\nanchors=10,10\n"));
  EXPECT_TRUE(contains(head, "test.cfg:11 [yolo] (layer 1): expects 6 channels")) << head;
  EXPECT_TRUE(contains(head, "(1, 4, 32, 32)")) << head;
  const std::string reads_head =
      build_error(cfg_with("[convolutional]\nfilters=6\nsize=1\n[yolo]\nclasses=1\nnum=1\nanchors=10,10\n" + conv));
  EXPECT_TRUE(contains(reads_head, "(layer 2): reads the output of layer 1 (yolo), a detection head")) << reads_head;
  const std::string shortcut = build_error(cfg_with(conv + "[convolutional]\nfilters=8\nsize=1\n[shortcut]\nfrom=0\n"));
  EXPECT_TRUE(contains(shortcut, "test.cfg:14 [shortcut] (layer 2): expects both inputs of shape (1, 8, 32, 32)"))
      << shortcut;
}

TEST(DarknetCfg, ClassifierWithoutHeadsReturnsTheLastOutput) {
  DarknetModel net = build_darknet_model(
      parse_darknet_cfg(cfg_with(conv + "[avgpool]\n[connected]\noutput=3\nactivation=linear\n[softmax]\n[dropout]\n"),
                        "classifier.cfg"));
  EXPECT_TRUE(net.heads.empty());
  const Variable input(net.input_shape());
  const std::vector<const Variable*> out = net.forward(input);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->shape(), (Shape{1, 3, 1, 1}));
  for (float p : out[0]->values()) EXPECT_NEAR(p, 1.0f / 3, 1e-6);  // zero weights: uniform softmax
}

}  // namespace
}  // namespace corgy::testing
