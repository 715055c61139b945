#include "corgy/tensor_math.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "corgy/activation.h"
#include "corgy/error.h"

namespace corgy {

namespace {

std::string extents_text(std::span<const int> extents) {
  std::string text = "(";
  for (std::size_t k = 0; k < extents.size(); ++k) text += fmt::format("{}{}", k ? ", " : "", extents[k]);
  return text + ")";
}

std::span<const int> extents_of(const TensorDims& dims) {
  return std::span<const int>(dims.extent.data(), static_cast<std::size_t>(dims.rank));
}

}  // namespace

std::string_view binary_op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::add: return "add";
    case BinaryOp::subtract: return "subtract";
    case BinaryOp::multiply: return "multiply";
    case BinaryOp::divide: return "divide";
    case BinaryOp::power: return "power";
    case BinaryOp::minimum: return "minimum";
    case BinaryOp::maximum: return "maximum";
  }
  return "?";
}

std::string_view unary_op_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::sqrt: return "sqrt";
    case UnaryOp::erf: return "erf";
    case UnaryOp::exp: return "exp";
    case UnaryOp::log: return "log";
    case UnaryOp::neg: return "neg";
    case UnaryOp::abs: return "abs";
    case UnaryOp::reciprocal: return "reciprocal";
    case UnaryOp::floor: return "floor";
    case UnaryOp::ceil: return "ceil";
    case UnaryOp::square: return "square";
    case UnaryOp::gelu: return "gelu";
    case UnaryOp::gelu_tanh: return "gelu_tanh";
  }
  return "?";
}

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::mean: return "mean";
    case ReduceOp::sum: return "sum";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

std::size_t BroadcastDesc::count() const {
  std::size_t total = 1;
  for (int k = 0; k < rank; ++k) total *= static_cast<std::size_t>(extent[static_cast<std::size_t>(k)]);
  return total;
}

BroadcastDesc BroadcastDesc::of(std::span<const int> a_extents, std::span<const int> b_extents) {
  const std::size_t rank = std::max(a_extents.size(), b_extents.size());
  if (rank > static_cast<std::size_t>(max_rank)) {
    throw Error(
        fmt::format("tensors {} and {}: rank above {}", extents_text(a_extents), extents_text(b_extents), max_rank));
  }
  // Per output axis, innermost first: extent and each operand's stride (0 where it has extent 1 or no axis).
  struct Axis {
    int extent;
    std::size_t a, b;
  };
  std::vector<Axis> axes;
  std::size_t a_step = 1, b_step = 1;
  for (std::size_t k = 0; k < rank; ++k) {
    const int ea = k < a_extents.size() ? a_extents[a_extents.size() - 1 - k] : 1;
    const int eb = k < b_extents.size() ? b_extents[b_extents.size() - 1 - k] : 1;
    if (ea != eb && ea != 1 && eb != 1) {
      throw Error(fmt::format("tensors {} and {} do not broadcast", extents_text(a_extents), extents_text(b_extents)));
    }
    const int extent = std::max(ea, eb);
    if (extent != 1) {
      const Axis axis{extent, ea == 1 ? 0 : a_step, eb == 1 ? 0 : b_step};
      // Merged into the axis inside it when both operands step over the pair as over one axis.
      if (!axes.empty() && axis.a == axes.back().a * static_cast<std::size_t>(axes.back().extent) &&
          axis.b == axes.back().b * static_cast<std::size_t>(axes.back().extent)) {
        axes.back().extent *= extent;
      } else {
        axes.push_back(axis);
      }
    }
    a_step *= static_cast<std::size_t>(ea);
    b_step *= static_cast<std::size_t>(eb);
  }
  BroadcastDesc desc;
  if (axes.empty()) return desc;  // one element: rank 1, extent 1, strides 0
  desc.rank = static_cast<int>(axes.size());
  for (std::size_t k = 0; k < axes.size(); ++k) {
    const Axis& axis = axes[axes.size() - 1 - k];
    desc.extent[k] = axis.extent;
    desc.a_stride[k] = axis.a;
    desc.b_stride[k] = axis.b;
  }
  return desc;
}

BroadcastDesc BroadcastDesc::of(const TensorDims& a, const TensorDims& b) { return of(extents_of(a), extents_of(b)); }

TensorDims broadcast(const TensorDims& a, const TensorDims& b) {
  TensorDims out = a.rank >= b.rank ? a : b;
  for (int k = 1; k <= std::min(a.rank, b.rank); ++k) {
    const int ea = a[a.rank - k], eb = b[b.rank - k];
    if (ea != eb && ea != 1 && eb != 1) {
      throw Error(fmt::format("tensors {} and {} do not broadcast", a.str(), b.str()));
    }
    out.extent[static_cast<std::size_t>(out.rank - k)] = std::max(ea, eb);
  }
  return out;
}

AxisExtent AxisExtent::of(const TensorDims& dims, int first, int last) {
  if (first < 0 || last < first || last >= dims.rank) {
    throw Error(fmt::format("axes {} to {} are outside tensor {}", first, last, dims.str()));
  }
  AxisExtent axis;
  for (int k = 0; k < dims.rank; ++k) {
    const auto e = static_cast<std::size_t>(dims[k]);
    if (k < first) {
      axis.outer *= e;
    } else if (k <= last) {
      axis.length *= e;
    } else {
      axis.inner *= e;
    }
  }
  return axis;
}

BatchedMatmulDesc BatchedMatmulDesc::of(const TensorDims& a, const TensorDims& b) {
  if (a.rank < 2 || b.rank < 2) {
    throw Error(fmt::format("matrix product of {} and {}: both need rank 2 or more", a.str(), b.str()));
  }
  if (a[a.rank - 1] != b[b.rank - 2]) {
    throw Error(fmt::format("matrix product of {} and {}: {} columns against {} rows", a.str(), b.str(), a[a.rank - 1],
                            b[b.rank - 2]));
  }
  BatchedMatmulDesc desc;
  const std::span<const int> a_batch = extents_of(a).first(static_cast<std::size_t>(a.rank - 2));
  const std::span<const int> b_batch = extents_of(b).first(static_cast<std::size_t>(b.rank - 2));
  try {
    desc.batch = BroadcastDesc::of(a_batch, b_batch);
  } catch (const Error&) {
    throw Error(fmt::format("matrix product of {} and {}: the batch axes do not broadcast", a.str(), b.str()));
  }
  desc.rows = a[a.rank - 2];
  desc.inner = a[a.rank - 1];
  desc.cols = b[b.rank - 1];
  return desc;
}

TensorDims BatchedMatmulDesc::output_dims(const TensorDims& a, const TensorDims& b) {
  const BatchedMatmulDesc desc = of(a, b);  // checks
  (void)desc;
  const int rank = std::max(a.rank, b.rank);
  TensorDims out;
  out.rank = rank;
  for (int k = 3; k <= rank; ++k) {
    const int ea = k <= a.rank ? a[a.rank - k] : 1;
    const int eb = k <= b.rank ? b[b.rank - k] : 1;
    out.extent[static_cast<std::size_t>(rank - k)] = std::max(ea, eb);
  }
  out.extent[static_cast<std::size_t>(rank - 2)] = a[a.rank - 2];
  out.extent[static_cast<std::size_t>(rank - 1)] = b[b.rank - 1];
  return out;
}

float gelu(float x) { return apply_activation(Activation::gelu(), x); }

float gelu_tanh(float x) { return 0.5f * x * (1.0f + std::tanh(0.79788456080286536f * (x + 0.044715f * x * x * x))); }

float apply(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::add: return a + b;
    case BinaryOp::subtract: return a - b;
    case BinaryOp::multiply: return a * b;
    case BinaryOp::divide: return a / b;
    case BinaryOp::power: return std::pow(a, b);
    case BinaryOp::minimum: return std::fmin(a, b);
    case BinaryOp::maximum: return std::fmax(a, b);
  }
  return 0.0f;
}

float apply(UnaryOp op, float x) {
  switch (op) {
    case UnaryOp::sqrt: return std::sqrt(x);
    case UnaryOp::erf: return std::erf(x);
    case UnaryOp::exp: return std::exp(x);
    case UnaryOp::log: return std::log(x);
    case UnaryOp::neg: return -x;
    case UnaryOp::abs: return std::fabs(x);
    case UnaryOp::reciprocal: return 1.0f / x;
    case UnaryOp::floor: return std::floor(x);
    case UnaryOp::ceil: return std::ceil(x);
    case UnaryOp::square: return x * x;
    case UnaryOp::gelu: return gelu(x);
    case UnaryOp::gelu_tanh: return gelu_tanh(x);
  }
  return 0.0f;
}

}  // namespace corgy
