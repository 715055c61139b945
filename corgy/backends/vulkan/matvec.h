// Matrix-vector products on Vulkan (kernels/matvec.comp): a few images times a weight matrix, where a tiled GEMM
// would fill one row of its tiles: squeeze-and-excitation's two products, a classifier at small batch.
#pragma once

#include "corgy/activation.h"
#include "corgy/backends/vulkan/runtime.h"

namespace corgy::vulkan {

/// Records output (N, rows) = activation(input (N, columns) x weights (rows, columns)^T + bias (rows, or null)).
/// The tensors' 4-D shapes do not matter, only their element counts. The output may be written in fp16 (a
/// device-only intermediate with fp16 precision) when `fp16_output` allows it.
void record_matvec(Runtime& runtime, const Variable& input, const Variable& weights, const Variable* bias,
                   Activation activation, int rows, int columns, Variable& output, bool fp16_output);

/// The largest batch a Linear layer runs as matrix-vector products rather than a tiled GEMM (a first guess: at
/// batch 8 the weights are read 8 times, still less than the GEMM's tiles of one useful row cost on an H100).
constexpr int matvec_max_batch = 8;

}  // namespace corgy::vulkan
