// A rank's output lines: prefixed with its rank and written through the
// launcher's gate (whole lines, never interleaved mid-line), or captured per
// rank when the caller asked to collect them. A thread host's lines carry
// their rank's prefix already.

import type { Readable } from 'node:stream';
import { LineCutter, MAX_HELD_LINE, NL, type OutputGate, parseRankPrefix, rankPrefix } from './line-io.js';

/** Captured lines kept per rank stream; a benchmark prints far fewer. */
const MAX_CAPTURED_LINES = 100_000;
/** The thread host's lines already carry `[rank] `; a line it cut at MAX_HELD_LINE must stay one line here. */
const MAX_HELD_HOST_LINE = 2 * MAX_HELD_LINE;

/** Where lines go: the gates when printed, `outputs` when captured (then onLine sees each too). */
export interface OutputSinks {
  /** A spawned job's prefix before the rank (`[label rank]`). */
  label: string | undefined;
  outputs: Array<{ stdout: string[]; stderr: string[] }> | undefined;
  outGate: OutputGate | undefined;
  errGate: OutputGate | undefined;
  onLine: ((rank: number, which: 'stdout' | 'stderr', line: string) => void) | undefined;
}

/** The process whose stream it is: a process rank, or a thread host of `count` ranks from `base`. */
export interface OutputOf {
  threads: boolean;
  base: number;
  count: number;
}

/** Cut `stream` into lines and send them on; drained: the stream ended; flush: hand on a last partial line. */
export function attachOutput(p: OutputOf, stream: Readable | null, which: 'stdout' | 'stderr', to: OutputSinks): { drained: Promise<void>; flush: () => void } {
  const { label, outputs, onLine } = to;
  if (!stream) return { drained: Promise.resolve(), flush: () => undefined };
  const gate = which === 'stdout' ? to.outGate : to.errGate;
  let emit: (lines: Buffer[]) => void;
  if (!p.threads) {
    const prefix = label === undefined ? rankPrefix(p.base) : Buffer.from(`[${label}${p.base}] `);
    const sink = outputs?.[p.base]?.[which];
    emit = (lines) => {
      if (sink) {
        for (const l of lines) {
          const text = l.toString('utf8');
          if (sink.length < MAX_CAPTURED_LINES) sink.push(text);
          onLine?.(p.base, which, text);
        }
        return;
      }
      const parts: Buffer[] = [];
      for (const l of lines) parts.push(prefix, l, NL);
      gate?.write(Buffer.concat(parts), stream);
    };
  } else {
    // The thread host already put `[rank] ` before each line: pass lines on as they are, or sort them by that prefix.
    emit = (lines) => {
      if (outputs) {
        for (const l of lines) {
          const pre = parseRankPrefix(l);
          const own = pre !== undefined && pre.rank >= p.base && pre.rank < p.base + p.count;
          const sink = outputs[own ? pre.rank : p.base]?.[which];
          const text = l.subarray(own ? pre.textStart : 0).toString('utf8');
          if (sink && sink.length < MAX_CAPTURED_LINES) sink.push(text);
          onLine?.(own ? pre.rank : p.base, which, text);
        }
        return;
      }
      const parts: Buffer[] = [];
      for (const l of lines) {
        // A spawned job's thread ranks: [label rank] as its process ranks would read.
        const pre = label === undefined ? undefined : parseRankPrefix(l);
        if (pre !== undefined) parts.push(Buffer.from(`[${label}${pre.rank}] `), l.subarray(pre.textStart), NL);
        else parts.push(l, NL);
      }
      gate?.write(Buffer.concat(parts), stream);
    };
  }
  const cutter = new LineCutter(emit, p.threads ? MAX_HELD_HOST_LINE : MAX_HELD_LINE);
  let flushed = false;
  const flush = (): void => {
    if (flushed) return;
    flushed = true;
    cutter.flush();
  };
  stream.on('data', (chunk: Buffer) => cutter.push(chunk));
  const drained = new Promise<void>((res) => {
    stream.once('end', () => { flush(); res(); });
    stream.once('close', () => res());
    stream.once('error', () => res());
  });
  return { drained, flush };
}
