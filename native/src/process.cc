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
}  // namespace

/**
 * watchParent(graceMs): once the parent process ends, wait graceMs and, if
 * this process still runs and the watch was not stopped, kill it (SIGKILL).
 * Returns the parent's pid. One watcher per process: the first call fixes the
 * parent and graceMs; a later call only turns a stopped watch on again. The
 * parent is the one at the first call (a launcher that died before it leaves
 * the rank to init's wire-up failure, not to this watch).
 */
static void WatchParent(const FunctionCallbackInfo<Value>& args) {
  Isolate* iso = args.GetIsolate();
  if (args.Length() < 1 || !args[0]->IsInt32()) { ThrowType(iso, "watchParent(graceMs)"); return; }
  const int grace = args[0].As<v8::Int32>()->Value();
  const pid_t parent = getppid();
  watching.store(true);
  if (!started.exchange(true)) {
    std::thread([parent, grace] {
      WaitForParent(parent);
      usleep(static_cast<useconds_t>(grace) * 1000);
      if (watching.load()) kill(getpid(), SIGKILL);
    }).detach();
  }
  args.GetReturnValue().Set(static_cast<int32_t>(parent));
}

/** stopWatchingParent(): the rank finished its part (finalize); it may outlive its launcher. */
static void StopWatchingParent(const FunctionCallbackInfo<Value>& args) {
  watching.store(false);
}

void InitProcess(Local<v8::Object> exports, Local<v8::Context> ctx) {
  SetFn(exports, ctx, "watchParent", WatchParent);
  SetFn(exports, ctx, "stopWatchingParent", StopWatchingParent);
}

}  // namespace railcomm
