#include "corgy/variable.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "corgy/error.h"
#include "corgy/page_memory.h"

namespace corgy {

namespace {
std::atomic<std::uint64_t> next_storage_id{1};
}  // namespace

std::size_t Storage::page_size() { return page_bytes(); }

Storage::Storage(std::size_t count) : id_(next_storage_id++) {
  const std::size_t page = page_size();
  const std::size_t wanted = std::max<std::size_t>(count, 1) * sizeof(float);
  if (wanted / sizeof(float) < count) throw Error(fmt::format("Variable of {} floats is too large", count));
  const std::size_t bytes = (wanted + page - 1) / page * page;
  void* memory = allocate_pages(bytes, page, "a Variable");  // blocks of 2 MiB and more on huge pages
  data_ = static_cast<float*>(memory);
  capacity_ = bytes / sizeof(float);
}

Storage::~Storage() { free_pages(data_, bytes()); }

bool Storage::page_out() {
  if (in_file_) {
    drop_file_pages(data_, bytes());
    return true;
  }
  in_file_ = move_pages_to_file(data_, bytes());
  return in_file_;
}

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
