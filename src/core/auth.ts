// Proof of the job key: HMAC-SHA256 over nonces, compared in constant time.
// Used by every connection (tcp rail, key-value service) before any frame.

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const NONCE_BYTES = 16;

export function nonce(): Buffer {
  return randomBytes(NONCE_BYTES);
}

export function newJobKey(): string {
  return randomBytes(32).toString('hex');
}

/** HMAC-SHA256 keyed by the hex job key over the given parts, in order. */
export function mac(jobKeyHex: string, ...parts: Array<string | Uint8Array>): Buffer {
  const h = createHmac('sha256', Buffer.from(jobKeyHex, 'hex'));
  for (const p of parts) h.update(p);
  return h.digest();
}

export function macEquals(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
