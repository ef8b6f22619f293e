// A doorbell that works across processes: a futex on a 32-bit word in shared
// memory. One addon thread per waiter sleeps in FUTEX_WAIT and wakes the event
// loop through an unref'd uv_async (a pending wait never keeps Node alive).
// Atomics.wait/notify cannot do this: V8 keeps its waiters per process.
#include "common.h"
#include <uv.h>
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
  Isolate* iso = nullptr;
  std::shared_ptr<v8::BackingStore> keep;  // the word stays mapped while we wait on it
  int32_t* word = nullptr;
  uv_async_t* async = nullptr;
  v8::Global<v8::Function> cb;
  std::thread th;
  std::mutex m;
  std::condition_variable cv;
  bool armed = false;
  bool closing = false;
  int32_t expected = 0;
  std::atomic<int> fired{0};

  void Run() {
    std::unique_lock<std::mutex> lk(m);
    for (;;) {
      cv.wait(lk, [this] { return armed || closing; });
      if (closing) return;
      int32_t exp = expected;
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
      uv_async_send(async);
    }
  }
};

void OnAsync(uv_async_t* h) {
  Waiter* w = static_cast<Waiter*>(h->data);
  if (w == nullptr || w->cb.IsEmpty()) return;
  Isolate* iso = w->iso;
  v8::HandleScope hs(iso);
  Local<v8::Function> fn = w->cb.Get(iso);
  Local<v8::Context> ctx = fn->GetCreationContextChecked();
  v8::Context::Scope cs(ctx);
  node::MakeCallback(iso, ctx->Global(), fn, 0, nullptr, node::async_context{0, 0});
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
  w->cb.Reset();
  w->async->data = nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(w->async), [](uv_handle_t* h) { delete reinterpret_cast<uv_async_t*>(h); });
  w->keep.reset();
}

void Cleanup(void* arg) {
  Waiter* w = static_cast<Waiter*>(arg);
  Shutdown(w);
  delete w;
}

Waiter* WaiterArg(const FunctionCallbackInfo<Value>& a) {
  if (a.Length() < 1 || !a[0]->IsExternal()) { ThrowType(a.GetIsolate(), "expected a doorbell waiter"); return nullptr; }
  return static_cast<Waiter*>(a[0].As<v8::External>()->Value());
}

/** doorbellWaiter(sab, byteOffset, callback) -> waiter */
void Create(const FunctionCallbackInfo<Value>& a) {
  Isolate* iso = a.GetIsolate();
  if (a.Length() < 3 || !a[0]->IsSharedArrayBuffer() || !a[1]->IsNumber() || !a[2]->IsFunction()) {
    ThrowType(iso, "doorbellWaiter(sab, byteOffset, callback)"); return;
  }
  std::shared_ptr<v8::BackingStore> bs = a[0].As<v8::SharedArrayBuffer>()->GetBackingStore();
  double off = a[1].As<v8::Number>()->Value();
  if (!(off >= 0) || static_cast<size_t>(off) + 4 > bs->ByteLength() || static_cast<size_t>(off) % 4 != 0) { ThrowType(iso, "doorbell word outside the buffer or misaligned"); return; }
  Waiter* w = new Waiter();
  w->iso = iso;
  w->keep = bs;
  w->word = reinterpret_cast<int32_t*>(static_cast<char*>(bs->Data()) + static_cast<size_t>(off));
  w->cb.Reset(iso, a[2].As<v8::Function>());
  w->async = new uv_async_t();
  uv_async_init(node::GetCurrentEventLoop(iso), w->async, OnAsync);
  w->async->data = w;
  uv_unref(reinterpret_cast<uv_handle_t*>(w->async));
  w->th = std::thread([w] { w->Run(); });
  node::AddEnvironmentCleanupHook(iso, Cleanup, w);
  a.GetReturnValue().Set(v8::External::New(iso, w));
}

/** doorbellArm(waiter, expected): call back once the word differs from expected. */
void Arm(const FunctionCallbackInfo<Value>& a) {
  Waiter* w = WaiterArg(a);
  if (w == nullptr) return;
  int32_t exp = a[1]->Int32Value(a.GetIsolate()->GetCurrentContext()).FromMaybe(0);
  {
    std::lock_guard<std::mutex> g(w->m);
    if (w->closing) return;
    w->expected = exp;
    w->armed = true;
  }
  w->cv.notify_one();
}

/** doorbellClose(waiter): stop its thread; no more callbacks. */
void Close(const FunctionCallbackInfo<Value>& a) {
  Waiter* w = WaiterArg(a);
  if (w == nullptr) return;
  node::RemoveEnvironmentCleanupHook(a.GetIsolate(), Cleanup, w);
  Cleanup(w);
}

/** futexWake(sab, byteOffset): wake every process sleeping on that word. */
void Wake(const FunctionCallbackInfo<Value>& a) {
  Isolate* iso = a.GetIsolate();
  if (a.Length() < 2 || !a[0]->IsSharedArrayBuffer() || !a[1]->IsNumber()) { ThrowType(iso, "futexWake(sab, byteOffset)"); return; }
  std::shared_ptr<v8::BackingStore> bs = a[0].As<v8::SharedArrayBuffer>()->GetBackingStore();
  size_t off = static_cast<size_t>(a[1].As<v8::Number>()->Value());
  if (off + 4 > bs->ByteLength() || off % 4 != 0) { ThrowType(iso, "doorbell word outside the buffer or misaligned"); return; }
  long n = Futex(reinterpret_cast<int32_t*>(static_cast<char*>(bs->Data()) + off), FUTEX_WAKE, INT_MAX, nullptr);
  a.GetReturnValue().Set(static_cast<int32_t>(n));
}

/**
 * futexWait(sab, byteOffset, expected, timeoutUs): block this thread until the
 * word differs from expected, a wake, or the timeout. For ranks that outnumber
 * the cores: a peer's arrival reaches the waiting thread itself, without the
 * doorbell thread and the event-loop hop in between.
 */
void WaitFn(const FunctionCallbackInfo<Value>& a) {
  Isolate* iso = a.GetIsolate();
  if (a.Length() < 4 || !a[0]->IsSharedArrayBuffer() || !a[1]->IsNumber() || !a[2]->IsInt32() || !a[3]->IsNumber()) { ThrowType(iso, "futexWait(sab, byteOffset, expected, timeoutUs)"); return; }
  std::shared_ptr<v8::BackingStore> bs = a[0].As<v8::SharedArrayBuffer>()->GetBackingStore();
  size_t off = static_cast<size_t>(a[1].As<v8::Number>()->Value());
  if (off + 4 > bs->ByteLength() || off % 4 != 0) { ThrowType(iso, "futex word outside the buffer or misaligned"); return; }
  double us = a[3].As<v8::Number>()->Value();
  if (!(us >= 0) || us > 1e6) { ThrowType(iso, "futexWait: timeoutUs must be 0 .. 1e6"); return; }
  long long ns = static_cast<long long>(us * 1000);
  struct timespec ts = {static_cast<time_t>(ns / 1000000000LL), static_cast<long>(ns % 1000000000LL)};
  Futex(reinterpret_cast<int32_t*>(static_cast<char*>(bs->Data()) + off), FUTEX_WAIT, a[2].As<v8::Int32>()->Value(), &ts);
}

}  // namespace

void InitDoorbell(Local<v8::Object> exports, Local<v8::Context> ctx) {
  SetFn(exports, ctx, "doorbellWaiter", Create);
  SetFn(exports, ctx, "doorbellArm", Arm);
  SetFn(exports, ctx, "doorbellClose", Close);
  SetFn(exports, ctx, "futexWake", Wake);
  SetFn(exports, ctx, "futexWait", WaitFn);
}

}  // namespace railcomm
