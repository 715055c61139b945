// Large blocks of memory straight from the kernel (mmap), small ones from the C library: what Storage and the CPU
// backends' packed weights are made of.
#pragma once

#include <cstddef>

namespace corgy {

/// `bytes` of zero-filled memory aligned to `alignment` (a power of two, at least the page size for blocks of
/// kMappedBytes and more). Throws corgy::Error, naming `what`, when memory runs out.
///
/// Blocks of 2 MiB and more start on a huge-page boundary and are offered to transparent huge pages, so that each
/// whole 2 MiB of them can be one: the first write then faults once per 2 MiB instead of once per 4 KiB (planning
/// Tiny YOLO's 250 MB of Winograd weights spent most of its time in page faults), and a GEMM streaming them misses
/// the TLB less. Their size is not rounded up to 2 MiB: the last, partial huge page would be resident whole
/// (ResNet-50's packed weights grew by up to 2 MB a buffer); the tail past the last whole one gets 4 KiB pages.
///
/// Why blocks from kMappedBytes up are mapped here rather than by malloc: the C library maps large blocks itself,
/// but after such a block is freed it raises its threshold to that size (up to 32 MB), and from then on blocks
/// below it come from its heap, which keeps their pages when they are freed. A backend that plans a layer frees
/// blocks of tens of megabytes (the packed weights of the algorithms it timed and did not choose, the timing's
/// output): those stayed in the process's resident memory. A mapped block's pages are also zero until written,
/// so zero-filling costs nothing and pages never written are never resident.
void* allocate_pages(std::size_t bytes, std::size_t alignment, const char* what);
/// Frees what allocate_pages(bytes, ...) returned (the same `bytes`).
void free_pages(void* memory, std::size_t bytes);
/// The system's page size (sysconf, once).
std::size_t page_bytes();

/// Moves a block of allocate_pages(bytes, ...) into an unlinked temporary file mapped at the same address, same
/// values, privately (a write still changes this block alone): its pages leave the process's memory, and the kernel
/// reads them back from the file where the block is touched again. For data that stays valid but that nothing reads
/// for now: a CPU backend's packed copy of a layer's weights took over their work. The file is made in the first of
/// $TMPDIR, /var/tmp and /tmp that lies on a disk (not tmpfs, whose pages are memory); it is gone when the block is
/// freed. Returns false and changes nothing where it cannot: a block the C library allocated (small, or under
/// AddressSanitizer), no such folder, a failed write.
bool move_pages_to_file(void* memory, std::size_t bytes);

/// Drops the resident pages of a block that move_pages_to_file moved (MADV_PAGEOUT): the kernel reads them back from
/// the file again where the block is touched; pages written since stay (they exist nowhere else). Nothing where the
/// kernel cannot (before Linux 5.4).
void drop_file_pages(void* memory, std::size_t bytes);

/// Gives the pages of the C library's freed heap blocks back to the system (glibc's malloc_trim; nothing elsewhere).
/// For a loader that has just freed a parsed file: the file's weights, read into the parser's strings, sat in the
/// heap after they were converted into Variables (ResNet-50's 100 MB), which now come from allocate_pages.
void release_free_heap_pages();

/// Blocks of this size and more are mapped (all come from the C library under AddressSanitizer).
inline constexpr std::size_t kMappedBytes = std::size_t{1} << 20;

}  // namespace corgy
