#include "corgy/tensor_dims.h"

#include <fmt/format.h>

#include <limits>

#include "corgy/error.h"

namespace corgy {

TensorDims::TensorDims(std::initializer_list<int> extents) {
  if (extents.size() < 1 || extents.size() > max_rank) {
    throw Error(fmt::format("a tensor has rank 1 to {}, got {} dimensions", max_rank, extents.size()));
  }
  for (int e : extents) {
    if (e < 1) throw Error(fmt::format("a tensor's extents are at least 1, got {}", e));
    extent[static_cast<std::size_t>(rank++)] = e;
  }
}

TensorDims TensorDims::from(std::span<const std::int64_t> extents) {
  if (extents.empty() || extents.size() > max_rank) {
    throw Error(fmt::format("a tensor has rank 1 to {}, got {} dimensions", max_rank, extents.size()));
  }
  TensorDims dims;
  for (std::int64_t e : extents) {
    if (e < 1 || e > std::numeric_limits<int>::max()) {
      throw Error(fmt::format("a tensor's extents are 1 to 2^31 - 1, got {}", e));
    }
    dims.extent[static_cast<std::size_t>(dims.rank++)] = static_cast<int>(e);
  }
  return dims;
}

std::size_t TensorDims::count() const {
  std::size_t n = 1;
  for (int a = 0; a < rank; ++a) n *= static_cast<std::size_t>((*this)[a]);
  return n;
}

std::array<std::size_t, TensorDims::max_rank> TensorDims::strides() const {
  std::array<std::size_t, max_rank> s{};
  std::size_t stride = 1;
  for (int a = rank; a-- > 0;) {
    s[static_cast<std::size_t>(a)] = stride;
    stride *= static_cast<std::size_t>((*this)[a]);
  }
  return s;
}

Shape TensorDims::folded() const {
  const auto& e = extent;
  switch (rank) {
    case 1: return {e[0], 1, 1, 1};
    case 2: return {e[0], e[1], 1, 1};
    case 3: return {e[0], e[1], 1, e[2]};
    case 4: return {e[0], e[1], e[2], e[3]};
    case 5: return {e[0], e[1] * e[2], e[3], e[4]};
    case 6: return {e[0], e[1] * e[2] * e[3], e[4], e[5]};
    default: throw Error(fmt::format("a tensor has rank 1 to {}, got {} dimensions", max_rank, rank));
  }
}

TensorDims TensorDims::with_batch(int n) const {
  TensorDims dims = *this;
  dims.extent[0] = n;
  return dims;
}

TensorDims TensorDims::matching(const Shape& stored, std::string_view layer) const {
  const TensorDims dims = with_batch(stored.n);
  if (dims.folded() != stored) {
    throw Error(fmt::format("{}: expects a tensor {} (stored as {}) for some batch, got {}", layer, str(),
                            with_batch(stored.n).folded().str(), stored.str()));
  }
  return dims;
}

bool TensorDims::operator==(const TensorDims& other) const {
  if (rank != other.rank) return false;
  for (int a = 0; a < rank; ++a) {
    if ((*this)[a] != other[a]) return false;
  }
  return true;
}

std::string TensorDims::str() const {
  std::string text = "(";
  for (int a = 0; a < rank; ++a) text += fmt::format("{}{}", a ? ", " : "", (*this)[a]);
  return text + ")";
}

}  // namespace corgy
