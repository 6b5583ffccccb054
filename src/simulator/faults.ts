/**
 * Scripted failures of the API origin, so a client's error handling can be tested on demand:
 *
 * - `status500`, `status503`: an error answer; the request never reaches the application (a reply is not stored).
 * - `html`: a 200 text/html login page despite `Accept: application/json`, as a broken auth proxy sends.
 * - `status429`: a 429 that does not consume quota, with `retry-after: retryAfterSec`.
 * - `reset`: the socket is destroyed without an answer.
 * - `slow`: waits `delayMs` of real time, then answers normally.
 * - `truncated`: the real answer is computed (a reply is stored), then sent as a 200 JSON cut to half its bytes.
 * - `answer`: the given `answer` instead of the application's, as something between client and service (a gateway's
 *   `404 {"message":"Not Found"}`, a redirect, an odd status code) would send it; the request never reaches the
 *   application.
 * - `oversized`: a 200 JSON array of `bytes` bytes (padded with spaces), streamed without Content-Length if `chunked`.
 * - `hang`: no answer at all, the connection held open until the client gives up or the simulator closes.
 *
 * `afterApplication` (for `answer`, `reset` and `hang`): the application handles the request first — a reply is
 * stored — and only its answer is lost or replaced, as by a proxy or a network between client and service. That is
 * the case a client must never take for "not posted".
 *
 * All but `status429` count against the quota when the token is valid, like any request that reached the server.
 */

export const FAULT_KINDS = [
  'status500',
  'status503',
  'slow',
  'truncated',
  'html',
  'status429',
  'reset',
  'answer',
  'oversized',
  'hang',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** The faults that can take the answer of a request the application has handled. */
const AFTER_APPLICATION_KINDS: readonly FaultKind[] = ['answer', 'reset', 'hang'];

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
  /** What an `answer` fault sends; required for that kind. */
  answer?: ScriptedAnswer;
  /** Body size of an `oversized` fault. @default 1048576 */
  bytes?: number;
  /** Send the `oversized` body streamed, without a Content-Length. @default false */
  chunked?: boolean;
  /** Let the application handle the request before an `answer`, `reset` or `hang` fault takes its answer. @default false */
  afterApplication?: boolean;
}

/** An answer given verbatim: status, headers (no Content-Length: it is computed) and body. */
export interface ScriptedAnswer {
  status: number;
  /** @default {} */
  headers?: Record<string, string>;
  /** @default '' */
  body?: string;
}

/** A fault picked for one request. */
export interface Fault {
  kind: FaultKind;
  delayMs: number;
  retryAfterSec: number;
  /** Only for `answer` faults. */
  answer?: ScriptedAnswer;
  /** Only for `oversized` faults. */
  oversized?: { bytes: number; chunked: boolean };
  /** Only when set: the application handled the request first. */
  afterApplication?: true;
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
    if (spec.kind === 'answer' && !(spec.answer && Number.isInteger(spec.answer.status) && spec.answer.status >= 100 && spec.answer.status <= 999)) {
      throw new RangeError('an `answer` fault needs an `answer` with a status from 100 to 999');
    }
    if (spec.afterApplication && !AFTER_APPLICATION_KINDS.includes(spec.kind)) {
      throw new RangeError(`afterApplication applies to ${AFTER_APPLICATION_KINDS.join(', ')} faults, not ${spec.kind}`);
    }
    if (spec.bytes !== undefined && !(Number.isInteger(spec.bytes) && spec.bytes >= 2)) {
      throw new RangeError(`bytes must be a whole number ≥ 2 (${spec.bytes})`);
    }
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
    const { kind, delayMs = 1000, retryAfterSec = 1, answer, bytes = 1024 * 1024, chunked = false, afterApplication = false } = p.spec;
    return {
      kind,
      delayMs,
      retryAfterSec,
      ...(kind === 'answer' ? { answer } : {}),
      ...(kind === 'oversized' ? { oversized: { bytes, chunked } } : {}),
      ...(afterApplication ? { afterApplication: true as const } : {}),
    };
  }
}

function matches(match: string | RegExp | undefined, target: string): boolean {
  if (match === undefined) return true;
  // `search` ignores a global RegExp's lastIndex, so the same pattern matches every time.
  return typeof match === 'string' ? target.includes(match) : target.search(match) !== -1;
}
