// detect: object detection with an ONNX YOLOv8 export (output (1, 4 + classes, anchors)) on a JPEG/PNG photo. Prints
// the detections and writes the photo with boxes and labels as a PNG. See docs/onnx.md "YOLOv8 detection".
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "corgy/corgy.h"

namespace {

struct Options {
  std::string model;
  std::string image;
  std::string names;
  std::string output = "detections.png";
  std::string backend = "auto";
  int threads = 0;
  // Ultralytics' predict defaults (conf 0.25, iou 0.7).
  float threshold = 0.25f;
  float nms = 0.7f;
  int max_detections = 300;
  bool resize = false;
};

void define_options(CLI::App& app, Options& options) {
  app.description(
      "Detects objects in a photo with a YOLOv8-style ONNX model (the box decoding in the graph, output\n"
      "(1, 4 + classes, anchors)) and writes the photo with the boxes drawn.\n"
      "  detect --model FILE.onnx --image FILE [options]");
  app.add_option("--model", options.model, "ONNX detector, e.g. tools/make_onnx_models.py's yolov8n")
      ->type_name("FILE")
      ->required();
  app.add_option("--image", options.image, "JPEG or PNG photo")->type_name("FILE")->required();
  app.add_option("--names", options.names, "class names, one per line (data/darknet/coco.names)")->type_name("FILE");
  app.add_option("--output", options.output, "annotated PNG to write")->type_name("FILE")->capture_default_str();
  app.add_option("--backend", options.backend, "naive, blas, vulkan or auto")->type_name("NAME")->capture_default_str();
  app.add_option("--threads", options.threads, "CPU threads, 0 = all cores")
      ->type_name("N")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
  app.add_option("--threshold", options.threshold, "report boxes whose class score exceeds P")
      ->type_name("P")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--nms", options.nms, "per-class NMS overlap threshold")
      ->type_name("IOU")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--max-detections", options.max_detections, "keep at most the N most probable boxes, 0 = all")
      ->type_name("N")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
  app.add_flag("--resize", options.resize, "stretch the photo to the input size instead of letterboxing it");
}

// A warning to show when the file says its weights are random (tools/make_onnx_models.py marks them), else empty.
std::string random_weights_warning(const corgy::OnnxModel& net) {
  const auto weights = net.metadata.find("weights");
  if (weights == net.metadata.end() || weights->second.find("random") == std::string::npos) return {};
  return fmt::format("RANDOM WEIGHTS (the file says: {}): the boxes are meaningless", weights->second);
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
  corgy::OnnxModel net = corgy::load_onnx(cli.model);
  const corgy::Yolov8Layout layout = corgy::yolov8_layout(net);
  const std::string warning = random_weights_warning(net);
  if (!warning.empty()) fmt::print("{}; this run shows the pipeline only.\n", warning);
  net.model.set_backend(cli.backend, cli.threads);
  const std::vector<std::string> names =
      cli.names.empty() ? std::vector<std::string>{} : corgy::read_darknet_names(cli.names);

  const corgy::DetectOptions options{.threshold = cli.threshold,
                                     .nms = cli.nms,
                                     .fit = cli.resize ? corgy::ImageFit::resize : corgy::ImageFit::letterbox};
  corgy::Variable image = corgy::load_image(cli.image, 3);
  const auto start = std::chrono::steady_clock::now();
  std::vector<corgy::LabeledBox> boxes = corgy::detect_objects_yolov8(net, image, options);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  // Ultralytics' max_det: random weights put a box of some class above any threshold nearly everywhere.
  const std::size_t found = boxes.size();
  if (cli.max_detections > 0 && found > static_cast<std::size_t>(cli.max_detections)) {
    boxes.resize(static_cast<std::size_t>(cli.max_detections));
  }

  fmt::print(
      "{}: {} x {} image, network input {} x {}, {} classes, {} anchors, backend {}: {} detections in {:.1f} ms "
      "(first run, including setup){}\n",
      cli.image, image.shape().w, image.shape().h, layout.width, layout.height, layout.classes, layout.anchors,
      net.model.backend().name(), found, ms,
      found > boxes.size() ? fmt::format("; the {} most probable:", boxes.size()) : "");
  print_detections(boxes, names);
  corgy::draw_detections(image, boxes, names, layout.classes);
  if (!warning.empty()) {
    corgy::draw_label(image, 0, image.shape().h - 32, "RANDOM WEIGHTS: the boxes are meaningless", {1, 1, 1},
                      {0.8f, 0, 0}, 2);
  }
  corgy::save_png(cli.output, image);
  fmt::print("wrote {}\n", cli.output);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("", "detect");
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
    fmt::print(stderr, "detect: {}\n", e.what());
    return 1;
  }
}
