// SignalsBlocked: while one lives, the calling thread takes no signal, nor does a thread it
// starts: every signal stays the main thread's, which forwards an interrupt to the children
// (core/subprocess.hpp).
#pragma once

#include <signal.h>

namespace venvtx {

class SignalsBlocked {
public:
    SignalsBlocked();
    ~SignalsBlocked();
    SignalsBlocked(const SignalsBlocked&) = delete;
    SignalsBlocked& operator=(const SignalsBlocked&) = delete;

private:
    sigset_t m_was;
};

} // namespace venvtx
