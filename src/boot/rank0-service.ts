// Wire-up for launchers that bring no key-value service of their own
// (mpirun without PMIx, srun, mpiexec, env://): rank 0 hosts railcomm's
// key-value service at MASTER_ADDR:MASTER_PORT and every rank, rank 0
// included, is a client of it. Rank 0 keeps it up until every rank finalized.

import type { KeyValueStore, PeerLostListener } from './kv.js';
import { KvClient } from './kv-client.js';
import { KvServer } from './kv-server.js';
import { RailcommError, ErrorCode } from '../core/errors.js';

export class Rank0Store implements KeyValueStore {
  private readonly client: KvClient;
  private readonly server: KvServer | null;
  private readonly size: number;
  private readonly lingerMs: number;

  private constructor(client: KvClient, server: KvServer | null, size: number, lingerMs: number) {
    this.client = client;
    this.server = server;
    this.size = size;
    this.lingerMs = lingerMs;
    // No launcher of ours hears an abort here: the service itself tells every rank.
    server?.onAbort((rank, message, code) => server.broadcastAbort(rank, code, message));
  }

  /**
   * Rank 0 listens on the master address (all interfaces unless it is a
   * loopback address); the others retry until it is up or timeoutMs pass.
   */
  static async open(master: { host: string; port: number }, jobKey: string, rank: number, size: number, timeoutMs: number): Promise<Rank0Store> {
    let server: KvServer | null = null;
    if (rank === 0) {
      // On MASTER_ADDR itself where it is this host's address (the ranks connect
      // there); every interface only when it is not (a name for a NAT address).
      try {
        server = await KvServer.start({ size, jobKey, host: master.host, port: master.port })
          .catch((e: NodeJS.ErrnoException) => {
            if (e.code !== 'EADDRNOTAVAIL' && (e.cause as NodeJS.ErrnoException | undefined)?.code !== 'EADDRNOTAVAIL') throw e;
            return KvServer.start({ size, jobKey, host: '0.0.0.0', port: master.port });
          });
      } catch (e) {
        throw new RailcommError(ErrorCode.BOOT, `rank 0 cannot host the wire-up service on ${master.host}:${master.port} (MASTER_ADDR:MASTER_PORT): ${(e as Error).message}; choose a free port`, { cause: e });
      }
    }
    try {
      const client = await KvClient.connectRetrying(master, jobKey, rank, timeoutMs);
      return new Rank0Store(client, server, size, timeoutMs);
    } catch (e) {
      void server?.close();
      throw new RailcommError(ErrorCode.BOOT, `rank ${rank}: cannot reach rank 0's wire-up service at ${master.host}:${master.port} within ${timeoutMs} ms (is rank 0 running, and MASTER_ADDR its address? do all ranks share RAILCOMM_JOB_KEY?): ${(e as Error).message}`, { cause: e });
    }
  }

  put(key: string, value: string): Promise<void> { return this.client.put(key, value); }
  fence(): Promise<void> { return this.client.fence(); }
  get(key: string, timeoutMs: number): Promise<string> { return this.client.get(key, timeoutMs); }

  localAddress(): string | undefined { return this.client.localAddress(); }

  abortJob(message: string, code: number): Promise<void> { return this.client.abort(message, code); }
  onJobAbort(cb: (rank: number, code: number, message: string) => void): void { this.client.onJobAbort(cb); }

  /**
   * Ranks that died, as rank 0's service saw them; and rank 0 itself when
   * the service is gone before we finalized (rank 0 serves until every rank did).
   */
  onPeerLost(cb: PeerLostListener): void {
    this.client.onPeerLost(cb);
    if (this.server === null) this.client.onLost((err) => cb(0, `rank 0, the host of the wire-up service, is gone (${err.message})`));
  }

  peekLost(): Array<{ rank: number; why: string }> { return this.client.peekLost(); }
  onPeerFinalized(cb: (rank: number) => void): void { this.client.onPeerFinalized(cb); }

  async finalize(): Promise<void> {
    await this.client.finalize();
    const server = this.server;
    if (server === null) return;
    // Others look peers up lazily, long after rank 0 may be done: serve until
    // every rank finalized or dropped its connection (a rank that never joined
    // is given up on after the linger time).
    const giveUpOnAbsent = Date.now() + this.lingerMs;
    for (;;) {
      let waiting = false;
      for (let r = 0; r < this.size && !waiting; r++) {
        waiting = !server.done(r) && (server.joined(r) || Date.now() < giveUpOnAbsent);
      }
      if (!waiting) break;
      await new Promise((res) => setTimeout(res, 20));
    }
  }

  close(): void {
    this.client.close();
    void this.server?.close();
  }
}
