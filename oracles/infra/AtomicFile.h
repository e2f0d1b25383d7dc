#pragma once
// The one way tcfuzz writes a file that someone may read at any moment (reports, queue entries,
// fuzzer_stats, LLM scripts): a unique temporary file beside the target, fsync, rename.
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tcfuzz {

/// A write failed because the disk (or a quota) is full: ENOSPC, EFBIG or EDQUOT.
struct DiskFullError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// True for the errno values that mean "no space left": ENOSPC, EFBIG, EDQUOT.
bool isDiskFullErrno(int e);

/// Throws for a failed file operation: "cannot <what> <path>: <strerror>", as DiskFullError when
/// `errnoValue` says the disk is full, std::runtime_error otherwise.
[[noreturn]] void throwFileError(const std::string& what, const std::filesystem::path& path, int errnoValue);

/// Writes `content` to `path` through a temporary file unique to this process and thread, fsyncs it
/// and renames it over `path`: readers see the old file or the new one, never a part. The temporary
/// file is removed on failure. Throws DiskFullError when the disk is full, std::runtime_error
/// naming the path otherwise.
void writeFileAtomically(const std::filesystem::path& path, std::string_view content);

/// Creates `dir` and its parents; DiskFullError or std::runtime_error naming the directory.
void makeDirectories(const std::filesystem::path& dir);

/// Removes `path` if it exists; std::runtime_error naming the path when it cannot.
void removeIfPresent(const std::filesystem::path& path);

}  // namespace tcfuzz
