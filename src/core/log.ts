// Leveled logging to stderr, chosen by RAILCOMM_LOG (error|warn|info|debug|trace).
// Each line names the rank so that merged job output stays readable.

export const LogLevels = ['error', 'warn', 'info', 'debug', 'trace'] as const;
export type LogLevel = (typeof LogLevels)[number];

/** warnEvery: lines printed per reason before the rest are counted, and how often a count is printed. */
const RATE_FIRST = 5;
const RATE_EVERY_MS = 5000;

/** Where a Logger's lines go: stderr, or (tests) a function that keeps them. */
export type LogSink = (line: string) => void;

const toStderr: LogSink = (line) => { process.stderr.write(line + '\n'); };

export class Logger {
  private threshold: number;
  private prefix: string;
  private readonly sink: LogSink;

  constructor(level: LogLevel = 'warn', prefix = 'railcomm', sink: LogSink = toStderr) {
    this.threshold = LogLevels.indexOf(level);
    this.prefix = prefix;
    this.sink = sink;
  }

  setLevel(level: LogLevel): void {
    this.threshold = LogLevels.indexOf(level);
  }

  setPrefix(prefix: string): void {
    this.prefix = prefix;
  }

  enabled(level: LogLevel): boolean {
    return LogLevels.indexOf(level) <= this.threshold;
  }

  /**
   * A warning that strangers or a flood can repeat without end (garbage
   * datagrams, refused connections): the first few per reason are printed,
   * then one line every few seconds says how many more there were.
   */
  warnEvery(reason: string, msg: string): void {
    if (!this.enabled('warn')) return;
    const now = Date.now();
    let r = this.limited.get(reason);
    if (r === undefined) { r = { shown: 0, held: 0, since: now }; this.limited.set(reason, r); }
    if (r.shown < RATE_FIRST) { r.shown++; this.write('warn', msg); return; }
    r.held++;
    if (now - r.since >= RATE_EVERY_MS) {
      this.write('warn', `${msg} (and ${r.held - 1} more like it in the last ${Math.round((now - r.since) / 1000)} s)`);
      r.held = 0;
      r.since = now;
    }
  }
  private readonly limited = new Map<string, { shown: number; held: number; since: number }>();

  error(msg: string): void { this.write('error', msg); }
  warn(msg: string): void { this.write('warn', msg); }
  info(msg: string): void { this.write('info', msg); }
  debug(msg: string): void { this.write('debug', msg); }
  trace(msg: string): void { this.write('trace', msg); }

  private write(level: LogLevel, msg: string): void {
    if (LogLevels.indexOf(level) > this.threshold) return;
    this.sink(`[${this.prefix}] ${level}: ${msg}`);
  }
}

function levelFromEnv(): LogLevel {
  const v = (process.env['RAILCOMM_LOG'] ?? 'warn').toLowerCase();
  return (LogLevels as readonly string[]).includes(v) ? (v as LogLevel) : 'warn';
}

/** The process-wide logger; the context renames it once the rank is known. */
export const log = new Logger(levelFromEnv());
