// require('railcomm') on a Node that cannot load ES modules from require()
// (before 20.19 and 22.12; newer ones take the "module-sync" condition and
// never come here): try anyway (the --experimental-require-module flag may be
// on), else fail with one clear message instead of ERR_REQUIRE_ESM's.
'use strict';

try {
  module.exports = require('./index.js');
} catch (err) {
  if (err === null || typeof err !== 'object' || (err.code !== 'ERR_REQUIRE_ESM' && err.code !== 'ERR_REQUIRE_ASYNC_MODULE')) throw err;
  const e = new Error(`railcomm is an ES module, and require() cannot load it on this Node (${process.version}; Node 20.19, 22.12 and newer can, unless started with --no-experimental-require-module): use import { init } from 'railcomm' (in CommonJS: const { init } = await import('railcomm')), or run such a Node`, { cause: err });
  e.name = 'RailcommError';
  e.code = 'ERR_REQUIRE_ESM';
  throw e;
}
