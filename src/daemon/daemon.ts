import type { Clock } from '../clock.ts';
import { AuthError, coerceError, safeError, safeErrorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { AUTH_BACKOFF, backoffDelay, FAILURE_BACKOFF, type BackoffPolicy } from '../sync/backoff.ts';
import type { SyncEngine } from '../sync/engine.ts';
import type { PassSummary } from '../sync/events.ts';
import { CLOCK_SET_BACK_MS, SECOND_MS } from '../time.ts';
import { describePlan } from './describePlan.ts';

/**
 * The sync loop of one engine. It sleeps until the plan says a pass could request something (`Plan.wakeAt`: a list
 * falls due, a slot frees in the window, a half hour of history closes …), never longer than a safety cap, runs one
 * pass and the work after it (the reply outbox), then plans again. While it sleeps it asks the after-pass work, if that
 * can tell (`AfterPass.waiting`, a local query), whether something new waits — a reply row inserted — and wakes early
 * for it; stop() and an aborted signal wake it at once. See `nextWake`.
 *
 * Back-off (src/sync/backoff.ts): after a pass that ended on server trouble or failed, the next waits 1 min, doubling
 * to 30 min; after a rejected token — in the pass, or in the work after it (a reply POST the API answered 401/403) —
 * 15 min doubling to 2 h (one request per try). One count of failures in a row serves both; a tick that ends well
 * resets it. start() and stop() are idempotent; stop() lets the running
 * pass finish. To cut a pass short, abort the signal the engine was built with and hand the same one here: the
 * daemon then stops too. (`Replica` does both, for a term of leadership.)
 */

/** Work after each pass (the reply outbox); it should give up when `signal` aborts. */
export interface AfterPass {
  (signal: AbortSignal): Promise<void>;
  /** How many of its items wait to be done now (a local query, no API request): the sleeping loop wakes when it grows. */
  waiting?: () => Promise<number>;
}

export interface DaemonOptions {
  engine: SyncEngine;
  clock: Clock;
  logger: Logger;
  /** Extra work each tick, after the pass (the reply outbox); it should give up when `signal` aborts. */
  afterPass?: AfterPass;
  /** Aborting it stops the daemon: no new pass starts, and a failure it caused is not reported as one. */
  signal?: AbortSignal;
  /**
   * How the loop waits `ms` (resolving early when `signal` aborts). @default a timer; tests pass one that moves a
   * ManualClock.
   */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** The loop's timing: what bounds a sleep, whatever the plan says. */
export const WAKE = {
  /** Never sleep longer: what the plan cannot foresee (another client of the token, a clock jump) is seen by then. */
  maxSleepMs: 5 * 60 * SECOND_MS,
  /** While sleeping, how often the after-pass work is asked whether something new waits (a local query). */
  probeMs: 5 * SECOND_MS,
  /** When the plan cannot be made (the database is down): try again after this. */
  planFailedMs: 60 * SECOND_MS,
} as const;

/**
 * When the loop runs its next pass, from what it knows after one: the plan's `wakeAt` (the earliest instant a pass
 * could request anything), never before a back-off ends (`notBefore`), never sooner than one slot of the minute
 * allowance after the pass that just ran (`minGapMs`: a plan that wants to request now while the budget refuses must
 * not spin), and never later than `maxSleepMs` from now. Pure.
 */
export function nextWake(w: { now: number; planWakeAt: number | null; notBefore: number; minGapMs: number; maxSleepMs: number }): number {
  const planned = w.planWakeAt ?? w.now + w.maxSleepMs;
  const wake = Math.min(Math.max(planned, w.now + w.minGapMs), w.now + w.maxSleepMs);
  return Math.max(wake, w.notBefore);
}

/** One slot of the minute allowance: the quickest pace at which the budget lets requests go. Pure. */
export function minGapMs(minuteAllowed: number): number {
  return minuteAllowed > 0 ? Math.ceil((60 * SECOND_MS) / minuteAllowed) : WAKE.planFailedMs;
}

const timerSleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });

export type DaemonHealth = { state: 'starting' | 'ok' | 'failing' | 'auth_failed' | 'stopped'; reason: string | null; lastPass: PassSummary | null };

export class Daemon {
  readonly #o: DaemonOptions;
  #loop: Promise<void> | undefined;
  /** Aborted by stop(): wakes the sleeping loop at once. */
  readonly #wake = new AbortController();
  #nextWakeAt: number | null = null;
  #running: Promise<void> | null = null;
  #stopping: Promise<void> | null = null;
  #failures = 0;
  #notBefore = 0;
  /** The clock when the loop last read it (see #readClock). */
  #lastNow = Number.NEGATIVE_INFINITY;
  #health: DaemonHealth = { state: 'starting', reason: null, lastPass: null };
  readonly #signal: AbortSignal;

  constructor(options: DaemonOptions) {
    this.#o = options;
    this.#signal = options.signal ?? new AbortController().signal;
  }

  get health(): DaemonHealth {
    return this.#health;
  }

  /** When the sleeping loop runs its next pass (null before the first, or once stopped). */
  get nextWakeAt(): number | null {
    return this.#nextWakeAt;
  }

  async start(): Promise<void> {
    if (this.#loop || this.#stopping || this.#signal.aborted) return;
    this.#signal.addEventListener('abort', () => void this.stop(), { once: true });
    try {
      const plan = await this.#o.engine.plan();
      const { backfill } = await this.#o.engine.workCounts();
      this.#o.logger.info({ plan: plan.daily }, describePlan(plan, { backfill, reserve: this.#o.engine.limits.reserve }));
    } catch (error) {
      // The first tick meets the same trouble and backs off; the plan is only shown.
      this.#o.logger.warn({ err: safeErrorMessage(error) }, 'could not compute the plan');
    }
    this.#loop = this.#run();
  }

  /** Pass, plan, sleep until the plan's instant (or something new waits, or stop), again. */
  async #run(): Promise<void> {
    const sleep = this.#o.sleep ?? timerSleep;
    const stopped = () => this.#stopping !== null || this.#signal.aborted;
    while (!stopped()) {
      await this.tick();
      if (stopped()) break;
      const now = this.#readClock(this.#lastNow);
      const waitingAfter = await this.#waiting();
      this.#nextWakeAt = nextWake({
        now,
        planWakeAt: await this.#planWakeAt(now),
        notBefore: this.#notBefore,
        minGapMs: minGapMs(this.#o.engine.gate?.snapshot().minuteAllowed ?? 0),
        maxSleepMs: WAKE.maxSleepMs,
      });
      // Sleep in probes: something new waiting for the after-pass work wakes the loop — unless it is backing off.
      while (!stopped()) {
        const before = this.#readClock(this.#lastNow);
        const left = this.#nextWakeAt - before;
        if (left <= 0) break;
        const ms = this.#o.afterPass?.waiting ? Math.min(left, WAKE.probeMs) : left;
        await sleep(ms, this.#wake.signal);
        if (stopped()) continue;
        if (this.#readClock(before + ms) < this.#notBefore) continue;
        if (waitingAfter !== null && ((await this.#waiting()) ?? 0) > waitingAfter) break;
      }
    }
    this.#nextWakeAt = null;
  }

  /**
   * The clock now. Found more than CLOCK_SET_BACK_MS behind `expected` (where it was, or where a sleep should have
   * brought it), it was set back: the instants held here — the next wake, the end of a back-off — move back with it,
   * or the loop would sleep as long as the jump. (The pass then restamps what the mirror recorded: see SyncEngine.)
   */
  #readClock(expected: number): number {
    const now = this.#o.clock.now();
    const back = expected - now;
    if (back > CLOCK_SET_BACK_MS) {
      if (this.#nextWakeAt !== null) this.#nextWakeAt -= back;
      if (this.#notBefore > now) this.#notBefore = Math.max(now, this.#notBefore - back);
      this.#o.logger.warn({ backMs: Math.round(back) }, 'the clock was set back: the loop keeps its pace');
    }
    this.#lastNow = now;
    return now;
  }

  /** The plan's wakeAt now; after a failure to plan, a retry later (the pass itself then reports the trouble). */
  async #planWakeAt(now: number): Promise<number> {
    try {
      return (await this.#o.engine.plan(now)).wakeAt;
    } catch (error) {
      this.#o.logger.warn({ err: safeErrorMessage(error) }, 'could not compute the plan');
      return now + WAKE.planFailedMs;
    }
  }

  /**
   * For a pass: whether the after-pass work (a reply row) waits, asked of its local probe at most every `probeMs` while
   * the pass runs. When it does, the pass leaves its background work (backfill, re-reads) there and the reply goes
   * next: with a large allowance a pass queued a hundred re-reads, and a reply inserted meanwhile waited behind all of
   * them (21 s where the README promises about 5; a helper's probe). The next pass takes the background up again.
   */
  #afterPassWaits(): () => boolean {
    if (!this.#o.afterPass?.waiting) return () => false;
    let waits = false;
    let probing = false;
    let probedAt = Number.NEGATIVE_INFINITY;
    return () => {
      const now = this.#o.clock.now();
      if (!waits && !probing && now - probedAt >= WAKE.probeMs) {
        probing = true;
        probedAt = now;
        void this.#waiting().then((n) => {
          waits = (n ?? 0) > 0;
          probing = false;
        });
      }
      return waits;
    };
  }

  async #waiting(): Promise<number | null> {
    const probe = this.#o.afterPass?.waiting;
    if (!probe) return null;
    try {
      return await probe();
    } catch (error) {
      this.#o.logger.warn({ err: safeErrorMessage(error) }, 'could not check the reply outbox');
      return null;
    }
  }

  /** One tick: a pass unless one is running or the daemon is backing off. Resolves when the pass is done. */
  tick(): Promise<void> {
    if (this.#running || this.#stopping || this.#o.clock.now() < this.#notBefore) return this.#running ?? Promise.resolve();
    this.#running = this.#pass().finally(() => {
      this.#running = null;
    });
    return this.#running;
  }

  async #pass(): Promise<void> {
    const now = this.#o.clock.now();
    // Whether this tick ended in trouble: only a tick without any keeps the count of failures at zero.
    let failed = false;
    try {
      const summary = await this.#o.engine.pass({ yieldBackground: this.#afterPassWaits() });
      if (summary.stoppedBy === 'server_error') {
        this.#backOff(now, FAILURE_BACKOFF, summary.errors[0] ?? 'server error');
        failed = true;
      } else this.#health = { state: 'ok', reason: null, lastPass: summary };
      if (summary.stoppedBy === 'rate_limited') this.#notBefore = this.#o.engine.gate.snapshot().nextSlotAt;
    } catch (error) {
      // Its message becomes /readyz's reason and a log line: a database error's is told safely (see DatabaseError).
      const e = safeError(error);
      if (this.#signal.aborted) {
        this.#o.logger.info({ reason: coerceError(this.#signal.reason).message }, 'sync pass interrupted');
        return;
      }
      if (e instanceof AuthError) {
        // The outbox's POST would be refused too: it waits for the token like the sync.
        this.#authFailed(now, e);
        return;
      }
      this.#backOff(now, FAILURE_BACKOFF, e.message);
      this.#o.logger.error({ err: e.message, stack: e.stack }, 'sync pass failed');
      failed = true;
    }
    try {
      await this.#o.afterPass?.(this.#signal);
    } catch (error) {
      // The outbox's writes carry reply text: a database error is told without its parameters.
      const e = safeError(error);
      if (e instanceof AuthError && !this.#signal.aborted) {
        // A token the API refused a reply for is as refused as one a list was refused for.
        this.#authFailed(now, e);
        return;
      }
      this.#o.logger.error({ err: safeErrorMessage(error) }, 'after-pass work failed');
    }
    if (!failed) this.#failures = 0;
  }

  /** A rejected token, in the pass or after it: 15 min doubling to 2 h (AUTH_BACKOFF), and the health says so. */
  #authFailed(now: number, e: AuthError): void {
    this.#backOff(now, AUTH_BACKOFF, e.message);
    this.#health = { ...this.#health, state: 'auth_failed', reason: e.message };
    this.#o.logger.error({ err: e.message }, 'the API rejected the token; retrying later');
  }

  #backOff(now: number, policy: BackoffPolicy, reason: string): void {
    const wait = backoffDelay(policy, ++this.#failures);
    this.#notBefore = now + wait;
    this.#health = { state: 'failing', reason, lastPass: this.#health.lastPass };
    this.#o.logger.warn({ retryInSeconds: Math.round(wait / 1000), reason }, 'backing off');
  }

  /** Stops the loop (waking it if it sleeps) and waits for the running pass. Idempotent. */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      this.#wake.abort();
      await this.#running;
      await this.#loop;
      this.#health = { ...this.#health, state: 'stopped' };
    })();
    return this.#stopping;
  }
}
