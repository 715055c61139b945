#include "corgy/detect/detection.h"

#include <algorithm>

namespace corgy {

namespace {

// Length of the overlap of two intervals given by centre and length; negative when they are apart.
float overlap(float centre_a, float length_a, float centre_b, float length_b) {
  const float left = std::max(centre_a - length_a / 2, centre_b - length_b / 2);
  const float right = std::min(centre_a + length_a / 2, centre_b + length_b / 2);
  return right - left;
}

}  // namespace

float box_iou(const Box& a, const Box& b) {
  const float w = overlap(a.x, a.w, b.x, b.w);
  const float h = overlap(a.y, a.h, b.y, b.h);
  if (w <= 0 || h <= 0) return 0.0f;
  const float intersection = w * h;
  const float union_area = a.w * a.h + b.w * b.h - intersection;
  return union_area > 0 ? intersection / union_area : 0.0f;
}

void map_boxes_to_image(std::vector<Detection>& detections, int image_width, int image_height, int net_width,
                        int net_height, ImageFit fit) {
  // The part of the network input that the image covers, as letterbox_image() computed it (integer division).
  int scaled_w = net_width;
  int scaled_h = net_height;
  if (fit == ImageFit::letterbox) {
    if (static_cast<float>(net_width) / static_cast<float>(image_width) <
        static_cast<float>(net_height) / static_cast<float>(image_height)) {
      scaled_h = image_height * net_width / image_width;
    } else {
      scaled_w = image_width * net_height / image_height;
    }
  }
  const float offset_x = static_cast<float>(net_width - scaled_w) / 2.0f / static_cast<float>(net_width);
  const float offset_y = static_cast<float>(net_height - scaled_h) / 2.0f / static_cast<float>(net_height);
  const float scale_x = static_cast<float>(scaled_w) / static_cast<float>(net_width);
  const float scale_y = static_cast<float>(scaled_h) / static_cast<float>(net_height);
  for (Detection& detection : detections) {
    Box& b = detection.box;
    b.x = (b.x - offset_x) / scale_x * static_cast<float>(image_width);
    b.y = (b.y - offset_y) / scale_y * static_cast<float>(image_height);
    b.w = b.w / scale_x * static_cast<float>(image_width);
    b.h = b.h / scale_y * static_cast<float>(image_height);
  }
}

}  // namespace corgy
