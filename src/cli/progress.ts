// What `railcomm bench` shows on stderr while it measures: on a terminal one
// line that updates in place (the step running and its seconds so far); to a
// file or pipe a line per size finished and per step. Never on stdout.

import type { ProgressEvent } from '../bench/progress.js';
import { sizeLabel } from './plot.js';

interface Sink { write(s: string): unknown; isTTY?: boolean }

const secs = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const what = (size: number | string): string => (typeof size === 'number' ? sizeLabel(size) : size);
const num = (v: number): string => (Math.abs(v) >= 100 ? String(Math.round(v)) : String(Number(v.toPrecision(3))));

export class Progress {
  private label = '';
  private detail = '';
  private t0 = 0;
  private shown = false;
  private timer: ReturnType<typeof setInterval> | null = null;
  private readonly tty: boolean;

  /** sink null: quiet. */
  constructor(private readonly sink: Sink | null, private readonly prefix = 'railcomm bench') {
    this.tty = sink?.isTTY === true;
  }

  /** A step starts (a benchmark job or a baseline program). */
  begin(label: string): void {
    this.label = label;
    this.detail = '';
    this.t0 = performance.now();
    if (this.tty && this.sink) {
      this.draw();
      this.timer ??= setInterval(() => this.draw(), 1000);
      this.timer.unref();
    }
  }

  /** An event from the benchmark's rank 0. */
  event(ev: ProgressEvent): void {
    if (!this.sink) return;
    const step = `${what(ev.size)} (${ev.index}/${ev.of})`;
    if (ev.phase === 'start') {
      this.detail = step;
      if (this.tty) this.draw();
      return;
    }
    const value = ev.value !== undefined ? `: ${num(ev.value)} ${ev.unit ?? ''}`.trimEnd() : '';
    if (this.tty) {
      this.detail = `${what(ev.size)}${value} (${ev.index}/${ev.of})`;
      this.draw();
    } else this.sink.write(`${this.prefix}: ${this.label}: ${what(ev.size)}${value} (${ev.index}/${ev.of}, ${secs(performance.now() - this.t0)})\n`);
  }

  /** The step ended; `result` says how (e.g. 'done', 'failed: ...'). */
  end(result = 'done'): void {
    if (!this.sink) return;
    const line = `${this.prefix}: ${this.label}: ${result} in ${secs(performance.now() - this.t0)}`;
    this.label = '';
    if (this.tty) {
      this.clear();
      // On a terminal only what went wrong stays on the screen.
      if (result !== 'done') this.sink.write(line + '\n');
    } else this.sink.write(line + '\n');
  }

  /** A line of its own (a note, a warning), above the updating line. */
  note(text: string): void {
    if (!this.sink) return;
    if (this.tty) this.clear();
    this.sink.write(`${this.prefix}: ${text}\n`);
    if (this.tty && this.timer) this.draw();
  }

  /** Stop updating and clear the line (call once at the end). */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.tty) this.clear();
  }

  private draw(): void {
    if (!this.sink || !this.label) return;
    const cols = (this.sink as { columns?: number }).columns || 100; // 0 on a pty with no size
    const text = `${this.prefix}: ${this.label}${this.detail ? ': ' + this.detail : ''}, ${secs(performance.now() - this.t0)}`;
    this.sink.write(`\r\x1b[K${text.slice(0, Math.max(20, cols - 1))}`);
    this.shown = true;
  }

  private clear(): void {
    if (this.shown && this.sink) this.sink.write('\r\x1b[K');
    this.shown = false;
  }
}
