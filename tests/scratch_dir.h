// A test's own scratch folder under the system temp folder, named after the test binary's
// pid (tests of one binary run one at a time; ctest runs binaries side by side), emptied
// when made and removed when the test ends.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>

namespace fb {

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix)
      : dir_(std::filesystem::temp_directory_path() / (prefix + "_" + std::to_string(getpid()))) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

}  // namespace fb
