// railcomm's libfabric binding (the ofi rail, src/rail/ofi/): shared state of
// one opened endpoint (fabric, domain, address vector, completion queue,
// RDM endpoint), its pre-posted receive slots and its pool of transmit
// entries. Node-API only; built where libfabric's headers are (binding.gyp).
#pragma once
#include <napi.h>
#include <uv.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace ofi {

/** What a transmit entry carries. */
enum Kind : uint32_t { K_SEND = 1, K_SENDV = 2, K_WRITE = 3, K_READ = 4, K_ATOMIC = 5, K_FETCH = 6, K_CSWAP = 7 };

/** Event records written for JavaScript (8 int32 words each, after an 8-word head). */
enum EventType : int32_t { EV_RECV = 1, EV_DONE = 2, EV_ERROR = 3 };
constexpr int kEventWords = 8;

/**
 * One transmit operation: its libfabric context (first: the provider hands
 * it back in completions), what to post again after -FI_EAGAIN, and the
 * frame bytes copied in (kHead bytes on). Entries live in two pools by data
 * size and are freed at completion, so an operation that never completes
 * (a peer that vanished) holds only its own entry.
 */
struct Entry {
  fi_context2 ctx;
  uint32_t kind;
  uint32_t jsId;       // 0: nobody waits for the completion (a copied send)
  uint32_t pool;       // 0 small, 1 large
  uint32_t index;
  fi_addr_t dest;
  size_t len;          // frame bytes in the entry
  void* local;         // caller's memory (sendv payload, write source, read destination, accumulate operand)
  size_t localLen;
  uint64_t raddr;
  uint64_t rkey;
  int32_t datatype;
  int32_t op;
  size_t count;
  uint8_t operand[8];
  uint8_t compare[8];
  uint8_t result[8];
  bool busy;
  bool deliveryComplete;  // K_WRITE: complete only once the bytes are in the target's memory
};
constexpr size_t kHead = 256;
static_assert(sizeof(Entry) <= kHead, "entry header fits its slot");

struct Pool {
  uint8_t* mem = nullptr;
  size_t stride = 0;
  uint32_t count = 0;
  std::vector<uint32_t> free;
  Entry* at(uint32_t i) const { return reinterpret_cast<Entry*>(mem + static_cast<size_t>(i) * stride); }
};

/** A remote registration (peer's key and base), named by index from JavaScript. */
struct Remote {
  uint64_t base;
  uint64_t key;
  bool used;
};

/** A scalable endpoint this process's thread ranks share (ofi-sep.cc): one domain, one address, a context each. */
struct Sep;

/**
 * The receive slab's memory, owned twice: by its ArrayBuffer (JavaScript) and
 * by the receive context it is posted to (which may outlive its rank: parked
 * in a scalable endpoint). Freed when both let go.
 */
struct Slab {
  std::atomic<int> refs{2};
  void* mem = nullptr;
};
void ReleaseSlab(Slab* s);

struct Ep {
  int handle = -1;
  fi_info* info = nullptr;
  // fabric, domain and av are the Sep's where sep is set (closed with its last context, not by this Ep).
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  fid_cq* cq = nullptr;
  /**
   * Counts peers' writes and reads into this endpoint's memory as the
   * provider's progress serves them (FI_RMA_EVENT: FI_REMOTE_WRITE and
   * FI_REMOTE_READ), where it offers that and has no wait fd: an idle rank's
   * timer looks every ms while one-sided traffic flows, and where its progress
   * moves that traffic (remoteWakes) a waiting rank keeps polling. remoteSeen:
   * its value at the last look.
   */
  fid_cntr* remoteCntr = nullptr;
  uint64_t remoteSeen = 0;
  /** Each poll reads remoteCntr too (head word 7), where that activity should keep a waiting rank polling. */
  bool remoteWakes = false;
  /** Polls made, for reading remoteCntr every 16th (ofi-poll.cc). */
  uint32_t remoteLooks = 0;
  /** Where this rank transmits: its endpoint, or its transmit context of the Sep. */
  fid_ep* ep = nullptr;
  /** Where its receives are posted: the same endpoint, or its receive context of the Sep. */
  fid_ep* rx = nullptr;
  Sep* sep = nullptr;
  int ctx = -1;
  /** The address vector's receive-context bits (0: plain endpoints, peers addressed as inserted). */
  int rxBits = 0;
  /** Per peer handle (the number JavaScript holds): the provider's address of its receive context. */
  std::vector<fi_addr_t> dests;
  /** Memory keys railcomm chooses (mr_mode without FI_MR_PROV_KEY): unique per domain, so the Sep's when shared. */
  std::atomic<uint64_t> ownKeys{1};
  std::atomic<uint64_t>* keys = &ownKeys;
  bool virtAddr = false;
  bool provKey = false;
  size_t inject = 0;
  // Receive slots: one slab, each slot posted with its own context.
  Slab* slab = nullptr;
  uint8_t* rxMem = nullptr;
  size_t rxSlot = 0;
  uint32_t rxCount = 0;
  std::vector<fi_context2> rxCtx;
  std::vector<uint32_t> rxReturned;   // delivered at the last poll: posted again at the next
  std::vector<uint32_t> rxUnposted;   // posting failed with -FI_EAGAIN
  std::vector<uint32_t> rxHeld;       // held by JavaScript (a frame waiting for its turn): posted once released
  int32_t* hold = nullptr;            // per slot, set by JavaScript: 1 while it keeps the frame
  napi_ref holdRef = nullptr;
  // Transmit entries and the ones still to post, in order.
  Pool pools[2];
  std::vector<Entry*> pending;
  /** Entries whose deferred post failed hard (and the error): reported by the next poll. */
  std::vector<std::pair<Entry*, int>> failedAtPost;
  size_t pendingHead = 0;
  uint32_t inFlight = 0;
  /** Operations posted at once at most: the provider's transmit queue depth (udp;ofi_rxd takes more and then stalls). */
  uint32_t txLimit = 0;
  // Address-vector entries that are endpoints of this process (by fi_addr), and their names:
  // a send to one closed since crashes some providers (shm maps its region once per process).
  std::string name;
  std::vector<std::string> localPeers;
  // Memory registrations (ours) and peers' keys.
  std::vector<fid_mr*> mrs;
  std::vector<Remote> remotes;
  // The frame JavaScript builds for sendHead (setHead), kept referenced.
  napi_ref headRef = nullptr;
  uint8_t* head = nullptr;
  size_t headCap = 0;
  // Events for JavaScript.
  napi_ref eventsRef = nullptr;
  int32_t* events = nullptr;
  uint32_t eventCap = 0;
  std::vector<std::string> errTexts;
  // Completions read ahead by pending() (looking is progress), handed out by the next poll.
  std::vector<fi_cq_data_entry> stash;
  size_t stashHead = 0;
  bool stashErr = false;
  // The completion queue's wait fd, watched on the event loop.
  int waitFd = -1;
  bool trywait = true;
  uv_poll_t* poll = nullptr;
  bool polling = false;
  napi_env env = nullptr;
  /** Closes the endpoint if its thread's environment goes away first (a worker terminated): its libuv handle must not outlive the loop. */
  napi_async_cleanup_hook_handle hook = nullptr;
  bool envGone = false;
  napi_ref wakeRef = nullptr;
  napi_async_context asyncCtx = nullptr;
  /**
   * Set by abandonAtClose (ofi-ep.cc): close releases railcomm's side only
   * (the libuv watch, references, the handle) and leaves the provider's
   * objects, and the memory they reference, open until the process exits.
   */
  bool abandon = false;
};

/** The endpoint a handle names (nullptr: none, or closed). */
Ep* Lookup(int handle);
/** Whether peer handle dest of e names an endpoint of this process that has closed since (sending to it is refused). */
bool LocalPeerClosed(Ep* e, fi_addr_t dest);
/** The provider's address of peer handle dest (its receive context where contexts are addressed); FI_ADDR_NOTAVAIL if unknown. */
inline fi_addr_t Dest(const Ep* e, fi_addr_t dest) { return dest < e->dests.size() ? e->dests[dest] : FI_ADDR_NOTAVAIL; }

// ofi-info.cc
/** fi_getinfo hints: strict (what the rail opens) or permissive (to say why others are refused). */
fi_info* Hints(bool strict);
/** Why the rail cannot use an answer of the permissive query. */
std::string Refusal(const fi_info* i);
void InitInfo(Napi::Env env, Napi::Object exports);
// ofi-ep.cc
void InitEp(Napi::Env env, Napi::Object exports);
/** The endpoint named by a call's first argument (a handle); -1, with a TypeError thrown, if none. */
int EpArg(const Napi::CallbackInfo& cb, Ep** out);
// ofi-mr.cc
void InitMr(Napi::Env env, Napi::Object exports);
// ofi-sep.cc
/**
 * Give e a context of a scalable endpoint for (provider, domain, addrFormat)
 * with `contexts` contexts: a free one of an open Sep, else a new Sep. Sets
 * e's fabric, domain, av, ep (transmit context), rx (receive context), ctx,
 * rxBits and keys; the caller binds its queue and enables both contexts with
 * BindContexts. 0 or a negative libfabric error; *what names the failed call.
 */
int OpenContext(Ep* e, const std::string& prov, const std::string& dom, uint32_t addrFormat, int contexts, std::string* what);
int BindContexts(Ep* e, std::string* what);
/**
 * Keep e's contexts, queue, slab and transmit entries in the Sep, its posted
 * receives cancelled, until the Sep closes: peers' frames still on their way
 * to it are taken in (buffered by the provider) instead of stalling what
 * follows them, and the domain's progress thread, which goes on, never
 * touches a closed context or freed entry of an operation still in flight.
 */
void ParkContext(Ep* e);
/** Release e's place in its Sep (its index stays taken if parked); the Sep closes with its last context (under the process lock). */
void CloseContext(Ep* e, bool parked);
/** The Sep's address (fi_getname), shared by its contexts. */
int SepName(Ep* e, char* name, size_t* len);
/** Insert a peer's name into the Sep's address vector (an entry of e's own); 1 or a negative error. */
int SepInsert(Ep* e, const void* name, size_t len, fi_addr_t* out);
// ofi-ops.cc
void InitOps(napi_env env, napi_value exports);
/** Post e (or queue it behind what waits); 0, or a negative libfabric error other than -FI_EAGAIN. */
ssize_t Submit(Ep* e, Entry* x);
/** Post what waits (in order) until the provider says -FI_EAGAIN. */
void PostPending(Ep* e);
Entry* Alloc(Ep* e, size_t dataBytes);
void Free(Ep* e, Entry* x);
/** Post receive slot i; false on -FI_EAGAIN (kept to post again later). */
bool PostRecv(Ep* e, uint32_t i);
// ofi-poll.cc
void InitPoll(napi_env env, napi_value exports);
void StopWatch(Ep* e);

/** Data pointer and byte length of a typed array or DataView (also over a SharedArrayBuffer); false if neither. */
inline bool ViewData(napi_env env, napi_value v, uint8_t** p, size_t* len) {
  napi_typedarray_type t;
  size_t n = 0;
  void* d = nullptr;
  if (napi_get_typedarray_info(env, v, &t, &n, &d, nullptr, nullptr) == napi_ok) {
    static const size_t kSize[] = {1, 1, 1, 2, 2, 4, 4, 4, 8, 8, 8, 2};
    *p = static_cast<uint8_t*>(d);
    *len = n * (static_cast<size_t>(t) < 12 ? kSize[t] : 1);
    return true;
  }
  if (napi_get_dataview_info(env, v, &n, &d, nullptr, nullptr) == napi_ok) { *p = static_cast<uint8_t*>(d); *len = n; return true; }
  return false;
}

/** Throw a JavaScript Error "<what>: <fi_strerror> (<code>)" with `code` = the libfabric errno name. */
void ThrowFi(napi_env env, const std::string& what, int err);

}  // namespace ofi
