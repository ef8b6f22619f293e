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
bool Uint32s(napi_env env, napi_value v, const uint32_t** out, size_t* n) {
  napi_typedarray_type type;
  void* p = nullptr;
  if (napi_get_typedarray_info(env, v, &type, n, &p, nullptr, nullptr) != napi_ok || type != napi_uint32_array) return false;
  *out = static_cast<const uint32_t*>(p);
  return true;
}

napi_value SendBatch(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  Args(env, info, argv, 6);
  const char* usage = "udpSendBatch(fd, bufs, lens, ports, addrs, count)";
  double fdArg = 0, countArg = 0;
  bool isArray = false;
  const uint32_t *lens, *ports, *addrs;
  size_t ln = 0, pn = 0, an = 0;
  uint32_t nbufs = 0;
  if (!Num(env, argv[0], &fdArg) || fdArg != static_cast<double>(static_cast<int32_t>(fdArg)) || napi_is_array(env, argv[1], &isArray) != napi_ok || !isArray ||
      !Uint32s(env, argv[2], &lens, &ln) || !Uint32s(env, argv[3], &ports, &pn) || !Uint32s(env, argv[4], &addrs, &an) ||
      !Num(env, argv[5], &countArg) || !Whole(countArg, 4294967295.0)) {
    ThrowType(env, usage);
    return nullptr;
  }
  napi_get_array_length(env, argv[1], &nbufs);
  const int fd = static_cast<int>(fdArg);
  const double count = countArg;
  if (count > kMaxBatch || count > nbufs || count > ln || count > pn || count > an) { ThrowType(env, "udpSendBatch: count exceeds the arrays (or 256)"); return nullptr; }
  const unsigned n = static_cast<unsigned>(count);
  mmsghdr msgs[kMaxBatch];
  iovec iov[kMaxBatch];
  sockaddr_in to[kMaxBatch];
  for (unsigned i = 0; i < n; i++) {
    napi_value b;
    char* p = nullptr;
    size_t len = 0;
    if (napi_get_element(env, argv[1], i, &b) != napi_ok || !BytesOf(env, b, &p, &len) || lens[i] > len) { ThrowType(env, "udpSendBatch: each buffer must hold its length"); return nullptr; }
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
  while (done < n) {
    const int r = sendmmsg(fd, msgs + done, n - done, MSG_DONTWAIT);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (done == 0) return Int(env, -errno);
      break;
    }
    if (r == 0) break;
    done += static_cast<unsigned>(r);
  }
  return Uint(env, done);
}

}  // namespace

void InitUdp(Napi::Env env, Napi::Object exports) {
  SetFn(env, exports, "udpSendBatch", SendBatch);
}

}  // namespace railcomm
