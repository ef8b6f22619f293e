// What the completion queue says about peers, off the delivery path
// (rail.ts poll, frame): the rail's own frames (a proven HELLO lets a peer
// send, BYE says it finalized) and error completions (the operation fails; a
// peer that cannot be reached fails with it).

import { RailcommError, ErrorCode } from '../../core/errors.js';
import { endpointId, formatId } from '../../core/ids.js';
import type { OfiEndpoint } from './endpoint.js';
import { isPeerError } from './peer-errors.js';
import type { OfiRail } from './rail.js';
import { F_BYE, F_HELLO, F_PING, MAC_BYTES, checkMac, decodeAddress, helloMac } from './wire.js';

/** The rail's own frames: a peer's HELLO (it may send now) and BYE (it finalized); host is this rank's (hostKey). */
export function controlFrame(rail: OfiRail, host: string, ep: OfiEndpoint | undefined, rank: number, buf: Buffer, flags: number, hdrOff: number, hdrLen: number, payLen: number): void {
  if (flags === F_PING) return;
  if (flags === F_BYE) {
    if (ep !== undefined && ep.heard) ep.peerClosed();
    return;
  }
  if (flags !== F_HELLO || hdrLen !== MAC_BYTES) { rail.counters.badFrames++; return; }
  const address = buf.toString('utf8', hdrOff + hdrLen, hdrOff + hdrLen + payLen);
  const from = endpointId(rail.job, rank);
  const mac = buf.subarray(hdrOff, hdrOff + MAC_BYTES);
  if (!checkMac(helloMac(rail.env.jobKey, from, rail.env.self, address), mac)) {
    rail.counters.refused++;
    rail.env.log.warnEvery('ofi-bad-hello', `ofi: refused a HELLO claiming to be ${formatId(from)}: it does not prove this job's key`);
    return;
  }
  if (ep !== undefined && ep.failed) return; // dropped: it stays dropped
  const e = ep ?? rail.endpoint(from, address);
  if (e.address === '') e.address = address;
  const a = decodeAddress(address);
  if (e.pid === 0 && a !== null && a.host === host && a.pid !== process.pid) e.pid = a.pid;
  e.heard = true;
  rail.newPeer();
  rail.env.upcalls.accepted(e);
}

/** An error completion at word o of events; endpoints: the rail's, to find the peer of an error that names an address but no operation. */
export function completionError(rail: OfiRail, events: Int32Array, o: number, endpoints: ReadonlyMap<bigint, OfiEndpoint>): void {
  const ev = events;
  const id = ev[o + 1]! >>> 0;
  const err = ev[o + 5]!;
  const text = rail.b.errText(rail.h, ev[o + 7]!);
  const kind = ev[o + 2]!;
  const ep = id !== 0 ? rail.ops.ownerOf(id) : epOfAddr(endpoints, ev[o + 3]!);
  // One-sided operations fail alone (a bad key, a range); a failed send means the peer cannot be reached.
  if (kind >= 3 && id !== 0) {
    rail.ops.fail(id, new RailcommError(ErrorCode.PEER_FAILED, `ofi (${rail.provider}): a one-sided operation${ep !== null ? ` to ${formatId(ep.peer)}` : ''} failed: ${text}`));
    if (!isPeerError(err)) return;
  }
  if (id !== 0) {
    rail.ops.fail(id, new RailcommError(ErrorCode.PEER_FAILED, ep !== null && ep.peerFinalized
      ? `peer ${formatId(ep.peer)} finalized before this send completed (ofi ${rail.provider}: ${text})`
      : `ofi (${rail.provider}): a send failed: ${text}`));
  }
  // (Finalizing, a peer the provider cannot reach finalized first, as at a send: endpoint.ts sendFailed.)
  if (ep !== null && rail.finalizing && isPeerError(err)) { rail.env.log.debug(`ofi (${rail.provider}): ${formatId(ep.peer)} unreachable while finalizing: ${text}`); ep.peerClosed(); }
  else if (ep !== null) ep.fail(`the provider reports: ${text}`, false);
  else if (rail.closing) rail.env.log.debug(`ofi (${rail.provider}): completion error while closing: ${text}`);
  else rail.env.log.warnEvery('ofi-cq-error', `ofi (${rail.provider}): completion error: ${text}`);
}

function epOfAddr(endpoints: ReadonlyMap<bigint, OfiEndpoint>, fiAddr: number): OfiEndpoint | null {
  if (fiAddr < 0) return null;
  for (const ep of endpoints.values()) if (ep.fiAddrIs(fiAddr)) return ep;
  return null;
}
