// Slurm hostlist expressions: "node[01-04,07],login1" -> node01 node02 node03
// node04 node07 login1 (zero padding kept; several bracket groups allowed).

export function expandHostlist(text: string): string[] {
  const out: string[] = [];
  for (const item of splitTop(text)) out.push(...expandOne(item));
  return out;
}

/** Split on commas that are not inside brackets. */
function splitTop(text: string): string[] {
  const parts: string[] = [];
  let depth = 0, start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '[') depth++;
    else if (c === ']') depth--;
    else if (c === ',' && depth === 0) { parts.push(text.slice(start, i)); start = i + 1; }
  }
  parts.push(text.slice(start));
  return parts.map((p) => p.trim()).filter(Boolean);
}

function expandOne(item: string): string[] {
  const open = item.indexOf('[');
  if (open < 0) return [item];
  const close = item.indexOf(']', open);
  if (close < 0) throw new Error(`hostlist '${item}': '[' without ']'`);
  const prefix = item.slice(0, open);
  const rest = expandOne(item.slice(close + 1));
  const out: string[] = [];
  for (const range of item.slice(open + 1, close).split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(range.trim());
    if (!m) throw new Error(`hostlist '${item}': '${range}' is not a number or a range`);
    const lo = Number(m[1]), hi = m[2] !== undefined ? Number(m[2]) : lo;
    if (hi < lo || hi - lo > 100000) throw new Error(`hostlist '${item}': bad range '${range}'`);
    const width = m[1]!.length;
    for (let n = lo; n <= hi; n++) for (const r of rest) out.push(prefix + String(n).padStart(width, '0') + r);
  }
  return out;
}
