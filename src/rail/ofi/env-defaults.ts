// Environment libfabric and the libraries it links read from the process's
// real environment (getenv, some of them as they load). A worker thread's
// process.env is a copy of its own: set there, libfabric never sees it. So
// the loader sets these in a process rank, and the thread host in its main
// thread before it starts thread ranks. A value the user set is kept.

export function setOfiEnvDefaults(env: NodeJS.ProcessEnv = process.env): void {
  // libfabric's psm providers link libinfinipath and libpsm2, whose constructors
  // (run as the binding loads) take over SIGTERM, SIGINT, SIGSEGV... to print a
  // backtrace into a file in the working directory and exit: a rank's own
  // SIGTERM listener then never runs, and railcomm run's polite stop kills it.
  env['IPATH_NO_BACKTRACE'] ??= '1';
  env['HFI_NO_BACKTRACE'] ??= '1';
  // The sockets provider's progress thread spins 10 ms before it blocks; beside
  // Node ranks that already fill the cores it starves them (a passive-target
  // lock/put/unlock took 40-76 ms instead of 4): it blocks at once unless told otherwise.
  env['FI_SOCKETS_PE_WAITTIME'] ??= '0';
}
