// Docs in sync with the tool (issue 19, point 7): `railcomm info --params`
// lists exactly the parameter registry (src/core/params.ts: PARAMS and the
// variables read outside init(), ENV_SETTINGS); every RAILCOMM_ variable the
// sources read is in the registry; README's Parameters table has a row for
// each, with the same default; and README's code blocks either quote an
// example file exactly or, when they are a complete program, run. Each test
// collects every mismatch and fails once, saying which line to add or fix.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PARAMS, ENV_SETTINGS, describeParams, envName } from '../../dist/core/params.js';
import { ENV } from '../../dist/boot/launch-env.js';
import { PROGRESS_ENV, SYNC_ENV } from '../../dist/bench/progress.js';
import { CLI } from './jobs.mjs';
import ts from 'typescript';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const README = path.join(root, 'README.md');
const readmeText = readFileSync(README, 'utf8');
const readmeLines = readmeText.split('\n');

/** Set by railcomm run (or its thread host, or railcomm bench) for each rank: not settings a user chooses. */
const IDENTITY = new Set([...Object.values(ENV).filter((v) => v !== 'RAILCOMM_JOB_KEY'), 'RAILCOMM_THREAD_BASE', 'RAILCOMM_THREADS', PROGRESS_ENV, SYNC_ENV]);

/** Every documented variable: name -> { def (as the registry has it), doc, kind }. */
function registry() {
  const out = new Map();
  for (const row of describeParams()) out.set(row.name, { def: row.def, doc: row.doc, kind: row.kind });
  for (const e of ENV_SETTINGS) out.set(e.name, { def: e.def, doc: e.doc, kind: 'env' });
  return out;
}

/** How README's table should show a default. */
function shown(name, { def, kind }) {
  if (kind === 'bool') return def === 'true' ? '1' : '0';
  if (def === '') return '(see meaning)';
  if (kind === 'size' && Number(def) >= 1024) {
    const n = Number(def);
    if (n % (1 << 20) === 0) return `${n / (1 << 20)} MiB`;
    if (n % 1024 === 0) return `${n / 1024} KiB`;
  }
  if (kind === 'env' && def.includes(' ')) return `\`${def}\``;
  return def;
}

/** README's default cell as the registry would write it ('' or 0: "decided at run time", said in words). */
function normalise(cell, { kind, def }) {
  const t = cell.replace(/`/g, '').trim();
  const size = /^(\d+) (KiB|MiB|GiB)$/.exec(t);
  if (size) return String(Number(size[1]) * { KiB: 1024, MiB: 1 << 20, GiB: 1 << 30 }[size[2]]);
  if (kind === 'bool') return t === '1' || t === 'on' ? 'true' : t === '0' || t === 'off' ? 'false' : t;
  const num = /^(-?\d+)( \(.*\))?$/.exec(t);
  if (num) return String(Number(num[1]));
  // Words for a default decided at run time (the registry's '' or 0): '(layout)', 'device MTU - 28'.
  if (def === '' || def === '0') return def;
  return t;
}

test('railcomm info --params lists exactly the registry: every parameter and environment setting, same defaults', () => {
  const problems = [];
  const json = spawnSync(process.execPath, [CLI, 'info', '--params', '--json'], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(json.status, 0, json.stderr);
  const info = JSON.parse(json.stdout);
  const text = spawnSync(process.execPath, [CLI, 'info', '--params'], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(text.status, 0, text.stderr);
  const listed = new Map([...info.params.map((p) => [p.name, p.def]), ...info.environment.map((e) => [e.name, e.def])]);
  const reg = registry();
  for (const [name, r] of reg) {
    if (!listed.has(name)) problems.push(`info --params --json lacks ${name} (src/cli/info.ts prints describeParams and describeEnvSettings)`);
    else if (listed.get(name) !== r.def) problems.push(`info --params --json gives ${name} the default '${listed.get(name)}', the registry '${r.def}'`);
    if (!new RegExp(`^  ${name} = `, 'm').test(text.stdout)) problems.push(`info --params (text) lacks a line '  ${name} = ...'`);
  }
  for (const name of listed.keys()) if (!reg.has(name)) problems.push(`info --params lists ${name}, which is not in the registry`);
  assert.equal(Object.keys(PARAMS).length, info.params.length);
  if (problems.length > 0) assert.fail(`${problems.length} to fix:\n${problems.join('\n')}`);
});

test('every RAILCOMM_ variable named in src/ and the install script is in the registry (or set by the launcher for each rank)', () => {
  const reg = registry();
  const seen = new Map();
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(ts|mjs)$/.test(e.name)) {
        readFileSync(p, 'utf8').split('\n').forEach((line, i) => {
          for (const m of line.matchAll(/RAILCOMM_[A-Z0-9_]*[A-Z0-9]/g)) if (!seen.has(m[0])) seen.set(m[0], `${path.relative(root, p)}:${i + 1}`);
        });
      }
    }
  };
  walk(path.join(root, 'src'));
  walk(path.join(root, 'scripts'));
  const problems = [];
  for (const [name, where] of seen) {
    if (reg.has(name) || IDENTITY.has(name)) continue;
    // Dev and CI switches of the repository's own scripts, not of the package.
    if (where.startsWith('scripts/') && !where.startsWith('scripts/build-native.mjs')) continue;
    problems.push(`${name} (${where}) is read or named but not in the registry: add it to PARAMS (read through init()) or ENV_SETTINGS (read from the environment) in src/core/params.ts, or fix the name`);
  }
  if (problems.length > 0) assert.fail(`${problems.length} to fix:\n${problems.join('\n')}`);
});

test("README's Parameters table: a row for every registry entry, with its default, and no row for anything else", () => {
  const reg = registry();
  const rows = new Map();
  readmeLines.forEach((line, i) => {
    const m = /^\| `(RAILCOMM_[A-Z0-9_]+)` \| ([^|]+) \|/.exec(line);
    if (m) rows.set(m[1], { cell: m[2].trim(), line: i + 1 });
  });
  const last = Math.max(0, ...[...rows.values()].map((r) => r.line));
  const problems = [];
  for (const [name, r] of reg) {
    const row = rows.get(name);
    if (row === undefined) {
      problems.push(`README.md: add after line ${last}: | \`${name}\` | ${shown(name, r)} | ${r.doc} |`);
      continue;
    }
    const got = normalise(row.cell, r);
    if (got !== r.def) problems.push(`README.md:${row.line}: ${name}'s default reads '${row.cell}', the registry's is '${r.def}': write | \`${name}\` | ${shown(name, r)} | ...`);
  }
  for (const [name, row] of rows) if (!reg.has(name)) problems.push(`README.md:${row.line}: ${name} is not a parameter railcomm reads: remove the row (or add it to src/core/params.ts)`);
  if (problems.length > 0) assert.fail(`${problems.length} to fix:\n${problems.join('\n')}`);
});

/** README's fenced code blocks: { lang, first (1-based line of the first code line), lines }. */
function codeBlocks() {
  const out = [];
  let cur = null;
  readmeLines.forEach((line, i) => {
    const fence = /^```(\S*)\s*$/.exec(line);
    if (fence && cur === null) cur = { lang: fence[1], first: i + 2, lines: [] };
    else if (/^```\s*$/.test(line) && cur !== null) { out.push(cur); cur = null; } else if (cur !== null) cur.lines.push(line);
  });
  return out;
}

/** Names a block uses without declaring them (TypeScript's 'Cannot find name'), against railcomm's own types. */
function undeclaredNames(dir, code, lang) {
  const file = path.join(dir, `check.${lang === 'ts' ? 'mts' : 'mjs'}`);
  writeFileSync(file, code + '\n');
  const program = ts.createProgram([file], {
    noEmit: true, allowJs: true, checkJs: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022, lib: ['lib.es2022.d.ts'], types: [], skipLibCheck: true,
  });
  const names = new Set();
  for (const d of ts.getPreEmitDiagnostics(program)) {
    if (d.file?.fileName !== file || (d.code !== 2304 && d.code !== 2552)) continue;
    names.add(code.slice(d.start, d.start + d.length));
  }
  return [...names];
}

/** Code lines without the leading comment block (a file's header, a README quote's `// examples/x.js`). */
const body = (lines) => {
  let i = 0;
  while (i < lines.length && (/^\s*\/\//.test(lines[i]) || lines[i].trim() === '')) i++;
  return lines.slice(i).join('\n').trimEnd();
};

test("README's code blocks: a quote of an example file equals it, and every complete program runs", { timeout: 300_000 }, (t) => {
  const problems = [];
  const dir = mkdtempSync(path.join(tmpdir(), 'railcomm-readme-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // A project that imports 'railcomm' as a user's would: through the package's exports.
  mkdirSync(path.join(dir, 'node_modules'));
  symlinkSync(root, path.join(dir, 'node_modules', 'railcomm'), 'dir');
  writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}\n');
  const run = (script, n) => spawnSync(process.execPath, [CLI, 'run', '-n', String(n), '--timeout', '60', script], { cwd: dir, encoding: 'utf8', timeout: 90_000 });
  let checked = 0;
  for (const b of codeBlocks()) {
    if (!['js', 'mjs', 'ts'].includes(b.lang)) continue;
    const quote = /^\/\/ (examples\/[\w.-]+\.m?js)\s*$/.exec(b.lines[0] ?? '');
    const where = `README.md:${b.first}-${b.first + b.lines.length - 1}`;
    if (quote) {
      checked++;
      const file = path.join(root, quote[1]);
      const fileLines = readFileSync(file, 'utf8').split('\n');
      const want = body(fileLines).split('\n');
      const got = body(b.lines).split('\n');
      const at = want.findIndex((l, i) => l !== got[i]);
      if (at >= 0 || got.length !== want.length) {
        const i = at >= 0 ? at : Math.min(got.length, want.length);
        problems.push(`${where} quotes ${quote[1]} but differs from its code at the ${i + 1}th line after the header comments: README '${got[i] ?? '(nothing)'}', file '${want[i] ?? '(nothing)'}': copy ${quote[1]}'s code (below its header comment) into the block, or change the file`);
      }
      const r = run(file, 3);
      if (r.status !== 0) problems.push(`${quote[1]} (quoted at ${where}) fails under railcomm run -n 3 (exit ${r.status}):\n${r.stdout}${r.stderr}`);
      continue;
    }
    const code = b.lines.join('\n');
    // A complete program imports railcomm, starts a world, ends it, and uses no name it does not
    // declare (TypeScript says which); the others are listings of calls.
    const undeclared = /from 'railcomm'/.test(code) && /await init\(/.test(code) && /\.finalize\(\)/.test(code) ? undeclaredNames(dir, code, b.lang) : ['(no init/finalize)'];
    if (undeclared.length > 0) {
      t.diagnostic(`${where} (${b.lang}): a listing, not a complete program (${undeclared.slice(0, 6).join(', ')}); not run`);
      continue;
    }
    checked++;
    const file = path.join(dir, `block-${b.first}.mjs`);
    writeFileSync(file, (b.lang === 'ts' ? ts.transpileModule(code, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText : code) + '\n');
    const r = run(file, 2);
    if (r.status !== 0) problems.push(`${where} is a complete program but fails under railcomm run -n 2 (exit ${r.status}):\n${r.stdout}${r.stderr}`);
    else t.diagnostic(`${where} (${b.lang}): a complete program; ran under railcomm run -n 2`);
  }
  assert.ok(checked > 0, 'README quotes at least one example or holds one program');
  if (problems.length > 0) assert.fail(`${problems.length} to fix:\n${problems.join('\n')}`);
});
