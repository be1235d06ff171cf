// Replacing a file so that a crash, a full disk or an error midway leaves the old one whole.
#pragma once
#include <filesystem>
#include <functional>
#include <string>

namespace dlf::nn {

/// Writes `target` (creating its directory) by calling `write` on a temporary file beside it,
/// syncing that to disk, renaming it over `target` and syncing the directory. On failure the
/// temporary is removed and a dlf::Error, prefixed by `what` ("checkpoint"), says that the
/// previous file is unchanged. Temporaries of killed writers (whose process is gone) are removed.
void replace_file(const std::filesystem::path& target, const std::string& what,
                  const std::function<void(const std::filesystem::path& temp)>& write);
/// Creates the directory `target` goes in and returns it, or throws the dlf::Error that
/// replace_file() would: a command that works long before it writes checks with it first.
std::filesystem::path make_directory_for(const std::filesystem::path& target,
                                         const std::string& what);
/// replace_file() writing `text`.
void replace_file(const std::filesystem::path& target, const std::string& what,
                  const std::string& text);

}  // namespace dlf::nn
