#include "corgy/variable.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "corgy/error.h"

namespace corgy {

namespace {
std::atomic<std::uint64_t> next_storage_id{1};
}

std::size_t Storage::page_size() {
  static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

Storage::Storage(std::size_t count) : id_(next_storage_id++) {
  const std::size_t page = page_size();
  const std::size_t wanted = std::max<std::size_t>(count, 1) * sizeof(float);
  if (wanted / sizeof(float) < count) throw Error(fmt::format("Variable of {} floats is too large", count));
  const std::size_t bytes = (wanted + page - 1) / page * page;
  void* memory = std::aligned_alloc(page, bytes);
  if (memory == nullptr) {
    throw Error(fmt::format("out of memory: could not allocate {} bytes ({:.1f} MiB) for a Variable of {} floats",
                            bytes, static_cast<double>(bytes) / (1 << 20), count));
  }
  if (bytes >= (std::size_t{2} << 20)) madvise(memory, bytes, MADV_HUGEPAGE);
  std::memset(memory, 0, bytes);
  data_ = static_cast<float*>(memory);
  capacity_ = bytes / sizeof(float);
}

Storage::~Storage() { std::free(data_); }

Variable::Variable(Shape shape) : shape_(shape) {
  if (shape.has_zero_or_negative()) {
    throw Error(fmt::format("Variable shape {} has a zero or negative dimension", shape.str()));
  }
  storage_ = std::make_shared<Storage>(shape.count());
}

Variable::Variable(Shape shape, std::span<const float> values) : Variable(shape) {
  if (values.size() != shape.count()) {
    throw Error(fmt::format("Variable of shape {} needs {} values, got {}", shape.str(), shape.count(), values.size()));
  }
  std::copy(values.begin(), values.end(), data());
}

Variable Variable::clone() const {
  if (empty()) return {};
  return Variable(shape_, values());
}

Variable Variable::share() const { return empty() ? Variable() : view(shape_); }

Variable Variable::view(Shape shape) const {
  if (shape.has_zero_or_negative() || shape.count() > capacity()) {
    throw Error(fmt::format("cannot view a Variable of capacity {} as shape {} ({} elements)", capacity(), shape.str(),
                            shape.count()));
  }
  Variable result;
  result.shape_ = shape;
  result.storage_ = storage_;
  return result;
}

void Variable::reshape(Shape shape) {
  if (shape.has_zero_or_negative() || shape.count() != count()) {
    throw Error(fmt::format("cannot reshape {} ({} elements) to {} ({} elements)", shape_.str(), count(), shape.str(),
                            shape.count()));
  }
  shape_ = shape;
}

void Variable::fill(float value) { std::fill_n(data(), count(), value); }

}  // namespace corgy
