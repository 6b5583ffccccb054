import type { AccountState } from '../db/repos/accounts.ts';
import { nextWake } from '../daemon/daemon.ts';
import { AuthError } from '../errors.ts';
import { AUTH_BACKOFF, backoffDelay, FAILURE_BACKOFF } from '../sync/backoff.ts';
import type { PassSummary } from '../sync/events.ts';
import { CLOCK_SET_BACK_MS, DAY_MS } from '../time.ts';
import { SealError } from './tokenSeal.ts';

/**
 * What a fleet job's pass of one account comes to, decided as the daemon's loop decides it for `run` (daemon.ts), but
 * kept in the account's row instead of a process's memory, so that whichever worker runs the account next knows: the
 * state, the failures in a row, the back-off's end (`notBefore`) and the next pass's instant. Pure.
 *
 * - a pass that ran (its plan done, cut by the slice, or ended by a 429 or a spent budget): `ok`, failures 0; a 429 or
 *   a spent budget waits for the next free slot;
 * - server trouble that outlived the client's retries, or a pass that failed outright (the database, a bug): `failing`,
 *   1 min doubling to 30 min (FAILURE_BACKOFF);
 * - a token the API refused, in the pass or for a reply, or a sealed token that does not open with FLEET_KEY:
 *   `auth_failed`, 15 min doubling to 2 h (AUTH_BACKOFF) — this account only; the fleet goes on.
 *
 * The next pass: the plan's `wakeAt`, never sooner than one slot of the minute allowance after this one (a plan that
 * wants to request while the budget refuses must not spin), never before the back-off ends, never later than
 * `maxWaitMs` from now.
 */

export type PassResult =
  /** The pass ran; `afterPassError`: the reply outbox after it failed. */
  | { kind: 'passed'; summary: PassSummary; afterPassError?: Error | undefined }
  /** The pass (or what it needs: the token, the database) failed. */
  | { kind: 'failed'; error: Error; summary?: PassSummary | undefined };

export interface OutcomeInput {
  now: number;
  /** Failures in a row before this pass (the row's `failures`). */
  failures: number;
  result: PassResult;
  /** Plan.wakeAt after the pass; null when it could not be planned. */
  planWakeAt: number | null;
  /** The gate's next free slot (for a pass ended by a 429 or a spent budget). */
  nextSlotAt: number;
  /** One slot of the minute allowance, ms. */
  minGapMs: number;
  maxWaitMs: number;
}

export interface Outcome {
  state: AccountState;
  failures: number;
  /** End of the back-off (epoch ms), or null. */
  notBefore: number | null;
  /** Told safely (no database parameters, no token). */
  lastError: string | null;
  nextPassAt: number;
}

/**
 * The end of an account's back-off (its row's `not_before`) as it holds at `now`: null when there is none, when it has
 * passed, or when it lies further ahead than any back-off reaches — a day (a spent rolling window's next slot) and
 * CLOCK_SET_BACK_MS: then a clock that ran ahead stamped it, and it would hold the account for as long as the jump.
 */
export function backOffEnd(notBefore: number | null, now: number): number | null {
  if (notBefore === null || !(notBefore > now) || notBefore > now + DAY_MS + CLOCK_SET_BACK_MS) return null;
  return notBefore;
}

/** When the plan cannot be made (the account's database is down): try again after this. */
const PLAN_FAILED_MS = 60_000;

export function decideOutcome(i: OutcomeInput): Outcome {
  const { now } = i;
  let state: AccountState = 'ok';
  let failures = 0;
  let notBefore: number | null = null;
  let lastError: string | null = null;
  const backOff = (auth: boolean, message: string) => {
    failures = i.failures + 1;
    state = auth ? 'auth_failed' : 'failing';
    notBefore = now + backoffDelay(auth ? AUTH_BACKOFF : FAILURE_BACKOFF, failures);
    lastError = message;
  };
  const r = i.result;
  if (r.kind === 'failed') backOff(r.error instanceof AuthError || r.error instanceof SealError, r.error.message);
  else if (r.afterPassError instanceof AuthError) backOff(true, r.afterPassError.message);
  else if (r.summary.stoppedBy === 'server_error') backOff(false, r.summary.errors[0] ?? 'server error');
  else if (r.summary.stoppedBy === 'rate_limited') notBefore = i.nextSlotAt > now ? i.nextSlotAt : null;
  const nextPassAt = nextWake({
    now,
    planWakeAt: i.planWakeAt ?? now + PLAN_FAILED_MS,
    notBefore: notBefore ?? 0,
    minGapMs: i.minGapMs,
    maxSleepMs: i.maxWaitMs,
  });
  return { state, failures, notBefore, lastError, nextPassAt };
}
