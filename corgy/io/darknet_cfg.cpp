#include "corgy/io/darknet_cfg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>

#include "corgy/error.h"

namespace corgy {

namespace {

struct Option {
  std::string key;
  std::string value;
  int line = 0;
  bool used = false;
};

struct Section {
  std::string name;
  int line = 0;
  std::vector<Option> options;
};

// Darknet removes every whitespace character of a line before reading it (utils.c strip()), so
// "saturation = 1.5" and "anchors = 1.08,1.19,  3.42,4.41" are read as if written without spaces.
std::string strip_whitespace(std::string_view line) {
  std::string stripped;
  for (char c : line) {
    if (!std::isspace(static_cast<unsigned char>(c))) stripped += c;
  }
  return stripped;
}

std::vector<Section> split_sections(std::string_view text, const std::string& source) {
  std::vector<Section> sections;
  std::istringstream lines{std::string(text)};
  std::string raw;
  for (int number = 1; std::getline(lines, raw); ++number) {
    const std::string line = strip_whitespace(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      if (line.back() != ']' || line.size() < 3) {
        throw Error(fmt::format("{}:{}: malformed section header '{}'", source, number, line));
      }
      sections.push_back({line.substr(1, line.size() - 2), number, {}});
      continue;
    }
    const std::size_t equals = line.find('=');
    if (equals == std::string::npos || equals == 0) {
      throw Error(fmt::format("{}:{}: expected 'key=value' or '[section]', got '{}'", source, number, line));
    }
    if (sections.empty()) {
      throw Error(fmt::format("{}:{}: '{}' comes before the first [section]", source, number, line));
    }
    Option option{line.substr(0, equals), line.substr(equals + 1), number};
    for (const Option& earlier : sections.back().options) {
      if (earlier.key == option.key) {
        throw Error(fmt::format("{}:{}: key '{}' is set twice in [{}] (first at line {})", source, number, option.key,
                                sections.back().name, earlier.line));
      }
    }
    sections.back().options.push_back(std::move(option));
  }
  return sections;
}

// Reads a section's keys with darknet's defaults and remembers which were read, so that every other key can be
// reported.
class SectionReader {
 public:
  SectionReader(Section& section, const std::string& source) : section_(section), source_(source) {}

  bool has(std::string_view key) { return find(key) != nullptr; }

  int integer(std::string_view key, int fallback) {
    Option* option = find(key);
    if (!option) return fallback;
    int value = 0;
    const std::string& v = option->value;
    const auto [end, status] = std::from_chars(v.data(), v.data() + v.size(), value);
    if (v.empty() || status != std::errc() || end != v.data() + v.size()) fail(*option, "an integer");
    return value;
  }

  float real(std::string_view key, float fallback) {
    Option* option = find(key);
    if (!option) return fallback;
    return parse_real(*option, option->value);
  }

  std::string text(std::string_view key, std::string fallback) {
    Option* option = find(key);
    return option ? option->value : fallback;
  }

  std::vector<float> reals(std::string_view key) {
    std::vector<float> values;
    if (Option* option = find(key)) {
      for (const std::string& item : split_list(*option, "a list of numbers"))
        values.push_back(parse_real(*option, item));
    }
    return values;
  }

  std::vector<int> integers(std::string_view key) {
    std::vector<int> values;
    if (Option* option = find(key)) {
      for (const std::string& item : split_list(*option, "a list of integers")) {
        int value = 0;
        const auto [end, status] = std::from_chars(item.data(), item.data() + item.size(), value);
        if (status != std::errc() || end != item.data() + item.size()) fail(*option, "a list of integers");
        values.push_back(value);
      }
    }
    return values;
  }

  /// Line of `key`, or of the section header when the key is absent.
  int line_of(std::string_view key) {
    Option* option = find(key);
    return option ? option->line : section_.line;
  }

  /// Throws for the first key no reader asked for, unless only training uses it (then a warning).
  void finish(std::vector<std::string>& warnings) const {
    const auto& training = darknet_training_keys();
    for (const Option& option : section_.options) {
      if (option.used) continue;
      if (std::find(training.begin(), training.end(), option.key) != training.end()) {
        warnings.push_back(fmt::format("{}:{}: [{}] key '{}' ignored: only training uses it", source_, option.line,
                                       section_.name, option.key));
        continue;
      }
      throw Error(fmt::format("{}:{}: unknown key '{}' in [{}]", source_, option.line, option.key, section_.name));
    }
  }

  [[noreturn]] void fail_at(int line, const std::string& message) const {
    throw Error(fmt::format("{}:{}: [{}] {}", source_, line, section_.name, message));
  }

 private:
  Option* find(std::string_view key) {
    for (Option& option : section_.options) {
      if (option.key == key) {
        option.used = true;
        return &option;
      }
    }
    return nullptr;
  }

  [[noreturn]] void fail(const Option& option, std::string_view expected) const {
    fail_at(option.line, fmt::format("key '{}' expects {}, got '{}'", option.key, expected, option.value));
  }

  float parse_real(const Option& option, const std::string& text) const {
    float value = 0.0f;
    const char* begin = text.data() + (text.starts_with('+') ? 1 : 0);
    const auto [end, status] = std::from_chars(begin, text.data() + text.size(), value);
    if (text.empty() || status != std::errc() || end != text.data() + text.size()) fail(option, "a number");
    return value;
  }

  std::vector<std::string> split_list(const Option& option, std::string_view expected) const {
    std::vector<std::string> items;
    std::string_view rest = option.value;
    while (!rest.empty()) {
      const std::size_t comma = std::min(rest.find(','), rest.size());
      if (comma == 0) fail(option, expected);
      items.emplace_back(rest.substr(0, comma));
      rest.remove_prefix(std::min(comma + 1, rest.size()));
    }
    if (items.empty()) fail(option, expected);
    return items;
  }

  Section& section_;
  const std::string& source_;
};

Activation parse_activation(SectionReader& reader, std::string_view fallback) {
  const std::string name = reader.text("activation", std::string(fallback));
  if (name == "linear") return Activation::none();
  if (name == "leaky") return Activation::leaky_relu(0.1f);
  if (name == "relu") return Activation::relu();
  if (name == "logistic") return Activation::sigmoid();
  if (name == "tanh") return Activation::tanh();
  if (name == "mish") return Activation::mish();
  if (name == "swish") return Activation::swish();
  reader.fail_at(reader.line_of("activation"),
                 fmt::format("activation '{}' is not supported (corgy supports linear, leaky, relu, logistic, tanh, "
                             "mish, swish)",
                             name));
}

void require_positive(SectionReader& reader, std::string_view key, int value) {
  if (value <= 0) reader.fail_at(reader.line_of(key), fmt::format("{} must be positive, got {}", key, value));
}

DarknetLayerParams parse_convolutional(SectionReader& r) {
  DarknetConvolutional p;
  p.filters = r.integer("filters", 1);
  p.size = r.integer("size", 1);
  p.stride = r.integer("stride", 1);
  p.groups = r.integer("groups", 1);
  p.padding = r.integer("padding", 0);
  if (r.integer("pad", 0) != 0) p.padding = p.size / 2;
  p.batch_normalize = r.integer("batch_normalize", 0) != 0;
  p.activation = parse_activation(r, "logistic");
  for (auto [key, value] :
       {std::pair{"filters", p.filters}, {"size", p.size}, {"stride", p.stride}, {"groups", p.groups}}) {
    require_positive(r, key, value);
  }
  if (p.padding < 0) r.fail_at(r.line_of("padding"), fmt::format("padding must be >= 0, got {}", p.padding));
  return p;
}

DarknetLayerParams parse_connected(SectionReader& r) {
  DarknetConnected p;
  p.output = r.integer("output", 1);
  p.batch_normalize = r.integer("batch_normalize", 0) != 0;
  p.activation = parse_activation(r, "logistic");
  require_positive(r, "output", p.output);
  return p;
}

DarknetLayerParams parse_maxpool(SectionReader& r) {
  DarknetMaxpool p;
  p.stride = r.integer("stride", 1);
  p.size = r.integer("size", p.stride);
  p.padding = r.integer("padding", p.size - 1);
  require_positive(r, "stride", p.stride);
  require_positive(r, "size", p.size);
  if (p.padding < 0) r.fail_at(r.line_of("padding"), fmt::format("padding must be >= 0, got {}", p.padding));
  return p;
}

DarknetLayerParams parse_softmax(SectionReader& r) {
  if (const int groups = r.integer("groups", 1); groups != 1) {
    r.fail_at(r.line_of("groups"), fmt::format("groups={} is not supported (only 1)", groups));
  }
  if (const float temperature = r.real("temperature", 1.0f); temperature != 1.0f) {
    r.fail_at(r.line_of("temperature"), fmt::format("temperature={} is not supported (only 1)", temperature));
  }
  return DarknetSoftmax{};
}

// Darknet reads a negative index as relative to the layer being parsed.
int resolve_index(SectionReader& r, std::string_view key, int value, int current) {
  const int absolute = value < 0 ? current + value : value;
  if (absolute < 0 || absolute >= current) {
    r.fail_at(r.line_of(key), fmt::format("{}={} names layer {}, which does not exist: layer {} can only use "
                                          "layers 0..{}",
                                          key, value, absolute, current, current - 1));
  }
  return absolute;
}

DarknetLayerParams parse_route(SectionReader& r, int current) {
  if (!r.has("layers")) r.fail_at(r.line_of("layers"), "needs 'layers'");
  DarknetRoute p;
  for (int value : r.integers("layers")) p.layers.push_back(resolve_index(r, "layers", value, current));
  return p;
}

DarknetLayerParams parse_shortcut(SectionReader& r, int current) {
  if (!r.has("from")) r.fail_at(r.line_of("from"), "needs 'from'");
  DarknetShortcut p;
  p.from = resolve_index(r, "from", r.integer("from", 0), current);
  p.activation = parse_activation(r, "linear");
  return p;
}

DarknetLayerParams parse_upsample(SectionReader& r) {
  DarknetUpsample p;
  p.stride = r.integer("stride", 2);
  if (p.stride < 1) r.fail_at(r.line_of("stride"), fmt::format("stride={} is not supported (only >= 1)", p.stride));
  return p;
}

DarknetLayerParams parse_dropout(SectionReader& r) {
  const float probability = r.real("probability", 0.5f);
  if (probability < 0.0f || probability >= 1.0f) {
    r.fail_at(r.line_of("probability"), fmt::format("probability must be in [0, 1), got {}", probability));
  }
  return DarknetPassThrough{};
}

void check_anchors(SectionReader& r, const std::vector<float>& anchors, int num) {
  if (anchors.size() != 2 * static_cast<std::size_t>(num)) {
    r.fail_at(r.line_of("anchors"), fmt::format("needs 2 * num = {} anchor values (width, height per anchor), got {}",
                                                2 * num, anchors.size()));
  }
}

DarknetLayerParams parse_region(SectionReader& r) {
  RegionHead p;
  p.classes = r.integer("classes", 20);
  p.num = r.integer("num", 1);
  p.softmax = r.integer("softmax", 0) != 0;
  p.anchors = r.reals("anchors");
  if (const int coords = r.integer("coords", 4); coords != 4) {
    r.fail_at(r.line_of("coords"), fmt::format("coords={} is not supported (only 4)", coords));
  }
  require_positive(r, "classes", p.classes);
  require_positive(r, "num", p.num);
  check_anchors(r, p.anchors, p.num);
  return p;
}

DarknetLayerParams parse_yolo(SectionReader& r) {
  YoloHead p;
  p.classes = r.integer("classes", 20);
  const int num = r.integer("num", 1);
  p.anchors = r.reals("anchors");
  p.mask = r.integers("mask");
  p.scale_x_y = r.real("scale_x_y", 1.0f);
  require_positive(r, "classes", p.classes);
  require_positive(r, "num", num);
  check_anchors(r, p.anchors, num);
  if (p.mask.empty()) {
    for (int i = 0; i < num; ++i) p.mask.push_back(i);
  }
  for (int anchor : p.mask) {
    if (anchor < 0 || anchor >= num) {
      r.fail_at(r.line_of("mask"), fmt::format("mask names anchor {}, but num={}", anchor, num));
    }
  }
  return p;
}

// Darknet's short section names ([conv], [max], ...) in their long form.
std::string canonical_type(const std::string& name) {
  if (name == "conv") return "convolutional";
  if (name == "conn") return "connected";
  if (name == "max") return "maxpool";
  if (name == "avg") return "avgpool";
  if (name == "soft") return "softmax";
  if (name == "network") return "net";
  return name;
}

DarknetLayerParams parse_layer(const std::string& type, SectionReader& r, int index, const Section& section,
                               const std::string& source) {
  if (type == "convolutional") return parse_convolutional(r);
  if (type == "connected") return parse_connected(r);
  if (type == "maxpool") return parse_maxpool(r);
  if (type == "avgpool") return DarknetAvgpool{};
  if (type == "softmax") return parse_softmax(r);
  if (type == "route") return parse_route(r, index);
  if (type == "shortcut") return parse_shortcut(r, index);
  if (type == "upsample") return parse_upsample(r);
  if (type == "dropout") return parse_dropout(r);
  if (type == "cost") return DarknetPassThrough{};
  if (type == "region") return parse_region(r);
  if (type == "yolo") return parse_yolo(r);
  throw Error(
      fmt::format("{}:{}: unknown or unsupported layer type [{}]; corgy reads [convolutional], [connected], "
                  "[maxpool], [avgpool], [softmax], [route], [shortcut], [upsample], [dropout], [cost], "
                  "[region], [yolo]",
                  source, section.line, section.name));
}

void parse_net(Section& section, DarknetCfg& cfg) {
  SectionReader r(section, cfg.source);
  cfg.width = r.integer("width", 0);
  cfg.height = r.integer("height", 0);
  cfg.channels = r.integer("channels", 0);
  for (auto [key, value] : {std::pair{"width", cfg.width}, {"height", cfg.height}, {"channels", cfg.channels}}) {
    if (value <= 0) r.fail_at(r.line_of(key), fmt::format("needs a positive {} (the input size), got {}", key, value));
  }
  r.finish(cfg.warnings);
}

}  // namespace

const std::vector<std::string_view>& darknet_training_keys() {
  static const std::vector<std::string_view> keys = {
      // [net]: optimiser, schedule and data augmentation
      "batch", "subdivisions", "momentum", "decay", "learning_rate", "burn_in", "max_batches", "policy", "steps",
      "step", "scales", "gamma", "power", "angle", "saturation", "exposure", "hue", "aspect", "max_crop", "min_crop",
      "flip", "adam", "B1", "B2", "eps", "mosaic", "mixup", "cutmix", "blur", "time_steps", "notruth",
      // [region] / [yolo]: loss weights and training-time matching
      "jitter", "random", "thresh", "ignore_thresh", "truth_thresh", "rescore", "bias_match", "absolute",
      "object_scale", "noobject_scale", "class_scale", "coord_scale", "max", "iou_loss", "iou_normalizer",
      "cls_normalizer", "iou_thresh", "label_smooth_eps", "counters_per_class", "focal_loss", "max_delta",
      // [convolutional]: gradients
      "stopbackward"};
  return keys;
}

std::string DarknetCfg::location(int layer) const {
  const DarknetLayer& l = layers.at(static_cast<std::size_t>(layer));
  return fmt::format("{}:{} [{}] (layer {})", source, l.line, l.type, layer);
}

DarknetCfg parse_darknet_cfg(std::string_view text, const std::string& source) {
  std::vector<Section> sections = split_sections(text, source);
  if (sections.empty() || canonical_type(sections[0].name) != "net") {
    throw Error(fmt::format("{}:{}: the first section must be [net] (with width, height, channels)", source,
                            sections.empty() ? 1 : sections[0].line));
  }
  DarknetCfg cfg;
  cfg.source = source;
  parse_net(sections[0], cfg);
  for (std::size_t i = 1; i < sections.size(); ++i) {
    Section& section = sections[i];
    const std::string type = canonical_type(section.name);
    SectionReader reader(section, source);
    const int index = static_cast<int>(cfg.layers.size());
    DarknetLayer layer{type, section.line, parse_layer(type, reader, index, section, source)};
    reader.finish(cfg.warnings);
    cfg.layers.push_back(std::move(layer));
  }
  if (cfg.layers.empty()) throw Error(fmt::format("{}: no layers after [net]", source));
  return cfg;
}

DarknetCfg read_darknet_cfg(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error(fmt::format("{}: cannot open the darknet cfg", path));
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) throw Error(fmt::format("{}: cannot read the darknet cfg", path));
  return parse_darknet_cfg(text.str(), path);
}

}  // namespace corgy
