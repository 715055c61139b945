// Image decoding (stb_image through decode_image), then darknet's letterbox and resize of what was decoded.
#include "corgy/error.h"
#include "corgy/io/image.h"
#include "fuzz_target.h"

CORGY_FUZZ_TARGET(image) {
  // The channel count asked for comes from the size, so that the format's leading bytes stay intact.
  const int channels = static_cast<int>(input.size() % 4) + 1;
  try {
    const corgy::Variable image =
        corgy::decode_image(corgy::fuzz::as_bytes(input), "input", channels, corgy::fuzz::limits);
    corgy::letterbox_image(image, 13, 7);
    corgy::resize_image(image, 5, 9);
  } catch (const corgy::Error&) {
  }
}
