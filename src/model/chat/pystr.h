// Python's str methods that templates call, on UTF-8 text. Case mapping is per character
// (Python's simple mappings; ß stays ß where Python writes SS).
#pragma once

#include <string>
#include <vector>

namespace strata::model::jinja::pystr {

/// str.strip/lstrip/rstrip: `chars` empty means whitespace.
std::string strip(const std::string& s, const std::string& chars, bool left, bool right);
std::string upper(const std::string& s);
std::string lower(const std::string& s);
/// str.capitalize: first character upper, the rest lower.
std::string capitalize(const std::string& s);
/// str.title: each run of letters starts upper and continues lower.
std::string title(const std::string& s);
/// str.replace; count < 0 replaces all.
std::string replace(const std::string& s, const std::string& from, const std::string& to,
                    long count);
/// str.split: `sep` null (has_sep false) splits on whitespace runs; maxsplit < 0 is no limit.
std::vector<std::string> split(const std::string& s, bool has_sep, const std::string& sep,
                               long maxsplit);
/// str.splitlines without keepends, over \n, \r\n and \r.
std::vector<std::string> splitlines(const std::string& s);

}  // namespace strata::model::jinja::pystr
