#include "corgy/models/yolov8_detector.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>

#include "corgy/detect/nms.h"
#include "corgy/detect/yolov8.h"
#include "corgy/error.h"
#include "corgy/io/image.h"

namespace corgy {

namespace {

bool fits_int(std::int64_t v) { return v > 0 && v <= std::numeric_limits<int>::max(); }

}  // namespace

Yolov8Layout yolov8_layout(const OnnxModel& net) {
  const std::vector<std::int64_t>& in = net.input.dims;
  if (in.size() != 4 || in[1] != 3 || !fits_int(in[2]) || !fits_int(in[3])) {
    throw Error(fmt::format("{}: a YOLOv8 model takes a fixed (N, 3, H, W) input, '{}' is ({})", net.source,
                            net.input.name, fmt::join(in, ", ")));
  }
  if (net.outputs.empty()) throw Error(fmt::format("{}: the model has no output", net.source));
  const std::vector<std::int64_t>& out = net.outputs[0].dims;
  if (out.size() != 3 || !fits_int(out[1]) || out[1] < 5 || !fits_int(out[2])) {
    throw Error(fmt::format("{}: a YOLOv8 model's first output is (N, 4 + classes, anchors), '{}' is ({})", net.source,
                            net.outputs[0].name, fmt::join(out, ", ")));
  }
  return {.width = static_cast<int>(in[3]),
          .height = static_cast<int>(in[2]),
          .classes = static_cast<int>(out[1] - 4),
          .anchors = static_cast<int>(out[2])};
}

std::vector<LabeledBox> decode_yolov8_detections(const Variable& output, int batch_index, int image_width,
                                                 int image_height, int net_width, int net_height,
                                                 const DetectOptions& options) {
  std::vector<Detection> candidates = decode_yolov8(output, batch_index, net_width, net_height, options.threshold);
  map_boxes_to_image(candidates, image_width, image_height, net_width, net_height, options.fit);
  nms_per_class(candidates, options.nms);
  return labeled_boxes(candidates, options.threshold);
}

std::vector<LabeledBox> detect_objects_yolov8(OnnxModel& net, const Variable& image, const DetectOptions& options) {
  const Yolov8Layout layout = yolov8_layout(net);
  const Shape& s = image.shape();
  if (image.empty() || s.n != 1 || s.c != 3) {
    throw Error(fmt::format("detect_objects_yolov8: expects an RGB image (1, 3, H, W), got {}", s.str()));
  }
  const Variable input = options.fit == ImageFit::letterbox ? letterbox_image(image, layout.width, layout.height)
                                                            : resize_image(image, layout.width, layout.height);
  const Variable& output = net.forward(input);
  return decode_yolov8_detections(output, 0, s.w, s.h, layout.width, layout.height, options);
}

}  // namespace corgy
