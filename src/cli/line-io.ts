// Line handling shared by the launcher (`railcomm run`) and the thread host:
// cut a rank's output stream into whole lines and write them out without
// letting a fast rank grow memory while the destination is slow.

import type { Readable, Writable } from 'node:stream';

/** A rank line longer than this is passed on in pieces rather than held without bound. */
export const MAX_HELD_LINE = 1 << 20;

export const NL = Buffer.from('\n');

/**
 * Pauses rank streams while `out` cannot take more, so a fast rank is slowed
 * down instead of growing this process's memory.
 */
export class OutputGate {
  private readonly waiting = new Set<Readable>();
  private armed = false;
  private broken = false;
  private readonly onError = (): void => {
    // A closed terminal or pipe (EPIPE) must not crash us; output is dropped from then on.
    this.broken = true;
    this.release();
  };

  constructor(private readonly out: Writable) {
    out.on('error', this.onError);
  }

  write(data: Buffer, source: Readable): void {
    if (this.broken || this.out.destroyed) return;
    if (this.out.write(data)) return;
    source.pause();
    this.waiting.add(source);
    if (!this.armed) {
      this.armed = true;
      this.out.once('drain', () => this.release());
    }
  }

  dispose(): void {
    this.out.off('error', this.onError);
    this.release();
  }

  private release(): void {
    this.armed = false;
    for (const s of this.waiting) s.resume();
    this.waiting.clear();
  }
}

/** Cuts one stream into whole lines; a partial line waits for its end so ranks never interleave mid-line. */
export class LineCutter {
  private held: Buffer[] = [];
  private heldBytes = 0;

  constructor(private readonly emit: (lines: Buffer[]) => void, private readonly maxHeld = MAX_HELD_LINE) {}

  push(chunk: Buffer): void {
    const lines: Buffer[] = [];
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl < 0) break;
      const piece = chunk.subarray(start, nl);
      lines.push(this.heldBytes === 0 ? piece : Buffer.concat([...this.held, piece]));
      this.held = [];
      this.heldBytes = 0;
      start = nl + 1;
    }
    if (start < chunk.length) {
      this.held.push(chunk.subarray(start));
      this.heldBytes += chunk.length - start;
      if (this.heldBytes > this.maxHeld) lines.push(this.take());
    }
    if (lines.length > 0) this.emit(lines);
  }

  /** The stream ended: a last line without newline is still a line. */
  flush(): void {
    if (this.heldBytes > 0) this.emit([this.take()]);
  }

  private take(): Buffer {
    const b = Buffer.concat(this.held);
    this.held = [];
    this.heldBytes = 0;
    return b;
  }
}

/** `[rank] ` as the launcher and the thread host put it before every line of a rank. */
export function rankPrefix(rank: number): Buffer {
  return Buffer.from(`[${rank}] `);
}

/**
 * The rank of a line that starts with `[rank] ` and where its text begins, or
 * undefined for a line without that prefix.
 */
export function parseRankPrefix(line: Buffer): { rank: number; textStart: number } | undefined {
  if (line.length < 4 || line[0] !== 0x5b /* [ */) return undefined;
  let rank = 0;
  let i = 1;
  // Ten digits cover every rank a 32-bit size allows.
  for (; i < line.length && i <= 11; i++) {
    const c = line[i]!;
    if (c < 0x30 || c > 0x39) break;
    rank = rank * 10 + (c - 0x30);
  }
  if (i === 1 || line[i] !== 0x5d /* ] */ || line[i + 1] !== 0x20) return undefined;
  return { rank, textStart: i + 2 };
}
