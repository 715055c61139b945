// IDX (MNIST): the input as an image file and as a label file; at most one of them can match its magic.
#include "corgy/error.h"
#include "corgy/io/idx.h"
#include "fuzz_target.h"

CORGY_FUZZ_TARGET(idx) {
  try {
    corgy::decode_idx_images(corgy::fuzz::as_bytes(input), "input.idx", corgy::fuzz::limits);
  } catch (const corgy::Error&) {
  }
  try {
    corgy::decode_idx_labels(corgy::fuzz::as_bytes(input), "input.idx", corgy::fuzz::limits);
  } catch (const corgy::Error&) {
  }
}
