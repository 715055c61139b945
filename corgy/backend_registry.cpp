// make_backend(): the one switch that picks where a model runs.
#include <fmt/format.h>

#include "corgy/backend.h"
#include "corgy/backends/blas/blas_backend.h"
#include "corgy/backends/naive/naive_backend.h"
#include "corgy/error.h"

namespace corgy {

std::vector<std::string> available_backends() { return {"blas", "naive"}; }

std::unique_ptr<Backend> make_backend(const std::string& name, int threads) {
  std::unique_ptr<Backend> backend;
  if (name == "naive") {
    backend = std::make_unique<NaiveBackend>();
  } else if (name == "blas" || name == "auto") {
    backend = std::make_unique<BlasBackend>(threads);
  } else {
    throw Error(fmt::format("unknown backend '{}': expected one of naive, blas, auto", name));
  }
  return backend;
}

}  // namespace corgy
