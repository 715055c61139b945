#include "corgy/page_memory.h"

#include <fmt/format.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

/// allocate_pages's block, before any huge-page advice.
void* allocate_block(std::size_t bytes, std::size_t alignment, const char* what) {
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

}  // namespace

std::size_t page_bytes() {
  static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

void* allocate_pages(std::size_t bytes, std::size_t alignment, const char* what) {
  const bool huge = bytes >= kHugePageBytes;
  void* memory = allocate_block(bytes, huge ? std::max(alignment, kHugePageBytes) : alignment, what);
  if (huge) madvise(memory, bytes, MADV_HUGEPAGE);
  return memory;
}

void release_free_heap_pages() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

namespace {

/// An unlinked file open for reading and writing in the first temporary folder on a disk, or -1.
int open_temporary_file() {
  const char* folders[] = {std::getenv("TMPDIR"), "/var/tmp", "/tmp"};
  for (const char* folder : folders) {
    if (folder == nullptr || *folder == '\0') continue;
    struct statfs info {};
    if (statfs(folder, &info) != 0 || info.f_type == TMPFS_MAGIC || info.f_type == RAMFS_MAGIC) continue;
    const int fd = open(folder, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
  }
  return -1;
}

bool write_all(int fd, const void* data, std::size_t bytes) {
  const auto* next = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t written = write(fd, next, bytes);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    next += written;
    bytes -= static_cast<std::size_t>(written);
  }
  return true;
}

}  // namespace

bool move_pages_to_file(void* memory, std::size_t bytes) {
  if (memory == nullptr || !maps(bytes)) return false;
  const int fd = open_temporary_file();
  if (fd < 0) return false;
  const std::size_t length = round_up(bytes, page_bytes());
  void* file =
      write_all(fd, memory, length) ? mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  close(fd);  // the mapping keeps the file
  if (file == MAP_FAILED) return false;
  // mremap replaces the block's anonymous pages with the file's at the same address in one step (a reader in another
  // thread finds the one or the other, with the same values); where it fails the block is left as it was.
  if (mremap(file, length, length, MREMAP_MAYMOVE | MREMAP_FIXED, memory) == MAP_FAILED) {
    munmap(file, length);
    return false;
  }
  return true;
}

void drop_file_pages(void* memory, std::size_t bytes) {
#if defined(MADV_PAGEOUT)
  if (memory != nullptr) madvise(memory, round_up(bytes, page_bytes()), MADV_PAGEOUT);
#else
  (void)memory;
  (void)bytes;
#endif
}

void free_pages(void* memory, std::size_t bytes) {
  if (memory == nullptr) return;
  if (!maps(bytes)) return std::free(memory);
  munmap(memory, round_up(bytes, page_bytes()));
}

}  // namespace corgy
