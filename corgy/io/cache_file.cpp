#include "corgy/io/cache_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <system_error>

namespace corgy {

std::filesystem::path default_tuning_cache_folder() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && std::filesystem::path(xdg).is_absolute()) return std::filesystem::path(xdg) / "corgy";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::filesystem::path(home) / ".cache" / "corgy";
  return {};
}

// O_NONBLOCK: a FIFO put in the file's place must not block the process (fstat then rejects it).
std::optional<std::string> read_cache_file(const std::filesystem::path& file, std::size_t most_bytes) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat info {};
  std::optional<std::string> text;
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && static_cast<std::size_t>(info.st_size) <= most_bytes) {
    std::string bytes(static_cast<std::size_t>(info.st_size), '\0');
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t got = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (got <= 0) break;
      done += static_cast<std::size_t>(got);
    }
    bytes.resize(done);
    text = std::move(bytes);
  }
  ::close(fd);
  return text;
}

std::optional<std::string> replace_cache_file(const std::filesystem::path& file, const std::string& text) {
  std::error_code error;
  std::filesystem::create_directories(file.parent_path(), error);
  if (error) return fmt::format("cannot create the folder {}: {}", file.parent_path().string(), error.message());
  static std::atomic<unsigned> serial{0};
  const std::filesystem::path temporary =
      file.string() + fmt::format(".tmp-{}-{}", static_cast<long>(::getpid()), serial++);
  // O_EXCL: never write through a file or link someone else put there.
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return fmt::format("cannot create {}: {}", temporary.string(), std::strerror(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t wrote = ::write(fd, text.data() + done, text.size() - done);
    if (wrote <= 0) break;
    done += static_cast<std::size_t>(wrote);
  }
  const bool written = done == text.size() && ::close(fd) == 0;
  if (done != text.size()) ::close(fd);
  if (!written || std::rename(temporary.c_str(), file.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temporary.c_str());
    return fmt::format("cannot write {}: {}", file.string(), reason);
  }
  return std::nullopt;
}

}  // namespace corgy
