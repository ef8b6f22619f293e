// Progress of a benchmark rank program, for `railcomm bench` to show while the
// job runs: rank 0 writes one line per size started and finished to stderr,
// only when the launcher asked for it (RAILCOMM_BENCH_PROGRESS=1).

/** Lines that start with this carry one JSON progress event. */
export const PROGRESS_PREFIX = 'railcomm-bench-progress ';
export const PROGRESS_ENV = 'RAILCOMM_BENCH_PROGRESS';
/** Set by `railcomm bench --sync` for its ranks: time the synchronous calls. */
export const SYNC_ENV = 'RAILCOMM_BENCH_SYNC';

export interface ProgressEvent {
  phase: 'start' | 'done';
  /** The message size (bytes), or the operation for size-less benchmarks. */
  size: number | string;
  /** 1-based position of this size among `of`. */
  index: number;
  of: number;
  /** The size's headline figure once done (latency: median us; bandwidth: MB/s). */
  value?: number;
  unit?: string;
}

const wanted = process.env[PROGRESS_ENV] === '1';

/** Writes an event when asked for and this is the reporting rank (the write is outside any timed loop). */
export function tellProgress(rank: number, ev: ProgressEvent): void {
  if (wanted && rank === 0) process.stderr.write(PROGRESS_PREFIX + JSON.stringify(ev) + '\n');
}

/** The event a progress line carries, or null for any other line. */
export function parseProgress(line: string): ProgressEvent | null {
  if (!line.startsWith(PROGRESS_PREFIX)) return null;
  try {
    const ev = JSON.parse(line.slice(PROGRESS_PREFIX.length)) as ProgressEvent;
    return ev.phase === 'start' || ev.phase === 'done' ? ev : null;
  } catch {
    return null;
  }
}
