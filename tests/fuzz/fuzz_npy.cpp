// .npy: load_npy on the input as a file; an array it accepts must survive save_npy and a second load unchanged.
#include <cstdlib>
#include <cstring>

#include "corgy/error.h"
#include "corgy/io/npy.h"
#include "fuzz_target.h"

CORGY_FUZZ_TARGET(npy) {
  corgy::Variable tensor;
  try {
    tensor = corgy::load_npy(corgy::fuzz::write_scratch_file("input.npy", input), corgy::fuzz::limits);
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
