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
#include <sched.h>
#include <sys/socket.h>
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

/**
 * bindThread(cpu): pin the calling thread (a rank's main thread, or a thread
 * rank's worker) to one CPU, as Open MPI's --bind-to core does for a rank.
 * The process's other threads (V8's helpers, libuv's pool) keep their CPUs.
 * Returns 0, or a negative errno (EINVAL: that CPU is not ours to use).
 */
Napi::Value BindThread(const Napi::CallbackInfo& a) {
  if (a.Length() < 1 || !a[0].IsNumber()) { ThrowType(a.Env(), "bindThread(cpu)"); return Napi::Value(); }
  const int cpu = a[0].As<Napi::Number>().Int32Value();
  if (cpu < 0 || cpu >= CPU_SETSIZE) { ThrowType(a.Env(), "bindThread(cpu): cpu out of range"); return Napi::Value(); }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  const int rc = sched_setaffinity(0, sizeof(set), &set);
  return Napi::Number::New(a.Env(), rc == 0 ? 0 : -errno);
}

/** threadCpus(): the CPUs the calling thread may run on (sched_getaffinity), ascending. */
Napi::Value ThreadCpus(const Napi::CallbackInfo& a) {
  cpu_set_t set;
  CPU_ZERO(&set);
  Napi::Array out = Napi::Array::New(a.Env());
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  uint32_t n = 0;
  for (int c = 0; c < CPU_SETSIZE; c++) if (CPU_ISSET(c, &set)) out.Set(n++, Napi::Number::New(a.Env(), c));
  return out;
}

/**
 * peekSocket(fd, into): copy up to into.length bytes waiting unread on socket
 * fd into `into` without consuming them (recv MSG_PEEK | MSG_DONTWAIT): a
 * synchronous call, which holds the event loop, looks at what the wire-up
 * service sent (a rank lost) and leaves it for the loop to read as usual.
 * Returns the count, 0 when nothing waits, or a negative errno.
 */
Napi::Value PeekSocket(const Napi::CallbackInfo& a) {
  if (a.Length() < 2 || !a[0].IsNumber() || !a[1].IsTypedArray()) { ThrowType(a.Env(), "peekSocket(fd, into)"); return Napi::Value(); }
  const int fd = a[0].As<Napi::Number>().Int32Value();
  Napi::Uint8Array into = a[1].As<Napi::Uint8Array>();
  const ssize_t n = recv(fd, into.Data(), into.ByteLength(), MSG_PEEK | MSG_DONTWAIT);
  if (n >= 0) return Napi::Number::New(a.Env(), static_cast<double>(n));
  return Napi::Number::New(a.Env(), errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno);
}

}  // namespace

void InitProcess(Napi::Env env, Napi::Object exports) {
  exports.Set("peekSocket", Napi::Function::New(env, PeekSocket, "peekSocket"));
  exports.Set("watchParent", Napi::Function::New(env, WatchParent, "watchParent"));
  exports.Set("stopWatchingParent", Napi::Function::New(env, StopWatchingParent, "stopWatchingParent"));
  exports.Set("bindThread", Napi::Function::New(env, BindThread, "bindThread"));
  exports.Set("threadCpus", Napi::Function::New(env, ThreadCpus, "threadCpus"));
}

}  // namespace railcomm
