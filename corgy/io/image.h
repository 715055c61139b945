// Images as tensors: reading JPEG/PNG (stb_image), writing PNG (stb_image_write), and darknet's resizing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "corgy/io/load_limits.h"
#include "corgy/variable.h"

namespace corgy {

/// Reads a JPEG, PNG, BMP, GIF (first frame), TGA, PSD, HDR or PNM file as (1, channels, H, W) floats in [0, 1],
/// planar, RGB order for 3 channels (darknet's layout; channels 1 = grey, 3 = RGB, 4 = RGBA). Throws corgy::Error
/// naming the file and stb's reason when it cannot be read, and, before decoding, when the image's floats would
/// take more than `limits.max_tensor_bytes` (the header's width x height x channels x 4 bytes).
Variable load_image(const std::string& path, int channels = 3, const LoadLimits& limits = {});

/// The same for an image file's bytes in memory (e.g. received over a network); `source` names it in messages.
Variable decode_image(std::span<const std::byte> bytes, const std::string& source, int channels = 3,
                      const LoadLimits& limits = {});

/// 8-bit pixels, interleaved row by row as decoders, OpenCV and PIL hold them ((H, W, C): height x width x channels
/// bytes), as load_image() gives a file's: (1, C, H, W) floats byte / 255, planar. Throws corgy::Error when the size
/// is not positive, the channels are not 1 to 4 or `pixels` holds another number of bytes; `source` names it.
Variable image_from_pixels(std::span<const std::uint8_t> pixels, int width, int height, int channels,
                           const std::string& source);

/// Writes a (1, C, H, W) image, C = 1, 3 or 4, values clamped to [0, 1], as an 8-bit PNG. Throws corgy::Error for
/// another shape or when the file cannot be written.
void save_png(const std::string& path, const Variable& image);

/// Darknet's bilinear resize_image(): (1, C, H, W) -> (1, C, height, width), corners mapped onto corners.
Variable resize_image(const Variable& image, int width, int height);

/// Darknet's letterbox_image(): the image resized to fit width x height with its aspect ratio kept, centred on a
/// grey (0.5) canvas of (1, C, height, width). YOLO cfgs expect their input prepared this way.
Variable letterbox_image(const Variable& image, int width, int height);

}  // namespace corgy
