// How the blas backend computes one convolution: the algorithm chosen for it when it first runs at an input shape,
// and the weights packed once for that algorithm.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "corgy/backend.h"
#include "corgy/backends/blas/blas_backend.h"
#include "corgy/backends/blas/channel_block_residual.h"
#include "corgy/backends/blas/channels_in_lanes_gemm.h"
#include "corgy/backends/blas/conv_gemm.h"
#include "corgy/backends/blas/conv_tuner.h"
#include "corgy/backends/blas/depthwise_kernels.h"
#include "corgy/backends/blas/few_channels_conv.h"
#include "corgy/backends/blas/winograd.h"

namespace corgy::blas {

enum class ConvAlgorithm {
  im2col_openblas,           ///< im2col, then one OpenBLAS sgemm per image and group: corgy's baseline
  depthwise,                 ///< our SIMD kernels, one channel plane at a time (depthwise_kernels.h)
  depthwise_channel_blocks,  ///< our SIMD kernels, a register of planes at a time, channels in the lanes (the same)
  packed_gemm,               ///< our micro-kernels on weights packed once, B packed from the input (conv_gemm.h)
  winograd,           ///< Winograd F(4x4, 3x3): 36 GEMMs of our micro-kernels over transformed tiles (winograd.h)
  pointwise_batch,    ///< a pointwise convolution as one packed GEMM over every image's pixels (pointwise_batch_gemm.h)
  channels_in_lanes,  ///< C^T = B^T A^T, output channels in the vector lanes, for small maps (channels_in_lanes_gemm.h)
  few_channels,       ///< a direct kernel for few input channels: a network's stem (few_channels_conv.h)
};

struct ConvPlan {
  Conv2dDesc desc;
  Shape input;
  /// The bias packed with the weights (null: none): layers may share weights and not the bias (fusion rule 12's
  /// convolution without the bias of the one it replaces, which adds it after a pool), so it is part of the key.
  const float* bias = nullptr;
  ConvAlgorithm algorithm = ConvAlgorithm::im2col_openblas;
  /// How the algorithm was chosen, for the profile: "table", "forced", "measured of 3", "measured before".
  std::string origin = "table";
  const GemmMicroKernel* kernel = nullptr;  // packed_gemm, pointwise_batch, channels_in_lanes
  PackedConvWeights packed;                 // packed_gemm, pointwise_batch
  ChannelPanels channel_panels;             // channels_in_lanes
  WinogradPlan winograd;                    // winograd
  DepthwiseGeometry depthwise;              // depthwise, depthwise_channel_blocks
  std::vector<float> depthwise_packed;      // depthwise_channel_blocks: pack_depthwise_channel_weights's
  std::vector<float> few_channels_packed;   // few_channels: pack_few_channels_weights's

  /// For the profile: "packed sgemm avx512 12x32, implicit im2col".
  std::string describe() const;
  /// The packed weights the plan reads at every call, whichever its algorithm packed (for the tuner: conv_tuner.h's
  /// evict_from_caches).
  std::vector<std::span<const float>> weight_buffers() const;
  /// Whether a forward reads only the plan's own copy of the weights, never the layer's (which the plan cache may
  /// then page out): the packed algorithms; the baseline and the depthwise kernels read the layer's.
  bool holds_weights() const;
  /// Makes this plan read `other`'s packed weights wherever the two packed the same values in the same layout (the
  /// same weights planned for another input shape, by the same algorithm and tile), so that a layer planned at
  /// several batch sizes (Backend::set_kept_plans: corgy-serve's allowed batch sizes) holds each packing once.
  void share_packed_weights(const ConvPlan& other);
};

/// The algorithm for `desc` at input shape `input`: the one `choice` forces where it applies, else the static
/// table's first guess (conv_tuner.h's first candidate). Packs the weights it needs.
ConvPlan plan_convolution(const Conv2dDesc& desc, const Shape& input, const Variable& weights, const Variable* bias,
                          BlasConvolution choice, ThreadTeam& team);
/// The plan of one algorithm choice (conv_tuner.h), weights packed for it.
ConvPlan plan_convolution(const Conv2dDesc& desc, const Shape& input, const Variable& weights, const Variable* bias,
                          const ConvChoice& choice, ThreadTeam& team);

/// One thread's buffers for computing bands of a convolution's output (conv_bands.h): the band a max pool reads,
/// and the algorithms' own.
struct BandBuffers {
  std::vector<float> conv_rows;
  GemmRowsBuffers gemm;
  WinogradBandBuffers winograd;
  std::vector<float> depthwise;              // depthwise_kernels.h's phase planes and output block
  std::vector<float> pool_row;               // a fused max pool's maxima down one row of windows
  FewChannelsPoolBuffers few_channels_pool;  // a stem's band of convolution rows and its pool
  std::vector<float> block_expanded;         // an inverted residual block's band: its expanded rows ...
  std::vector<float> block_filtered;         // ... and their depthwise output
  PackedA gated_weights;                     // a projection's weights with one image's squeeze-excite gates folded in
  ChannelBlockBuffers channel_blocks;        // an inverted residual block's image in channel blocks
};

/// The plans of one backend, keyed by the weights' storage (then by description, input shape and bias). Only weights
/// the backend was told are constants (Backend::upload_constant) get a plan: packing is worth it once, not at every
/// call, and a constant's values only change when upload_constant is called again, which drops every plan. Each weights
/// keep the plans of their last kept_shapes input shapes (Backend::set_kept_plans; 1 by default); plans that packed the
/// same values share one copy (ConvPlan::share_packed_weights). Weights that every kept plan holds a copy of are paged
/// out (store()).
class ConvPlanCache {
 public:
  void add_constant(std::uint64_t storage_id);
  bool is_constant(const Variable& weights) const { return constants_.contains(weights.storage()->id()); }
  /// The plan made for these weights and this bias (or none) at this description and input shape, or null. A plan
  /// found becomes the most recently used of its weights.
  const ConvPlan* find(const Conv2dDesc& desc, const Shape& input, const Variable& weights, const Variable* bias);
  /// Keeps `plan` as the most recent plan of these weights, dropping their least recently used one beyond
  /// kept_shapes. The reference stays valid while the plan is kept (plans of other weights do not move it).
  const ConvPlan& store(const Variable& weights, ConvPlan plan);
  void set_kept_shapes(int count);

  GemmWorkspace workspace;
  WinogradWorkspace winograd_workspace;
  ChannelsInLanesBuffers channels_in_lanes;
  /// conv_bands.h's buffers, one per team member.
  std::vector<BandBuffers> band_buffers;
  /// conv_pointwise_by_depth's sums of the members after the first.
  std::vector<float> pointwise_partial_sums;
  /// Inverted residual blocks planned in channel blocks (channel_block_residual.h), by their expansion's weights
  /// and input shape; dropped with the convolutions' plans when a constant changes.
  std::unordered_map<std::string, ChannelBlockResidualPlan> channel_block_plans;

 private:
  std::unordered_set<std::uint64_t> constants_;
  std::unordered_map<std::uint64_t, std::list<ConvPlan>> plans_;  // per weights, the most recently used first
  std::size_t kept_shapes_ = 1;
};

}  // namespace corgy::blas
