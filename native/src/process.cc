// The rank's tie to the process that started it (railcomm run locally, or the
// ssh session / `ip netns exec` on another host). A rank on its event loop
// sees the launcher's connection close and exits cleanly (removing its
// shared-memory names); one busy in a loop that never yields would live on.
// A thread here waits for the parent to end (a pidfd, else polling
// getppid), gives the event loop a grace period, then ends the process.
#include "common.h"
#include <atomic>
#include <cerrno>
#include <csignal>
#include <poll.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

namespace railcomm {

namespace {
std::atomic<bool> watching{false};
std::atomic<bool> started{false};

void WaitForParent(pid_t parent) {
#ifdef SYS_pidfd_open
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, parent, 0));
  if (fd >= 0) {
    struct pollfd p = {fd, POLLIN, 0};
    while (poll(&p, 1, -1) < 0 && errno == EINTR) {}
    close(fd);
    return;
  }
#endif
  while (getppid() == parent) usleep(250000);
}

/**
 * watchParent(graceMs): once the parent process ends, wait graceMs and, if
 * this process still runs and the watch was not stopped, kill it (SIGKILL).
 * Returns the parent's pid. One watcher per process: the first call fixes the
 * parent and graceMs; a later call only turns a stopped watch on again. The
 * parent is the one at the first call (a launcher that died before it leaves
 * the rank to init's wire-up failure, not to this watch).
 */
Napi::Value WatchParent(const Napi::CallbackInfo& a) {
  if (a.Length() < 1 || !a[0].IsNumber()) { ThrowType(a.Env(), "watchParent(graceMs)"); return Napi::Value(); }
  const int grace = a[0].As<Napi::Number>().Int32Value();
  if (grace < 0) { ThrowType(a.Env(), "watchParent(graceMs): graceMs must not be negative"); return Napi::Value(); }
  const pid_t parent = getppid();
  watching.store(true);
  if (!started.exchange(true)) {
    std::thread([parent, grace] {
      WaitForParent(parent);
      usleep(static_cast<useconds_t>(grace) * 1000);
      if (watching.load()) kill(getpid(), SIGKILL);
    }).detach();
  }
  return Napi::Number::New(a.Env(), parent);
}

/** stopWatchingParent(): the rank finished its part (finalize); it may outlive its launcher. */
void StopWatchingParent(const Napi::CallbackInfo&) {
  watching.store(false);
}

}  // namespace

void InitProcess(Napi::Env env, Napi::Object exports) {
  exports.Set("watchParent", Napi::Function::New(env, WatchParent, "watchParent"));
  exports.Set("stopWatchingParent", Napi::Function::New(env, StopWatchingParent, "stopWatchingParent"));
}

}  // namespace railcomm
