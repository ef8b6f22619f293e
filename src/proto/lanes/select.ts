// Which lanes a protocol endpoint gets, and how rendezvous data is shared
// between them: pure functions over rail descriptions, so that the rules can
// be tested without sockets (UCX's lane selection, with its users' traps
// avoided: two ports of one card are not two lanes for striping, a rail the
// user excluded is never here at all since it was never opened).

/** What lane selection needs to know of one open rail. */
export interface RailChoice {
  readonly component: string;
  /** Rail name, component:device. */
  readonly name: string;
  /** The device (interface) it sits on: striping needs distinct ones. */
  readonly device: string;
  /** 'memory' and 'process' rails (shm, tbsm, self) reach a peer alone: their peers get one lane. */
  readonly network: boolean;
  readonly latencyUs: number;
  readonly bandwidthMBps: number;
  /** How well this rail reaches a peer's address: 0 not at all, 1 routed, 2 same subnet. */
  fit(address: string): number;
}

export interface LanePlan<R extends RailChoice> {
  rail: R;
  address: string;
  /** Carries eager and control traffic (the first MAX_EAGER_RAILS lanes). */
  eager: boolean;
  /** Carries rendezvous data (striped). */
  rndv: boolean;
}

/**
 * The lanes to a peer that published `addrs` (component -> its addresses):
 * every open rail that reaches one of them, each with the address it fits
 * best, fastest first. A peer whose best rail is not a network rail (shared
 * memory) gets that one lane only. Rendezvous lanes: at most maxRndv, on
 * distinct devices, and not far slower than the best (a lane at a quarter of
 * the best's bandwidth would only slow striping down).
 */
export function planLanes<R extends RailChoice>(rails: readonly R[], addrs: Readonly<Record<string, readonly string[]>>, maxEager: number, maxRndv: number): LanePlan<R>[] {
  const found: Array<{ rail: R; address: string; fit: number }> = [];
  for (const rail of rails) {
    let best = '';
    let bestFit = 0;
    for (const a of addrs[rail.component] ?? []) {
      const f = rail.fit(a);
      if (f > bestFit) { best = a; bestFit = f; }
    }
    if (bestFit > 0) found.push({ rail, address: best, fit: bestFit });
  }
  // Per component: the rails that share a subnet with the peer; where none
  // does, the first that reaches it (the routed one): another device would
  // send through the same route, not along a path of its own.
  const kept = found.filter((f) => f.fit === 2 || !found.some((g) => g.rail.component === f.rail.component && (g.fit === 2 || found.indexOf(g) < found.indexOf(f))));
  found.length = 0;
  found.push(...kept);
  // Fastest first; between equals, the better fit (same subnet before routed).
  found.sort((a, b) => a.rail.latencyUs - b.rail.latencyUs || b.fit - a.fit);
  if (found.length === 0) return [];
  if (!found[0]!.rail.network) return [{ rail: found[0]!.rail, address: found[0]!.address, eager: true, rndv: true }];
  const lanes = found.filter((f) => f.rail.network);
  const topBw = Math.max(...lanes.map((l) => l.rail.bandwidthMBps));
  const devices = new Set<string>();
  const out: LanePlan<R>[] = [];
  let eager = 0;
  let rndv = 0;
  for (const l of lanes) {
    const isEager = eager < Math.max(1, maxEager);
    if (isEager) eager++;
    const isRndv = rndv < Math.max(1, maxRndv) && !devices.has(l.rail.device) && l.rail.bandwidthMBps * 4 >= topBw;
    if (isRndv) { rndv++; devices.add(l.rail.device); }
    out.push({ rail: l.rail, address: l.address, eager: isEager, rndv: isRndv });
  }
  return out;
}

/**
 * Striping: which of the lanes takes the next `bytes` so that each lane's
 * share of the bytes so far follows its weight (deficit by weight, ties to
 * the first). `sent[i]` are the bytes lane i took; weight 0 or a negative
 * `sent` marks a lane that takes nothing now. Returns -1 when none can.
 */
export function pickByWeight(sent: ArrayLike<number>, weight: ArrayLike<number>): number {
  let best = -1;
  let bestLoad = Infinity;
  for (let i = 0; i < weight.length; i++) {
    const w = weight[i]!;
    if (!(w > 0) || sent[i]! < 0) continue;
    const load = sent[i]! / w;
    if (load < bestLoad) { bestLoad = load; best = i; }
  }
  return best;
}

/** IPv4 "a.b.c.d" as a number, or -1. */
export function ipv4(a: string): number {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(a);
  if (m === null) return -1;
  return ((+m[1]! << 24) | (+m[2]! << 16) | (+m[3]! << 8) | +m[4]!) >>> 0;
}

/** Whether two IPv4 addresses are in one subnet of `bits` prefix bits. */
export function sameSubnet(a: string, b: string, bits: number): boolean {
  const x = ipv4(a), y = ipv4(b);
  if (x < 0 || y < 0 || bits < 0 || bits > 32) return false;
  if (bits === 0) return true;
  const mask = bits === 32 ? 0xffffffff : (0xffffffff << (32 - bits)) >>> 0;
  return ((x & mask) >>> 0) === ((y & mask) >>> 0);
}
