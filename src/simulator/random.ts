/**
 * A small seeded PRNG (sfc32, seeded through splitmix32). The simulator never calls Math.random: a failing test or
 * benchmark run must be reproducible from its seed alone.
 */

/** Four signed 32-bit words (small integers to V8: four slots, no boxes). */
export type RandomState = readonly [number, number, number, number];

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export class Random {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  constructor(seed: number) {
    // Fold the high bits in so seeds above 2^32 still differ; splitmix32 spreads them over the four state words.
    let state = (Math.trunc(seed) ^ Math.trunc(seed / 2 ** 32)) >>> 0;
    const splitmix = (): number => {
      state = (state + 0x9e3779b9) | 0;
      let z = state;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.#a = splitmix();
    this.#b = splitmix();
    this.#c = splitmix();
    this.#d = splitmix();
    // sfc32's first outputs are still correlated with the seed.
    for (let i = 0; i < 12; i++) this.uint32();
  }

  /** The generator's whole state: a generator restored from it draws the same numbers from here on. */
  state(): RandomState {
    return [this.#a, this.#b, this.#c, this.#d];
  }

  static fromState(state: RandomState): Random {
    const rng = new Random(0);
    [rng.#a, rng.#b, rng.#c, rng.#d] = state;
    return rng;
  }

  /** A uniformly distributed unsigned 32-bit integer. */
  uint32(): number {
    const t = (((this.#a + this.#b) | 0) + this.#d) | 0;
    this.#d = (this.#d + 1) | 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) | 0;
    this.#c = (this.#c << 21) | (this.#c >>> 11);
    this.#c = (this.#c + t) | 0;
    return t >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    return this.uint32() / 4294967296;
  }

  /** An integer in [min, max], both ends included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('cannot pick from an empty list');
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** One value of a `[value, weight]` table, with probability proportional to its weight. */
  weighted<T>(table: readonly (readonly [T, number])[]): T {
    const total = table.reduce((sum, [, weight]) => sum + weight, 0);
    let r = this.next() * total;
    for (const [value, weight] of table) {
      r -= weight;
      if (r < 0) return value;
    }
    return table[table.length - 1]![0];
  }

  /** A copy of `items` in random order (Fisher–Yates). */
  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  }

  /** A string of `length` characters from [0-9A-Za-z]. */
  base62(length: number): string {
    let out = '';
    for (let i = 0; i < length; i++) out += BASE62[this.uint32() % 62];
    return out;
  }
}

/** A 32-bit FNV-1a hash: turns a string (an attachment id) into a seed. */
export function hashSeed(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
