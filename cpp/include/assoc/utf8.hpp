#pragma once
// The one UTF-8 check of the readers: well-formed UTF-8 with no overlong forms, surrogates or
// code points past U+10FFFF.
#include <cstddef>
#include <string>

namespace assoc {

// Offset of the first byte of [p, p+n) that is not part of valid UTF-8, or n.
std::size_t find_invalid_utf8(const char* p, std::size_t n);

// True when [p, p+n) is valid UTF-8.
inline bool valid_utf8(const unsigned char* p, std::size_t n) {
  return find_invalid_utf8(reinterpret_cast<const char*>(p), n) == n;
}

// Appends code point `cp` (at most U+10FFFF) to `out` as UTF-8.
void append_utf8(std::string& out, char32_t cp);

}  // namespace assoc
