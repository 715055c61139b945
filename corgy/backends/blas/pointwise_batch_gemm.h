// A pointwise convolution (1x1, stride 1, no padding) as one GEMM over every pixel of every image: B's columns run
// across the images of the batch, so a small map (7x7, 14x14) pads its last column panel once per batch rather than
// once per image and takes the widest micro-kernel, and the team splits one large GEMM instead of small ones. B is
// packed from the input planes, and packing can apply a per-input-channel affine and activation on the way: a batch
// norm and ReLU before the convolution (DenseNet's BN-ReLU-Conv), or a squeeze-and-excitation's gates, one per image
// and channel (MobileNetV3's and EfficientNet's projections); and the input may be a channel concatenation of several
// tensors (DenseNet's concatenated features), so neither the concatenation nor the normalised or scaled tensor is
// ever written.
#pragma once

#include <span>
#include <vector>

#include "corgy/backends/blas/packed_gemm.h"
#include "corgy/backends/blas/thread_team.h"
#include "corgy/variable.h"

namespace corgy::blas {

/// The per-input-channel affine applied before the convolution: activation(x * scale[c] * image_scale[n][c] +
/// shift[c]), a null scale or shift counting as ones or zeros, a null image_scale as ones; image_scale (N, C)
/// row-major, C the convolution's input channels (a squeeze-and-excitation's gates).
struct InputAffine {
  const float* scale = nullptr;
  const float* shift = nullptr;
  Activation activation{};
  const float* image_scale = nullptr;
};

/// B of a pointwise convolution over a batch: row k is channel k of the channel concatenation of `inputs` (each
/// (N, C_i, H, W) with one N, H, W), column j is pixel j % (H * W) of image j / (H * W); with an affine, each value
/// is packed as the affine computes it (InputAffine).
class ChannelPlanesB final : public BSource {
 public:
  ChannelPlanesB(std::span<const Variable* const> inputs, const InputAffine* affine, PlaneRowsPacker packer);
  int depth() const override { return static_cast<int>(rows_.size()); }
  int columns() const override { return columns_; }
  PackedBlock pack(int k0, int kc, int n0, int nc, int nr, float* scratch) const override;

 private:
  std::vector<PlaneRow> rows_;
  int pixels_;
  int columns_;
  const InputAffine* affine_;
  PlaneRowsPacker packer_;
};

/// output (N, a.rows(), H, W) = activation(a x B + a.bias() [+ residual]) for ChannelPlanesB(inputs, affine), the
/// residual (output's shape, or null) added in the micro-kernel's epilogue (ResNet's shortcut): by the whole team
/// (each member calls it; it returns after the team's barrier), which takes column chunks, or, where there are too
/// few to share evenly, halves of A's rows too, from a queue. `scratch`: one buffer per member.
void pointwise_batch_gemm(const TeamMember& member, WorkQueue& queue, const GemmMicroKernel& kernel, const PackedA& a,
                          std::span<const Variable* const> inputs, const InputAffine* affine, Activation activation,
                          const Variable* residual, Variable& output, std::vector<float>& scratch);

/// The queue's item count for pointwise_batch_gemm at these sizes (the same split it computes).
std::size_t pointwise_batch_items(const GemmMicroKernel& kernel, const PackedA& a, const Shape& output, int members);

}  // namespace corgy::blas
