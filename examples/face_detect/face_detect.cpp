// face_detect: finds faces in photos with face-api's trained tiny face detector (data/face_api), prints each face
// with its score and box, and writes the photo with the boxes drawn as a PNG. See docs/face-detector.md.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "corgy/corgy.h"

namespace {

struct Options {
  std::vector<std::string> images;
  std::string model;
  std::string output_dir = ".";
  std::string backend = "auto";
  int threads = 0;
  int size = 416;
  float threshold = 0.5f;
  int repeat = 0;
};

void define_options(CLI::App& app, Options& options) {
  app.description(
      "Finds faces in photos with face-api's trained tiny face detector (data/face_api), prints each face with its "
      "score and box, and writes the photo with the boxes drawn as <photo name>-faces.png.");
  app.add_option("IMAGE", options.images, "JPEG or PNG photos")->type_name("IMAGE")->required();
  app.add_option("--model", options.model,
                 "TensorFlow.js weights manifest of the detector (default: data/face_api/"
                 "tiny_face_detector_model-weights_manifest.json of corgy's source tree)")
      ->type_name("FILE");
  app.add_option("--output-dir", options.output_dir, "where to write <photo name>-faces.png")
      ->type_name("DIR")
      ->capture_default_str();
  app.add_option("--backend", options.backend, "naive, blas, vulkan or auto")->type_name("NAME")->capture_default_str();
  app.add_option("--threads", options.threads, "CPU threads, 0 = all cores")
      ->type_name("N")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
  app.add_option("--size", options.size,
                 "network input side, a multiple of 32: 416 or 608 for small faces, 128..320 for speed")
      ->type_name("S")
      ->check(CLI::Range(32, 1 << 16))
      ->capture_default_str();
  app.add_option("--threshold", options.threshold, "report faces scoring above P (face-api's default)")
      ->type_name("P")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--repeat", options.repeat, "time N more detections per photo after the first and print their median")
      ->type_name("N")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
}

// --model, else the manifest in data/face_api of the source tree this program was built from, else ./data/face_api.
std::string model_path(const std::string& model) {
  if (!model.empty()) return model;
  const std::string manifest = "tiny_face_detector_model-weights_manifest.json";
  for (const std::string directory : {CORGY_FACE_API_DATA_DIR, "data/face_api"}) {
    const std::filesystem::path candidate = std::filesystem::path(directory) / manifest;
    if (std::filesystem::exists(candidate)) return candidate.string();
  }
  throw corgy::Error(
      fmt::format("cannot find {} in {} or ./data/face_api; pass --model", manifest, CORGY_FACE_API_DATA_DIR));
}

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// The median time of `repeat` detections (input preparation, forward and decoding) on `image`.
double median_ms(corgy::Sequential& model, const corgy::Variable& image, const corgy::FaceDetectorOptions& options,
                 int repeat) {
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    corgy::detect_faces(model, image, options);
    times.push_back(milliseconds_since(start));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void detect_in(corgy::Sequential& model, const std::string& path, const corgy::FaceDetectorOptions& options,
               const std::filesystem::path& output_dir, int repeat) {
  corgy::Variable image = corgy::load_image(path, 3);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<corgy::LabeledBox> faces = corgy::detect_faces(model, image, options);
  const double first_ms = milliseconds_since(start);
  fmt::print("{}: {} x {}, input {} x {}, backend {}: {} face{} in {:.1f} ms (first run)", path, image.shape().w,
             image.shape().h, options.input_size, options.input_size, model.backend().name(), faces.size(),
             faces.size() == 1 ? "" : "s", first_ms);
  if (repeat > 0) fmt::print(", median of {} more: {:.1f} ms", repeat, median_ms(model, image, options, repeat));
  fmt::print("\n");
  for (const corgy::LabeledBox& face : faces) {
    fmt::print("  face {:5.1f}%  left {:6.1f} top {:6.1f} width {:6.1f} height {:6.1f}\n", 100 * face.probability,
               face.box.left(), face.box.top(), face.box.w, face.box.h);
  }
  corgy::draw_detections(image, faces, {"face"}, 1);
  const std::filesystem::path output = output_dir / (std::filesystem::path(path).stem().string() + "-faces.png");
  corgy::save_png(output.string(), image);
  fmt::print("  wrote {}\n", output.string());
}

int run(const Options& cli) {
  if (cli.size % 32 != 0) throw corgy::Error(fmt::format("--size must be a multiple of 32, got {}", cli.size));
  const corgy::FaceDetectorOptions options{.input_size = cli.size, .score_threshold = cli.threshold};
  const std::filesystem::path output_dir = cli.output_dir;
  std::filesystem::create_directories(output_dir);

  const std::string manifest = model_path(cli.model);
  corgy::Sequential model = corgy::load_tiny_face_detector(manifest);
  model.set_backend(cli.backend, cli.threads);
  const int side = options.input_size;
  fmt::print("{}: {:.3f} GFLOP per forward at {} x {}\n", manifest, model.flops(corgy::Shape{1, 3, side, side}) / 1e9,
             side, side);
  for (const std::string& path : cli.images) detect_in(model, path, options, output_dir, cli.repeat);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("", "face_detect");
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
    fmt::print(stderr, "face_detect: {}\n", e.what());
    return 1;
  }
}
