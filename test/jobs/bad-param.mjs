// init() with a parameter that does not exist, under railcomm run: ERR_INVALID_ARG
// naming it (prints `CODE <code> <message>`), not a failure to reach the launcher.
import { init } from '../../dist/index.js';

try {
  await init({ params: { nope: 1 } });
  console.log('CODE none');
} catch (e) {
  console.log(`CODE ${e.code} ${e.message}`);
}
process.exit(0);
