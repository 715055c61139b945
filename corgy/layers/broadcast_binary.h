// BroadcastBinary: a op b of tensors of any rank with NumPy broadcasting (add, subtract, multiply, divide, power,
// minimum, maximum); either operand may be a constant the layer holds.
#pragma once

#include <optional>
#include <span>

#include "corgy/layers/layer.h"
#include "corgy/tensor_dims.h"
#include "corgy/tensor_math.h"

namespace corgy {

/// Inputs a and b, tensors of dims a_dims and b_dims (TensorDims, stored folded) -> a op b, of their NumPy broadcast
/// dims (corgy::broadcast). Activations have the output's rank, dimension 0 the batch (taken from the input); a
/// constant operand (with_constant) aligns at the last axis as NumPy aligns it and must not broadcast over the batch
/// (its extent there, if it has that axis, is 1). For same-shape adds, or a per-channel (N, C, 1, 1) second operand,
/// Add and Elementwise are the faster layers.
class BroadcastBinary final : public Layer {
 public:
  /// Two activations. Throws corgy::Error when they do not broadcast, differ in rank, or broadcast over the batch.
  BroadcastBinary(BinaryOp op, TensorDims a_dims, TensorDims b_dims);
  /// An activation x and a constant of dims constant_dims (row-major values): x op constant, or constant op x with
  /// constant_first. Throws corgy::Error as above, or when values do not fill constant_dims.
  static BroadcastBinary with_constant(BinaryOp op, TensorDims x_dims, TensorDims constant_dims,
                                       std::span<const float> values, bool constant_first);

  std::string_view type() const override { return "broadcast_binary"; }
  std::string describe() const override;
  int arity() const override { return constant_ ? 1 : 2; }
  Shape output_shape(std::span<const Shape> inputs) const override;
  void upload(Backend& backend) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;
  double flops(std::span<const Shape> inputs) const override;

  BinaryOp op() const { return op_; }
  const TensorDims& a_dims() const { return a_dims_; }
  const TensorDims& b_dims() const { return b_dims_; }
  /// The constant operand's values, or null; which side it is on.
  const Variable* constant() const { return constant_ ? &*constant_ : nullptr; }
  bool constant_first() const { return constant_first_; }

 private:
  BroadcastBinary(BinaryOp op, TensorDims a_dims, TensorDims b_dims, bool a_constant, bool b_constant);
  /// The operands' dims for the batch of the activation inputs; checks their shapes.
  void operand_dims(std::span<const Shape> inputs, TensorDims& a, TensorDims& b) const;

  BinaryOp op_;
  TensorDims a_dims_;
  TensorDims b_dims_;
  std::optional<Variable> constant_;
  bool constant_first_ = false;
};

}  // namespace corgy
