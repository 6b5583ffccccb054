/**
 * Time, injected. Nothing in the core reads `Date.now()` itself: it is handed a Clock, reads it once per decision and
 * passes `now` (epoch milliseconds) down, so a simulated day can run in seconds against the simulator.
 */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that moves only when told to: for tests, the benchmark and the simulator's virtual-time mode. */
export class ManualClock implements Clock {
  #now: number;

  constructor(start: number | string = Date.UTC(2026, 0, 5, 8, 0, 0)) {
    this.#now = typeof start === 'string' ? Date.parse(start) : start;
  }

  now(): number {
    return this.#now;
  }

  /** Moves the clock forward by `ms` (never backward: a negative step is an error). */
  advance(ms: number): number {
    if (ms < 0) throw new RangeError(`ManualClock cannot go back (${ms} ms)`);
    this.#now += ms;
    return this.#now;
  }

  /** Sets the clock to an absolute instant; tests use it to model clock jumps, backward ones included. */
  set(ms: number): void {
    this.#now = ms;
  }
}
