// face_detect: finds faces in photos with face-api's trained tiny face detector (data/face_api), prints each face
// with its score and box, and writes the photo with the boxes drawn as a PNG. See docs/face-detector.md.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "corgy/corgy.h"

namespace {

constexpr const char* usage = R"(usage: face_detect [options] IMAGE...

  IMAGE...          JPEG or PNG photos
  --model FILE      TensorFlow.js weights manifest of the detector (default: data/face_api/
                    tiny_face_detector_model-weights_manifest.json of corgy's source tree)
  --output-dir DIR  where to write <photo name>-faces.png (default: the current folder)
  --backend NAME    naive, blas, vulkan or auto (default auto)
  --threads N       CPU threads, 0 = all cores (default 0)
  --size S          network input side, a multiple of 32: 416 (default) or 608 for small faces, 128..320 for speed
  --threshold P     report faces scoring above P (default 0.5, face-api's)
  --repeat N        time N more detections per photo after the first and print their median (default 0)
)";

using Flags = std::map<std::string, std::string>;

struct Arguments {
  Flags flags;
  std::vector<std::string> images;
};

Arguments parse_arguments(int argc, char** argv) {
  Arguments arguments;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help") {
      arguments.flags[arg] = "1";
    } else if (arg.starts_with("--") && i + 1 < argc) {
      arguments.flags[arg] = argv[++i];
    } else if (arg.starts_with("--")) {
      throw corgy::Error(fmt::format("{} needs a value\n{}", arg, usage));
    } else {
      arguments.images.push_back(arg);
    }
  }
  return arguments;
}

std::string flag_or(const Flags& flags, const std::string& name, const std::string& fallback) {
  const auto it = flags.find(name);
  return it == flags.end() ? fallback : it->second;
}

// The numeric value of flag `name` (int or float), or `fallback`; throws for text that is not a number >= minimum.
template <class T>
T number_flag(const Flags& flags, const std::string& name, T fallback, T minimum) {
  const auto it = flags.find(name);
  if (it == flags.end()) return fallback;
  const std::string& text = it->second;
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < minimum) {
    throw corgy::Error(fmt::format("{} expects a number >= {}, got '{}'", name, minimum, text));
  }
  return value;
}

// --model, else the manifest in data/face_api of the source tree this program was built from, else ./data/face_api.
std::string model_path(const Flags& flags) {
  if (flags.contains("--model")) return flags.at("--model");
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

int run(int argc, char** argv) {
  const Arguments arguments = parse_arguments(argc, argv);
  const Flags& flags = arguments.flags;
  if (flags.contains("--help")) {
    fmt::print("{}", usage);
    return 0;
  }
  if (arguments.images.empty()) throw corgy::Error(fmt::format("no IMAGE given\n{}", usage));
  const corgy::FaceDetectorOptions options{.input_size = number_flag(flags, "--size", 416, 32),
                                           .score_threshold = number_flag(flags, "--threshold", 0.5f, 0.0f)};
  if (options.input_size % 32 != 0) throw corgy::Error(fmt::format("--size must be a multiple of 32\n{}", usage));
  const int repeat = number_flag(flags, "--repeat", 0, 0);
  const std::filesystem::path output_dir = flag_or(flags, "--output-dir", ".");
  std::filesystem::create_directories(output_dir);

  const std::string manifest = model_path(flags);
  corgy::Sequential model = corgy::load_tiny_face_detector(manifest);
  model.set_backend(flag_or(flags, "--backend", "auto"), number_flag(flags, "--threads", 0, 0));
  const int side = options.input_size;
  fmt::print("{}: {:.3f} GFLOP per forward at {} x {}\n", manifest, model.flops(corgy::Shape{1, 3, side, side}) / 1e9,
             side, side);
  for (const std::string& path : arguments.images) detect_in(model, path, options, output_dir, repeat);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "face_detect: {}\n", e.what());
    return 1;
  }
}
