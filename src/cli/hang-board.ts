// The hang report, launcher side: `railcomm run` collects the ranks' reports
// (proto/hang.ts, sent over the key-value service) and, once every rank still
// running is stuck (waiting with nothing completing, or idle) and one of them
// waits, prints one picture of who waits on whom, naming the cycles. It
// prints once per stuck spell and never stops the job (--timeout does).

import { SILENT_LANES, type HangReport, type HangWait } from '../proto/hang.js';

/** What the launcher knows of a rank besides its report. */
export type RankState = 'running' | 'finalized' | 'exited';

/** Cycles named in one picture at most. */
const MAX_CYCLES = 8;

const isPeer = (v: unknown): v is HangWait['peer'] => v === null || v === 'any' || (typeof v === 'number' && Number.isSafeInteger(v) && v >= -1);

/** A rank's report, or undefined when the text is not one (a stranger's or a bug's; the board ignores it). */
export function parseHangReport(text: string, rank: number): HangReport | undefined {
  let o: unknown;
  try { o = JSON.parse(text); } catch { return undefined; }
  if (typeof o !== 'object' || o === null) return undefined;
  const r = o as Record<string, unknown>;
  const state = r['state'];
  if (state !== 'waiting' && state !== 'idle' && state !== 'moving') return undefined;
  if (typeof r['forMs'] !== 'number' || typeof r['timeoutMs'] !== 'number' || !Array.isArray(r['waits'])) return undefined;
  const waits: HangWait[] = [];
  for (const w of r['waits'] as unknown[]) {
    if (typeof w !== 'object' || w === null) return undefined;
    const { peer, what } = w as Record<string, unknown>;
    if (!isPeer(peer) || typeof what !== 'string') return undefined;
    waits.push({ peer, what });
  }
  // The rank is the connection's (proven with the job key), not what the text says.
  return { rank, state, forMs: r['forMs'], timeoutMs: r['timeoutMs'], waits };
}

/** The distinct world ranks a report waits on, in order of first mention. */
function peersOf(rep: HangReport): number[] {
  const out: number[] = [];
  for (const w of rep.waits) if (typeof w.peer === 'number' && w.peer >= 0 && !out.includes(w.peer)) out.push(w.peer);
  return out;
}

/**
 * Cycles among waiting ranks, each as the ranks in order (rank a waits on b,
 * b on c, ..., the last on a), every cycle once, smallest rank first.
 */
export function findCycles(edges: ReadonlyMap<number, readonly number[]>): number[][] {
  const cycles: number[][] = [];
  const seen = new Set<string>();
  const color = new Map<number, 1 | 2>();
  const path: number[] = [];
  const visit = (v: number): void => {
    color.set(v, 1);
    path.push(v);
    for (const w of edges.get(v) ?? []) {
      if (!edges.has(w)) continue;
      const c = color.get(w);
      if (c === 1) {
        const cyc = path.slice(path.indexOf(w));
        const start = cyc.indexOf(Math.min(...cyc));
        const canon = [...cyc.slice(start), ...cyc.slice(0, start)];
        const key = canon.join(',');
        if (!seen.has(key) && cycles.length < MAX_CYCLES) { seen.add(key); cycles.push(canon); }
      } else if (c === undefined) {
        visit(w);
      }
    }
    path.pop();
    color.set(v, 2);
  };
  for (const v of [...edges.keys()].sort((a, b) => a - b)) if (!color.has(v)) visit(v);
  return cycles;
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;

/**
 * The picture when the job is stuck: every running rank has reported waiting
 * or idle, and at least one waits. Undefined while some rank still moves.
 */
export function hangPicture(size: number, reports: ReadonlyMap<number, HangReport>, state: (rank: number) => RankState, atTimeout?: string, joined: (rank: number) => boolean = () => true): string[] | undefined {
  const waiting: HangReport[] = [];
  let minFor = Infinity;
  let timeoutMs = 0;
  for (let r = 0; r < size; r++) {
    if (state(r) !== 'running') continue;
    const rep = reports.get(r);
    // (At --timeout the picture is drawn from what came: a rank busy in its own code sends nothing.)
    if (rep === undefined || rep.state === 'moving') { if (atTimeout === undefined) return undefined; continue; }
    if (rep.state === 'waiting') waiting.push(rep);
    minFor = Math.min(minFor, rep.forMs);
    timeoutMs = Math.max(timeoutMs, rep.timeoutMs);
  }
  if (waiting.length === 0 && atTimeout === undefined) return undefined;
  const lines = [atTimeout !== undefined
    ? `hang report at ${atTimeout}: what each rank waits for now; who waits on whom (world ranks):`
    : `hang report: no operation completed on any running rank for at least ${seconds(minFor)} (RAILCOMM_HANG_TIMEOUT=${timeoutMs} ms); who waits on whom (world ranks):`];
  const edges = new Map<number, number[]>();
  const notes: string[] = [];
  const silentRanks: number[] = [];
  for (let r = 0; r < size; r++) {
    const st = state(r);
    if (st !== 'running') {
      lines.push(`  rank ${r}: ${st === 'finalized' ? 'finalized' : 'exited'}`);
      continue;
    }
    const rep = reports.get(r);
    if (rep?.state === 'moving') {
      lines.push(`  rank ${r}: still completing operations`);
      continue;
    }
    if (rep === undefined) {
      if (!joined(r)) { lines.push(`  rank ${r}: not in railcomm (it never called init(), or is not a railcomm program)`); continue; }
      lines.push(`  rank ${r}: no report`);
      silentRanks.push(r);
      continue;
    }
    if (rep.state === 'idle') {
      lines.push(`  rank ${r}: nothing pending in railcomm (in its own code, or idle)`);
      continue;
    }
    const peers = peersOf(rep);
    edges.set(r, peers);
    const any = rep.waits.some((w) => w.peer === 'any');
    const on = [...peers.map((p) => `rank ${p}`), ...(any ? ['any rank (ANY_SOURCE)'] : [])];
    lines.push(`  rank ${r} waits${on.length > 0 ? ` on ${on.join(', ')}` : ''}:`);
    for (const w of rep.waits) lines.push(`      ${w.what}`);
    if (rep.waits.length === 0) lines.push('      nothing visible in the protocol layer (a request waits on the application)');
    for (const p of peers) {
      if (p >= size) continue;
      const ps = state(p);
      if (ps !== 'running') notes.push(`rank ${r} waits on rank ${p}, which has ${ps === 'finalized' ? 'finalized' : 'exited'}: it will never answer`);
      else if (reports.get(p)?.state === 'idle') notes.push(`rank ${r} waits on rank ${p}, which has nothing pending in railcomm: does rank ${p} ever make the matching call?`);
    }
  }
  // Pairs whose lanes stopped answering heartbeats (either side says so): what looks like a cycle may be a cut.
  const silent = new Set<string>();
  for (const [r, rep] of reports) for (const w of rep.waits) if (typeof w.peer === 'number' && w.what.startsWith(SILENT_LANES)) silent.add(`${Math.min(r, w.peer)}-${Math.max(r, w.peer)}`);
  const cycles = findCycles(edges);
  for (const c of cycles) {
    const cut = c.length > 1 && c.some((x, i) => { const y = c[(i + 1) % c.length]!; return silent.has(`${Math.min(x, y)}-${Math.max(x, y)}`); });
    // At --timeout the ranks watched a moment only: a cycle then is one that moved in none of them meanwhile.
    const moment = atTimeout !== undefined ? `; none of them completed an operation in the ${seconds(Math.min(...c.map((x) => reports.get(x)?.forMs ?? 0)))} they were watched` : '';
    notes.push(c.length === 1
      ? `deadlock: rank ${c[0]} waits on itself (a receive from itself that no send of its own matches${moment})`
      : cut
        ? `no answer: cycle ${[...c, c[0]!].map((x) => `rank ${x}`).join(' -> ')}, but the lanes between some of them answer no heartbeat (see "${SILENT_LANES}" above): the network between them may be cut, not a deadlock`
        : `deadlock: cycle ${[...c, c[0]!].map((x) => `rank ${x}`).join(' -> ')} (each waits on the next${moment})`);
  }
  if (silentRanks.length > 0) notes.push(`${silentRanks.length === 1 ? `rank ${silentRanks[0]} sent` : `ranks ${silentRanks.join(', ')} sent`} no report when asked: busy in code that does not return to the event loop (a long computation, or a synchronous call)`);
  if (cycles.length === 0 && notes.length === 0 && waiting.length > 0) notes.push('no cycle of waits among the ranks: look for a receive whose tag, source or communicator no send matches');
  lines.push(...notes.map((n) => `  ${n}`));
  if (atTimeout === undefined) lines.push('  the job goes on: the hang report never stops it (--timeout S does)');
  return lines;
}

/** Collects reports as they come and prints the picture once per stuck spell. */
export class HangBoard {
  private readonly reports = new Map<number, HangReport>();
  private printed = false;

  constructor(
    private readonly size: number,
    private readonly state: (rank: number) => RankState,
    private readonly print: (lines: string[]) => void,
  ) {}

  /** A report arrived from `rank` (JSON text as the rank sent it). */
  add(rank: number, text: string): void {
    const rep = parseHangReport(text, rank);
    if (rep === undefined || rank < 0 || rank >= this.size) return;
    if (rep.state === 'moving' && !this.stopping) {
      this.reports.delete(rank);
      this.printed = false;
      return;
    }
    this.reports.set(rank, rep);
    this.check();
  }

  /**
   * A rank finalized or exited: the others may all be stuck now, or about to
   * move on what it sent last (their 'moving' reports still on the way).
   * Look again once those had the reports' own timeout to land.
   */
  rankLeft(): void {
    let grace = 0;
    for (const rep of this.reports.values()) grace = Math.max(grace, rep.timeoutMs);
    if (this.leftTimer !== null) clearTimeout(this.leftTimer);
    this.leftTimer = setTimeout(() => { this.leftTimer = null; this.check(); }, grace);
    this.leftTimer.unref();
  }
  private leftTimer: NodeJS.Timeout | null = null;

  /**
   * The job is about to be stopped (`why`, e.g. --timeout): ask every rank
   * for its report (`ask`), wait up to `ms` for the running ones, and print
   * the picture of what came, unless one was printed in this stuck spell.
   */
  async atStop(why: string, ask: () => void, ms: number, joined: (rank: number) => boolean): Promise<void> {
    // A job none of whose ranks is in railcomm (a plain program) has nothing to say.
    let any = false;
    for (let r = 0; r < this.size; r++) if (this.state(r) === 'running' && joined(r)) any = true;
    if (this.printed || !any) return;
    const asked = Date.now();
    this.stopping = true;
    this.reports.clear();
    ask();
    while (Date.now() - asked < ms && !this.allReported(joined)) await new Promise((r) => setTimeout(r, 20));
    const lines = hangPicture(this.size, this.reports, this.state, why, joined);
    if (lines !== undefined) { this.printed = true; this.print(lines); }
  }
  private stopping = false;

  private allReported(joined: (rank: number) => boolean): boolean {
    for (let r = 0; r < this.size; r++) if (this.state(r) === 'running' && joined(r) && !this.reports.has(r)) return false;
    return true;
  }

  /** Look again now. */
  check(): void {
    if (this.stopping) return;
    if (this.printed) return;
    const lines = hangPicture(this.size, this.reports, this.state);
    if (lines === undefined) return;
    this.printed = true;
    this.print(lines);
  }
}
