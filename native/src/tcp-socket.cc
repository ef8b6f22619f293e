// What the kernel knows about a tcp lane's connection, for the tcp rail's
// peer check (src/rail/tcp/peer-check.ts): keepalive probes on an idle
// connection, and how long the peer's host has acknowledged nothing while
// data waits for its ACK. Both are answered by the peer's kernel, so a peer
// busy in a long computation (no event loop) still looks alive; a cut network
// or a host that stopped does not.
#include "common.h"
#include <cerrno>
#include <cstddef>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace railcomm {

namespace {

/** tcpKeepalive(fd, idleS, intervalS, count): SO_KEEPALIVE with these; 0, or a negative errno. */
Napi::Value TcpKeepalive(const Napi::CallbackInfo& a) {
  if (a.Length() < 4 || !a[0].IsNumber() || !a[1].IsNumber() || !a[2].IsNumber() || !a[3].IsNumber()) { ThrowType(a.Env(), "tcpKeepalive(fd, idleS, intervalS, count)"); return Napi::Value(); }
  const int fd = a[0].As<Napi::Number>().Int32Value();
  const int on = 1;
  const int idle = a[1].As<Napi::Number>().Int32Value();
  const int interval = a[2].As<Napi::Number>().Int32Value();
  const int count = a[3].As<Napi::Number>().Int32Value();
  if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count) != 0) {
    return Napi::Number::New(a.Env(), -errno);
  }
  return Napi::Number::New(a.Env(), 0);
}

/**
 * tcpAckWait(fd): how long (ms) the peer's host has acknowledged nothing
 * while data of ours waits on it: the milliseconds since the last ACK
 * received (tcpi_last_ack_recv: any ACK, those answering a zero-window probe
 * too, so a peer that reads nothing for a while but whose host answers
 * counts as answering), 0 when nothing waits, or a negative errno. Data
 * waits when it was sent and not acknowledged (tcpi_unacked), or when it is
 * queued unsent although the peer's window is open and window probes go
 * unanswered (tcpi_notsent_bytes, tcpi_snd_wnd > 0, tcpi_probes: this host
 * cannot transmit, its link down or filtered; a closed window is a peer that
 * reads nothing, which is not a failure, and a kernel too old to say the
 * window is not asked).
 */
Napi::Value TcpAckWait(const Napi::CallbackInfo& a) {
  if (a.Length() < 1 || !a[0].IsNumber()) { ThrowType(a.Env(), "tcpAckWait(fd)"); return Napi::Value(); }
  const int fd = a[0].As<Napi::Number>().Int32Value();
  struct tcp_info info = {};
  socklen_t len = sizeof info;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return Napi::Number::New(a.Env(), -errno);
  const bool knowsWindow = len >= offsetof(struct tcp_info, tcpi_snd_wnd) + sizeof info.tcpi_snd_wnd;
  // Unsent with the window open: only once two window probes in a row went
  // unanswered (tcpi_probes, reset by any ACK). A peer whose window is small
  // but open and whose host answers resets it at each probe, however far the
  // probe timer has backed off (up to 120 s apart: longer than the timeout).
  // A closed window is a peer that reads nothing, whose host answers: recent
  // kernels even answer data they drop for want of memory with a zero-window
  // ACK that acknowledges nothing, so unacknowledged data then proves nothing
  // either (the kernel's own limits apply there).
  bool waits;
  if (!knowsWindow) waits = info.tcpi_unacked > 0;
  else if (info.tcpi_snd_wnd == 0) waits = false;
  else waits = info.tcpi_unacked > 0 || (info.tcpi_notsent_bytes > 0 && info.tcpi_probes >= 2);
  return Napi::Number::New(a.Env(), waits ? static_cast<double>(info.tcpi_last_ack_recv) : 0);
}

}  // namespace

void InitTcpSocket(Napi::Env env, Napi::Object exports) {
  exports.Set("tcpKeepalive", Napi::Function::New(env, TcpKeepalive, "tcpKeepalive"));
  exports.Set("tcpAckWait", Napi::Function::New(env, TcpAckWait, "tcpAckWait"));
}

}  // namespace railcomm
