/**
 * Checks of the code-level options (`concurrency`, `maxRows`, `leaseMs` …), as p-queue checks its own: a value that
 * cannot work is refused at construction with a message naming the option, never silently taken (a `concurrency` of 0
 * would start no worker at all and wait forever).
 */

/** `value` if it is an integer ≥ `min`, else `fallback` when it is undefined; anything else throws a TypeError. */
export function intOption(name: string, value: number | undefined, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < min) {
    throw new TypeError(`Expected \`${name}\` to be an integer from ${min} and up, got \`${String(value)}\` (${typeof value})`);
  }
  return value;
}

/** A duration in milliseconds: a finite number ≥ `min` (0 by default). */
export function msOption(name: string, value: number | undefined, fallback: number, min = 0): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) {
    throw new TypeError(`Expected \`${name}\` to be a duration in milliseconds from ${min} and up, got \`${String(value)}\` (${typeof value})`);
  }
  return value;
}
