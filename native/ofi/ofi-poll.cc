// Progress: reading the completion queue into event records JavaScript reads
// (a receive slot filled, an operation done, an operation failed with the
// provider's reason), posting delivered receive slots again, and sleeping on
// the queue's wait fd through libuv (fi_trywait first, as libfabric asks).
#include "ofi.h"
#include <poll.h>
#include <time.h>
#include <cstring>

namespace ofi {

namespace {

inline napi_value Ret(napi_env env, int32_t v) { napi_value r; napi_create_int32(env, v, &r); return r; }

Ep* EpArg(napi_env env, napi_callback_info info, napi_value* argv, size_t n) {
  size_t argc = n;
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  int32_t h = -1;
  napi_get_value_int32(env, argv[0], &h);
  return Lookup(h);
}

void Repost(Ep* e) {
  if (!e->rxHeld.empty()) {
    size_t k = 0;
    for (uint32_t i : e->rxHeld) {
      if (e->hold != nullptr && e->hold[i] != 0) e->rxHeld[k++] = i;
      else if (!PostRecv(e, i)) e->rxUnposted.push_back(i);
    }
    e->rxHeld.resize(k);
  }
  for (uint32_t i : e->rxReturned) {
    if (e->hold != nullptr && e->hold[i] != 0) e->rxHeld.push_back(i);
    else if (!PostRecv(e, i)) e->rxUnposted.push_back(i);
  }
  e->rxReturned.clear();
  if (!e->rxUnposted.empty()) {
    size_t k = 0;
    for (; k < e->rxUnposted.size(); k++) if (!PostRecv(e, e->rxUnposted[k])) break;
    e->rxUnposted.erase(e->rxUnposted.begin(), e->rxUnposted.begin() + static_cast<long>(k));
  }
}

inline int32_t* Slot(Ep* e, uint32_t n) { return e->events + (n + 1) * kEventWords; }

inline bool IsRecv(Ep* e, void* ctx) {
  const auto* c = static_cast<fi_context2*>(ctx);
  return !e->rxCtx.empty() && c >= e->rxCtx.data() && c < e->rxCtx.data() + e->rxCtx.size();
}

void ErrorEvent(Ep* e, uint32_t n, Entry* x, int err, int provErrno, const std::string& text) {
  int32_t* ev = Slot(e, n);
  ev[0] = EV_ERROR;
  ev[1] = x ? static_cast<int32_t>(x->jsId) : 0;
  ev[2] = x ? static_cast<int32_t>(x->kind) : 0;
  const uint64_t d = x ? x->dest : ~0ULL;
  ev[3] = static_cast<int32_t>(d & 0xffffffffu);
  ev[4] = static_cast<int32_t>(d >> 32);
  ev[5] = err;
  ev[6] = provErrno;
  ev[7] = static_cast<int32_t>(e->errTexts.size());
  e->errTexts.push_back(text);
}

/** Read completions ahead into the stash (when it is empty); how many wait there (an error counts one). */
size_t ReadAhead(Ep* e) {
  if (e->stashHead == e->stash.size() && !e->stashErr) {
    e->stash.clear();
    e->stashHead = 0;
    fi_cq_data_entry c[16];
    const ssize_t got = fi_cq_read(e->cq, c, 16);
    if (got > 0) e->stash.assign(c, c + got);
    else if (got == -FI_EAVAIL) e->stashErr = true;
  }
  return e->stash.size() - e->stashHead + (e->stashErr ? 1 : 0);
}

/** One completion as an event (receives, and operations someone waits for), its entry freed. */
void Handle(Ep* e, const fi_cq_data_entry& c, uint32_t& n, uint32_t& freed) {
  void* ctx = c.op_context;
  if (IsRecv(e, ctx)) {
    const uint32_t i = static_cast<uint32_t>(static_cast<fi_context2*>(ctx) - e->rxCtx.data());
    int32_t* ev = Slot(e, n++);
    ev[0] = EV_RECV;
    ev[1] = static_cast<int32_t>(i);
    ev[2] = static_cast<int32_t>(c.len);
    e->rxReturned.push_back(i);
    return;
  }
  Entry* x = static_cast<Entry*>(ctx);
  if (x == nullptr || !x->busy) return;
  e->inFlight--;
  freed++;
  if (x->jsId != 0) {
    int32_t* ev = Slot(e, n++);
    ev[0] = EV_DONE;
    ev[1] = static_cast<int32_t>(x->jsId);
    std::memcpy(ev + 2, x->result, 8);
    ev[4] = static_cast<int32_t>(x->kind);
  }
  Free(e, x);
}

/** Whether peers' one-sided operations were served here since the last look (Ep::remoteCntr). */
bool RemoteMoved(Ep* e) {
  if (e->remoteCntr == nullptr) return false;
  const uint64_t v = fi_cntr_read(e->remoteCntr);
  if (v == e->remoteSeen) return false;
  e->remoteSeen = v;
  return true;
}

/** The error entry waiting in the queue, as an event. */
void HandleError(Ep* e, uint32_t& n, uint32_t& freed) {
  fi_cq_err_entry err{};
  if (fi_cq_readerr(e->cq, &err, 0) != 1) return;
  char buf[256] = "";
  const char* prov = fi_cq_strerror(e->cq, err.prov_errno, err.err_data, buf, sizeof buf);
  std::string text = fi_strerror(err.err);
  if (prov != nullptr && prov[0] != '\0') text += std::string(" (provider: ") + prov + ")";
  if (err.op_context != nullptr && IsRecv(e, err.op_context)) {
    const uint32_t i = static_cast<uint32_t>(static_cast<fi_context2*>(err.op_context) - e->rxCtx.data());
    e->rxReturned.push_back(i);
    // A receive cancelled at close is no error worth reporting.
    if (err.err != FI_ECANCELED) ErrorEvent(e, n++, nullptr, err.err, err.prov_errno, "receive failed: " + text);
    return;
  }
  Entry* x = static_cast<Entry*>(err.op_context);
  if (x != nullptr && x->busy) {
    e->inFlight--;
    ErrorEvent(e, n++, x, err.err, err.prov_errno, text);
    Free(e, x);
    freed++;
  } else {
    ErrorEvent(e, n++, nullptr, err.err, err.prov_errno, text);
  }
}

/**
 * poll(h, reads = 1) -> events written (head: [count, transmit entries freed, still
 * unposted, in flight, free small entries, free large entries, reads made (below),
 * 1 when peers' one-sided operations were served here since the last look (where
 * they should wake: Ep::remoteWakes)]). Receive slots delivered by the previous poll are
 * posted again first: JavaScript has handled them by then. reads > 1: a
 * synchronous receive's spin, kept here while the queue is empty (up to that
 * many reads), so each look costs one fi_cq_read and not a call from JavaScript;
 * head word 6: how many times it read the queue (what the caller's budget counts).
 */
napi_value Poll(napi_env env, napi_callback_info info) {
  napi_value a[2] = {nullptr, nullptr};
  Ep* e = EpArg(env, info, a, 2);
  if (e == nullptr || e->events == nullptr) return Ret(env, -FI_EBADF);
  // One Node-API call for the count (every poll makes it): not a number leaves 1.
  uint32_t reads = 1, asked = 0;
  if (a[1] != nullptr && napi_get_value_uint32(env, a[1], &asked) == napi_ok && asked > 0) reads = asked;
  Repost(e);
  e->errTexts.clear();
  uint32_t n = 0, freed = 0;
  while (!e->failedAtPost.empty() && n < e->eventCap) {
    auto [x, err] = e->failedAtPost.back();
    e->failedAtPost.pop_back();
    ErrorEvent(e, n++, x, err, 0, std::string("the provider refused the operation: ") + fi_strerror(err));
    Free(e, x);
    freed++;
  }
  while (e->stashHead < e->stash.size() && n < e->eventCap) Handle(e, e->stash[e->stashHead++], n, freed);
  if (e->stashHead == e->stash.size()) { e->stash.clear(); e->stashHead = 0; }
  if (e->stashErr && n < e->eventCap && e->stash.empty()) { e->stashErr = false; HandleError(e, n, freed); }
  fi_cq_data_entry c[16];
  uint32_t tried = 1;
  for (;; tried++) {
    while (n < e->eventCap && e->stash.empty()) {
      const size_t want = e->eventCap - n < 16 ? e->eventCap - n : 16;
      const ssize_t got = fi_cq_read(e->cq, c, want);
      if (got == -FI_EAGAIN) break;
      if (got == -FI_EAVAIL) { HandleError(e, n, freed); continue; }
      if (got < 0) {
        ErrorEvent(e, n++, nullptr, static_cast<int>(-got), 0, std::string("fi_cq_read: ") + fi_strerror(static_cast<int>(-got)));
        break;
      }
      for (ssize_t k = 0; k < got; k++) Handle(e, c[k], n, freed);
      // Fewer than asked: the queue was empty after the provider's progress. Another
      // read would only run progress again (tcp;ofi_rxm: an epoll_wait per message).
      if (static_cast<size_t>(got) < want) break;
    }
    if (n > 0 || freed > 0 || tried >= reads) break;
    // Still nothing: what waits for the provider goes first (it may be what the peer answers).
    if (e->pendingHead < e->pending.size()) PostPending(e);
  }
  PostPending(e);
  e->events[0] = static_cast<int32_t>(n);
  e->events[1] = static_cast<int32_t>(freed);
  e->events[2] = static_cast<int32_t>(e->pending.size() - e->pendingHead);
  e->events[3] = static_cast<int32_t>(e->inFlight);
  e->events[4] = static_cast<int32_t>(e->pools[0].free.size());
  e->events[5] = static_cast<int32_t>(e->pools[1].free.size());
  e->events[6] = static_cast<int32_t>(tried);
  // Every 16th poll only: reading the counter runs the provider's progress again (udp;ofi_rxd: a
  // poll of 470 ns took 875 with a read each time), and a waiting rank stays awake for 20 ms anyway.
  e->events[7] = e->remoteWakes && (++e->remoteLooks & 15) == 0 && RemoteMoved(e) ? 1 : 0;
  return Ret(env, static_cast<int32_t>(n));
}

/**
 * pending(h) -> completions waiting (read ahead into the stash, for the next
 * poll to hand out). Reading the queue is progress: a provider that needs it
 * (manual progress) moves data and serves peers' RMA here, so a rank asleep
 * on a timer still serves its windows.
 */
napi_value Pending(napi_env env, napi_callback_info info) {
  napi_value a[1];
  Ep* e = EpArg(env, info, a, 1);
  if (e == nullptr) return Ret(env, 0);
  // Operations the provider could not take yet go now if they can (shm takes a
  // first message only once the peer's progress answered its connection request).
  PostPending(e);
  return Ret(env, static_cast<int32_t>(ReadAhead(e)));
}

/**
 * remoteActivity(h) -> whether peers' writes or reads into this endpoint's
 * memory were served since the last call (by any progress: a poll, pending),
 * where the endpoint counts them (Ep::remoteCntr); false where it does not.
 */
napi_value RemoteActivity(napi_env env, napi_callback_info info) {
  napi_value a[1];
  Ep* e = EpArg(env, info, a, 1);
  napi_value r;
  napi_get_boolean(env, e != nullptr && RemoteMoved(e), &r);
  return r;
}

/** errText(h, i): the reason of error event i of the last poll. */
napi_value ErrText(napi_env env, napi_callback_info info) {
  napi_value a[2];
  Ep* e = EpArg(env, info, a, 2);
  uint32_t i = 0;
  napi_get_value_uint32(env, a[1], &i);
  const std::string s = e != nullptr && i < e->errTexts.size() ? e->errTexts[i] : std::string("unknown error");
  napi_value r;
  napi_create_string_utf8(env, s.c_str(), s.size(), &r);
  return r;
}

/** The handle closed; where an environment's cleanup closed it, that cleanup is done now. */
void OnClosed(uv_handle_t* h) {
  if (h->data != nullptr) napi_remove_async_cleanup_hook(static_cast<napi_async_cleanup_hook_handle>(h->data));
  delete reinterpret_cast<uv_poll_t*>(h);
}

void OnReadable(uv_poll_t* h, int, int) {
  Ep* e = static_cast<Ep*>(h->data);
  uv_poll_stop(h);
  if (e == nullptr) return;
  e->polling = false;
  napi_env env = e->env;
  napi_handle_scope scope;
  napi_open_handle_scope(env, &scope);
  napi_value fn, global, result;
  napi_get_reference_value(env, e->wakeRef, &fn);
  napi_get_global(env, &global);
  if (fn != nullptr && napi_make_callback(env, e->asyncCtx, global, fn, 0, nullptr, &result) == napi_pending_exception) {
    napi_value err;
    napi_get_and_clear_last_exception(env, &err);
    napi_fatal_exception(env, err);
  }
  napi_close_handle_scope(env, scope);
}

/** watch(h, wake): wake() runs on the event loop when the queue's wait fd turns readable after arm(); false when there is no fd. */
napi_value Watch(napi_env env, napi_callback_info info) {
  napi_value a[2];
  Ep* e = EpArg(env, info, a, 2);
  napi_value f;
  if (e == nullptr || e->waitFd < 0 || e->poll != nullptr) { napi_get_boolean(env, false, &f); return f; }
  uv_loop_t* loop;
  napi_get_uv_event_loop(env, &loop);
  auto* p = new uv_poll_t();
  if (uv_poll_init(loop, p, e->waitFd) != 0) { delete p; napi_get_boolean(env, false, &f); return f; }
  p->data = e;
  // Never keeps the process alive by itself (progress holds the loop while requests wait).
  uv_unref(reinterpret_cast<uv_handle_t*>(p));
  e->poll = p;
  napi_create_reference(env, a[1], 1, &e->wakeRef);
  napi_value name;
  napi_create_string_utf8(env, "railcomm:ofi-wake", NAPI_AUTO_LENGTH, &name);
  napi_value res;
  napi_create_object(env, &res);
  napi_async_init(env, res, name, &e->asyncCtx);
  napi_get_boolean(env, true, &f);
  return f;
}

/**
 * arm(h) -> true once the wait fd is watched (wake follows when something
 * arrives), false when something already waits (poll instead). Delivered
 * receive slots are posted again first.
 */
napi_value Arm(napi_env env, napi_callback_info info) {
  napi_value a[1];
  Ep* e = EpArg(env, info, a, 1);
  napi_value f;
  if (e == nullptr || e->poll == nullptr) { napi_get_boolean(env, false, &f); return f; }
  Repost(e);
  PostPending(e);
  // Completions already there (a provider with its own progress thread, or
  // one whose trywait cannot tell): no sleep.
  // Operations still waiting for the provider to take them: keep polling instead.
  if (ReadAhead(e) > 0 || e->pendingHead < e->pending.size()) { napi_get_boolean(env, false, &f); return f; }
  if (!e->polling) {
    if (e->trywait) {
      fid* fids[1] = {&e->cq->fid};
      const int r = fi_trywait(e->fabric, fids, 1);
      if (r == -FI_EAGAIN) { napi_get_boolean(env, false, &f); return f; }
      if (r == -FI_ENOSYS) e->trywait = false;
    }
    uv_poll_start(e->poll, UV_READABLE, OnReadable);
    e->polling = true;
  }
  napi_get_boolean(env, true, &f);
  return f;
}

/**
 * block(h, ms) -> whether completions wait: a synchronous call's wait, which
 * runs no event loop. On the queue's wait fd (fi_trywait first) for at most
 * ms; a provider without one (shm, udp;ofi_rxd) is looked at again after a
 * 100 us sleep. The libuv watch, armed or not, is left as it is: poll(2)
 * consumes nothing on the fd.
 */
napi_value Block(napi_env env, napi_callback_info info) {
  napi_value a[2];
  Ep* e = EpArg(env, info, a, 2);
  napi_value f;
  if (e == nullptr) { napi_get_boolean(env, false, &f); return f; }
  int32_t ms = 1;
  napi_get_value_int32(env, a[1], &ms);
  Repost(e);
  PostPending(e);
  bool ready = ReadAhead(e) > 0 || e->pendingHead < e->pending.size();
  if (!ready && e->waitFd < 0) {
    const timespec nap{0, 100000};
    nanosleep(&nap, nullptr);
    ready = ReadAhead(e) > 0;
  } else if (!ready) {
    int r = 0;
    if (e->trywait) {
      fid* fids[1] = {&e->cq->fid};
      r = fi_trywait(e->fabric, fids, 1);
      if (r == -FI_ENOSYS) { e->trywait = false; r = 0; }
    }
    if (r == 0) {
      pollfd p{e->waitFd, POLLIN, 0};
      ::poll(&p, 1, ms < 0 ? 0 : ms);
    }
    ready = ReadAhead(e) > 0;
  }
  napi_get_boolean(env, ready, &f);
  return f;
}

napi_value Disarm(napi_env env, napi_callback_info info) {
  napi_value a[1];
  Ep* e = EpArg(env, info, a, 1);
  if (e != nullptr && e->poll != nullptr && e->polling) { uv_poll_stop(e->poll); e->polling = false; }
  napi_value u;
  napi_get_undefined(env, &u);
  return u;
}

void SetFn(napi_env env, napi_value exports, const char* name, napi_callback fn) {
  napi_value f;
  napi_create_function(env, name, NAPI_AUTO_LENGTH, fn, nullptr, &f);
  napi_set_named_property(env, exports, name, f);
}

}  // namespace

void StopWatch(Ep* e) {
  if (e->poll != nullptr) {
    uv_poll_stop(e->poll);
    // From here it names the environment's cleanup to finish once closed (or nothing).
    e->poll->data = e->envGone ? static_cast<void*>(e->hook) : nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(e->poll), OnClosed);
    e->poll = nullptr;
    e->polling = false;
  }
  if (e->wakeRef != nullptr) { napi_delete_reference(e->env, e->wakeRef); e->wakeRef = nullptr; }
  if (e->asyncCtx != nullptr) { napi_async_destroy(e->env, e->asyncCtx); e->asyncCtx = nullptr; }
}

void InitPoll(napi_env env, napi_value exports) {
  SetFn(env, exports, "poll", Poll);
  SetFn(env, exports, "errText", ErrText);
  SetFn(env, exports, "pending", Pending);
  SetFn(env, exports, "remoteActivity", RemoteActivity);
  SetFn(env, exports, "watch", Watch);
  SetFn(env, exports, "arm", Arm);
  SetFn(env, exports, "disarm", Disarm);
  SetFn(env, exports, "block", Block);
}

}  // namespace ofi
