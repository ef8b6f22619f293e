// Stryker's instrumented modules call three helpers that each module declares
// for itself; code a module compiles at run time with new Function (the
// reduction kernels build their loops from the ops' source text) runs in the
// global scope and cannot see them. The same helpers as globals, on the same
// namespace object (loaded with -r by stryker.config.mjs, mutation runs only).
'use strict';
const NS = process.env.STRYKER_NAMESPACE || '__stryker__';
const ns = () => {
  const n = globalThis[NS] || (globalThis[NS] = {});
  if (n.activeMutant === undefined && process.env.__STRYKER_ACTIVE_MUTANT__) n.activeMutant = process.env.__STRYKER_ACTIVE_MUTANT__;
  return n;
};
globalThis.stryNS_9fa48 = ns;
globalThis.stryCov_9fa48 = function cover(...ids) {
  const n = ns();
  const cov = n.mutantCoverage || (n.mutantCoverage = { static: {}, perTest: {} });
  let c = cov.static;
  if (n.currentTestId) c = cov.perTest[n.currentTestId] = cov.perTest[n.currentTestId] || {};
  for (const id of ids) c[id] = (c[id] || 0) + 1;
};
globalThis.stryMutAct_9fa48 = function isActive(id) {
  const n = ns();
  if (n.activeMutant !== id) return false;
  if (n.hitCount !== undefined && ++n.hitCount > n.hitLimit) throw new Error(`Stryker: Hit count limit reached (${n.hitCount})`);
  return true;
};
