// The readable form of a rank's counters (`railcomm run --stats`, RAILCOMM_STATS=1):
// one block per group of counter objects (rails, peers, protocol, ...), built from
// whatever keys the objects have, so counters added later show without a change here.

/** Counter groups with at most this many members get a column each; more get a row each. */
const MAX_COLUMNS = 8;
/** Lines listing the counters that are zero everywhere wrap at this width. */
const WRAP = 100;
/** Counters that are zero everywhere are named up to this many; more are counted. */
const MAX_ZERO_NAMES = 10;

type Cell = number | string | boolean | null;
interface Member { name: string; cells: Map<string, Cell> }

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Nested objects become dotted names (lanes.shm.msgsSent); arrays are shown as JSON. */
function flatten(obj: Record<string, unknown>, prefix: string, into: Map<string, Cell>): void {
  for (const [k, v] of Object.entries(obj)) {
    const name = prefix ? `${prefix}.${k}` : k;
    if (isRecord(v)) flatten(v, name, into);
    else if (Array.isArray(v)) into.set(name, JSON.stringify(v));
    else if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean' || v === null) into.set(name, v);
    else if (typeof v === 'bigint') into.set(name, v.toString());
  }
}

const isZero = (c: Cell | undefined): boolean => c === undefined || c === 0 || c === null || c === false;

/** Integers as they are, fractions to at most 3 decimals. */
function cellText(c: Cell | undefined): string {
  if (c === undefined) return '-';
  if (typeof c === 'number') return Number.isInteger(c) ? String(c) : String(Math.round(c * 1000) / 1000);
  return String(c);
}

/** "all 0: a, b, c" wrapped at WRAP columns. */
function zeroNote(label: string, names: string[], indent: string): string[] {
  const lines: string[] = [];
  let line = `${indent}${label}`;
  for (const [i, n] of names.entries()) {
    const piece = `${i === 0 ? ' ' : ', '}${n}`;
    if (line.length + piece.length > WRAP && i > 0) {
      lines.push(line + ',');
      line = `${indent}  ${n}`;
    } else line += piece;
  }
  lines.push(line);
  return lines;
}

function table(rows: string[][], rightFrom: number): string[] {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => { widths[i] = Math.max(widths[i] ?? 0, c.length); });
  return rows.map((r) => r.map((c, i) => (i < rightFrom ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ').trimEnd());
}

/** One group (an object of counter objects, or of counters): its lines. */
function groupLines(title: string, value: Record<string, unknown>): string[] {
  const members: Member[] = [];
  const loose = new Map<string, Cell>();
  for (const [k, v] of Object.entries(value)) {
    if (isRecord(v)) {
      const cells = new Map<string, Cell>();
      flatten(v, '', cells);
      members.push({ name: k, cells });
    } else flatten({ [k]: v }, '', loose);
  }
  if (loose.size > 0) members.unshift({ name: members.length > 0 ? '(own)' : '', cells: loose });
  if (members.length === 0) return [`${title}: none`];
  // Counters in first-seen order over the members.
  const names: string[] = [];
  const seen = new Set<string>();
  for (const m of members) for (const k of m.cells.keys()) if (!seen.has(k)) { seen.add(k); names.push(k); }
  const shown = names.filter((n) => members.some((m) => !isZero(m.cells.get(n))));
  const zeros = names.filter((n) => !shown.includes(n));
  const quiet = members.length > 1 ? members.filter((m) => [...m.cells.values()].every((c) => isZero(c))) : [];
  const live = members.filter((m) => !quiet.includes(m));
  const out: string[] = [];
  if (shown.length === 0) {
    out.push(`${title}${members.length > 1 ? ` (${members.map((m) => m.name).join(', ')})` : ''}: all ${names.length} counters 0`);
    return out;
  }
  if (live.length <= MAX_COLUMNS) {
    // A column per member, a row per counter.
    const rows = [[title, ...live.map((m) => m.name)], ...shown.map((n) => [`  ${n}`, ...live.map((m) => cellText(m.cells.get(n)))])];
    out.push(...table(rows, 1));
  } else {
    // A row per member, a column per counter.
    const rows = [[title, ...shown], ...live.map((m) => [`  ${m.name}`, ...shown.map((n) => cellText(m.cells.get(n)))])];
    out.push(...table(rows, 1));
  }
  if (quiet.length > 0) out.push(...zeroNote('all counters 0:', quiet.map((m) => m.name), '  '));
  if (zeros.length > MAX_ZERO_NAMES) out.push(`  (${zeros.length} more counters are 0 everywhere; --stats=json shows every counter)`);
  else if (zeros.length > 0) out.push(...zeroNote('0 everywhere:', zeros, '  '));
  return out;
}

/**
 * A rank's counters (Context.stats(): { rank, rails: {name: counters}, peers:
 * {rank: counters}, protocol: counters, ... }) as text tables, newline-terminated.
 * Top-level numbers and strings go in the title line; each object is a group.
 */
export function formatStats(stats: Record<string, unknown>): string {
  const head: string[] = [];
  const groups: string[] = [];
  for (const [k, v] of Object.entries(stats)) {
    if (isRecord(v)) groups.push(...groupLines(k, v));
    else if (Array.isArray(v)) groups.push(`${k}: ${JSON.stringify(v)}`);
    else head.push(`${k} ${cellText(v as Cell)}`);
  }
  return [`railcomm stats${head.length > 0 ? ', ' + head.join(', ') : ''}`, ...groups].join('\n') + '\n';
}
