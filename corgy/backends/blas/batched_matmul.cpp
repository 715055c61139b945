// BlasBackend::batched_matmul: one OpenBLAS sgemm per batch index, the batch indices shared among the team (OpenBLAS
// itself single-threaded, as for every GEMM of this backend).
#include <cblas.h>

#include <cstddef>

#include "corgy/backends/blas/blas_backend.h"

namespace corgy {

void BlasBackend::batched_matmul(const BatchedMatmulDesc& desc, const Variable& a, const Variable& b,
                                 Variable& output) {
  profiler_.note("OpenBLAS sgemm per batch");
  const auto a_matrix = static_cast<std::size_t>(desc.rows) * static_cast<std::size_t>(desc.inner);
  const auto b_matrix = static_cast<std::size_t>(desc.inner) * static_cast<std::size_t>(desc.cols);
  const auto c_matrix = static_cast<std::size_t>(desc.rows) * static_cast<std::size_t>(desc.cols);
  const BroadcastDesc& batch = desc.batch;
  keep_openblas_single_threaded();
  parallel_for(threads_for(batch.count() * c_matrix * static_cast<std::size_t>(desc.inner)), batch.count(),
               [&](std::size_t m) {
                 std::size_t ia = 0, ib = 0, rest = m;
                 for (int k = batch.rank - 1; k >= 0; --k) {
                   const auto axis = static_cast<std::size_t>(k);
                   const auto extent = static_cast<std::size_t>(batch.extent[axis]);
                   ia += (rest % extent) * batch.a_stride[axis];
                   ib += (rest % extent) * batch.b_stride[axis];
                   rest /= extent;
                 }
                 cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, desc.rows, desc.cols, desc.inner, 1.0f,
                             a.data() + ia * a_matrix, desc.inner, b.data() + ib * b_matrix, desc.cols, 0.0f,
                             output.data() + m * c_matrix, desc.cols);
               });
}

}  // namespace corgy
