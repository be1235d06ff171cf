// dlf::Error and the DLF_CHECK macro: every bad input ends here.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace dlf {

/// The exception dlf throws for bad input. Its message names the thing and the fix.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A device has no room for an allocation; the message lists what is live there by category.
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace dlf

/// Throws dlf::Error with the streamed message when `cond` is false.
#define DLF_CHECK(cond, ...)                                  \
  do {                                                        \
    if (!(cond)) [[unlikely]]                                 \
      throw ::dlf::Error(::dlf::detail::concat(__VA_ARGS__)); \
  } while (0)
