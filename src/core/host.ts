// Which "host" this process is on, as launchers see hosts: same kernel boot,
// host name and network namespace (namespaces stand for hosts in tests and
// containers). Peers with the same key may map each other's /dev/shm segments.

import { readFileSync, readlinkSync } from 'node:fs';
import os from 'node:os';

let cached: string | null = null;

export function hostKey(): string {
  if (cached === null) {
    let boot = '';
    let net = '';
    try { boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(); } catch { /* not Linux */ }
    try { net = readlinkSync('/proc/self/ns/net'); } catch { /* no namespaces */ }
    cached = `${os.hostname()}/${boot}/${net}`;
  }
  return cached;
}
