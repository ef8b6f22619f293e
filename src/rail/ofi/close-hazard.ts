// Whether closing an ofi endpoint can crash inside libfabric once a peer was
// dropped with an operation half done (given up on, a connection gone silent,
// a failure the provider reported): then the rail leaves the endpoint open at
// close (the binding's abandonAtClose), to the process's exit.
//
// libfabric 1.17's tcp provider (under tcp;ofi_rxm) keeps the receive of a
// read response (fi_read: railcomm's rendezvous reads and gets, and ofi_rxm's
// own rendezvous reads of every frame past its eager limit) both as the
// connection's current receive and at the head of its read queue until it is
// whole. Flushing the connection at close with the response half in (its
// peer's bytes stopped coming: the lane went silent) completes it twice, the
// second time zeroed, and ofi_rxm reads that completion's NULL context: a
// segfault in fi_close (found with gdb in multirail runs whose ofi lane was
// dropped, 2-4 in 20; test/rails/ofi-given-up-mid-read.mjs does it every
// time). libfabric 1.18.0 takes the receive off the queue first (commit
// a74ea0fcd, "Suspicion of bug where RX entry is freed twice").

/** Providers whose close crashes there: tcp;ofi_rxm before libfabric 1.18. */
export function closeMayCrash(provider: string, runtime: string): boolean {
  if (!provider.startsWith('tcp;')) return false;
  const [major, minor] = runtime.split('.').map(Number);
  if (major === undefined || minor === undefined || Number.isNaN(major) || Number.isNaN(minor)) return true;
  return major < 1 || (major === 1 && minor < 18);
}
