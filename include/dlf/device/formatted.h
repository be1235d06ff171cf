// printf's formatting into a std::string: the lines that reports for people are made of.
#pragma once
#include <cstdio>
#include <string>

namespace dlf {

/// `format` (printf's) with `values`, as a string of at most 1023 characters.
template <typename... Values>
std::string formatted(const char* format, Values... values) {
  char text[1024];
  std::snprintf(text, sizeof text, format, values...);
  return text;
}

}  // namespace dlf
