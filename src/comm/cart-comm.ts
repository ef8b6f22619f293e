// The Cartesian communicator cartCreate returns (cart.ts has the grid
// arithmetic): a Communicator that knows its grid, its coordinates and its
// neighbours along each dimension.

import { Communicator } from './communicator.js';
import type { CartTopology, Shift } from './cart.js';
import type { World } from './world.js';

/**
 * A communicator with a Cartesian grid (cartCreate): its rank sits at
 * `coords`; shift(dim, disp) names the neighbours along a dimension.
 */
export class CartCommunicator extends Communicator {
  readonly dims: readonly number[];
  readonly periods: readonly boolean[];
  readonly coords: readonly number[];
  private readonly topo: CartTopology;

  /** @internal */
  constructor(world: World, group: readonly number[], rank: number, p2pCtx: number, collCtx: number, topo: CartTopology) {
    super(world, group, rank, p2pCtx, collCtx);
    this.topo = topo;
    this.dims = topo.dims;
    this.periods = topo.periods;
    this.coords = Object.freeze(topo.coordsOf(rank));
  }

  /**
   * MPI_Cart_shift: along dimension dim, `dest` is the rank disp steps up
   * and `source` the rank disp steps down (the one that sends to this rank
   * when every rank sends to its dest); null beyond a non-periodic edge.
   */
  shift(dim: number, disp = 1): Shift {
    return this.topo.shift(this.coords, dim, disp);
  }

  /** Rank at coordinates (periodic dimensions wrap; outside a non-periodic one: ERR_RANK). */
  rankOf(coords: readonly number[]): number {
    return this.topo.rankOf(coords);
  }

  /** Coordinates of a rank of this communicator. */
  coordsOf(rank: number): number[] {
    return this.topo.coordsOf(rank);
  }

  /** A twin with the same grid. Collective. */
  override dup(): Promise<CartCommunicator> {
    return super.dup() as Promise<CartCommunicator>;
  }

  /** @internal */
  protected override twin(ctx: number): Communicator {
    return new CartCommunicator(this.world, this.groupOf(), this.rank, ctx, ctx + 1, this.topo);
  }
}
