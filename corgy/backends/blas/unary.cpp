// BlasBackend::unary: one loop per function, chosen once per call, shared among the team. erf and the GELUs run the
// SIMD kernels of unary_kernels.h (a scalar std::erf cost ConvNeXt-T's blocks about 7 ms per GELU at 56 x 56 x 384);
// the rest are cheap enough as scalar loops the compiler vectorizes where it can.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "corgy/backends/blas/blas_backend.h"
#include "corgy/backends/blas/unary_kernels.h"

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

/// The SIMD kernel of `op`, or nullptr for the scalar loop.
blas::UnaryKernel simd_kernel(UnaryOp op) {
  const blas::UnaryKernelSet& kernels = blas::unary_kernels();
  switch (op) {
    case UnaryOp::erf: return kernels.erf;
    case UnaryOp::gelu: return kernels.gelu;
    case UnaryOp::gelu_tanh: return kernels.gelu_tanh;
    default: return nullptr;
  }
}

}  // namespace

void BlasBackend::unary(UnaryOp op, const Variable& input, Variable& output) {
  constexpr std::size_t block = 4096;  // values per task: enough to hide the team's overhead
  const std::size_t count = input.count();
  if (const blas::UnaryKernel kernel = simd_kernel(op)) {
    profiler_.note("unary " + isa_name(widest_cpu_isa()) + " kernel");
    parallel_for(threads_for(count), (count + block - 1) / block, [&](std::size_t b) {
      const std::size_t begin = b * block;
      kernel(input.data() + begin, output.data() + begin, std::min(count, begin + block) - begin);
    });
    return;
  }
  profiler_.note("unary loop");
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
