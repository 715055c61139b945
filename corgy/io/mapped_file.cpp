#include "corgy/io/mapped_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "corgy/error.h"

namespace corgy {

MappedFile::MappedFile(const std::string& path, const std::string& what) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("{}: cannot open the {}: {}", path, what, std::strerror(errno)));
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    throw Error(fmt::format("{}: cannot read the {}: not a regular file", path, what));
  }
  size_ = static_cast<std::size_t>(info.st_size);
  if (size_ > 0) {
    data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data_ == MAP_FAILED) {
      const int error = errno;
      ::close(fd);
      throw Error(fmt::format("{}: cannot map the {}: {}", path, what, std::strerror(error)));
    }
  }
  // The mapping stays valid after the descriptor is closed.
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (size_ > 0) ::munmap(data_, size_);
}

}  // namespace corgy
