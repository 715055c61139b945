#include "corgy/models/darknet_detector.h"

#include <fmt/format.h>

#include "corgy/detect/nms.h"
#include "corgy/error.h"
#include "corgy/io/image.h"

namespace corgy {

std::vector<LabeledBox> decode_detections(const DarknetModel& net, const std::vector<const Variable*>& raw,
                                          int batch_index, int image_width, int image_height,
                                          const DetectOptions& options) {
  if (net.heads.empty()) throw Error(fmt::format("{}: the model has no [region] or [yolo] layer", net.cfg.source));
  if (raw.size() != net.heads.size()) {
    throw Error(fmt::format("decode_detections: the model has {} heads, got {} tensors", net.heads.size(), raw.size()));
  }
  std::vector<Detection> candidates;
  for (std::size_t k = 0; k < raw.size(); ++k) {
    std::vector<Detection> decoded;
    if (const auto* region = std::get_if<RegionHead>(&net.heads[k].params)) {
      decoded = decode_region(*region, *raw[k], batch_index, options.threshold);
    } else {
      decoded = decode_yolo(std::get<YoloHead>(net.heads[k].params), *raw[k], batch_index, net.width, net.height,
                            options.threshold);
    }
    candidates.insert(candidates.end(), std::make_move_iterator(decoded.begin()),
                      std::make_move_iterator(decoded.end()));
  }
  map_boxes_to_image(candidates, image_width, image_height, net.width, net.height, options.fit);
  nms_per_class(candidates, options.nms);
  return labeled_boxes(candidates, options.threshold);
}

std::vector<LabeledBox> detect_objects(DarknetModel& net, const Variable& image, const DetectOptions& options) {
  const Shape& s = image.shape();
  if (image.empty() || s.n != 1 || s.c != net.channels) {
    throw Error(fmt::format("detect_objects: expects an image (1, {}, H, W), got {}", net.channels, s.str()));
  }
  const Variable input = options.fit == ImageFit::letterbox ? letterbox_image(image, net.width, net.height)
                                                            : resize_image(image, net.width, net.height);
  return decode_detections(net, net.forward(input), 0, s.w, s.h, options);
}

}  // namespace corgy
