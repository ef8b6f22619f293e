// The operations called per message, on Node-API's C interface (no wrapper
// objects, no allocation): sends of active-message frames (injected when
// small, copied into a transmit entry, or gathered from the caller's memory),
// RMA writes and reads, and atomics; what the provider cannot take now
// (-FI_EAGAIN) waits in order and is posted again at the next poll.
#include "ofi.h"
#include <cstring>

namespace ofi {

namespace {

constexpr size_t kSmallData = 1024;
/** Bytes of each libfabric datatype the rail uses (FI_INT8 .. FI_DOUBLE). */
constexpr size_t kTypeSize[10] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8};

/** Operation status for JavaScript (rail/api.ts: DONE, IN_PROGRESS, NO_RESOURCE). */
constexpr int kDone = 0, kInProgress = 1, kNoResource = 2;

inline size_t Args(napi_env env, napi_callback_info info, napi_value* argv, size_t n) {
  size_t argc = n;
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  return argc;
}
inline int32_t I32(napi_env env, napi_value v) { int32_t x = 0; napi_get_value_int32(env, v, &x); return x; }
inline uint32_t U32(napi_env env, napi_value v) { uint32_t x = 0; napi_get_value_uint32(env, v, &x); return x; }
inline double Dbl(napi_env env, napi_value v) { double x = 0; napi_get_value_double(env, v, &x); return x; }
inline napi_value Ret(napi_env env, int32_t v) { napi_value r; napi_create_int32(env, v, &r); return r; }

ssize_t Post(Ep* e, Entry* x) {
  if (LocalPeerClosed(e, x->dest)) return -FI_ECONNREFUSED;
  // x->dest is the peer's handle; the provider's address names its receive context where contexts are addressed.
  const fi_addr_t to = Dest(e, x->dest);
  if (to == FI_ADDR_NOTAVAIL) return -FI_ECONNREFUSED;
  uint8_t* data = reinterpret_cast<uint8_t*>(x) + kHead;
  switch (x->kind) {
    case K_SEND:
      return fi_send(e->ep, data, x->len, nullptr, to, &x->ctx);
    case K_SENDV: {
      iovec iov[2] = {{data, x->len}, {x->local, x->localLen}};
      return fi_sendv(e->ep, iov, nullptr, 2, to, &x->ctx);
    }
    case K_WRITE: {
      iovec iov = {x->local, x->localLen};
      fi_rma_iov rma = {x->raddr, x->localLen, x->rkey};
      fi_msg_rma m{};
      m.msg_iov = &iov; m.iov_count = 1; m.addr = to; m.rma_iov = &rma; m.rma_iov_count = 1; m.context = &x->ctx;
      // Complete once the bytes are in the target's memory: flush and unlock rely on it
      // (unless the caller knows the provider writes them before it returns: shm over CMA).
      return fi_writemsg(e->ep, &m, FI_COMPLETION | (x->deliveryComplete ? FI_DELIVERY_COMPLETE : 0));
    }
    case K_READ:
      return fi_read(e->ep, x->local, x->localLen, nullptr, to, x->raddr, x->rkey, &x->ctx);
    case K_ATOMIC: {
      fi_ioc ioc = {x->local, x->count};
      fi_rma_ioc rma = {x->raddr, x->count, x->rkey};
      fi_msg_atomic m{};
      m.msg_iov = &ioc; m.iov_count = 1; m.addr = to; m.rma_iov = &rma; m.rma_iov_count = 1;
      m.datatype = static_cast<fi_datatype>(x->datatype); m.op = static_cast<fi_op>(x->op); m.context = &x->ctx;
      return fi_atomicmsg(e->ep, &m, FI_COMPLETION | FI_DELIVERY_COMPLETE);
    }
    case K_FETCH:
      return fi_fetch_atomic(e->ep, x->operand, 1, nullptr, x->result, nullptr, to, x->raddr, x->rkey,
                             static_cast<fi_datatype>(x->datatype), static_cast<fi_op>(x->op), &x->ctx);
    case K_CSWAP:
      return fi_compare_atomic(e->ep, x->operand, 1, nullptr, x->compare, nullptr, x->result, nullptr, to, x->raddr, x->rkey,
                               static_cast<fi_datatype>(x->datatype), FI_CSWAP, &x->ctx);
    default:
      return -FI_EINVAL;
  }
}

}  // namespace

Entry* Alloc(Ep* e, size_t dataBytes) {
  const int p = dataBytes <= kSmallData ? 0 : 1;
  Pool& pl = e->pools[p];
  if (dataBytes > pl.stride - kHead || pl.free.empty()) return nullptr;
  Entry* x = pl.at(pl.free.back());
  pl.free.pop_back();
  x->busy = true;
  x->jsId = 0;
  return x;
}

void Free(Ep* e, Entry* x) {
  if (!x->busy) return;
  x->busy = false;
  e->pools[x->pool].free.push_back(x->index);
}

bool PostRecv(Ep* e, uint32_t i) {
  return fi_recv(e->rx, e->rxMem + static_cast<size_t>(i) * e->rxSlot, e->rxSlot, nullptr, FI_ADDR_UNSPEC, &e->rxCtx[i]) == 0;
}

ssize_t Submit(Ep* e, Entry* x) {
  if (e->pendingHead < e->pending.size() || e->inFlight >= e->txLimit) { e->pending.push_back(x); return 0; }
  const ssize_t r = Post(e, x);
  if (r == 0) { e->inFlight++; return 0; }
  if (r == -FI_EAGAIN) { e->pending.push_back(x); return 0; }
  return r;
}

void PostPending(Ep* e) {
  while (e->pendingHead < e->pending.size() && e->inFlight < e->txLimit) {
    Entry* x = e->pending[e->pendingHead];
    const ssize_t r = Post(e, x);
    if (r == -FI_EAGAIN) break;
    e->pendingHead++;
    if (r == 0) { e->inFlight++; continue; }
    // A hard failure after the call returned: reported at the next poll as a completion error.
    e->failedAtPost.push_back({x, static_cast<int>(-r)});
  }
  if (e->pendingHead == e->pending.size()) { e->pending.clear(); e->pendingHead = 0; }
}

namespace {

/**
 * A frame (head, then pay) sent now, for send with jsId 0 and sendHead:
 * injected where it fits and nothing waits before it, else copied into a
 * transmit entry (posted now or queued in order). DONE, NO_RESOURCE (no
 * entry free) or a negative libfabric errno; dest is the peer's handle.
 */
int32_t SendNow(Ep* e, fi_addr_t dest, const uint8_t* head, size_t headLen, const uint8_t* pay, size_t payLen) {
  const size_t total = headLen + payLen;
  uint8_t buf[4096];
  if (total <= e->inject && total <= sizeof buf && e->pendingHead == e->pending.size() && e->inFlight < e->txLimit) {
    const uint8_t* frame = head;
    if (payLen > 0) {  // one contiguous frame for fi_inject
      std::memcpy(buf, head, headLen);
      std::memcpy(buf + headLen, pay, payLen);
      frame = buf;
    }
    const ssize_t r = fi_inject(e->ep, frame, total, Dest(e, dest));
    if (r == 0) return kDone;
    if (r != -FI_EAGAIN) return static_cast<int32_t>(r);
  }
  Entry* x = Alloc(e, total);
  if (x == nullptr) return total > e->pools[1].stride - kHead ? -FI_EMSGSIZE : kNoResource;
  uint8_t* d = reinterpret_cast<uint8_t*>(x) + kHead;
  std::memcpy(d, head, headLen);
  if (payLen > 0) std::memcpy(d + headLen, pay, payLen);
  x->kind = K_SEND; x->dest = dest; x->len = total;
  const ssize_t r = Submit(e, x);
  if (r != 0) { Free(e, x); return static_cast<int32_t>(r); }
  return kDone;
}

/**
 * send(h, fiAddr, head, headLen, payload | null, jsId) -> DONE | IN_PROGRESS | NO_RESOURCE | -errno.
 * head holds the frame head and the AM header (headLen bytes); payload follows
 * on the wire. jsId 0: copied now (DONE); else the payload is sent from the
 * caller's memory and completes later (event DONE with jsId); a frame with
 * no payload and a jsId is copied and completes later (never injected).
 */
napi_value Send(napi_env env, napi_callback_info info) {
  napi_value a[6];
  Args(env, info, a, 6);
  Ep* e = Lookup(I32(env, a[0]));
  if (e == nullptr) return Ret(env, -FI_EBADF);
  const fi_addr_t dest = static_cast<fi_addr_t>(Dbl(env, a[1]));
  if (LocalPeerClosed(e, dest) || Dest(e, dest) == FI_ADDR_NOTAVAIL) return Ret(env, -FI_ECONNREFUSED);
  uint8_t* head; size_t headCap;
  if (!ViewData(env, a[2], &head, &headCap)) return Ret(env, -FI_EINVAL);
  const size_t headLen = U32(env, a[3]);
  uint8_t* pay = nullptr; size_t payLen = 0;
  napi_valuetype t;
  napi_typeof(env, a[4], &t);
  if (t == napi_object && !ViewData(env, a[4], &pay, &payLen)) return Ret(env, -FI_EINVAL);
  const uint32_t jsId = U32(env, a[5]);
  if (headLen > headCap) return Ret(env, -FI_EINVAL);
  if (jsId == 0) return Ret(env, SendNow(e, dest, head, headLen, pay, payLen));
  if (payLen == 0) {
    // A frame without payload whose completion someone waits for (a BYE before close): copied, never injected.
    Entry* c = Alloc(e, headLen);
    if (c == nullptr) return Ret(env, kNoResource);
    std::memcpy(reinterpret_cast<uint8_t*>(c) + kHead, head, headLen);
    c->kind = K_SEND; c->dest = dest; c->len = headLen; c->jsId = jsId;
    const ssize_t r = Submit(e, c);
    if (r != 0) { Free(e, c); return Ret(env, static_cast<int32_t>(r)); }
    return Ret(env, kInProgress);
  }
  Entry* x = Alloc(e, headLen);
  if (x == nullptr) return Ret(env, kNoResource);
  std::memcpy(reinterpret_cast<uint8_t*>(x) + kHead, head, headLen);
  x->kind = K_SENDV; x->dest = dest; x->len = headLen; x->local = pay; x->localLen = payLen; x->jsId = jsId;
  const ssize_t r = Submit(e, x);
  if (r != 0) { Free(e, x); return Ret(env, static_cast<int32_t>(r)); }
  return Ret(env, kInProgress);
}

/** setHead(h, head): the bytes sendHead sends from (a Uint8Array JavaScript fills; kept referenced). */
napi_value SetHead(napi_env env, napi_callback_info info) {
  napi_value a[2];
  Args(env, info, a, 2);
  Ep* e = Lookup(I32(env, a[0]));
  if (e == nullptr) return Ret(env, -FI_EBADF);
  uint8_t* p; size_t cap;
  if (!ViewData(env, a[1], &p, &cap)) return Ret(env, -FI_EINVAL);
  if (e->headRef) napi_delete_reference(env, e->headRef);
  napi_create_reference(env, a[1], 1, &e->headRef);
  e->head = p;
  e->headCap = cap;
  return Ret(env, 0);
}

/**
 * sendHead(h, fiAddr, len) -> DONE | NO_RESOURCE | -errno: the first len bytes
 * of the setHead buffer (frame head, AM header and a small payload JavaScript
 * put behind them) sent now: injected where they fit, else copied into a
 * transmit entry. The same as send(h, fiAddr, head, len, null, 0) with four
 * fewer Node-API calls and no typed-array lookups: the small eager message's path.
 */
napi_value SendHead(napi_env env, napi_callback_info info) {
  napi_value a[3];
  Args(env, info, a, 3);
  Ep* e = Lookup(I32(env, a[0]));
  if (e == nullptr || e->head == nullptr) return Ret(env, -FI_EBADF);
  const fi_addr_t dest = static_cast<fi_addr_t>(Dbl(env, a[1]));
  const size_t len = U32(env, a[2]);
  if (len > e->headCap) return Ret(env, -FI_EINVAL);
  if (LocalPeerClosed(e, dest) || Dest(e, dest) == FI_ADDR_NOTAVAIL) return Ret(env, -FI_ECONNREFUSED);
  return Ret(env, SendNow(e, dest, e->head, len, nullptr, 0));
}

/** The remote address of offset in peer registration `remote` (its base added where the provider addresses virtually). */
bool Target(Ep* e, uint32_t remote, double offset, uint64_t* raddr, uint64_t* key) {
  if (remote >= e->remotes.size() || !e->remotes[remote].used) return false;
  const Remote& r = e->remotes[remote];
  *raddr = (e->virtAddr ? r.base : 0) + static_cast<uint64_t>(offset);
  *key = r.key;
  return true;
}

/**
 * The completion of x, posted just now, taken from the queue if it is there
 * already (read ahead into the stash, which the next poll hands out first):
 * x is then freed and nobody is told. false when it is not (yet) there.
 */
bool TakeOwnCompletion(Ep* e, Entry* x) {
  while (!e->stashErr) {
    fi_cq_data_entry c[16];
    const ssize_t got = fi_cq_read(e->cq, c, 16);
    if (got == -FI_EAVAIL) e->stashErr = true;
    if (got <= 0) break;
    e->stash.insert(e->stash.end(), c, c + got);
    if (got < 16) break;
  }
  for (size_t k = e->stashHead; k < e->stash.size(); k++) {
    if (e->stash[k].op_context != &x->ctx) continue;
    e->stash.erase(e->stash.begin() + static_cast<long>(k));
    e->inFlight--;
    Free(e, x);
    return true;
  }
  return false;
}

/**
 * rma(h, kind, fiAddr, view, remote, offset, jsId, fast): K_WRITE from view,
 * K_READ into it. fast: the provider moves the bytes within the call (shm's
 * cross-memory-attach path), so a write need not ask for FI_DELIVERY_COMPLETE
 * (which sends shm down its slow path, served only by the target's
 * progress), and the completion is looked for at once: DONE when the
 * operation completed in the call (jsId is then never reported),
 * IN_PROGRESS when it comes later.
 */
napi_value Rma(napi_env env, napi_callback_info info) {
  napi_value a[8];
  Args(env, info, a, 8);
  Ep* e = Lookup(I32(env, a[0]));
  if (e == nullptr) return Ret(env, -FI_EBADF);
  const uint32_t kind = U32(env, a[1]);
  uint8_t* p; size_t len;
  if ((kind != K_WRITE && kind != K_READ) || !ViewData(env, a[3], &p, &len)) return Ret(env, -FI_EINVAL);
  if (LocalPeerClosed(e, static_cast<fi_addr_t>(Dbl(env, a[2])))) return Ret(env, -FI_ECONNREFUSED);
  Entry* x = Alloc(e, 0);
  if (x == nullptr) return Ret(env, kNoResource);
  if (!Target(e, U32(env, a[4]), Dbl(env, a[5]), &x->raddr, &x->rkey)) { Free(e, x); return Ret(env, -FI_EINVAL); }
  x->kind = kind; x->dest = static_cast<fi_addr_t>(Dbl(env, a[2])); x->local = p; x->localLen = len; x->jsId = U32(env, a[6]);
  bool fast = false;
  napi_get_value_bool(env, a[7], &fast);
  x->deliveryComplete = !fast;
  const size_t queued = e->pending.size() - e->pendingHead;
  const ssize_t r = Submit(e, x);
  if (r != 0) { Free(e, x); return Ret(env, static_cast<int32_t>(r)); }
  // (Posted now, not queued behind others: its completion may be in the queue already.)
  if (fast && e->pending.size() - e->pendingHead == queued && TakeOwnCompletion(e, x)) return Ret(env, kDone);
  return Ret(env, kInProgress);
}

/**
 * atomic(h, kind, fiAddr, datatype, op, view, remote, offset, jsId):
 * K_ATOMIC applies view's elements (in the caller's memory until complete);
 * K_FETCH and K_CSWAP take one element, operand at view[0..8) and compare at
 * view[8..16) (copied now); the old value comes back in the DONE event.
 */
napi_value Atomic(napi_env env, napi_callback_info info) {
  napi_value a[9];
  Args(env, info, a, 9);
  Ep* e = Lookup(I32(env, a[0]));
  if (e == nullptr) return Ret(env, -FI_EBADF);
  const uint32_t kind = U32(env, a[1]);
  const int32_t dt = I32(env, a[3]);
  uint8_t* p; size_t len;
  if (dt < 0 || dt > 9 || (kind != K_ATOMIC && kind != K_FETCH && kind != K_CSWAP) || !ViewData(env, a[5], &p, &len)) return Ret(env, -FI_EINVAL);
  const size_t size = kTypeSize[dt];
  if (kind != K_ATOMIC && len < 16) return Ret(env, -FI_EINVAL);
  if (LocalPeerClosed(e, static_cast<fi_addr_t>(Dbl(env, a[2])))) return Ret(env, -FI_ECONNREFUSED);
  Entry* x = Alloc(e, 0);
  if (x == nullptr) return Ret(env, kNoResource);
  if (!Target(e, U32(env, a[6]), Dbl(env, a[7]), &x->raddr, &x->rkey)) { Free(e, x); return Ret(env, -FI_EINVAL); }
  x->deliveryComplete = true;
  x->kind = kind; x->dest = static_cast<fi_addr_t>(Dbl(env, a[2])); x->datatype = dt; x->op = I32(env, a[4]); x->jsId = U32(env, a[8]);
  if (kind == K_ATOMIC) {
    x->local = p; x->localLen = len; x->count = len / size;
  } else {
    std::memcpy(x->operand, p, 8);
    std::memcpy(x->compare, p + 8, 8);
    std::memset(x->result, 0, 8);
    x->count = 1;
  }
  const ssize_t r = Submit(e, x);
  if (r != 0) { Free(e, x); return Ret(env, static_cast<int32_t>(r)); }
  return Ret(env, kInProgress);
}

void SetFn(napi_env env, napi_value exports, const char* name, napi_callback fn) {
  napi_value f;
  napi_create_function(env, name, NAPI_AUTO_LENGTH, fn, nullptr, &f);
  napi_set_named_property(env, exports, name, f);
}

}  // namespace

void InitOps(napi_env env, napi_value exports) {
  SetFn(env, exports, "send", Send);
  SetFn(env, exports, "setHead", SetHead);
  SetFn(env, exports, "sendHead", SendHead);
  SetFn(env, exports, "rma", Rma);
  SetFn(env, exports, "atomic", Atomic);
}

}  // namespace ofi
