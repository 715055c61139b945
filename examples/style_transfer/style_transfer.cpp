// style_transfer: renders a photo in the styles of the multi-style network (data/style_transfer), or in a blend of
// them, and writes the result as a PNG. See docs/style-transfer.md.
//
//   style_transfer --style 0.7,0.3,0,0 --size 512 photo.png out.png
//   style_transfer --style leopard --backend vulkan photo.png out.png
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "corgy/corgy.h"

namespace {

struct Options {
  std::string weights;
  std::string style = "0";
  int size = 512;
  std::string backend = "auto";
  int threads = 0;
  std::string padding;
  int repeat = 0;
  bool list_styles = false;
  std::string input;
  std::string output;
};

// --weights, else data/style_transfer/weights of the source tree this program was built from, else the same
// folder under the current one.
std::string weights_directory(const Options& options) {
  if (!options.weights.empty()) return options.weights;
  for (const std::string directory : {CORGY_STYLE_TRANSFER_WEIGHTS_DIR, "data/style_transfer/weights"}) {
    if (std::filesystem::exists(std::filesystem::path(directory) / "manifest.json")) return directory;
  }
  throw corgy::Error(fmt::format("no style transfer weights in {} or ./data/style_transfer/weights: pass --weights DIR",
                                 CORGY_STYLE_TRANSFER_WEIGHTS_DIR));
}

// --style: a style's name or index ("leopard", "2"), or one weight per style ("0.7,0.3,0,0"), scaled to sum to 1.
std::vector<float> style_weights(const std::string& text, const std::vector<std::string>& names) {
  const int styles = static_cast<int>(names.size());
  std::vector<float> weights(styles, 0.0f);
  for (int s = 0; s < styles; ++s) {
    if (text == names[s] || text == std::to_string(s)) {
      weights[s] = 1.0f;
      return weights;
    }
  }
  if (text.find(',') == std::string::npos && styles > 1) {
    throw corgy::Error(fmt::format("--style '{}' is neither a style ({}; or 0..{}) nor {} comma-separated weights",
                                   text, fmt::join(names, ", "), styles - 1, styles));
  }
  weights = corgy::parse_style_weights(text, styles);
  const float sum = std::accumulate(weights.begin(), weights.end(), 0.0f);
  if (!(sum > 0.0f)) throw corgy::Error(fmt::format("--style '{}': the weights must have a positive sum", text));
  for (float& w : weights) w /= sum;
  return weights;
}

// The photo resized (bilinearly, aspect ratio kept) so that its longer side is `size`, both sides rounded to a
// multiple of 4 so that the network's output has the input's size.
corgy::Variable prepare_photo(const std::string& path, int size) {
  corgy::Variable photo = corgy::load_image(path, 3);
  const int h = photo.shape().h;
  const int w = photo.shape().w;
  const double scale = size > 0 ? static_cast<double>(size) / std::max(h, w) : 1.0;
  const int height = std::max(8, static_cast<int>(std::lround(h * scale / 4.0)) * 4);
  const int width = std::max(8, static_cast<int>(std::lround(w * scale / 4.0)) * 4);
  if (height == h && width == w) return photo;
  return corgy::resize_image(photo, width, height);
}

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

int run(const Options& options) {
  const std::string directory = weights_directory(options);
  std::optional<corgy::PadMode> padding;
  if (options.padding == "zeros") padding = corgy::PadMode::constant;
  if (options.padding == "reflect") padding = corgy::PadMode::reflect;
  corgy::StyleTransferModel model = corgy::StyleTransferModel::load(directory, padding);
  if (options.list_styles) {
    for (std::size_t s = 0; s < model.style_names().size(); ++s) fmt::print("{} {}\n", s, model.style_names()[s]);
    return 0;
  }
  if (options.input.empty() || options.output.empty()) throw corgy::Error("give an input photo and an output PNG");
  const std::vector<float> weights = style_weights(options.style, model.style_names());
  model.set_style(weights);
  model.network().set_backend(options.backend, options.threads);

  const corgy::Variable photo = prepare_photo(options.input, options.size);
  std::vector<std::string> mix;
  for (std::size_t s = 0; s < weights.size(); ++s) {
    if (weights[s] != 0.0f) mix.push_back(fmt::format("{} {:.2f}", model.style_names()[s], weights[s]));
  }
  fmt::print("style_transfer: {} ({} x {}), style {}, backend {}\n", options.input, photo.shape().w, photo.shape().h,
             fmt::join(mix, " + "), model.network().backend().name());

  auto start = std::chrono::steady_clock::now();
  model.stylise(photo);
  const double first_ms = milliseconds_since(start);
  std::vector<double> times;
  for (int r = 0; r < options.repeat; ++r) {
    start = std::chrono::steady_clock::now();
    model.stylise(photo);
    times.push_back(milliseconds_since(start));
  }
  corgy::save_png(options.output, model.network().output(model.network().size() - 1));
  fmt::print("wrote {}: first forward {:.1f} ms", options.output, first_ms);
  if (!times.empty()) {
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    fmt::print(", median of {} more {:.1f} ms", times.size(), times[times.size() / 2]);
  }
  fmt::print("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Renders a photo in the styles of corgy's multi-style transfer network and writes a PNG."};
  Options options;
  app.add_option("input", options.input, "photo (JPEG, PNG, ...)");
  app.add_option("output", options.output, "the stylised photo (PNG)");
  app.add_option("--weights", options.weights,
                 "weights folder (manifest.json + .npy; default: data/style_transfer/weights of corgy's source tree)");
  app.add_option("--style", options.style,
                 "a style's name or index, or one weight per style, e.g. 0.7,0.3,0,0 (scaled to sum to 1)")
      ->capture_default_str();
  app.add_option("--size", options.size, "longer side of the network's input in pixels, 0 = the photo's own")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--backend", options.backend, "naive, blas, vulkan, vulkan:<device> or auto")->capture_default_str();
  app.add_option("--threads", options.threads, "CPU threads, 0 = all cores")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--padding", options.padding, "override the manifest's padding: reflect or zeros")
      ->check(CLI::IsMember({"reflect", "zeros"}));
  app.add_option("--repeat", options.repeat, "time N more forwards and print their median")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--list-styles", options.list_styles, "print the network's styles and exit");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(options);
  } catch (const std::exception& e) {
    fmt::print(stderr, "style_transfer: {}\n", e.what());
    return 1;
  }
}
