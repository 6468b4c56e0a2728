// A forked worker: runs a function in a child process and hands back the text it returns, so
// that two slow things (the baseline probe and a preview) run at the same time, each with its
// own subreaper and namespaces, while this process waits for both.
#pragma once

#include <functional>
#include <string>
#include <sys/types.h>

namespace venvtx {

class Worker {
public:
    // Forks; the child runs `body` (an Error or exception becomes the failure text) and exits
    // without running this process's destructors. The child dies with this process.
    explicit Worker(const std::function<std::string()>& body);
    ~Worker();  // kills the child if it was not waited for
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    struct Result {
        bool ok = false;    // body returned; otherwise `text` says why it did not
        std::string text;
    };
    // Reads everything the child sends. A child that sent its result is reaped on a thread of its
    // own: its exit (a view's mount namespace torn down) takes milliseconds nobody waits for.
    Result wait();
    // Ends the child and every process in its group at once.
    void kill();
    // Returns once every child whose result was read has exited (its mounts gone with it).
    static void await_exits();

private:
    pid_t m_pid = -1;
    int m_read = -1;
};

} // namespace venvtx
