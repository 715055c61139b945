// Layer: what every layer has in common. A layer knows its parameters, weights and shapes, never a backend's
// internals: forward() calls operations of the Backend interface.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "corgy/backend.h"
#include "corgy/shape.h"
#include "corgy/variable.h"

namespace corgy {

class Layer {
 public:
  virtual ~Layer() = default;

  /// Short type name, e.g. "conv2d".
  virtual std::string_view type() const = 0;
  /// One line with the parameters, e.g. "conv2d 3x3/1 pad 1, 16->32, leaky(0.1)". Defaults to type().
  virtual std::string describe() const { return std::string(type()); }
  /// Inputs the layer takes: a fixed count, or any_arity (Concat).
  static constexpr int any_arity = -1;
  virtual int arity() const { return 1; }

  /// Checks the input shapes and returns the output shape. Throws corgy::Error saying what was expected and
  /// what was given. Called once per input shape, before any forward.
  virtual Shape output_shape(std::span<const Shape> inputs) const = 0;
  /// Hands constant tensors (weights) to a backend when a model moves to it.
  virtual void upload(Backend& backend) const { (void)backend; }
  /// Computes `output` from `inputs` (shapes as accepted by output_shape) on `backend`.
  virtual void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const = 0;
  /// True when the output is the input reinterpreted with another shape (Flatten): no copy, no forward work.
  virtual bool is_view() const { return false; }
  /// Floating-point operations of one forward (multiply and add counted separately), for benchmarks.
  virtual double flops(std::span<const Shape> inputs) const {
    (void)inputs;
    return 0.0;
  }
};

/// Throws corgy::Error "expects <what>, got input <shape>", the common shape-check failure. Sequential adds
/// which layer it was ("layer 3 (conv2d ...): ").
[[noreturn]] void throw_shape_error(std::string_view expected, const Shape& got);

/// Throws corgy::Error "<layer>: <message>" for invalid layer parameters.
[[noreturn]] void throw_parameter_error(std::string_view layer, std::string_view message);

}  // namespace corgy
