// tiny_yolo: object detection with a darknet YOLO cfg + weights on a JPEG/PNG photo. Prints the detections and
// writes the photo with boxes and labels as a PNG. See docs/darknet.md.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "corgy/corgy.h"

namespace {

struct Options {
  std::string cfg;
  std::string weights;
  std::optional<std::uint32_t> random_weights;
  std::string image;
  std::string names;
  std::string output = "predictions.png";
  std::string backend = "auto";
  int threads = 0;
  float threshold = 0.5f;
  float nms = 0.45f;
  bool resize = false;
  int width = 0;
  int height = 0;
};

void define_options(CLI::App& app, Options& options) {
  app.description(
      "Detects objects in a photo with a darknet Tiny YOLO model and writes the photo with the boxes drawn.\n"
      "  tiny_yolo --cfg FILE (--weights FILE | --random-weights SEED) --image FILE [options]");
  app.add_option("--cfg", options.cfg, "darknet cfg, e.g. data/darknet/yolov2-tiny-voc.cfg")
      ->type_name("FILE")
      ->required();
  CLI::Option* weights =
      app.add_option("--weights", options.weights, "darknet .weights trained for that cfg")->type_name("FILE");
  CLI::Option* random =
      app.add_option("--random-weights", options.random_weights,
                     "deterministic random weights instead (no trained file needed; the boxes mean nothing)")
          ->type_name("SEED");
  weights->excludes(random);
  app.add_option("--image", options.image, "JPEG or PNG photo")->type_name("FILE")->required();
  app.add_option("--names", options.names, "class names, one per line (data/darknet/voc.names, coco.names)")
      ->type_name("FILE");
  app.add_option("--output", options.output, "annotated PNG to write")->type_name("FILE")->capture_default_str();
  app.add_option("--backend", options.backend, "naive, blas, vulkan or auto")->type_name("NAME")->capture_default_str();
  app.add_option("--threads", options.threads, "CPU threads, 0 = all cores")
      ->type_name("N")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
  app.add_option("--threshold", options.threshold, "report boxes whose class probability exceeds P")
      ->type_name("P")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--nms", options.nms, "per-class NMS overlap threshold")
      ->type_name("IOU")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_flag("--resize", options.resize, "stretch the photo to the input size instead of darknet's letterbox");
  app.add_option("--width", options.width, "network input width instead of the cfg's (a multiple of 32)")
      ->type_name("W")
      ->check(CLI::Range(0, 1 << 30));
  app.add_option("--height", options.height, "network input height instead of the cfg's (a multiple of 32)")
      ->type_name("H")
      ->check(CLI::Range(0, 1 << 30));
}

// Returns a warning to show when the weights are random, empty for a trained file.
std::string load_weights(corgy::DarknetModel& net, const Options& options) {
  if (!options.weights.empty()) {
    corgy::load_darknet_weights(net, options.weights);
    return {};
  }
  if (!options.random_weights) throw corgy::Error("--weights or --random-weights is required (--help lists them)");
  const std::uint32_t seed = *options.random_weights;
  corgy::load_darknet_weights(net, corgy::random_darknet_weights(net, seed), "random weights");
  return fmt::format("RANDOM WEIGHTS (seed {}): the boxes are meaningless", seed);
}

void print_detections(const std::vector<corgy::LabeledBox>& boxes, const std::vector<std::string>& names) {
  for (const corgy::LabeledBox& b : boxes) {
    const std::string name =
        b.class_id < static_cast<int>(names.size()) ? names[b.class_id] : fmt::format("class {}", b.class_id);
    fmt::print("  {:<16} {:5.1f}%  left {:6.1f} top {:6.1f} right {:6.1f} bottom {:6.1f}\n", name + ":",
               100 * b.probability, b.box.left(), b.box.top(), b.box.right(), b.box.bottom());
  }
}

int run(const Options& cli) {
  const corgy::DarknetOptions size{cli.width, cli.height};
  corgy::DarknetModel net = corgy::build_darknet_model(corgy::read_darknet_cfg(cli.cfg), size);
  if (!net.cfg.warnings.empty()) {
    fmt::print("{}: ignored {} training-only keys\n", net.cfg.source, net.cfg.warnings.size());
  }
  const std::string random_warning = load_weights(net, cli);
  if (!random_warning.empty()) fmt::print("{}; this run shows the pipeline only.\n", random_warning);
  net.model.set_backend(cli.backend, cli.threads);
  const std::vector<std::string> names =
      cli.names.empty() ? std::vector<std::string>{} : corgy::read_darknet_names(cli.names);

  const corgy::DetectOptions options{.threshold = cli.threshold,
                                     .nms = cli.nms,
                                     .fit = cli.resize ? corgy::ImageFit::resize : corgy::ImageFit::letterbox};
  corgy::Variable image = corgy::load_image(cli.image, net.channels);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<corgy::LabeledBox> boxes = corgy::detect_objects(net, image, options);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  fmt::print(
      "{}: {} x {} image, network input {} x {}, backend {}: {} detections in {:.1f} ms (first run, "
      "including setup)\n",
      cli.image, image.shape().w, image.shape().h, net.width, net.height, net.model.backend().name(), boxes.size(), ms);
  print_detections(boxes, names);
  const int classes =
      net.heads.empty() ? 1 : std::visit([](const auto& head) { return head.classes; }, net.heads[0].params);
  corgy::draw_detections(image, boxes, names, classes);
  if (!random_warning.empty()) {
    corgy::draw_label(image, 0, image.shape().h - 32, random_warning, {1, 1, 1}, {0.8f, 0, 0}, 2);
  }
  corgy::save_png(cli.output, image);
  fmt::print("wrote {}\n", cli.output);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("", "tiny_yolo");
  Options options;
  define_options(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;  // --help: 0; a bad flag or value: the message on stderr, 1
  }
  try {
    return run(options);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tiny_yolo: {}\n", e.what());
    return 1;
  }
}
