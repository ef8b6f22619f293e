// Two "hosts" for multi-host tests: network namespaces A and B joined by a
// bridge on 10.77.<tag>.0/24 (test/helpers/netns.sh), made once per test file
// and removed after it. `tag` must differ between files that may run at once.
import { after } from 'node:test';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { notRoot } from './requires.mjs';

const netns = fileURLToPath(new URL('./netns.sh', import.meta.url));

/**
 * { tag, subnet, A, B, why }: why is null once both namespaces are up, else
 * the reason they cannot be made here (for need('netns', why)). With
 * wanted === false nothing is made (why null: the caller skips for its own reason).
 */
export function twoHosts(tag, wanted = true) {
  const subnet = `10.77.${tag}`;
  const hosts = { tag, subnet, A: `rc${tag}a`, B: `rc${tag}b`, why: null };
  if (!wanted) return hosts;
  if (process.platform !== 'linux') hosts.why = 'network namespaces need Linux';
  else if (notRoot()) hosts.why = 'creating network namespaces needs root';
  else {
    spawnSync(netns, ['down', tag]);
    const r = spawnSync(netns, ['up', tag, subnet], { encoding: 'utf8' });
    if (r.status !== 0) {
      spawnSync(netns, ['down', tag]);
      hosts.why = `cannot create network namespaces here: ${(r.stderr || r.error?.message || '').trim()}`;
    } else after(() => spawnSync(netns, ['down', tag]));
  }
  return hosts;
}
