// The active-message registry: handlers by id, as LCP's AM table. Rails look
// handlers up by id on every frame; an id without a handler is a peer error.

import type { AmHandler } from '../rail/api.js';
import { AM_MAX } from './wire.js';
import { RailcommError, ErrorCode } from '../core/errors.js';

export class AmRegistry {
  readonly table: Array<AmHandler | undefined> = new Array<AmHandler | undefined>(AM_MAX).fill(undefined);
  readonly names: string[] = new Array<string>(AM_MAX).fill('');

  register(id: number, name: string, handler: AmHandler): void {
    if (!Number.isInteger(id) || id <= 0 || id >= AM_MAX) {
      throw new RailcommError(ErrorCode.INVALID_ARG, `active message id ${id} is outside 1..${AM_MAX - 1}`);
    }
    if (this.table[id] !== undefined) {
      throw new RailcommError(ErrorCode.INVALID_ARG, `active message id ${id} is already registered as '${this.names[id]}'`);
    }
    this.table[id] = handler;
    this.names[id] = name;
  }
}
