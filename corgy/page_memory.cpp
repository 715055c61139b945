#include "corgy/page_memory.h"

#include <fmt/format.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "corgy/error.h"

namespace corgy {

namespace {

[[noreturn]] void out_of_memory(std::size_t bytes, const char* what) {
  throw Error(fmt::format("out of memory: could not allocate {} bytes ({:.1f} MiB) for {}", bytes,
                          static_cast<double>(bytes) / (1 << 20), what));
}

std::size_t page_bytes() {
  static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

std::size_t round_up(std::size_t value, std::size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

/// Under AddressSanitizer every block comes from the C library, whose blocks it guards (it knows nothing of ours).
bool maps(std::size_t bytes) {
#if defined(__SANITIZE_ADDRESS__)
  (void)bytes;
  return false;
#else
  return bytes >= kMappedBytes;
#endif
}

}  // namespace

void* allocate_pages(std::size_t bytes, std::size_t alignment, const char* what) {
  if (!maps(bytes)) {
    void* memory = nullptr;
    if (posix_memalign(&memory, alignment, round_up(bytes, alignment)) != 0) out_of_memory(bytes, what);
    std::memset(memory, 0, bytes);
    return memory;
  }
  // Map `alignment` more than asked, then unmap what lies before the first aligned address and past the block.
  const std::size_t length = round_up(bytes, page_bytes());
  const std::size_t slack = alignment > page_bytes() ? alignment : 0;
  void* mapping = mmap(nullptr, length + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) out_of_memory(bytes, what);
  const auto start = reinterpret_cast<std::uintptr_t>(mapping);
  const std::uintptr_t aligned = slack ? round_up(start, alignment) : start;
  if (aligned > start) munmap(mapping, aligned - start);
  if (const std::size_t tail = start + length + slack - (aligned + length); tail > 0) {
    munmap(reinterpret_cast<void*>(aligned + length), tail);
  }
  return reinterpret_cast<void*>(aligned);
}

void release_free_heap_pages() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

void free_pages(void* memory, std::size_t bytes) {
  if (memory == nullptr) return;
  if (!maps(bytes)) return std::free(memory);
  munmap(memory, round_up(bytes, page_bytes()));
}

}  // namespace corgy
