// The transforms of Winograd F(4x4, 3x3), one set per instruction set like the GEMM kernels
// (kernels/winograd_<isa>.cpp, picked from cpuid). A 3x3 stride-1 convolution becomes, per 6x6 input tile, 36
// element-wise products ("points") of the transformed tile V = B^T d B and the transformed weights U = G g G^T, summed
// over input channels (36 GEMMs), then each output tile is A^T M A (Lavin and Gray, "Fast Algorithms for Convolutional
// Neural Networks", 2015).
#pragma once

#include <cstddef>

#include "corgy/activation.h"
#include "corgy/backends/cpu/cpu_features.h"

namespace corgy::blas {

enum class WinogradVariant {
  f2x2,     ///< F(2x2, 3x3): 4x4 input tiles, 16 points; 16/9 the weights, 2.25x fewer multiplications than im2col
  f4x4,     ///< F(4x4, 3x3): 6x6 input tiles, 36 points; 4x the weights, 4x fewer multiplications
  f2x2_5x5  ///< F(2x2, 5x5): 6x6 input tiles, 36 points; 36/25 the weights, 2.8x fewer multiplications
};

struct WinogradGeometry {
  int kernel;       // the convolution's kernel size
  int input_tile;   // a tile of the input ...
  int output_tile;  // ... gives a tile of the output, at output_tile steps
  int points;       // input_tile squared
};
constexpr WinogradGeometry winograd_geometry(WinogradVariant variant) {
  switch (variant) {
    case WinogradVariant::f2x2: return {3, 4, 2, 16};
    case WinogradVariant::f4x4: return {3, 6, 4, 36};
    case WinogradVariant::f2x2_5x5: return {5, 6, 2, 36};
  }
  return {};
}

/// One input plane, read in tiles: tile (ty, tx) covers rows output_tile * ty - pad + [0, input_tile) and the same
/// columns, zero outside the plane.
struct WinogradInputPlane {
  const float* data = nullptr;
  int height = 0;
  int width = 0;
  int pad = 0;
};

/// Where transformed input tiles go, as the B operands of the 36 GEMMs (packed panels of nr columns): value `point`
/// of tile t at base + point * point_stride + (t / nr) * panel_stride + t % nr.
struct WinogradPackedTiles {
  float* base = nullptr;
  std::size_t point_stride = 0;
  std::size_t panel_stride = 0;
  int nr = 0;
};

/// Transforms tiles tx, tx + 1, ..., tx + count - 1 of tile row ty of `plane`, stored as tiles t0, t0 + 1, ....
using WinogradInputTransform = void (*)(const WinogradInputPlane& plane, int ty, int tx, int count,
                                        const WinogradPackedTiles& out, int t0);

/// The GEMMs' results for one output channel: value `point` of tile t at m + point * point_stride + t, with room to
/// read a whole register past the last tile.
struct WinogradProducts {
  const float* m = nullptr;
  std::size_t point_stride = 0;
};

/// One output plane written in 4x4 tiles (cropped at its edges), with the convolution's bias and activation.
struct WinogradOutputPlane {
  float* data = nullptr;
  int height = 0;
  int width = 0;
  float bias = 0.0f;
  ActivationKind activation = ActivationKind::none;
  float slope = 0.0f;  ///< Activation::slope
};

/// Writes output tiles tx .. tx + count - 1 of tile row ty from products of tiles t0 ...
using WinogradOutputTransform = void (*)(const WinogradProducts& products, int t0, const WinogradOutputPlane& plane,
                                         int ty, int tx, int count);

struct WinogradTransforms {
  WinogradInputTransform input = nullptr;
  WinogradOutputTransform output = nullptr;
};

/// Indexed by WinogradVariant.
struct WinogradKernelSet {
  WinogradTransforms variants[3];
  const WinogradTransforms& operator[](WinogradVariant variant) const { return variants[static_cast<int>(variant)]; }
};
WinogradKernelSet generic_winograd_kernels();
WinogradKernelSet avx2_winograd_kernels();
WinogradKernelSet avx512_winograd_kernels();
/// The set for `isa` (throws corgy::Error when the CPU lacks it).
const WinogradKernelSet& winograd_kernels(CpuIsa isa);

}  // namespace corgy::blas
