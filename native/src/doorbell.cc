// A doorbell that works across processes: a futex on a 32-bit word in shared
// memory. One addon thread per waiter sleeps in FUTEX_WAIT and reaches the
// event loop through an unref'd threadsafe function (a pending wait never
// keeps Node alive). Atomics.wait/notify cannot do this: V8 keeps its waiters
// per process.
#include "common.h"
#include <atomic>
#include <climits>
#include <condition_variable>
#include <linux/futex.h>
#include <mutex>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

namespace railcomm {
namespace {

long Futex(int32_t* addr, int op, int32_t val, const struct timespec* ts) {
  return syscall(SYS_futex, addr, op, val, ts, nullptr, 0);
}

struct Waiter {
  napi_env env = nullptr;
  napi_ref keep = nullptr;  // the view over the word: its memory stays mapped while we wait on it
  int32_t* word = nullptr;
  napi_threadsafe_function call = nullptr;
  std::thread th;
  std::mutex m;
  std::condition_variable cv;
  bool armed = false;
  bool closing = false;   // Shutdown began (under m); the thread is gone once it returns
  bool orphan = false;    // JavaScript dropped the waiter unclosed: the env cleanup frees it
  int32_t expected = 0;

  void Run() {
    std::unique_lock<std::mutex> lk(m);
    for (;;) {
      cv.wait(lk, [this] { return armed || closing; });
      if (closing) return;
      const int32_t exp = expected;
      lk.unlock();
      // Sleep while the word still holds what the caller saw. The timeout only
      // bounds how long a lost close could keep the thread (it costs nothing idle).
      struct timespec ts = {1, 0};
      while (__atomic_load_n(word, __ATOMIC_SEQ_CST) == exp) {
        {
          std::lock_guard<std::mutex> g(m);
          if (closing) return;
        }
        Futex(word, FUTEX_WAIT, exp, &ts);
      }
      lk.lock();
      armed = false;
      if (closing) return;
      napi_call_threadsafe_function(call, nullptr, napi_tsfn_nonblocking);
    }
  }
};

/** On the event loop: run the waiter's callback. env is null once the function is being torn down. */
void CallJs(napi_env env, napi_value fn, void* /*context*/, void* /*data*/) {
  if (env == nullptr || fn == nullptr) return;
  napi_value undef;
  napi_get_undefined(env, &undef);
  napi_call_function(env, undef, fn, 0, nullptr, nullptr);
}

void Shutdown(Waiter* w) {
  {
    std::lock_guard<std::mutex> g(w->m);
    if (w->closing) return;
    w->closing = true;
  }
  w->cv.notify_all();
  // Changing the word makes a FUTEX_WAIT that starts after this return at once;
  // the word is our own doorbell's ring count, which only ever grows.
  __atomic_add_fetch(w->word, 1, __ATOMIC_SEQ_CST);
  Futex(w->word, FUTEX_WAKE, INT_MAX, nullptr);
  if (w->th.joinable()) w->th.join();
  // Abort: a callback the thread queued before it stopped is dropped, not run.
  napi_release_threadsafe_function(w->call, napi_tsfn_abort);
  napi_delete_reference(w->env, w->keep);
}

/** Env teardown: stop the thread; the External's finalizer frees the waiter unless it already ran. */
void Cleanup(void* arg) {
  Waiter* w = static_cast<Waiter*>(arg);
  Shutdown(w);
  if (w->orphan) delete w;
}

/** The External was collected (or the env is going): free a closed waiter, else leave it to Cleanup. */
void Collected(Napi::Env, Waiter* w) {
  if (w->closing) delete w;
  else w->orphan = true;
}

Waiter* WaiterArg(const Napi::CallbackInfo& a) {
  if (a.Length() < 1 || !a[0].IsExternal()) { ThrowType(a.Env(), "expected a doorbell waiter"); return nullptr; }
  return a[0].As<Napi::External<Waiter>>().Data();
}

/** Checks (view, byteOffset) for a 32-bit word; its address, or null with a TypeError pending. */
int32_t* WordArg(napi_env env, napi_value view, napi_value offset, const char* usage) {
  char* p = nullptr;
  size_t len = 0;
  double off = 0;
  if (!BytesOf(env, view, &p, &len) || !Num(env, offset, &off)) { ThrowType(env, usage); return nullptr; }
  if (!Whole(off, static_cast<double>(len)) || static_cast<size_t>(off) + 4 > len || (reinterpret_cast<uintptr_t>(p) + static_cast<size_t>(off)) % 4 != 0) {
    ThrowType(env, "futex word outside the buffer or misaligned");
    return nullptr;
  }
  return reinterpret_cast<int32_t*>(p + static_cast<size_t>(off));
}

/** doorbellWaiter(view, byteOffset, callback) -> waiter (the word at view's byteOffset) */
Napi::Value Create(const Napi::CallbackInfo& a) {
  napi_env env = a.Env();
  if (a.Length() < 3 || !a[2].IsFunction()) { ThrowType(env, "doorbellWaiter(view, byteOffset, callback)"); return Napi::Value(); }
  int32_t* word = WordArg(env, a[0], a[1], "doorbellWaiter(view, byteOffset, callback)");
  if (word == nullptr) return Napi::Value();
  Waiter* w = new Waiter();
  w->env = env;
  w->word = word;
  napi_value name;
  napi_create_string_utf8(env, "railcomm:doorbell", NAPI_AUTO_LENGTH, &name);
  if (napi_create_threadsafe_function(env, a[2], nullptr, name, 0, 1, nullptr, nullptr, nullptr, CallJs, &w->call) != napi_ok) {
    delete w;
    Napi::Error::New(env, "cannot create the doorbell's callback").ThrowAsJavaScriptException();
    return Napi::Value();
  }
  napi_unref_threadsafe_function(env, w->call);
  napi_create_reference(env, a[0], 1, &w->keep);
  w->th = std::thread([w] { w->Run(); });
  napi_add_env_cleanup_hook(env, Cleanup, w);
  return Napi::External<Waiter>::New(env, w, Collected);
}

/** doorbellArm(waiter, expected): call back once the word differs from expected. */
void Arm(const Napi::CallbackInfo& a) {
  Waiter* w = WaiterArg(a);
  if (w == nullptr) return;
  int32_t exp = 0;
  if (a.Length() > 1) napi_get_value_int32(a.Env(), a[1], &exp);
  {
    std::lock_guard<std::mutex> g(w->m);
    if (w->closing) return;
    w->expected = exp;
    w->armed = true;
  }
  w->cv.notify_one();
}

/** doorbellClose(waiter): stop its thread; no more callbacks. */
void Close(const Napi::CallbackInfo& a) {
  Waiter* w = WaiterArg(a);
  if (w == nullptr) return;
  // The waiter lives until its External is collected: a second close finds it closed.
  if (w->closing) return;
  napi_remove_env_cleanup_hook(a.Env(), Cleanup, w);
  Shutdown(w);
}

/** futexWake(view, byteOffset): wake every process sleeping on that word. */
napi_value Wake(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  Args(env, info, argv, 2);
  int32_t* word = WordArg(env, argv[0], argv[1], "futexWake(view, byteOffset)");
  if (word == nullptr) return nullptr;
  return Int(env, static_cast<int32_t>(Futex(word, FUTEX_WAKE, INT_MAX, nullptr)));
}

/**
 * futexWait(view, byteOffset, expected, timeoutUs): block this thread until the
 * word differs from expected, a wake, or the timeout. For ranks that outnumber
 * the cores: a peer's arrival reaches the waiting thread itself, without the
 * doorbell thread and the event-loop hop in between.
 */
napi_value WaitFn(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  Args(env, info, argv, 4);
  int32_t* word = WordArg(env, argv[0], argv[1], "futexWait(view, byteOffset, expected, timeoutUs)");
  if (word == nullptr) return nullptr;
  double expected = 0, us = 0;
  if (!Num(env, argv[2], &expected) || expected != static_cast<double>(static_cast<int32_t>(expected)) || !Num(env, argv[3], &us)) {
    ThrowType(env, "futexWait(view, byteOffset, expected, timeoutUs)");
    return nullptr;
  }
  if (!(us >= 0) || us > 1e6) { ThrowType(env, "futexWait: timeoutUs must be 0 .. 1e6"); return nullptr; }
  const long long ns = static_cast<long long>(us * 1000);
  struct timespec ts = {static_cast<time_t>(ns / 1000000000LL), static_cast<long>(ns % 1000000000LL)};
  Futex(word, FUTEX_WAIT, static_cast<int32_t>(expected), &ts);
  return nullptr;
}

}  // namespace

void InitDoorbell(Napi::Env env, Napi::Object exports) {
  exports.Set("doorbellWaiter", Napi::Function::New(env, Create, "doorbellWaiter"));
  exports.Set("doorbellArm", Napi::Function::New(env, Arm, "doorbellArm"));
  exports.Set("doorbellClose", Napi::Function::New(env, Close, "doorbellClose"));
  SetFn(env, exports, "futexWake", Wake);
  SetFn(env, exports, "futexWait", WaitFn);
}

}  // namespace railcomm
