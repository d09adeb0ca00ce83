#pragma once
// Names the calling thread for the operating system (Linux: 15 bytes at most, the rest cut), so
// that `top -H`, `ps -L` and profilers tell the engine's threads apart; elsewhere nothing.
#include <string>
#include <thread>

namespace assoc {

void name_this_thread(const std::string& name);
// The same for a thread just started, from the thread that started it: the name is there as
// soon as this returns.
void name_thread(std::thread& thread, const std::string& name);

}  // namespace assoc
