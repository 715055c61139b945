// Convolutions as implicit GEMMs (conv2d_implicit_gemm.comp on fp32 arithmetic, conv2d_coopmat.comp on tensor
// cores), with bias, activation and optionally a following max pool fused into the output, and split-K with
// conv2d_split_k_reduce.comp; the plan comes from conv_plan.h.
#pragma once

#include "corgy/backend.h"
#include "corgy/backends/vulkan/conv_plan.h"
#include "corgy/backends/vulkan/runtime.h"

namespace corgy::vulkan {

/// A max pool the implicit-GEMM kernels can apply as they write: 2x2 windows at stride 2, padding of at most one
/// cell on each side (PyTorch's and darknet's 2x2 pools, TensorFlow's 'same').
bool pool_fusable(const Pool2dDesc& pool);

/// One dispatch of conv2d_implicit_gemm (_fp16 when a buffer is fp16) or conv2d_coopmat_fp16, as `plan` says, for
/// the GEMM `p` (whose k_per_split, tiles_m and lda are the plan's); its specialization follows the buffers' formats.
/// Writes partial sums when the plan splits K (the caller reduces them). `residual` (null for none; never with a pool
/// or a split) is added to each output element before the activation. Winograd's 16 GEMMs in fp16 use it too.
void record_conv_gemm(Runtime& runtime, const ImplicitGemmParams& p, const ConvPlan& plan, std::uint32_t kernel_size,
                      bool pool, const BufferUse& source, const BufferUse& a, const BufferUse& bias,
                      const BufferUse& result, const BufferUse* residual = nullptr);

/// The GEMM an implicit-GEMM kernel computes for `conv` on `input` into `output` (the pooled tensor when a pool is
/// fused): C (out channels per group x every output pixel, 4 per pooled one) = weights x the input's columns.
ConvProblem implicit_gemm_problem(const Conv2dDesc& conv, bool pool_fused, const Shape& input, const Shape& output);

/// Records `conv` (and `fused_pool`, when given: output is then the pooled tensor) as an implicit GEMM with the
/// algorithm, tiles and split of `options` (implicit_gemm or cooperative_matrix; automatic chooses). With `residual`
/// (output's shape; never with a pool) the output is activation(conv + bias + residual): a residual connection in
/// the kernel's epilogue (or the split-K reduction's), no dispatch of its own.
/// Not for depthwise convolutions, which depthwise_conv2d.comp computes.
void record_implicit_gemm_conv(Runtime& runtime, const VulkanConvolutionOptions& options, const Conv2dDesc& conv,
                               const Pool2dDesc* fused_pool, const Variable& input, const Variable& weights,
                               const Variable* bias, Variable& output, const Variable* residual = nullptr);

}  // namespace corgy::vulkan
