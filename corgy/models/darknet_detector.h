// Object detection with a darknet YOLO model, end to end: fit the image, run, decode every head, NMS. Here, above
// corgy/io and corgy/detect, since it joins a loaded model (io/darknet.h) and image fitting (io/image.h) to the
// decoders, which work on tensors and boxes only.
#pragma once

#include <vector>

#include "corgy/detect/detection.h"
#include "corgy/io/darknet.h"
#include "corgy/variable.h"

namespace corgy {

/// Decodes the raw head outputs of `net` (as DarknetModel::forward returns them) for image `batch_index` of the
/// batch, computed from an input of net.width x net.height pixels made from an image_width x image_height picture
/// fitted by options.fit: every [region]/[yolo] head decoded, boxes mapped to pixels of the picture, per-class NMS,
/// and the (box, class) pairs above the threshold, most probable first. Throws corgy::Error when the model has no
/// head or `raw` does not fit the heads.
std::vector<LabeledBox> decode_detections(const DarknetModel& net, const std::vector<const Variable*>& raw,
                                          int batch_index, int image_width, int image_height,
                                          const DetectOptions& options = {});

/// Fits `image` (1, C, H, W) with values in [0, 1] (as load_image gives it) to the network input, runs `net` on its
/// backend and returns decode_detections() for it, boxes in pixels of `image`.
std::vector<LabeledBox> detect_objects(DarknetModel& net, const Variable& image, const DetectOptions& options = {});

}  // namespace corgy
