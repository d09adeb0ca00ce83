#pragma once
// Names the calling thread for the operating system (Linux: 15 bytes at most, the rest cut), so
// that `top -H`, `ps -L` and profilers tell the engine's threads apart; elsewhere nothing.
#include <string>

namespace assoc {

void name_this_thread(const std::string& name);

}  // namespace assoc
