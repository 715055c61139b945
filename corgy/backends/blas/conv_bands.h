// Bands of output rows: how a convolution with small weights is shared among the team with no barrier inside the
// layer (each member takes whole bands of whole images), and how the max pool after it is computed from each band
// while the band is still in cache, so the convolution's full output is never written.
#pragma once

#include <vector>

#include "corgy/backends/blas/conv_plan.h"

namespace corgy::blas {

/// How a layer is cut into bands: `rows` output rows of `images` images each (several images only when one band
/// holds a whole image).
struct Bands {
  int rows = 0;
  int images = 1;
  explicit operator bool() const { return rows > 0; }
};

/// The bands for `plan` at output shape `output` with `members` threads; none (rows 0) when the layer should rather
/// run as one team-shared computation (large weights, which each band would read again, or too few bands to share).
Bands bands_for(const ConvPlan& plan, const Shape& output, int members);

/// True where `plan` (the packed GEMM) at `output` should rather be shared among `members` by output channels than
/// cut into bands: weights too large for L2, which each band streams again, on images too small to give every
/// member a band of the pixels that re-reading them is worth.
bool splits_weights_by_channels(const ConvPlan& plan, const Shape& output, int members);

/// The number of bands conv_in_bands computes (of the pooled output's rows with `pool`).
std::size_t band_count(const Bands& bands, const Pool2dDesc* pool, const Shape& conv_output, const Shape& output);

/// The convolution of `plan` on `input` in `bands`, each member taking bands from `queue` (of band_count() items)
/// until none is left; with `pool`, output = that max pool of the convolution's output (`conv_output` its shape),
/// else output is the convolution's. Every member calls it; it returns after the team's barrier.
void conv_in_bands(const TeamMember& member, WorkQueue& queue, const ConvPlan& plan, const Bands& bands,
                   const Pool2dDesc* pool, const Variable& input, const Shape& conv_output, Variable& output,
                   BandBuffers& buffers);

}  // namespace corgy::blas
