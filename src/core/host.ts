// Which "host" this process is on, as launchers see hosts: same kernel boot,
// host name, network namespace (namespaces stand for hosts in tests and
// containers) and pid namespace. Peers with the same key may map each other's
// /dev/shm segments, and judge each other alive by pid (the shm rail's checks
// and its sweep of killed peers' names; cross-memory attach by pid): containers
// that share /dev/shm but not pids are not one host to them.

import { readFileSync, readlinkSync } from 'node:fs';
import os from 'node:os';

let cached: string | null = null;

export function hostKey(): string {
  if (cached === null) {
    let boot = '';
    let net = '';
    let pid = '';
    try { boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(); } catch { /* not Linux */ }
    try { net = readlinkSync('/proc/self/ns/net'); } catch { /* no namespaces */ }
    try { pid = readlinkSync('/proc/self/ns/pid'); } catch { /* no namespaces */ }
    cached = `${os.hostname()}/${boot}/${net}/${pid}`;
  }
  return cached;
}

/**
 * Whether process `pid` of this host (this pid namespace) still exists: only
 * ESRCH says it is gone; EPERM (another user's) and other errors count as
 * alive, since nobody can tell.
 */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
