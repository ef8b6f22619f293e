/** A command line railcomm cannot read: the CLI prints it with the usage and exits 2 (no stack). */
export class UsageError extends Error {}
