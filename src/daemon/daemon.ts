import cron, { type ScheduledTask } from 'node-cron';
import type { Clock } from '../clock.ts';
import { AuthError, coerceError, safeError, safeErrorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { AUTH_BACKOFF, backoffDelay, FAILURE_BACKOFF, type BackoffPolicy } from '../sync/backoff.ts';
import type { SyncEngine } from '../sync/engine.ts';
import type { PassSummary } from '../sync/events.ts';
import { describePlan } from './describePlan.ts';

/**
 * The sync loop of one engine. node-cron ticks every 15 s; each tick runs one pass unless one is running or the
 * daemon is backing off. Most ticks request nothing: the planner decides when a list is due.
 *
 * Back-off (src/sync/backoff.ts): after a pass that ended on server trouble or failed, the next waits 1 min, doubling
 * to 30 min; after a rejected token — in the pass, or in the work after it (a reply POST the API answered 401/403) —
 * 15 min doubling to 2 h (one request per try). One count of failures in a row serves both; a tick that ends well
 * resets it. start() and stop() are idempotent; stop() lets the running
 * pass finish. To cut a pass short, abort the signal the engine was built with and hand the same one here: the
 * daemon then stops too. (`Replica` does both, for a term of leadership.)
 */

export interface DaemonOptions {
  engine: SyncEngine;
  clock: Clock;
  logger: Logger;
  /** Cron expression of the tick. @default every 15 seconds */
  schedule?: string;
  /** Extra work each tick, after the pass (the reply outbox); it should give up when `signal` aborts. */
  afterPass?: (signal: AbortSignal) => Promise<void>;
  /** Aborting it stops the daemon: no new pass starts, and a failure it caused is not reported as one. */
  signal?: AbortSignal;
}

export type DaemonHealth = { state: 'starting' | 'ok' | 'failing' | 'auth_failed' | 'stopped'; reason: string | null; lastPass: PassSummary | null };

export class Daemon {
  readonly #o: DaemonOptions;
  #task: ScheduledTask | undefined;
  #running: Promise<void> | null = null;
  #stopping: Promise<void> | null = null;
  #failures = 0;
  #notBefore = 0;
  #health: DaemonHealth = { state: 'starting', reason: null, lastPass: null };
  readonly #signal: AbortSignal;

  constructor(options: DaemonOptions) {
    this.#o = options;
    this.#signal = options.signal ?? new AbortController().signal;
  }

  get health(): DaemonHealth {
    return this.#health;
  }

  async start(): Promise<void> {
    if (this.#task || this.#stopping || this.#signal.aborted) return;
    this.#task = cron.schedule(this.#o.schedule ?? '*/15 * * * * *', () => this.tick(), { noOverlap: true, name: 'ticket-mirror-sync' });
    this.#signal.addEventListener('abort', () => void this.stop(), { once: true });
    try {
      const plan = await this.#o.engine.plan();
      const { backfill } = await this.#o.engine.workCounts();
      this.#o.logger.info({ plan: plan.daily }, describePlan(plan, { backfill, reserve: this.#o.engine.limits.reserve }));
    } catch (error) {
      // The first tick meets the same trouble and backs off; the plan is only shown.
      this.#o.logger.warn({ err: safeErrorMessage(error) }, 'could not compute the plan');
    }
    void this.tick();
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
      const summary = await this.#o.engine.pass();
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

  /** Stops ticking and waits for the running pass. Idempotent. */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      await this.#task?.stop();
      await this.#running;
      this.#health = { ...this.#health, state: 'stopped' };
    })();
    return this.#stopping;
  }
}
