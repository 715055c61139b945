// BlasBackend::unary: one loop per function, chosen once per call, shared among the team.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "corgy/backends/blas/blas_backend.h"

namespace corgy {

namespace {

template <typename Body>
void with_unary(UnaryOp op, const Body& body) {
  switch (op) {
    case UnaryOp::sqrt: return body([](float x) { return std::sqrt(x); });
    case UnaryOp::erf: return body([](float x) { return std::erf(x); });
    case UnaryOp::exp: return body([](float x) { return std::exp(x); });
    case UnaryOp::log: return body([](float x) { return std::log(x); });
    case UnaryOp::neg: return body([](float x) { return -x; });
    case UnaryOp::abs: return body([](float x) { return std::fabs(x); });
    case UnaryOp::reciprocal: return body([](float x) { return 1.0f / x; });
    case UnaryOp::floor: return body([](float x) { return std::floor(x); });
    case UnaryOp::ceil: return body([](float x) { return std::ceil(x); });
    case UnaryOp::square: return body([](float x) { return x * x; });
    case UnaryOp::gelu: return body([](float x) { return gelu(x); });
    case UnaryOp::gelu_tanh: return body([](float x) { return gelu_tanh(x); });
  }
}

}  // namespace

void BlasBackend::unary(UnaryOp op, const Variable& input, Variable& output) {
  profiler_.note("unary loop");
  constexpr std::size_t block = 4096;  // values per task: enough to hide the team's overhead
  const std::size_t count = input.count();
  with_unary(op, [&](const auto& function) {
    parallel_for(threads_for(count), (count + block - 1) / block, [&](std::size_t b) {
      const std::size_t end = std::min(count, (b + 1) * block);
      const float* source = input.data();
      float* target = output.data();
      for (std::size_t i = b * block; i < end; ++i) target[i] = function(source[i]);
    });
  });
}

}  // namespace corgy
