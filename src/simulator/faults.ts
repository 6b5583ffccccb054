/**
 * Scripted failures of the API origin, so a client's error handling can be tested on demand:
 *
 * - `status500`, `status503`: an error answer; the request never reaches the application (a reply is not stored).
 * - `html`: a 200 text/html login page despite `Accept: application/json`, as a broken auth proxy sends.
 * - `status429`: a 429 that does not consume quota, with `retry-after: retryAfterSec`.
 * - `reset`: the socket is destroyed without an answer.
 * - `slow`: waits `delayMs` of real time, then answers normally.
 * - `truncated`: the real answer is computed (a reply is stored), then sent as a 200 JSON cut to half its bytes.
 *
 * All but `status429` count against the quota when the token is valid, like any request that reached the server.
 */

export const FAULT_KINDS = ['status500', 'status503', 'slow', 'truncated', 'html', 'status429', 'reset'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultSpec {
  /** Which requests: a substring of, or a RegExp tested against, the request target (path and query). @default all */
  match?: string | RegExp;
  kind: FaultKind;
  /** How many matching requests get the fault. @default 1 */
  times?: number;
  /** Real-time delay of a `slow` fault. @default 1000 */
  delayMs?: number;
  /** The `retry-after` of a `status429` fault. @default 1 */
  retryAfterSec?: number;
}

/** A fault picked for one request. */
export interface Fault {
  kind: FaultKind;
  delayMs: number;
  retryAfterSec: number;
}

interface Pending {
  spec: FaultSpec;
  left: number;
}

export class FaultInjector {
  #pending: Pending[] = [];

  /** Queues a fault for the next `times` matching requests; faults injected earlier are served first. */
  inject(spec: FaultSpec): void {
    if (!FAULT_KINDS.includes(spec.kind)) throw new RangeError(`unknown fault kind ${JSON.stringify(spec.kind)}`);
    const times = spec.times ?? 1;
    if (!Number.isInteger(times) || times < 1) throw new RangeError(`times must be a whole number ≥ 1 (${times})`);
    this.#pending.push({ spec, left: times });
  }

  clear(): void {
    this.#pending = [];
  }

  /** How many faulty answers are still queued. */
  get pending(): number {
    return this.#pending.reduce((sum, p) => sum + p.left, 0);
  }

  /** The fault for a request to `target`, if one matches; using it counts down its `times`. */
  take(target: string): Fault | undefined {
    const index = this.#pending.findIndex(({ spec }) => matches(spec.match, target));
    if (index === -1) return undefined;
    const p = this.#pending[index]!;
    if (--p.left === 0) this.#pending.splice(index, 1);
    return { kind: p.spec.kind, delayMs: p.spec.delayMs ?? 1000, retryAfterSec: p.spec.retryAfterSec ?? 1 };
  }
}

function matches(match: string | RegExp | undefined, target: string): boolean {
  if (match === undefined) return true;
  // `search` ignores a global RegExp's lastIndex, so the same pattern matches every time.
  return typeof match === 'string' ? target.includes(match) : target.search(match) !== -1;
}
