// tiny_yolo: object detection with a darknet YOLO cfg + weights on a JPEG/PNG photo. Prints the detections and
// writes the photo with boxes and labels as a PNG. See docs/darknet.md.
#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <map>
#include <string>

#include "corgy/corgy.h"

namespace {

constexpr const char* usage =
    R"(usage: tiny_yolo --cfg FILE (--weights FILE | --random-weights SEED) --image FILE [options]

  --cfg FILE             darknet cfg, e.g. data/darknet/yolov2-tiny-voc.cfg
  --weights FILE         darknet .weights trained for that cfg
  --random-weights SEED  deterministic random weights instead (no trained file needed; the boxes mean nothing)
  --image FILE           JPEG or PNG photo
  --names FILE           class names, one per line (data/darknet/voc.names, coco.names)
  --output FILE          annotated PNG to write (default predictions.png)
  --backend NAME         naive, blas, vulkan or auto (default auto)
  --threads N            CPU threads, 0 = all cores (default 0)
  --threshold P          report boxes whose class probability exceeds P (default 0.5)
  --nms IOU              per-class NMS overlap threshold (default 0.45)
  --resize               stretch the photo to the input size instead of darknet's letterbox
  --width W --height H   network input size instead of the cfg's (multiples of 32)
)";

// --flag value pairs, plus the flags that take no value.
std::map<std::string, std::string> parse_flags(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--resize" || flag == "--help") {
      flags[flag] = "1";
    } else if (flag.starts_with("--") && i + 1 < argc) {
      flags[flag] = argv[++i];
    } else {
      throw corgy::Error(fmt::format("unexpected argument '{}'\n{}", flag, usage));
    }
  }
  return flags;
}

std::string flag_or(const std::map<std::string, std::string>& flags, const std::string& name, std::string fallback) {
  const auto it = flags.find(name);
  return it == flags.end() ? fallback : it->second;
}

std::string required(const std::map<std::string, std::string>& flags, const std::string& name) {
  const auto it = flags.find(name);
  if (it == flags.end()) throw corgy::Error(fmt::format("{} is required\n{}", name, usage));
  return it->second;
}

// The numeric value of flag `name` (int or float), or `fallback`; throws for text that is not a number >= 0.
template <class T>
T number_flag(const std::map<std::string, std::string>& flags, const std::string& name, T fallback) {
  const auto it = flags.find(name);
  if (it == flags.end()) return fallback;
  T value{};
  const std::string& text = it->second;
  const auto [end, status] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (status != std::errc() || end != text.data() + text.size() || value < T{0}) {
    throw corgy::Error(fmt::format("{} expects a number >= 0, got '{}'", name, text));
  }
  return value;
}

// Returns a warning to show when the weights are random, empty for a trained file.
std::string load_weights(corgy::DarknetModel& net, const std::map<std::string, std::string>& flags) {
  if (flags.contains("--weights")) {
    corgy::load_darknet_weights(net, flags.at("--weights"));
    return {};
  }
  required(flags, "--random-weights");
  const auto seed = static_cast<std::uint32_t>(number_flag(flags, "--random-weights", 0));
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

int run(int argc, char** argv) {
  const auto flags = parse_flags(argc, argv);
  if (flags.contains("--help")) {
    fmt::print("{}", usage);
    return 0;
  }
  const corgy::DarknetOptions size{number_flag(flags, "--width", 0), number_flag(flags, "--height", 0)};
  corgy::DarknetModel net = corgy::build_darknet_model(corgy::read_darknet_cfg(required(flags, "--cfg")), size);
  if (!net.cfg.warnings.empty()) {
    fmt::print("{}: ignored {} training-only keys\n", net.cfg.source, net.cfg.warnings.size());
  }
  const std::string random_warning = load_weights(net, flags);
  if (!random_warning.empty()) fmt::print("{}; this run shows the pipeline only.\n", random_warning);
  net.model.set_backend(flag_or(flags, "--backend", "auto"), number_flag(flags, "--threads", 0));
  const std::vector<std::string> names =
      flags.contains("--names") ? corgy::read_darknet_names(flags.at("--names")) : std::vector<std::string>{};

  const corgy::DetectOptions options{
      .threshold = number_flag(flags, "--threshold", 0.5f),
      .nms = number_flag(flags, "--nms", 0.45f),
      .fit = flags.contains("--resize") ? corgy::ImageFit::resize : corgy::ImageFit::letterbox};
  corgy::Variable image = corgy::load_image(required(flags, "--image"), net.channels);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<corgy::LabeledBox> boxes = corgy::detect_objects(net, image, options);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  fmt::print(
      "{}: {} x {} image, network input {} x {}, backend {}: {} detections in {:.1f} ms (first run, "
      "including setup)\n",
      flags.at("--image"), image.shape().w, image.shape().h, net.width, net.height, net.model.backend().name(),
      boxes.size(), ms);
  print_detections(boxes, names);
  const int classes =
      net.heads.empty() ? 1 : std::visit([](const auto& head) { return head.classes; }, net.heads[0].params);
  corgy::draw_detections(image, boxes, names, classes);
  if (!random_warning.empty()) {
    corgy::draw_label(image, 0, image.shape().h - 32, random_warning, {1, 1, 1}, {0.8f, 0, 0}, 2);
  }
  const std::string output = flag_or(flags, "--output", "predictions.png");
  corgy::save_png(output, image);
  fmt::print("wrote {}\n", output);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tiny_yolo: {}\n", e.what());
    return 1;
  }
}
