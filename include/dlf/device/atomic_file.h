// Replacing a file so that a crash, a full disk or an error midway leaves the old one whole.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace dlf {

/// Writes `target` (creating its directory) by calling `write` on a temporary file beside it,
/// syncing that to disk, renaming it over `target` and syncing the directory. On failure the
/// temporary is removed and a dlf::Error, prefixed by `what` ("checkpoint"), says that the
/// previous file is unchanged. Temporaries of killed writers (whose process is gone) are removed.
void replace_file(const std::filesystem::path& target, const std::string& what,
                  const std::function<void(const std::filesystem::path& temp)>& write);
/// What a command that works long before it writes `target` checks first: creates the
/// directory `target` goes in, writes and removes a file there, and finds `bytes` free on its
/// file system. Returns the directory; else a dlf::Error, prefixed by `what`, says which.
std::filesystem::path check_writable(const std::filesystem::path& target, const std::string& what,
                                     uint64_t bytes = 0);
/// replace_file() writing `text`.
void replace_file(const std::filesystem::path& target, const std::string& what,
                  const std::string& text);

}  // namespace dlf
