// Bands of output rows: how a convolution with small weights is shared among the team with no barrier inside the
// layer (each member takes whole bands of whole images), and how the max pool after it is computed from each band
// while the band is still in cache, so the convolution's full output is never written.
#pragma once

#include <vector>

#include "corgy/backends/blas/conv_plan.h"

namespace corgy::blas {

/// Output rows per band for `plan` at output shape `output` with `members` threads; 0 when the layer should rather
/// run as one team-shared computation (large weights, which each band would read again, or too few bands to share).
int band_rows_for(const ConvPlan& plan, const Shape& output, int members);

/// The convolution of `plan` on `input` in bands of `band_rows` rows, each member taking its share of
/// (image, band) pairs; with `pool`, output = that max pool of the convolution's output (`conv_output` its shape),
/// else output is the convolution's. Every member calls it; it returns after the team's barrier.
void conv_in_bands(const TeamMember& member, const ConvPlan& plan, int band_rows, const Pool2dDesc* pool,
                   const Variable& input, const Shape& conv_output, Variable& output, BandBuffers& buffers);

}  // namespace corgy::blas
