// `railcomm info`: the outcome of each context initialisation step on this
// machine (components, devices, rails, capabilities) and, with --params, every
// parameter with its default, current value and meaning.

import { Context } from '../proto/context.js';
import { describeParams, resolveParams } from '../core/params.js';
import { detectLaunch } from '../boot/launch-env.js';

export async function infoCommand(argv: string[]): Promise<number> {
  const showParams = argv.includes('--params');
  const json = argv.includes('--json');
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write('railcomm info [--params] [--json]: components, devices, rails and capabilities on this machine; --params lists every parameter\n');
    return 0;
  }
  const launch = detectLaunch();
  const ctx = await Context.create({ launch, kv: null, probeAll: true });
  const params = resolveParams();
  try {
    if (json) {
      process.stdout.write(JSON.stringify({ launcher: { name: launch.launcher, why: launch.why }, steps: ctx.report, params: showParams ? describeParams(params) : undefined }, null, 2) + '\n');
      return 0;
    }
    const out: string[] = [];
    out.push(`railcomm on node ${process.version}, ${process.platform}/${process.arch}`);
    out.push(`launcher: ${launch.launcher} (${launch.why})`);
    for (const s of ctx.report) {
      out.push('', `${s.step}. ${s.title}`);
      for (const l of s.lines) out.push(`   ${l}`);
    }
    // The counters each rail keeps (zero here: this process moved nothing);
    // `railcomm run --stats` prints them per rank at finalize.
    const rails = ctx.stats()['rails'] as Record<string, Record<string, number>>;
    out.push('', 'rail counters (per rank at finalize with --stats):');
    for (const [name, c] of Object.entries(rails)) out.push(`   ${name}: ${Object.entries(c).map(([k, v]) => `${k}=${v}`).join(' ')}`);
    if (showParams) {
      out.push('', 'parameters (init() options win over RAILCOMM_* variables, which win over defaults):');
      for (const p of describeParams(params)) {
        out.push(`  ${p.name} = ${p.value} (default ${p.def || "''"}, ${p.kind})`, `      ${p.doc}`);
      }
    }
    process.stdout.write(out.join('\n') + '\n');
    return 0;
  } finally {
    await ctx.close();
  }
}
