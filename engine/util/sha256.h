// A small self-contained SHA-256 (FIPS 180-4): hashes model bytes and case keys without
// pulling in a crypto library.
#pragma once
#include <string>
#include <string_view>

namespace fb {

// The SHA-256 digest of `bytes` as 64 lowercase hex characters. Uses the CPU's SHA
// instructions where it has them.
std::string sha256_hex(std::string_view bytes);

// The same digest without the SHA instructions (tests compare the two).
std::string sha256_hex_portable(std::string_view bytes);

}  // namespace fb
