// .npy: decode_npy on the input; an array it accepts must survive save_npy and load_npy unchanged.
#include <cstdlib>
#include <cstring>

#include "corgy/error.h"
#include "corgy/io/npy.h"
#include "fuzz_target.h"

CORGY_FUZZ_TARGET(npy) {
  corgy::Variable tensor;
  try {
    tensor = corgy::decode_npy(corgy::fuzz::as_bytes(input), "input.npy", corgy::fuzz::limits);
  } catch (const corgy::Error&) {
    return;
  }
  const std::string copy = corgy::fuzz::scratch_folder() + "/copy.npy";
  corgy::save_npy(copy, tensor);
  const corgy::Variable again = corgy::load_npy(copy, corgy::fuzz::limits);
  if (again.shape() != tensor.shape() ||
      std::memcmp(again.data(), tensor.data(), tensor.count() * sizeof(float)) != 0) {
    std::abort();  // the writer and the reader disagree
  }
}
