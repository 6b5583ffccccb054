import PQueue from 'p-queue';
import { retryAfterMs } from '../api/answers.ts';
import type { LedgerEntry, RequestGate } from '../api/client.ts';
import { isBackgroundKind, type RequestKind } from '../api/endpoints.ts';
import type { Clock } from '../clock.ts';
import { RateLimitedError, ReplyShareSpentError } from '../errors.ts';
import type { LedgerSample } from '../model/ledgerSample.ts';
import { intOption } from '../options.ts';
import { DAY_MS, MINUTE_MS } from '../time.ts';
import { backoffDelay, RATE_LIMIT_BACKOFF } from './backoff.ts';
import { allowedPerMinute, budgetAt, type BudgetLimits, type BudgetSnapshot } from './budget.ts';

/**
 * Where every request waits for its turn. The p-queue enforces the per-minute limit in real time (strict sliding
 * window) and orders work by priority — replies, then list polls, then details the lists asked for, then background
 * work; the budget refuses a request that would break the rolling-24 h allowance (or the minute allowance as the
 * ledger and the server's headers see it, which also holds across restarts, where the queue's memory does not).
 *
 * The in-memory samples mirror the ledger table: loaded at start, appended on every request, and loaded again when
 * another process wrote to the ledger (SyncEngine looks before each pass).
 */

export const PRIORITY: Record<RequestKind, number> = {
  reply: 40,
  list_open: 30,
  list_self: 30,
  list_unassigned: 30,
  list_resolved: 30,
  lookup: 35,
  detail: 20,
  backfill: 10,
  revalidate: 10,
};

/**
 * The share of the daily allowance replies may use in any rolling 24 h. They go first in the queue, so without a
 * share a flood of rows inserted into reply_outbox (a runaway script) took every slot of the day, and the mirror
 * stopped syncing for 24 h. A third is some 430 replies a day at the default quota — more than one agent writes —
 * and leaves the sync two thirds. Beyond it a reply waits, `pending`, until the oldest reply leaves the window.
 */
export const REPLY_SHARE = 1 / 3;

export interface GateOptions {
  limits: BudgetLimits;
  clock: Clock;
  /** Ledger samples of the last 24 h, oldest first. */
  samples: LedgerSample[];
  /** Enforce the minute limit with real timers too. Off in virtual time, where the budget alone enforces it. @default true */
  realTimeInterval?: boolean;
  /** Requests in flight at once. @default 2 */
  concurrency?: number;
}

export class BudgetGate implements RequestGate {
  readonly #limits: BudgetLimits;
  readonly #clock: Clock;
  readonly #samples: LedgerSample[];
  readonly #queue: PQueue;
  /** Requests admitted whose ledger entry has not arrived yet: they count already. */
  #inFlight: Array<{ at: number; kind: RequestKind }> = [];
  /** The replies among them. */
  #repliesInFlight = 0;
  /** Server-side back-off after a 429: no request before this instant. */
  #blockedUntil = 0;
  /** 429s in a row: each doubles the wait beyond the server's Retry-After (RATE_LIMIT_BACKOFF). */
  #rateLimitedStreak = 0;

  constructor(options: GateOptions) {
    this.#limits = options.limits;
    this.#clock = options.clock;
    this.#samples = options.samples;
    this.#throttledByLedger();
    const perMinute = allowedPerMinute(options.limits);
    this.#queue = new PQueue({
      concurrency: intOption('concurrency', options.concurrency, 2),
      ...(options.realTimeInterval === false ? {} : { intervalCap: perMinute, interval: MINUTE_MS, strict: true }),
    });
  }

  /** The budget now, counting requests in flight. */
  snapshot(now = this.#clock.now()): BudgetSnapshot {
    const inFlight: LedgerSample[] = this.#inFlight.map(({ at }) => ({ at, remaining: null, limit: null }));
    const samples = inFlight.length ? [...this.#samples, ...inFlight].sort((a, b) => a.at - b.at) : this.#samples;
    const snap = budgetAt(this.#limits, samples, now);
    if (this.#blockedUntil > now) return { ...snap, minuteLeft: 0, nextSlotAt: Math.max(snap.nextSlotAt, this.#blockedUntil) };
    return snap;
  }

  /** When each request the budget counts was sent: the ledger's samples and those in flight (see requestUsage). */
  sentAt(): number[] {
    return [...this.#samples, ...this.#inFlight].map((s) => s.at);
  }

  /** Of those, the background requests (backfill, revalidation): the pace of revalidation counts them (see requestUsage). */
  backgroundSentAt(): number[] {
    return [...this.#samples, ...this.#inFlight].filter((s) => isBackgroundKind(s.kind)).map((s) => s.at);
  }

  /** Until when the service's 429 holds every request back, or null when none does now. */
  throttledUntil(now = this.#clock.now()): number | null {
    return this.#blockedUntil > now ? this.#blockedUntil : null;
  }

  /** Requests waiting in the queue. */
  get waiting(): number {
    return this.#queue.size;
  }

  run<T>(kind: RequestKind, send: () => Promise<T>): Promise<T> {
    return this.#queue.add(
      async () => {
        const now = this.#clock.now();
        const budget = this.snapshot(now);
        if (budget.dailyLeft <= 0 || budget.minuteLeft <= 0) {
          throw new RateLimitedError(
            budget.dailyLeft <= 0 ? 'the daily request budget is spent' : 'the per-minute request budget is spent',
            budget.nextSlotAt,
          );
        }
        if (kind === 'reply') this.#checkReplyShare(now, budget.dailyAllowed);
        const entry = { at: now, kind };
        this.#inFlight.push(entry);
        if (kind === 'reply') this.#repliesInFlight++;
        try {
          const result = await send();
          this.#rateLimitedStreak = 0;
          return result;
        } catch (error) {
          if (error instanceof RateLimitedError) {
            // A service that keeps answering 429 is not asked again as soon as it allows: the wait grows.
            const backOff = backoffDelay(RATE_LIMIT_BACKOFF, ++this.#rateLimitedStreak);
            this.#blockedUntil = Math.max(this.#blockedUntil, error.retryAt, this.#clock.now() + backOff);
          }
          throw error;
        } finally {
          const i = this.#inFlight.indexOf(entry);
          if (i >= 0) this.#inFlight.splice(i, 1);
          if (kind === 'reply') this.#repliesInFlight--;
        }
      },
      { priority: PRIORITY[kind] },
    ) as Promise<T>;
  }

  /** Throws ReplyShareSpentError when the replies of the last 24 h (and those in flight) have used REPLY_SHARE. */
  #checkReplyShare(now: number, dailyAllowed: number): void {
    const share = Math.max(1, Math.floor(dailyAllowed * REPLY_SHARE));
    const horizon = now - DAY_MS;
    const replies = this.#samples.filter((s) => s.kind === 'reply' && s.at > horizon);
    if (replies.length + this.#repliesInFlight < share) return;
    // When the oldest reply of the window leaves it (a reply in flight has none to wait for yet: a minute on).
    const freesAt = replies.length > 0 ? replies[0]!.at + DAY_MS + 1 : now + MINUTE_MS;
    throw new ReplyShareSpentError(`replies have used their share of the daily budget (${share} in 24 h, a third of it): the sync keeps the rest`, freesAt);
  }

  /** Appends a ledger entry (the client calls this through its `record` callback) and forgets what left the window. */
  note(entry: LedgerEntry): void {
    const sample = { at: entry.at, remaining: entry.ratelimitRemaining, limit: entry.ratelimitLimit, status: entry.status, kind: entry.kind };
    let i = this.#samples.length;
    while (i > 0 && this.#samples[i - 1]!.at > sample.at) i--;
    this.#samples.splice(i, 0, sample);
    const horizon = this.#clock.now() - DAY_MS;
    let drop = 0;
    while (drop < this.#samples.length && this.#samples[drop]!.at <= horizon) drop++;
    if (drop > 0) this.#samples.splice(0, drop);
  }

  /** When the newest request this gate knows of was sent (the ledger's newest, as loaded and noted); null when none. */
  get newestAt(): number | null {
    return this.#samples.at(-1)?.at ?? null;
  }

  /**
   * The host clock was set back by `aheadMs` and the ledger restamped (db/repos/clockSetBack.ts): the samples are the
   * ledger's again, and a 429's back-off, reckoned on the clock that ran ahead, ends as much earlier.
   */
  clockSetBack(samples: readonly LedgerSample[], aheadMs: number): void {
    this.reload(samples);
    const now = this.#clock.now();
    if (this.#blockedUntil > now) this.#blockedUntil = Math.max(now, this.#blockedUntil - aheadMs);
  }

  /** The ledger's samples again, as loaded: other processes wrote to it (SyncEngine's look before each pass). */
  reload(samples: readonly LedgerSample[]): void {
    // Not splice(0, n, ...samples): a token with a large allowance has more samples than a call takes arguments.
    this.#samples.length = 0;
    for (const sample of samples) this.#samples.push(sample);
    this.#throttledByLedger();
  }

  /**
   * The service's own 429s at the end of the ledger hold this process back too, whoever got them: a `sync` run a
   * minute after another was throttled asked again at once (each process kept the wait in memory only). The
   * Retry-After is not in the ledger, so the wait is what a 429 without one gets, and beyond it the back-off of the
   * 429s in a row.
   */
  #throttledByLedger(): void {
    let throttled = 0;
    while (throttled < this.#samples.length && this.#samples[this.#samples.length - 1 - throttled]!.status === 429) throttled++;
    if (throttled === 0) return;
    const until = this.#samples.at(-1)!.at + Math.max(retryAfterMs({}), backoffDelay(RATE_LIMIT_BACKOFF, throttled));
    // A wait long over (the process was down since) says nothing of now: it neither blocks nor lengthens the back-off.
    if (until <= this.#clock.now()) return;
    this.#rateLimitedStreak = Math.max(this.#rateLimitedStreak, throttled);
    this.#blockedUntil = Math.max(this.#blockedUntil, until);
  }

  /** Waits for the requests already queued. */
  onIdle(): Promise<void> {
    return this.#queue.onIdle();
  }

  clear(): void {
    this.#queue.clear();
  }
}
