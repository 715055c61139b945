// A TensorFlow.js weights manifest and one shard: the input's bytes up to the first NUL are the manifest (JSON has
// no NUL), the rest is the shard, written as shard.bin beside it. What loads is then put into face-api's tiny face
// detector, whose loader converts and checks every kernel it takes.
#include <algorithm>

#include "corgy/error.h"
#include "corgy/io/tfjs_manifest.h"
#include "corgy/models/tiny_face_detector.h"
#include "fuzz_target.h"

CORGY_FUZZ_TARGET(tfjs_manifest) {
  static corgy::Sequential detector = corgy::build_tiny_face_detector();
  const auto nul = std::find(input.begin(), input.end(), std::uint8_t{0});
  const auto manifest_size = static_cast<std::size_t>(nul - input.begin());
  const std::string manifest = corgy::fuzz::write_scratch_file("manifest.json", input.first(manifest_size));
  corgy::fuzz::write_scratch_file("shard.bin", input.subspan(std::min(manifest_size + 1, input.size())));
  try {
    const corgy::TfjsWeights weights = corgy::TfjsWeights::load(manifest, corgy::fuzz::limits);
    corgy::load_tiny_face_detector_weights(detector, weights);
  } catch (const corgy::Error&) {
  }
}
