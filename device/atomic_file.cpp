#include <dlf/device/atomic_file.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <dlf/device/allocator.h>
#include <dlf/error.h>

namespace dlf {
namespace fs = std::filesystem;
namespace {

// fsync a file or a directory: the kernel's copy reaches the disk before we go on.
void sync_to_disk(const fs::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  DLF_CHECK(fd >= 0, "cannot open ", path.string(), " to sync it");
  const bool synced = ::fsync(fd) == 0;
  const bool closed = ::close(fd) == 0;
  DLF_CHECK(synced && closed, "syncing ", path.string(), " to disk failed");
}

// Temporary files of writers that were killed midway: their process is gone.
void remove_stale_temporaries(const fs::path& dir, const std::string& prefix) {
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const std::string pid = name.substr(prefix.size());
    if (pid.empty() || pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos)
      continue;
    if (::kill(pid_t(std::stol(pid)), 0) != 0 && errno == ESRCH) fs::remove(entry.path(), ec);
  }
}

// Creates the directory `target` goes in and returns it.
fs::path make_directory_for(const fs::path& target, const std::string& what) {
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(dir, ec);
  DLF_CHECK(fs::is_directory(dir), what, ": cannot create the directory ", dir.string(),
            ec ? " (" + ec.message() + ")" : "");
  return dir;
}

}  // namespace

fs::path check_writable(const fs::path& target, const std::string& what, uint64_t bytes) {
  const fs::path dir = make_directory_for(target, what);
  DLF_CHECK(!fs::is_directory(target), what, ": ", target.string(),
            " is a directory: give a file's name");
  // A file written and removed, as replace_file() will: permissions alone do not say (root
  // passes every check, and /proc or a read-only mount still refuse).
  std::string probe = (dir / (target.filename().string() + ".tmp-XXXXXX")).string();
  const int fd = ::mkstemp(probe.data());
  DLF_CHECK(fd >= 0, what, ": cannot write in ", dir.string(), " (", std::strerror(errno), ")");
  ::close(fd);
  ::unlink(probe.c_str());
  struct statvfs fs_stats {};
  if (bytes > 0 && ::statvfs(dir.c_str(), &fs_stats) == 0) {
    const uint64_t free = uint64_t(fs_stats.f_bavail) * fs_stats.f_frsize;
    DLF_CHECK(free >= bytes, what, ": ", dir.string(), " has ", format_bytes(double(free)),
              " free, and writing ", target.filename().string(), " needs ",
              format_bytes(double(bytes)));
  }
  return dir;
}

void replace_file(const fs::path& target, const std::string& what,
                  const std::function<void(const fs::path& temp)>& write) {
  const fs::path dir = make_directory_for(target, what);
  std::error_code ec;
  const std::string prefix = target.filename().string() + ".tmp-";
  remove_stale_temporaries(dir, prefix);
  const fs::path temp = dir / (prefix + std::to_string(::getpid()));
  const std::string kept = fs::is_regular_file(target) ? "the previous " + what + " is unchanged"
                                                       : "no " + what + " was written";
  try {
    write(temp);
    sync_to_disk(temp, O_RDONLY);
    fs::rename(temp, target, ec);
    DLF_CHECK(!ec, "moving it into place: ", ec.message());
  } catch (const std::exception& e) {
    fs::remove(temp, ec);
    throw Error(what + ": saving " + target.string() + " failed (" + e.what() + "); " + kept);
  }
  try {  // without this a power loss could undo the rename
    sync_to_disk(dir, O_RDONLY | O_DIRECTORY);
  } catch (const Error& e) {
    throw Error(what + ": " + target.string() + " was written, but " + e.what() +
                ": it may not survive a power loss");
  }
}

void replace_file(const fs::path& target, const std::string& what, const std::string& text) {
  replace_file(target, what, [&](const fs::path& temp) {
    std::ofstream file(temp);
    file << text;
    file.close();
    DLF_CHECK(file.good(), "writing ", temp.string(), " failed (", std::strerror(errno), ")");
  });
}

}  // namespace dlf
