// corgy-run: runs a darknet model, an ONNX model or the MNIST network on an input and writes the raw tensors that feed
// its detection heads, prints a classifier's top classes, writes a segmentation mask, prints a YOLOv8 detector's boxes,
// or times it. The command-line interface is stable and documented in docs/corgy-run.md.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "corgy/backends/cpu/fma_peak.h"
#include "corgy/corgy.h"
#include "corgy/model/profile.h"

namespace {

/// The command line (docs/corgy-run.md), as CLI11 parses it.
struct Options {
  std::string cfg;
  std::string weights;
  std::optional<std::uint32_t> random_weights;
  std::string mnist;
  std::string onnx;
  bool list_ops = false;
  std::string input;
  std::string backend = "auto";
  int threads = 0;
  int batch = 0;  // 0: not given (one image, or all the images of a .npy)
  std::string output;
  std::optional<int> repeat;
  bool profile = false;
  int width = 0;
  int height = 0;
  // How an image becomes an ONNX model's input (corgy::ImagePreprocess); unset: the preset's or the default.
  std::string preset;
  std::string resize;
  std::string crop;
  std::optional<float> scale;
  std::vector<float> mean;
  std::vector<float> std;
  bool bgr = false;
  // The answers read from the first output.
  std::optional<int> top;
  std::string labels;
  std::string mask;
  bool boxes = false;
  // Ultralytics' predict defaults (conf 0.25, iou 0.7), as examples/detect's.
  float score_threshold = 0.25f;
  float iou_threshold = 0.7f;
  std::string draw;
};

// Whether any image preprocessing option was given.
bool preprocessing_given(const Options& options) {
  return !options.preset.empty() || !options.resize.empty() || !options.crop.empty() || options.scale ||
         !options.mean.empty() || !options.std.empty() || options.bgr;
}

void define_options(CLI::App& app, Options& options) {
  app.description(
      "Runs a darknet model, an ONNX model or corgy's MNIST network on an input and writes the raw tensors that feed "
      "its detection heads, prints a classifier's top classes, writes a segmentation mask, prints a YOLOv8 "
      "detector's boxes, or times it (docs/corgy-run.md).\n"
      "  corgy-run --cfg FILE (--weights FILE | --random-weights SEED) [options]\n"
      "  corgy-run --mnist DIR [options]\n"
      "  corgy-run --onnx FILE [--input IMAGE (--preset imagenet | --resize ... | --crop ...)...] [--top K] "
      "[--mask FILE.png] [options]\n"
      "  corgy-run --onnx YOLOV8.onnx --input IMAGE --boxes [--score-threshold P] [--iou-threshold IOU] "
      "[--labels FILE] [--draw FILE.png] [options]\n"
      "  corgy-run --list-ops");
  CLI::Option* cfg = app.add_option("--cfg", options.cfg, "darknet cfg")->type_name("FILE");
  CLI::Option* weights =
      app.add_option("--weights", options.weights, "darknet .weights for that cfg")->type_name("FILE");
  CLI::Option* random = app.add_option("--random-weights", options.random_weights,
                                       "deterministic random weights instead (see docs/darknet.md)")
                            ->type_name("SEED");
  CLI::Option* mnist =
      app.add_option("--mnist", options.mnist,
                     "instead of a cfg: corgy's MNIST network with the weight files of DIR (data/mnist)")
          ->type_name("DIR");
  CLI::Option* onnx =
      app.add_option("--onnx", options.onnx, "instead of a cfg: an ONNX model (docs/onnx.md lists the operators)")
          ->type_name("FILE");
  app.add_flag("--list-ops", options.list_ops, "print the ONNX operators corgy supports and exit");
  weights->excludes(random);
  cfg->excludes(mnist);
  cfg->excludes(onnx);
  mnist->excludes(onnx);
  weights->needs(cfg);
  random->needs(cfg);
  app.add_option("--input", options.input,
                 ".npy (float32, NCHW) or an image (JPEG/PNG: letterboxed to the input size as darknet does; for "
                 "MNIST read as a grey digit resized to 28 x 28; for ONNX prepared by the options below); default: a "
                 "mid-grey image")
      ->type_name("FILE");
  const std::vector<CLI::Option*> preprocessing = {
      app.add_option("--preset", options.preset,
                     "ONNX image preprocessing: imagenet = resize 256, crop 224, scale 1/255, mean "
                     "0.485,0.456,0.406, std 0.229,0.224,0.225, RGB (torchvision's); the options below override it")
          ->type_name("NAME")
          ->check(CLI::IsMember({"imagenet"})),
      app.add_option("--resize", options.resize,
                     "ONNX image: resize the shorter side to N, or to exactly W x H (bilinear, as cv2.resize)")
          ->type_name("N|WxH"),
      app.add_option("--crop", options.crop, "ONNX image: center crop N x N or W x H after the resize")
          ->type_name("N|WxH"),
      app.add_option("--scale", options.scale, "ONNX image: multiply the 8-bit values by F (default 1/255)")
          ->type_name("F"),
      app.add_option("--mean", options.mean, "ONNX image: subtract after scaling, one value or one per channel (RGB)")
          ->type_name("M[,M,M]")
          ->delimiter(','),
      app.add_option("--std", options.std, "ONNX image: then divide by these, one value or one per channel (RGB)")
          ->type_name("S[,S,S]")
          ->delimiter(','),
      app.add_flag("--bgr", options.bgr, "ONNX image: channels in BGR order (default RGB)"),
  };
  for (CLI::Option* option : preprocessing) option->needs(onnx);
  app.add_option("--backend", options.backend, "naive, blas, vulkan or auto")->type_name("NAME")->capture_default_str();
  app.add_option("--threads", options.threads, "CPU threads, 0 = all cores")
      ->type_name("N")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
  app.add_option("--batch", options.batch,
                 "run N copies of a one-image input at once (default: 1, or all images "
                 "of a .npy)")
      ->type_name("N")
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--output", options.output,
                 "write the raw input of each [region]/[yolo] layer, in cfg order, as PREFIX.0.npy, PREFIX.1.npy, ... "
                 "(the final output when the cfg has no such layer; the logits for MNIST; every graph output, in "
                 "order, for ONNX)")
      ->type_name("PREFIX");
  app.add_option("--top", options.top,
                 "print the K most probable classes of the first output (N, F): rank, index, probability (the "
                 "softmax of the output unless it already is a distribution), label")
      ->type_name("K")
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--labels", options.labels,
                 "class names for --top or --boxes, one per line (data/imagenet/imagenet_classes.txt, "
                 "data/darknet/coco.names)")
      ->type_name("FILE");
  app.add_option("--mask", options.mask,
                 "write the per-pixel argmax of the first output (N, classes, H, W) as a PNG in PASCAL VOC's colours, "
                 "at the input image's size")
      ->type_name("FILE.png");
  CLI::Option* boxes =
      app.add_flag("--boxes", options.boxes,
                   "print the objects a YOLOv8 export finds (first output (N, 4 + classes, anchors)): an image "
                   "--input letterboxed to the model's input, each anchor's best class above --score-threshold, "
                   "per-class NMS; class, score and box corners in pixels of the image")
          ->needs(onnx);
  app.add_option("--score-threshold", options.score_threshold, "--boxes: report a box whose class score exceeds P")
      ->type_name("P")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str()
      ->needs(boxes);
  app.add_option("--iou-threshold", options.iou_threshold,
                 "--boxes: drop a box that overlaps a higher-scoring one of its class by more than this IoU")
      ->type_name("IOU")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str()
      ->needs(boxes);
  app.add_option("--draw", options.draw, "--boxes: write the image with its boxes and labels drawn as a PNG")
      ->type_name("FILE.png")
      ->needs(boxes);
  app.add_option("--repeat", options.repeat, "time N forwards after one warm-up; print median, min and max")
      ->type_name("N")
      ->check(CLI::Range(1, 1 << 30));
  app.add_flag("--profile", options.profile,
               "after the forwards, profile --repeat (default 10) more and print each layer's algorithm, ms, "
               "GFLOP/s and % of the CPU's FMA peak");
  app.add_option("--width", options.width, "network input width instead of the cfg's")
      ->type_name("W")
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--height", options.height, "network input height instead of the cfg's")
      ->type_name("H")
      ->check(CLI::Range(1, 1 << 30));
}

/// The tensor a model runs on and, for an ONNX image, where it lies in the image (what --mask maps back through) or
/// the image itself (what --boxes maps back to and --draw draws on).
struct Input {
  corgy::Variable tensor;
  std::optional<corgy::PreprocessGeometry> geometry;
  std::optional<corgy::Variable> image;
};

// One image (1, C, H, W) repeated `batch` times along N.
corgy::Variable repeat_batch(const corgy::Variable& image, int batch) {
  corgy::Shape shape = image.shape();
  shape.n = batch;
  corgy::Variable out(shape);
  for (int n = 0; n < batch; ++n) std::copy(image.data(), image.data() + image.count(), out.data() + n * image.count());
  return out;
}

// What corgy-run runs: a darknet cfg or the MNIST network.
class Model {
 public:
  virtual ~Model() = default;
  virtual std::string name() const = 0;
  virtual corgy::Sequential& sequential() = 0;
  /// (1, C, H, W) of one input image.
  virtual corgy::Shape input_shape() const = 0;
  /// An image file prepared as the model expects it, (1, C, H, W).
  virtual Input read_image(const std::string& path) const = 0;
  /// The tensors --output writes.
  virtual std::vector<const corgy::Variable*> forward(const corgy::Variable& input) = 0;
  /// A .npy input as the model takes it; throws corgy::Error naming `path` when it does not fit.
  virtual corgy::Variable prepare_npy(corgy::Variable tensor, const std::string& path) const {
    if (tensor.shape().c != input_shape().c) {
      throw corgy::Error(fmt::format("{}: expects (N, {}, H, W), got {}", path, input_shape().c, tensor.shape().str()));
    }
    return tensor;
  }
  /// What --output calls output k.
  virtual std::string output_name(std::size_t k) const {
    (void)k;
    return "";
  }
  /// The shape --output writes output k (of the last forward) with: corgy's 4-D one unless the model declares another.
  virtual std::vector<std::int64_t> output_dims(std::size_t k, const corgy::Variable& output) const {
    (void)k;
    const corgy::Shape& s = output.shape();
    return {s.n, s.c, s.h, s.w};
  }
};

class DarknetRun final : public Model {
 public:
  explicit DarknetRun(const Options& options)
      : net_(corgy::build_darknet_model(corgy::read_darknet_cfg(options.cfg), {options.width, options.height})) {
    if (!options.weights.empty()) {
      corgy::load_darknet_weights(net_, options.weights);
    } else if (options.random_weights) {
      const std::uint32_t seed = *options.random_weights;
      corgy::load_darknet_weights(net_, corgy::random_darknet_weights(net_, seed), "random weights");
      fmt::print("weights: deterministic random (seed {})\n", seed);
    } else {
      throw corgy::Error("--weights or --random-weights is required (--help lists the options)");
    }
  }
  std::string name() const override { return net_.cfg.source; }
  corgy::Sequential& sequential() override { return net_.model; }
  corgy::Shape input_shape() const override { return net_.input_shape(); }
  Input read_image(const std::string& path) const override {
    return {corgy::letterbox_image(corgy::load_image(path, net_.channels), net_.width, net_.height), std::nullopt,
            std::nullopt};
  }
  std::vector<const corgy::Variable*> forward(const corgy::Variable& input) override { return net_.forward(input); }

 private:
  corgy::DarknetModel net_;
};

class MnistRun final : public Model {
 public:
  explicit MnistRun(const std::string& directory) : directory_(directory), model_(corgy::load_mnist_model(directory)) {}
  std::string name() const override { return "MNIST (" + directory_ + ")"; }
  corgy::Sequential& sequential() override { return model_; }
  corgy::Shape input_shape() const override { return {1, 1, corgy::mnist_side, corgy::mnist_side}; }
  Input read_image(const std::string& path) const override {
    return {corgy::load_mnist_digit(path, true), std::nullopt, std::nullopt};
  }
  std::vector<const corgy::Variable*> forward(const corgy::Variable& input) override {
    model_.forward(input);
    return {&model_.output(corgy::MnistLayers::fc1)};
  }

 private:
  std::string directory_;
  corgy::Sequential model_;
};

class OnnxRun final : public Model {
 public:
  /// `preprocess`: how an image becomes the input; none: an image is refused (a .npy is the way). `letterbox`: an
  /// image is letterboxed to the input of a YOLOv8 export instead (--boxes).
  OnnxRun(const std::string& path, std::optional<corgy::ImagePreprocess> preprocess, bool letterbox)
      : net_(corgy::load_onnx(path)), preprocess_(std::move(preprocess)), letterbox_(letterbox) {}
  std::string name() const override {
    return fmt::format("{} (ONNX opset {}, {})", net_.source, net_.opset, net_.producer);
  }
  corgy::Sequential& sequential() override { return net_.model; }
  corgy::Shape input_shape() const override { return net_.input_shape(); }
  Input read_image(const std::string& path) const override {
    if (letterbox_) {
      // As detect_objects_yolov8 prepares it: the photo as read, in [0, 1], fitted to the input with its aspect kept.
      const corgy::Yolov8Layout layout = corgy::yolov8_layout(net_);
      corgy::Variable image = corgy::load_image(path, 3);
      return {corgy::letterbox_image(image, layout.width, layout.height), std::nullopt, std::move(image)};
    }
    // Without options an image is refused rather than guessed at: scaling and normalisation are the model's own.
    if (!preprocess_) {
      throw corgy::Error(
          fmt::format("{}: an ONNX model takes an image with preprocessing options (--preset imagenet, or --resize, "
                      "--crop, --scale, --mean, --std, --bgr: docs/corgy-run.md), or a .npy prepared as it expects "
                      "(float32 NCHW)",
                      path));
    }
    // The channels must be fixed; a height and width left free take the preprocessed size.
    const std::vector<std::int64_t>& dims = net_.input.dims;
    if (dims.size() != 4 || dims[1] < 1 || dims[1] > 4) {
      throw corgy::Error(fmt::format("{}: the input '{}' ({}) is not an image (N, C, H, W) of 1 to 4 channels",
                                     net_.source, net_.input.name, fmt::join(dims, ", ")));
    }
    corgy::PreprocessedImage prepared =
        corgy::preprocess_image(corgy::load_image(path, static_cast<int>(dims[1])), *preprocess_, path);
    const corgy::Shape& shape = prepared.tensor.shape();
    if ((dims[2] > 0 && dims[2] != shape.h) || (dims[3] > 0 && dims[3] != shape.w)) {
      throw corgy::Error(fmt::format(
          "{}: preprocessing gives {}, the model takes ({}): choose --resize / --crop to give {} x {} (W x H)", path,
          shape.str(), fmt::join(dims, ", "), dims[3], dims[2]));
    }
    return {std::move(prepared.tensor), prepared.geometry, std::nullopt};
  }
  std::vector<const corgy::Variable*> forward(const corgy::Variable& input) override {
    net_.forward(input);
    std::vector<const corgy::Variable*> outputs;
    for (std::size_t k = 0; k < net_.outputs.size(); ++k) outputs.push_back(&net_.output(k));
    return outputs;
  }
  /// The graph's declared rank: a classifier's (N, 1000), not corgy's (N, 1000, 1, 1).
  std::vector<std::int64_t> output_dims(std::size_t k, const corgy::Variable& output) const override {
    (void)output;
    return net_.output_dims(k);
  }
  corgy::Variable prepare_npy(corgy::Variable tensor, const std::string& path) const override {
    // A 2-D (N, F) array is read as (1, 1, N, F): corgy's batch of vectors is (N, F, 1, 1).
    const corgy::Shape s = tensor.shape();
    if (net_.input.dims.size() == 2 && s.n == 1 && s.c == 1) tensor.reshape({s.h, s.w, 1, 1});
    try {
      net_.check_input(tensor.shape());
    } catch (const corgy::Error& e) {
      throw corgy::Error(fmt::format("{}: {}", path, e.what()));
    }
    return tensor;
  }
  std::string output_name(std::size_t k) const override { return net_.outputs.at(k).name; }
  const corgy::OnnxModel& onnx() const { return net_; }

 private:
  corgy::OnnxModel net_;
  std::optional<corgy::ImagePreprocess> preprocess_;
  bool letterbox_ = false;
};

// A number "N" or a size "WxH" (--resize, --crop); throws corgy::Error naming `flag` otherwise.
struct SizeArgument {
  int width = 0;
  int height = 0;  // 0: the argument was one number, in `width`
};
SizeArgument parse_size(const std::string& text, const char* flag) {
  SizeArgument size;
  const std::size_t x = text.find('x');
  std::size_t used = 0;
  try {
    size.width = std::stoi(text.substr(0, x), &used);
    if (used != (x == std::string::npos ? text.size() : x)) throw std::invalid_argument(text);
    if (x != std::string::npos) {
      size.height = std::stoi(text.substr(x + 1), &used);
      if (used != text.size() - x - 1) throw std::invalid_argument(text);
    }
  } catch (const std::logic_error&) {
    throw corgy::Error(fmt::format("{} {}: expects a number N or a size WxH (e.g. 256 or 320x240)", flag, text));
  }
  if (size.width <= 0 || (x != std::string::npos && size.height <= 0)) {
    throw corgy::Error(fmt::format("{} {}: sizes must be positive", flag, text));
  }
  return size;
}

// The preprocessing that the options ask for: the preset's (or corgy::ImagePreprocess's defaults), each given option
// replacing its part; none when no option was given.
std::optional<corgy::ImagePreprocess> image_preprocess(const Options& options) {
  if (!preprocessing_given(options)) return std::nullopt;
  corgy::ImagePreprocess preprocess =
      options.preset == "imagenet" ? corgy::imagenet_preprocess() : corgy::ImagePreprocess{};
  if (!options.resize.empty()) {
    const SizeArgument size = parse_size(options.resize, "--resize");
    preprocess.resize_shorter = size.height == 0 ? size.width : 0;
    preprocess.resize_width = size.height == 0 ? 0 : size.width;
    preprocess.resize_height = size.height;
  }
  if (!options.crop.empty()) {
    const SizeArgument size = parse_size(options.crop, "--crop");
    preprocess.crop_width = size.width;
    preprocess.crop_height = size.height == 0 ? size.width : size.height;
  }
  if (options.scale) preprocess.scale = *options.scale;
  if (!options.mean.empty()) preprocess.mean = options.mean;
  if (!options.std.empty()) preprocess.std = options.std;
  if (options.bgr) preprocess.bgr = true;
  return preprocess;
}

// The input; `batch` 0 means "not given": one image, or as many as the .npy holds.
Input read_input(const Options& options, const Model& model, int batch) {
  const std::string& path = options.input;
  if (preprocessing_given(options) && (path.empty() || path.ends_with(".npy"))) {
    throw corgy::Error(
        fmt::format("--preset, --resize, --crop, --scale, --mean, --std and --bgr prepare an image "
                    "--input, and {} is none",
                    path.empty() ? "the default grey input" : path));
  }
  if (path.empty()) {
    corgy::Shape shape = model.input_shape();
    shape.n = std::max(batch, 1);
    corgy::Variable grey(shape);
    grey.fill(0.5f);
    return {std::move(grey), std::nullopt, std::nullopt};
  }
  if (!path.ends_with(".npy")) {
    Input image = model.read_image(path);
    return {repeat_batch(image.tensor, std::max(batch, 1)), image.geometry, std::move(image.image)};
  }
  corgy::Variable tensor = model.prepare_npy(corgy::load_npy(path), path);
  const corgy::Shape& shape = tensor.shape();
  if (batch == 0 || shape.n == batch) return {std::move(tensor), std::nullopt, std::nullopt};
  if (shape.n == 1) return {repeat_batch(tensor, batch), std::nullopt, std::nullopt};
  throw corgy::Error(fmt::format("{} holds a batch of {}; --batch {} asks for another", path, shape.n, batch));
}

// What output k is called in messages: "output 'name' (1, 1000)".
std::string describe_output(const Model& model, std::size_t k, const corgy::Variable& output) {
  const std::string name = model.output_name(k);
  return fmt::format("output {}({})", name.empty() ? "" : "'" + name + "' ",
                     fmt::join(model.output_dims(k, output), ", "));
}

/// --top: the K most probable classes of each image of the first output, (N, F) (corgy: (N, F, 1, 1)).
void print_top_classes(const Options& options, const Model& model, const corgy::Variable& output) {
  const corgy::Shape& s = output.shape();
  const std::string what = describe_output(model, 0, output);
  if (s.h != 1 || s.w != 1) {
    throw corgy::Error(fmt::format("--top needs class scores (N, F) as the first output; {} is not", what));
  }
  std::vector<std::string> labels;
  if (!options.labels.empty()) {
    labels = corgy::read_darknet_names(options.labels);
    if (labels.size() != static_cast<std::size_t>(s.c)) {
      throw corgy::Error(
          fmt::format("{}: {} class names, but {} has {} classes", options.labels, labels.size(), what, s.c));
    }
  }
  const auto classes = static_cast<std::size_t>(s.c);
  for (int n = 0; n < s.n; ++n) {
    const corgy::ClassProbabilities probabilities =
        corgy::class_probabilities(std::span(output.data() + static_cast<std::size_t>(n) * classes, classes));
    fmt::print("top {} of {}{}, probability = {}:\n", std::min<std::size_t>(*options.top, classes), what,
               s.n > 1 ? fmt::format(", image {}", n) : "",
               probabilities.from_logits ? "softmax of the output (logits)" : "the output (already a distribution)");
    fmt::print("  rank  index  probability{}\n", labels.empty() ? "" : "  label");
    const std::vector<corgy::ClassScore> top = corgy::top_classes(probabilities.values, *options.top);
    for (std::size_t rank = 0; rank < top.size(); ++rank) {
      const corgy::ClassScore& score = top[rank];
      fmt::print("  {:>4}  {:>5}  {:>11.6f}{}\n", rank + 1, score.index, score.probability,
                 labels.empty() ? "" : "  " + labels[static_cast<std::size_t>(score.index)]);
    }
  }
}

/// --mask: the first image's per-pixel argmax of the first output, (N, K, H, W), mapped back onto the input image.
void write_class_mask(const Options& options, const Model& model, const corgy::Variable& output, const Input& input) {
  const std::string what = describe_output(model, 0, output);
  if (model.output_dims(0, output).size() != 4) {
    throw corgy::Error(fmt::format("--mask needs class scores (N, K, H, W) as the first output; {} is not", what));
  }
  const corgy::ClassMask mask = corgy::argmax_class_mask(output, 0, what);
  const corgy::ClassMask on_image = input.geometry ? corgy::class_mask_on_image(mask, *input.geometry) : mask;
  corgy::save_class_mask_png(options.mask, on_image);
  fmt::print("wrote {} ({} x {}): the argmax of {} over its {} classes{}\n", options.mask, on_image.width,
             on_image.height, what, output.shape().c,
             input.geometry ? fmt::format(", mapped onto {}", options.input) : "");
}

/// --boxes: the objects a YOLOv8 export finds in each image of the first output, (N, 4 + classes, anchors), with
/// boxes in pixels of the image (of the network input for a .npy or the default input); --draw: the first image with
/// them drawn.
void print_boxes(const Options& options, const OnnxRun& model, const corgy::Variable& output, const Input& input) {
  const corgy::Yolov8Layout layout = corgy::yolov8_layout(model.onnx());
  const std::string what = describe_output(model, 0, output);
  std::vector<std::string> labels;
  if (!options.labels.empty()) {
    labels = corgy::read_darknet_names(options.labels);
    if (labels.size() != static_cast<std::size_t>(layout.classes)) {
      throw corgy::Error(fmt::format("{}: {} class names, but {} has {} classes", options.labels, labels.size(), what,
                                     layout.classes));
    }
  }
  const int width = input.image ? input.image->shape().w : layout.width;
  const int height = input.image ? input.image->shape().h : layout.height;
  const std::string source = input.image ? fmt::format("{} ({} x {}, letterboxed to {} x {})", options.input, width,
                                                       height, layout.width, layout.height)
                                         : fmt::format("the {} x {} input", width, height);
  const corgy::DetectOptions detect{
      .threshold = options.score_threshold, .nms = options.iou_threshold, .fit = corgy::ImageFit::letterbox};
  std::vector<corgy::LabeledBox> first;
  for (int n = 0; n < output.shape().n; ++n) {
    std::vector<corgy::LabeledBox> boxes =
        corgy::decode_yolov8_detections(output, n, width, height, layout.width, layout.height, detect);
    fmt::print("{} boxes in {} of {}{} (YOLOv8, {} classes): score > {}, per-class NMS at IoU {}\n", boxes.size(), what,
               source, output.shape().n > 1 ? fmt::format(", image {}", n) : "", layout.classes,
               options.score_threshold, options.iou_threshold);
    fmt::print("  class     score         x1         y1         x2         y2{}\n", labels.empty() ? "" : "  label");
    for (const corgy::LabeledBox& b : boxes) {
      fmt::print("  {:>5}  {:>8.6f}  {:>9.3f}  {:>9.3f}  {:>9.3f}  {:>9.3f}{}\n", b.class_id, b.probability,
                 b.box.left(), b.box.top(), b.box.right(), b.box.bottom(),
                 labels.empty() ? "" : "  " + labels[static_cast<std::size_t>(b.class_id)]);
    }
    if (n == 0) first = std::move(boxes);
  }
  if (options.draw.empty()) return;
  if (!input.image) {
    throw corgy::Error(fmt::format("--draw draws on an image --input, and {} is none",
                                   options.input.empty() ? "the default grey input" : options.input));
  }
  corgy::Variable picture = input.image->clone();
  corgy::draw_detections(picture, first, labels, layout.classes);
  corgy::save_png(options.draw, picture);
  fmt::print("wrote {} ({} x {}): {} with its {} boxes\n", options.draw, width, height, options.input, first.size());
}

void time_forwards(Model& model, const corgy::Variable& input, int repeat) {
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    model.forward(input);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
  const double gflop = model.sequential().flops(input.shape()) / 1e9;
  fmt::print(
      "forward: median {:.2f} ms, min {:.2f} ms, max {:.2f} ms over {} runs after 1 warm-up; {:.2f} GFLOP, "
      "{:.1f} GFLOP/s at the median\n",
      median, ms.front(), ms.back(), repeat, gflop, gflop / (median / 1e3));
}

/// The per-layer profile (corgy/model/profile.h) against the FMA peak of the backend's threads, measured now (CPU
/// backends; a GPU backend's rows have no peak).
void print_profile(Model& model, const corgy::Variable& input, int repeat) {
  corgy::Sequential& sequential = model.sequential();
  const std::vector<corgy::LayerProfile> rows = corgy::profile_forward(sequential, input, repeat);
  if (rows.empty()) {
    fmt::print("backend {} does not profile\n", sequential.backend().name());
    return;
  }
  const corgy::CpuIsa isa = corgy::widest_cpu_isa();
  double peak = 0.0;
  std::string label = "none (a GPU backend, or a CPU without AVX2)";
  if (!sequential.backend().name().starts_with("vulkan") && isa != corgy::CpuIsa::generic) {
    const int threads = std::max(1, sequential.backend().threads());
    peak = corgy::fma_peak_gflops(isa, threads, 5, 5'000'000);
    label = fmt::format("{} FMA peak of {} thread{}, measured now: {:.1f} GFLOP/s", corgy::isa_name(isa), threads,
                        threads == 1 ? "" : "s", peak);
  }
  fmt::print("{}", corgy::format_profile(rows, peak, label));
}

int run(const Options& options) {
  if (!options.labels.empty() && !options.top && !options.boxes) {
    throw corgy::Error("--labels names the classes of --top or --boxes; give one of them");
  }
  if (options.boxes && preprocessing_given(options)) {
    throw corgy::Error(
        "--boxes letterboxes an image to the model's input as YOLOv8 expects; --preset, --resize, --crop, --scale, "
        "--mean, --std and --bgr do not apply");
  }
  std::unique_ptr<Model> model;
  const OnnxRun* onnx = nullptr;
  if (!options.mnist.empty()) {
    model = std::make_unique<MnistRun>(options.mnist);
  } else if (!options.onnx.empty()) {
    auto onnx_run = std::make_unique<OnnxRun>(options.onnx, image_preprocess(options), options.boxes);
    onnx = onnx_run.get();
    model = std::move(onnx_run);
  } else {
    model = std::make_unique<DarknetRun>(options);
  }
  model->sequential().set_backend(options.backend, options.threads);
  const Input input = read_input(options, *model, options.batch);
  const corgy::Backend& backend = model->sequential().backend();
  fmt::print("model {}: input {}, backend {} ({} threads)\n", model->name(), input.tensor.shape().str(), backend.name(),
             backend.threads());

  const std::vector<const corgy::Variable*> outputs = model->forward(input.tensor);  // also the warm-up
  if (!options.output.empty()) {
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      const std::string path = fmt::format("{}.{}.npy", options.output, k);
      const std::vector<std::int64_t> dims = model->output_dims(k, *outputs[k]);
      corgy::save_npy(path, *outputs[k], dims);
      const std::string name = model->output_name(k);
      fmt::print("wrote {} ({}){}\n", path, fmt::join(dims, ", "), name.empty() ? "" : " = output '" + name + "'");
    }
  }
  // The answers, each read from the first output.
  if (options.top) print_top_classes(options, *model, *outputs.at(0));
  if (!options.mask.empty()) write_class_mask(options, *model, *outputs.at(0), input);
  if (options.boxes) print_boxes(options, *onnx, *outputs.at(0), input);
  if (options.repeat) time_forwards(*model, input.tensor, *options.repeat);
  if (options.profile) print_profile(*model, input.tensor, options.repeat.value_or(10));
  return 0;
}

void list_operators() {
  fmt::print("ONNX operators corgy-run --onnx (corgy::load_onnx) supports, opsets {} to {} (docs/onnx.md):\n",
             corgy::onnx_min_opset, corgy::onnx_max_opset);
  for (const corgy::OnnxOperatorSupport& op : corgy::onnx_supported_operators()) {
    const std::string opsets = op.first_opset == corgy::onnx_min_opset && op.last_opset == corgy::onnx_max_opset
                                   ? std::string()
                                   : fmt::format(" (opsets {} to {})", op.first_opset, op.last_opset);
    fmt::print("  {:<22} {}{}\n", op.op_type, op.becomes, opsets);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("", "corgy-run");
  Options options;
  define_options(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;  // --help: 0; a bad flag or value: the message on stderr, 1
  }
  if (options.list_ops) {
    list_operators();
    return 0;
  }
  if (options.cfg.empty() && options.mnist.empty() && options.onnx.empty()) {
    fmt::print("{}", app.help());
    return 2;
  }
  try {
    return run(options);
  } catch (const std::exception& e) {
    fmt::print(stderr, "corgy-run: {}\n", e.what());
    return 1;
  }
}
