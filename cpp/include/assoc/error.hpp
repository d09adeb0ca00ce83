#pragma once
// The engine's errors: every bad input ends as Error, which the bindings turn into assoc.Error;
// a file the system would not write ends as FileError (OSError).
#include <stdexcept>
#include <string>
#include <system_error>

namespace assoc {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// A system call on a file that failed: not bad input but the machine's refusal (a full disk,
// a file that exists). The bindings turn it into OSError with the errno and the path.
class FileError : public std::runtime_error {
 public:
  FileError(int error, const std::string& path)
      : std::runtime_error(path + ": " + std::generic_category().message(error)), error_(error), path_(path) {}
  int error() const { return error_; }
  const std::string& path() const { return path_; }

 private:
  int error_;
  std::string path_;
};

}  // namespace assoc
