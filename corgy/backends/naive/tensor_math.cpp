// NaiveBackend's arithmetic on tensors of any rank: plain loops over the flat descriptions, sums in double. The
// reference the other backends are compared with.
#include <cmath>
#include <limits>

#include "corgy/backends/naive/naive_backend.h"

namespace corgy {

namespace {

/// Offsets of the output element `flat` in a and b.
void operand_offsets(const BroadcastDesc& desc, std::size_t flat, std::size_t& a, std::size_t& b) {
  a = 0;
  b = 0;
  for (int k = desc.rank - 1; k >= 0; --k) {
    const auto axis = static_cast<std::size_t>(k);
    const auto extent = static_cast<std::size_t>(desc.extent[axis]);
    const std::size_t index = flat % extent;
    flat /= extent;
    a += index * desc.a_stride[axis];
    b += index * desc.b_stride[axis];
  }
}

}  // namespace

void NaiveBackend::broadcast_binary(BinaryOp op, const BroadcastDesc& desc, const Variable& a, const Variable& b,
                                    Variable& output) {
  const std::size_t count = desc.count();
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t ia = 0, ib = 0;
    operand_offsets(desc, i, ia, ib);
    output.data()[i] = apply(op, a.data()[ia], b.data()[ib]);
  }
}

void NaiveBackend::unary(UnaryOp op, const Variable& input, Variable& output) {
  for (std::size_t i = 0; i < input.count(); ++i) output.data()[i] = apply(op, input.data()[i]);
}

void NaiveBackend::reduce_axis(ReduceOp op, const AxisExtent& axis, const Variable& input, Variable& output) {
  for (std::size_t o = 0; o < axis.outer; ++o) {
    for (std::size_t i = 0; i < axis.inner; ++i) {
      const float* first = input.data() + o * axis.length * axis.inner + i;
      double sum = 0.0;
      float extreme = first[0];
      for (std::size_t l = 0; l < axis.length; ++l) {
        const float v = first[l * axis.inner];
        sum += v;
        if (op == ReduceOp::max) extreme = std::fmax(extreme, v);
        if (op == ReduceOp::min) extreme = std::fmin(extreme, v);
      }
      float result = extreme;
      if (op == ReduceOp::sum) result = static_cast<float>(sum);
      if (op == ReduceOp::mean) result = static_cast<float>(sum / static_cast<double>(axis.length));
      output.data()[o * axis.inner + i] = result;
    }
  }
}

void NaiveBackend::softmax_axis(const AxisExtent& axis, bool log, const Variable& input, Variable& output) {
  for (std::size_t o = 0; o < axis.outer; ++o) {
    for (std::size_t i = 0; i < axis.inner; ++i) {
      const std::size_t first = o * axis.length * axis.inner + i;
      const float* in = input.data() + first;
      float* out = output.data() + first;
      float max = -std::numeric_limits<float>::infinity();
      for (std::size_t l = 0; l < axis.length; ++l) max = std::fmax(max, in[l * axis.inner]);
      double sum = 0.0;
      for (std::size_t l = 0; l < axis.length; ++l) sum += std::exp(static_cast<double>(in[l * axis.inner] - max));
      for (std::size_t l = 0; l < axis.length; ++l) {
        const double shifted = static_cast<double>(in[l * axis.inner] - max);
        out[l * axis.inner] = static_cast<float>(log ? shifted - std::log(sum) : std::exp(shifted) / sum);
      }
    }
  }
}

void NaiveBackend::batched_matmul(const BatchedMatmulDesc& desc, const Variable& a, const Variable& b,
                                  Variable& output) {
  const auto rows = static_cast<std::size_t>(desc.rows);
  const auto inner = static_cast<std::size_t>(desc.inner);
  const auto cols = static_cast<std::size_t>(desc.cols);
  const std::size_t batches = desc.batch.count();
  for (std::size_t m = 0; m < batches; ++m) {
    std::size_t ia = 0, ib = 0;
    operand_offsets(desc.batch, m, ia, ib);
    const float* left = a.data() + ia * rows * inner;
    const float* right = b.data() + ib * inner * cols;
    float* target = output.data() + m * rows * cols;
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < cols; ++c) {
        double sum = 0.0;
        for (std::size_t k = 0; k < inner; ++k) {
          sum += static_cast<double>(left[r * inner + k]) * static_cast<double>(right[k * cols + c]);
        }
        target[r * cols + c] = static_cast<float>(sum);
      }
    }
  }
}

void NaiveBackend::layer_norm(const AxisExtent& axis, float epsilon, const Variable& scale, const Variable& shift,
                              const Variable& input, Variable& output) {
  for (std::size_t o = 0; o < axis.outer; ++o) {
    for (std::size_t i = 0; i < axis.inner; ++i) {
      const std::size_t first = o * axis.length * axis.inner + i;
      const float* in = input.data() + first;
      float* out = output.data() + first;
      double sum = 0.0;
      for (std::size_t l = 0; l < axis.length; ++l) sum += in[l * axis.inner];
      const double mean = sum / static_cast<double>(axis.length);
      double squares = 0.0;
      for (std::size_t l = 0; l < axis.length; ++l) {
        const double d = in[l * axis.inner] - mean;
        squares += d * d;
      }
      const double inverse = 1.0 / std::sqrt(squares / static_cast<double>(axis.length) + epsilon);
      for (std::size_t l = 0; l < axis.length; ++l) {
        out[l * axis.inner] =
            static_cast<float>((in[l * axis.inner] - mean) * inverse * scale.data()[l] + shift.data()[l]);
      }
    }
  }
}

}  // namespace corgy
