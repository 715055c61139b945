// Where a forward's time goes: each layer's algorithm, time, GFLOP/s and share of the CPU's (or GPU's) peak.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "corgy/model/sequential.h"

namespace corgy {

/// One row of a profile: a step of the forward (a layer, or a fused convolution + pool) over several forwards.
struct LayerProfile {
  int layer = -1;           // the layer whose output the step writes
  std::string description;  // its layers' descriptions ("conv2d 3x3/1 ... + maxpool2d 2x2/2" when fused)
  std::string algorithm;    // what the backend ran (Backend::take_profile)
  double median_ms = 0.0;   // median over the forwards
  double flops = 0.0;       // of the layers it computes, per forward
};

/// Runs `repeat` forwards of `model` on `input` with the backend's profiling on (Backend::set_profiling) and returns
/// one row per profiled step, in order. Empty when the backend does not profile.
std::vector<LayerProfile> profile_forward(Sequential& model, const Variable& input, int repeat);

/// The rows as a table (layer, ms, share of the total, GFLOP/s, % of `peak_gflops`, algorithm, description), with a
/// total line. `peak_label` says what the peak is (e.g. "avx512 FMA peak of 2 threads: 442 GFLOP/s").
std::string format_profile(const std::vector<LayerProfile>& rows, double peak_gflops, std::string_view peak_label);

}  // namespace corgy
