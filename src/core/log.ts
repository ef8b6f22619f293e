// Leveled logging to stderr, chosen by RAILCOMM_LOG (error|warn|info|debug|trace).
// Each line names the rank so that merged job output stays readable.

export const LogLevels = ['error', 'warn', 'info', 'debug', 'trace'] as const;
export type LogLevel = (typeof LogLevels)[number];

export class Logger {
  private threshold: number;
  private prefix: string;

  constructor(level: LogLevel = 'warn', prefix = 'railcomm') {
    this.threshold = LogLevels.indexOf(level);
    this.prefix = prefix;
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

  error(msg: string): void { this.write('error', msg); }
  warn(msg: string): void { this.write('warn', msg); }
  info(msg: string): void { this.write('info', msg); }
  debug(msg: string): void { this.write('debug', msg); }
  trace(msg: string): void { this.write('trace', msg); }

  private write(level: LogLevel, msg: string): void {
    if (LogLevels.indexOf(level) > this.threshold) return;
    process.stderr.write(`[${this.prefix}] ${level}: ${msg}\n`);
  }
}

function levelFromEnv(): LogLevel {
  const v = (process.env['RAILCOMM_LOG'] ?? 'warn').toLowerCase();
  return (LogLevels as readonly string[]).includes(v) ? (v as LogLevel) : 'warn';
}

/** The process-wide logger; the context renames it once the rank is known. */
export const log = new Logger(levelFromEnv());
