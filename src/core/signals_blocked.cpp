// SignalsBlocked: every signal blocked for the thread's life of the object.
#include "venvtx/core/signals_blocked.hpp"

#include <pthread.h>

namespace venvtx {

SignalsBlocked::SignalsBlocked() {
    sigset_t all;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, &m_was);
}

SignalsBlocked::~SignalsBlocked() { ::pthread_sigmask(SIG_SETMASK, &m_was, nullptr); }

} // namespace venvtx
