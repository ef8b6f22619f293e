// Scalable endpoints (fi_scalable_ep, the seed's contexts per module): the
// thread ranks of one process share one fabric, domain, address vector and
// endpoint address; each rank owns a transmit and a receive context bound to
// a completion queue of its own, so one rank's progress never reads another's
// completions. Contexts are handed out first come; when every context of the
// open scalable endpoints is taken, another one opens. The last rank to close
// its contexts closes the shared objects.
#include "ofi.h"
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace ofi {

/** A receive context whose rank has closed, kept open until its Sep closes (ParkContext). */
struct Parked {
  fid_ep* tx;
  fid_ep* rx;
  fid_cq* cq;
  Slab* slab;
  std::vector<fi_context2> ctx;
  /** The transmit entries' memory: operations still in flight are the provider's until the contexts close. */
  void* pools[2];
};

struct Sep {
  std::string prov, dom;
  uint32_t addrFormat = 0;
  int contexts = 0;
  /** Bits of a provider address that name the receive context (fi_rx_addr). */
  int bits = 0;
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  fid_ep* ep = nullptr;
  std::vector<bool> used;
  int refs = 0;
  std::atomic<uint64_t> keys{1};
  std::vector<Parked*> parked;
};

namespace {

std::mutex g_sepLock;
std::vector<Sep*> g_seps;

void DestroySep(Sep* s) {
  for (Parked* p : s->parked) {
    fi_close(&p->tx->fid);
    fi_close(&p->rx->fid);
    fi_close(&p->cq->fid);
    ReleaseSlab(p->slab);
    std::free(p->pools[0]);
    std::free(p->pools[1]);
    delete p;
  }
  if (s->ep) fi_close(&s->ep->fid);
  if (s->av) fi_close(&s->av->fid);
  if (s->domain) fi_close(&s->domain->fid);
  if (s->fabric) fi_close(&s->fabric->fid);
  if (s->info) fi_freeinfo(s->info);
  delete s;
}

/** A Sep no context holds any more: closed (under g_sepLock). */
void DropIfUnused(Sep* s) {
  if (s->refs > 0) return;
  for (size_t i = 0; i < g_seps.size(); i++) if (g_seps[i] == s) { g_seps.erase(g_seps.begin() + static_cast<long>(i)); break; }
  DestroySep(s);
}

int BitsFor(int n) {
  int b = 0;
  while ((1 << b) < n) b++;
  return b;
}

int NewSep(const std::string& prov, const std::string& dom, uint32_t addrFormat, int contexts, Sep** out, std::string* what) {
  fi_info* hints = Hints(true);
  hints->fabric_attr->prov_name = strdup(prov.c_str());
  hints->domain_attr->name = strdup(dom.c_str());
  // Several threads (one per context) call into one domain.
  hints->domain_attr->threading = FI_THREAD_SAFE;
  hints->ep_attr->tx_ctx_cnt = static_cast<size_t>(contexts);
  hints->ep_attr->rx_ctx_cnt = static_cast<size_t>(contexts);
  fi_info* list = nullptr;
  int r = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), nullptr, nullptr, 0, hints, &list);
  fi_freeinfo(hints);
  if (r != 0) { *what = "fi_getinfo (scalable endpoint of " + std::to_string(contexts) + " contexts)"; return r; }
  fi_info* pick = nullptr;
  for (fi_info* i = list; i != nullptr && pick == nullptr; i = i->next) if (addrFormat == 0 || i->addr_format == addrFormat) pick = i;
  if (pick == nullptr) pick = list;
  Sep* s = new Sep();
  s->prov = prov;
  s->dom = dom;
  s->addrFormat = addrFormat;
  s->contexts = contexts;
  s->bits = BitsFor(contexts);
  s->info = fi_dupinfo(pick);
  fi_freeinfo(list);
  s->used.assign(static_cast<size_t>(contexts), false);
  auto fail = [&](const char* call, int err) { *what = call; DestroySep(s); return err; };
  if ((r = fi_fabric(s->info->fabric_attr, &s->fabric, nullptr)) != 0) return fail("fi_fabric", r);
  if ((r = fi_domain(s->fabric, s->info, &s->domain, nullptr)) != 0) return fail("fi_domain", r);
  fi_av_attr aa{};
  aa.type = FI_AV_TABLE;
  aa.count = 256 * static_cast<size_t>(contexts);
  aa.rx_ctx_bits = s->bits;
  if ((r = fi_av_open(s->domain, &aa, &s->av, nullptr)) != 0) return fail("fi_av_open", r);
  if ((r = fi_scalable_ep(s->domain, s->info, &s->ep, nullptr)) != 0) return fail("fi_scalable_ep", r);
  if ((r = fi_scalable_ep_bind(s->ep, &s->av->fid, 0)) != 0) return fail("fi_scalable_ep_bind(av)", r);
  if ((r = fi_enable(s->ep)) != 0) return fail("fi_enable(scalable endpoint)", r);
  *out = s;
  return 0;
}

}  // namespace

int OpenContext(Ep* e, const std::string& prov, const std::string& dom, uint32_t addrFormat, int contexts, std::string* what) {
  std::lock_guard<std::mutex> g(g_sepLock);
  Sep* s = nullptr;
  int idx = -1;
  for (Sep* c : g_seps) {
    if (c->prov != prov || c->dom != dom || c->addrFormat != addrFormat || c->contexts != contexts) continue;
    for (int i = 0; i < c->contexts && idx < 0; i++) if (!c->used[static_cast<size_t>(i)]) idx = i;
    if (idx >= 0) { s = c; break; }
  }
  if (s == nullptr) {
    const int r = NewSep(prov, dom, addrFormat, contexts, &s, what);
    if (r != 0) return r;
    g_seps.push_back(s);
    idx = 0;
  }
  fid_ep* tx = nullptr;
  fid_ep* rx = nullptr;
  int r = fi_tx_context(s->ep, idx, nullptr, &tx, nullptr);
  if (r != 0) { *what = "fi_tx_context"; DropIfUnused(s); return r; }
  r = fi_rx_context(s->ep, idx, nullptr, &rx, nullptr);
  if (r != 0) { *what = "fi_rx_context"; fi_close(&tx->fid); DropIfUnused(s); return r; }
  s->used[static_cast<size_t>(idx)] = true;
  s->refs++;
  e->sep = s;
  e->ctx = idx;
  e->rxBits = s->bits;
  e->fabric = s->fabric;
  e->domain = s->domain;
  e->av = s->av;
  e->ep = tx;
  e->rx = rx;
  e->keys = &s->keys;
  e->info = fi_dupinfo(s->info);
  return 0;
}

int BindContexts(Ep* e, std::string* what) {
  int r;
  if ((r = fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT)) != 0) { *what = "fi_ep_bind(transmit context, cq)"; return r; }
  if ((r = fi_ep_bind(e->rx, &e->cq->fid, FI_RECV)) != 0) { *what = "fi_ep_bind(receive context, cq)"; return r; }
  if ((r = fi_enable(e->ep)) != 0) { *what = "fi_enable(transmit context)"; return r; }
  if ((r = fi_enable(e->rx)) != 0) { *what = "fi_enable(receive context)"; return r; }
  return 0;
}

void ParkContext(Ep* e) {
  // Its posted receives go (one mid-delivery may still land: the slab stays with the parked context).
  for (fi_context2& c : e->rxCtx) fi_cancel(&e->rx->fid, &c);
  // (A moved vector keeps its elements where they are: the provider's pointers to them stay good.)
  Parked* p = new Parked{e->ep, e->rx, e->cq, e->slab, std::move(e->rxCtx), {e->pools[0].mem, e->pools[1].mem}};
  e->pools[0].mem = nullptr;
  e->pools[1].mem = nullptr;
  e->ep = nullptr;
  e->rx = nullptr;
  e->cq = nullptr;
  e->slab = nullptr;
  std::lock_guard<std::mutex> g(g_sepLock);
  e->sep->parked.push_back(p);
}

void CloseContext(Ep* e, bool parked) {
  Sep* s = e->sep;
  if (s == nullptr) return;
  std::lock_guard<std::mutex> g(g_sepLock);
  // A parked receive context keeps its index: a new one there would share its frames.
  if (!parked) s->used[static_cast<size_t>(e->ctx)] = false;
  s->refs--;
  e->sep = nullptr;
  e->fabric = nullptr;
  e->domain = nullptr;
  e->av = nullptr;
  e->keys = &e->ownKeys;
  DropIfUnused(s);
}

int SepName(Ep* e, char* name, size_t* len) {
  return fi_getname(&e->sep->ep->fid, name, len);
}

int SepInsert(Ep* e, const void* name, size_t len, fi_addr_t* out) {
  // An entry per rank and peer, never shared: the provider keeps a connection per
  // entry (sockets), and a connection the contexts shared would stall them all
  // behind a frame for one context that has no receive posted (head-of-line:
  // the point-to-point suite's flood of requests hung 8 thread ranks so).
  std::lock_guard<std::mutex> g(g_sepLock);
  (void)len;
  return fi_av_insert(e->sep->av, name, 1, out, 0, nullptr);
}

}  // namespace ofi
