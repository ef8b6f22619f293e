// A message that arrived before any receive matched it: its eager bytes
// (copied out of the rail's buffer) or a rendezvous announcement, queued in
// its context's unexpected queue until a receive or probe takes it.

import type { Linked, List } from './list.js';
import type { Arrived } from './matching.js';
import type { ProtoEndpoint } from './endpoint.js';
import type { Request } from './request.js';

export class Unexpected implements Arrived {
  src: number;
  tag: number;
  arrival = 0;
  prev: Linked | null = null;
  next: Linked | null = null;
  list: List<Linked> | null = null;
  readonly ep: ProtoEndpoint;
  /** Eager payload (or a fetched announcement's), or null for a rendezvous announcement. */
  data: Buffer | null;
  readonly size: number;
  readonly sendId: number;
  /** Rendezvous by RGET: where the sender's buffer is in its process (0n: the ring path), or its offset in `segment`. */
  remote = 0n;
  /** The sender's registered segment holding the data (comm.alloc), or -1. */
  segment = -1;
  /** Announced in an envelope (the sender has several lanes): it waits for our FIN. */
  finWanted = false;
  /** A small announcement being fetched ahead of its receive (rndv/prefetch.ts): its bytes land here. */
  fetching: Buffer | null = null;
  /** The receive that matched it while it was being fetched. */
  waiting: Request | null = null;

  constructor(ep: ProtoEndpoint, src: number, tag: number, data: Buffer | null, size: number, sendId: number) {
    this.ep = ep; this.src = src; this.tag = tag; this.data = data; this.size = size; this.sendId = sendId;
  }
}
