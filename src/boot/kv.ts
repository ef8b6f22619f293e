// The wire-up interface: ranks publish their rail addresses under keys, wait
// for everyone (fence), and look peers up lazily. Backends: railcomm run's
// service (kv-client), rank 0's service (rank0-service), PMIx (pmix-store).

/** A rank of the job died (the wire-up service saw its connection end before it finalized). */
export type PeerLostListener = (rank: number, why: string) => void;

export interface KeyValueStore {
  put(key: string, value: string): Promise<void>;
  /** Resolves once every rank of the job has called fence() the same number of times. */
  fence(): Promise<void>;
  /** Resolves with the value once some rank has put it; rejects with ERR_TIMEOUT after timeoutMs. */
  get(key: string, timeoutMs: number): Promise<string>;
  /** Tell the launcher this rank finalized cleanly (so its exit is expected). */
  finalize(): Promise<void>;
  /** This rank's address on the connection to the service: it routes to the launcher, so to the job's network. */
  localAddress(): string | undefined;
  close(): void;
  /** Tell `cb` about ranks that died, where the backend can see it (railcomm's services; not PMIx). */
  onPeerLost?(cb: PeerLostListener): void;
  /** The launcher asks for this rank's hang report now (railcomm run's service). */
  onReportAsked?(cb: () => void): void;
  /** Tell `cb` about ranks that finalized (railcomm run's service; not PMIx). */
  onPeerFinalized?(cb: (rank: number) => void): void;
  /**
   * Ranks reported dead that the event loop has not read yet, looked at
   * without reading them (a synchronous call holds the loop; the loop still
   * handles them later, as usual). railcomm's services only.
   */
  peekLost?(): Array<{ rank: number; why: string }>;
  /**
   * comm.abort(code) where rank 0 hosts the service (env://, mpirun or srun
   * without PMIx): the service tells every rank, which exits with `code`.
   * Resolves once the service has the request.
   */
  abortJob?(message: string, code: number): Promise<void>;
  /** `cb` runs when some rank aborted the job through abortJob (then this rank exits). */
  onJobAbort?(cb: (rank: number, code: number, message: string) => void): void;
  /** Hand a hang report (JSON, proto/hang.ts) to the launcher, which gathers the job's (railcomm run's service only). */
  hangReport?(report: string): void;
  /**
   * Have the launcher start `n` ranks of `command` as a new job that connects
   * to `port` (railcomm run's service only): resolves with its exit code
   * once it ended, rejects when it cannot start.
   */
  spawn?(req: { command: string[]; n: number; port: string; cwd: string }): Promise<string>;
}
