// An image prepared as a classifier or segmentation network expects it: resize, center crop, scale, mean / std per
// channel, RGB or BGR, as torchvision's transforms and OpenCV's blobFromImage do (docs/corgy-run.md).
#pragma once

#include <string>
#include <vector>

#include "corgy/variable.h"

namespace corgy {

/// The steps, applied in this order to the image's 8-bit values 0..255:
///   1. resize (optional): the shorter side to `resize_shorter` pixels, the longer one to
///      int(resize_shorter * longer / shorter) (torchvision's Resize(int)); or to exactly `resize_width` x
///      `resize_height`. Bilinear with half-pixel centres and no antialiasing, as OpenCV's cv2.resize(INTER_LINEAR).
///   2. center crop (optional) to `crop_width` x `crop_height`, offset round((size - crop) / 2) with halves to even
///      (torchvision's center_crop); larger than the image is an error.
///   3. value * scale, then (value - mean[c]) / std[c] per channel (one number applies to every channel).
///   4. channel order: RGB, or BGR when `bgr` (3 channels only).
/// OpenCV's blobFromImage(image, f, size, m) computes (value - m) * f: that is scale f, mean m * f, std 1.
struct ImagePreprocess {
  int resize_shorter = 0;  ///< 0: no resize of this kind
  int resize_width = 0;    ///< with resize_height; 0: no resize of this kind
  int resize_height = 0;
  int crop_width = 0;  ///< with crop_height; 0: no crop
  int crop_height = 0;
  float scale = 1.0f / 255.0f;
  std::vector<float> mean = {0.0f};  ///< one value, or one per channel (in RGB order)
  std::vector<float> std = {1.0f};   ///< the same; none may be 0
  bool bgr = false;
};

/// torchvision's ImageNet preprocessing: shorter side to 256, center crop 224, / 255, mean (0.485, 0.456, 0.406),
/// std (0.229, 0.224, 0.225), RGB.
ImagePreprocess imagenet_preprocess();

/// Where the network's input lies in the original image: the resized size and the crop inside it.
struct PreprocessGeometry {
  int image_width = 0;  ///< the original image
  int image_height = 0;
  int resized_width = 0;  ///< after step 1 (the image's own size without a resize)
  int resized_height = 0;
  int crop_x = 0;  ///< the crop's top-left corner in the resized image
  int crop_y = 0;
  int crop_width = 0;  ///< = the tensor's W and H
  int crop_height = 0;
};

/// The prepared input and where it came from.
struct PreprocessedImage {
  Variable tensor;  ///< (1, C, crop_height, crop_width) floats, planar
  PreprocessGeometry geometry;
};

/// Checks `options` for an image of `channels` channels and throws corgy::Error naming the bad option: both kinds of
/// resize, a negative size, one crop side without the other, a mean or std count other than 1 or `channels`, a
/// zero or non-finite std or scale, BGR for other than 3 channels.
void check_preprocess(const ImagePreprocess& options, int channels);

/// Prepares `image`, (1, C, H, W) in [0, 1] as load_image() reads it (its 8-bit values / 255). Throws corgy::Error
/// for bad options (check_preprocess) and for a crop larger than the resized image, naming both sizes and `source`.
PreprocessedImage preprocess_image(const Variable& image, const ImagePreprocess& options, const std::string& source);

/// cv2.resize(INTER_LINEAR) of a (1, C, H, W) float image to (1, C, height, width): half-pixel centres, two taps per
/// axis clamped at the edges, no antialiasing when shrinking.
Variable resize_bilinear_half_pixel(const Variable& image, int width, int height);

}  // namespace corgy
