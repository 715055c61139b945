// matmul: Corgy's "x" operator, a GEMM on 2-D Variables routed to a backend.
#pragma once

#include "corgy/backend.h"
#include "corgy/variable.h"

namespace corgy {

/// Returns op(a) x op(b), where a and b are matrices (1, 1, rows, cols) and op transposes when its flag is
/// set. Throws corgy::Error when the inner dimensions differ or an argument is not a matrix.
Variable matmul(Backend& backend, const Variable& a, const Variable& b, bool transpose_a = false,
                bool transpose_b = false);

}  // namespace corgy
