// UTF-8 helpers shared by the tokenizers.
#pragma once

#include <cstdint>
#include <string>

namespace strata::model {

/// Appends the UTF-8 encoding of code point `cpt` (at most U+10FFFF) to `out`.
inline void append_utf8(uint32_t cpt, std::string& out) {
  if (cpt < 0x80) {
    out += static_cast<char>(cpt);
  } else if (cpt < 0x800) {
    out += static_cast<char>(0xC0 | (cpt >> 6));
    out += static_cast<char>(0x80 | (cpt & 0x3F));
  } else if (cpt < 0x10000) {
    out += static_cast<char>(0xE0 | (cpt >> 12));
    out += static_cast<char>(0x80 | ((cpt >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cpt & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cpt >> 18));
    out += static_cast<char>(0x80 | ((cpt >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cpt >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cpt & 0x3F));
  }
}

}  // namespace strata::model
