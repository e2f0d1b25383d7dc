#include "oracles/infra/AtomicFile.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include <fmt/format.h>

namespace tcfuzz {

namespace fs = std::filesystem;

namespace {

/// A name no other writer of the same target uses at the same time: a write is synchronous, so the
/// process and thread identify it.
fs::path temporaryNameFor(const fs::path& path) {
  fs::path tmp = path;
  tmp.replace_filename(fmt::format(".{}.tmp-{}-{}", path.filename().string(), ::getpid(),
                                   std::hash<std::thread::id>{}(std::this_thread::get_id())));
  return tmp;
}

}  // namespace

bool isDiskFullErrno(int e) { return e == ENOSPC || e == EFBIG || e == EDQUOT; }

void throwFileError(const std::string& what, const fs::path& path, int errnoValue) {
  std::string text = fmt::format("cannot {} {}: {}", what, path.string(), std::strerror(errnoValue));
  if (isDiskFullErrno(errnoValue)) throw DiskFullError(text);
  throw std::runtime_error(text);
}

void writeFileAtomically(const fs::path& path, std::string_view content) {
  fs::path tmp = temporaryNameFor(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throwFileError("create", tmp, errno);
  auto abandon = [&](const std::string& what, int e) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throwFileError(what, path, e);
  };
  const char* data = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t put = ::write(fd, data, left);
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) abandon("write", errno);
    data += put;
    left -= static_cast<size_t>(put);
  }
  if (::fsync(fd) != 0) abandon("write", errno);
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throwFileError("write", path, e);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throwFileError("rename a temporary file to", path, e);
  }
}

void makeDirectories(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throwFileError("create", dir, ec.value());
  if (!fs::is_directory(dir, ec)) throwFileError("create directory", dir, ENOTDIR);
}

void removeIfPresent(const fs::path& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) throwFileError("remove", path, errno);
}

}  // namespace tcfuzz
