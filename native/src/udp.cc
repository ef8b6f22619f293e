// Batched datagram sends for the udp rail: sendmmsg(2) on the fd of a Node
// dgram socket, so that one progress pass posts its segments with one system
// call (and wakes a sleeping receiver once) instead of one dgram.send each.
#include "common.h"
#include <arpa/inet.h>
#include <cerrno>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>

namespace railcomm {
namespace {

constexpr unsigned kMaxBatch = 256;

/**
 * udpSendBatch(fd, bufs, lens, ports, addrs, count) -> datagrams sent, or -errno
 * when none could be: bufs[i] (first lens[i] bytes) to IPv4 addrs[i] (host
 * order) : ports[i]. Never blocks; a short count means the socket buffer is
 * full (the caller sends the rest another way).
 */
void SendBatch(const FunctionCallbackInfo<Value>& a) {
  Isolate* iso = a.GetIsolate();
  if (a.Length() < 6 || !a[0]->IsInt32() || !a[1]->IsArray() || !a[2]->IsUint32Array() || !a[3]->IsUint32Array() || !a[4]->IsUint32Array() || !a[5]->IsUint32()) {
    ThrowType(iso, "udpSendBatch(fd, bufs, lens, ports, addrs, count)");
    return;
  }
  Local<v8::Context> ctx = iso->GetCurrentContext();
  int fd = a[0].As<v8::Int32>()->Value();
  Local<v8::Array> bufs = a[1].As<v8::Array>();
  char* lp; size_t ln; char* pp; size_t pn; char* ap; size_t an;
  BytesOf(a[2], &lp, &ln); BytesOf(a[3], &pp, &pn); BytesOf(a[4], &ap, &an);
  const uint32_t* lens = reinterpret_cast<const uint32_t*>(lp);
  const uint32_t* ports = reinterpret_cast<const uint32_t*>(pp);
  const uint32_t* addrs = reinterpret_cast<const uint32_t*>(ap);
  unsigned count = a[5].As<v8::Uint32>()->Value();
  if (count > kMaxBatch || count > bufs->Length() || count * 4 > ln || count * 4 > pn || count * 4 > an) { ThrowType(iso, "udpSendBatch: count exceeds the arrays (or 256)"); return; }
  mmsghdr msgs[kMaxBatch];
  iovec iov[kMaxBatch];
  sockaddr_in to[kMaxBatch];
  for (unsigned i = 0; i < count; i++) {
    Local<Value> b;
    char* p = nullptr; size_t n = 0;
    if (!bufs->Get(ctx, i).ToLocal(&b) || !BytesOf(b, &p, &n) || lens[i] > n) { ThrowType(iso, "udpSendBatch: each buffer must hold its length"); return; }
    iov[i].iov_base = p;
    iov[i].iov_len = lens[i];
    to[i] = sockaddr_in{};
    to[i].sin_family = AF_INET;
    to[i].sin_port = htons(static_cast<uint16_t>(ports[i]));
    to[i].sin_addr.s_addr = htonl(addrs[i]);
    msgs[i].msg_hdr = msghdr{};
    msgs[i].msg_hdr.msg_name = &to[i];
    msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    msgs[i].msg_len = 0;
  }
  unsigned done = 0;
  while (done < count) {
    int r = sendmmsg(fd, msgs + done, count - done, MSG_DONTWAIT);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (done == 0) { a.GetReturnValue().Set(-errno); return; }
      break;
    }
    if (r == 0) break;
    done += static_cast<unsigned>(r);
  }
  a.GetReturnValue().Set(done);
}

}  // namespace

void InitUdp(Local<v8::Object> exports, Local<v8::Context> ctx) {
  SetFn(exports, ctx, "udpSendBatch", SendBatch);
}

}  // namespace railcomm
