// IDX (MNIST): the input as an image file and as a label file; at most one of them can match its magic.
#include "corgy/error.h"
#include "corgy/io/idx.h"
#include "fuzz_target.h"

CORGY_FUZZ_TARGET(idx) {
  const std::string path = corgy::fuzz::write_scratch_file("input.idx", input);
  try {
    corgy::load_idx_images(path, corgy::fuzz::limits);
  } catch (const corgy::Error&) {
  }
  try {
    corgy::load_idx_labels(path, corgy::fuzz::limits);
  } catch (const corgy::Error&) {
  }
}
