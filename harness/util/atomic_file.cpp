#include "harness/util/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/ir/error.h"

namespace fb {

void write_file_atomically(const std::string& path, const std::string& text, const std::string& what) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  auto fail = [&](const std::string& reason) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw Error("cannot write " + what + " to " + path + ": " + reason);
  };
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) fail(std::strerror(errno));
    f << text;
    f.flush();
    if (!f) {
      const int err = errno;
      f.close();
      fail(std::strerror(err));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) fail(ec.message());
}

}  // namespace fb
