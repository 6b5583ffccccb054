import type { EventEmitter } from 'node:events';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { PassStop } from '../sync/events.ts';
import { VERSION } from '../version.ts';
import type { FleetStatus, ShownState } from './fleetStatus.ts';
import type { FleetPassReport, FleetWorkerEventMap } from './workerEvents.ts';

/**
 * The Prometheus series of a fleet worker (`fleet run`'s /metrics), in a registry of its own, named as
 * daemon/metrics.ts names those of `run`, with the prefix `ticket_mirror_fleet_`.
 *
 * Two kinds, as there. Counters and the histogram count what *this worker* did, from its events; gauges describe *the
 * fleet* as read from PostgreSQL (fleetStatus.ts) just before each scrape, the same on every worker (aggregate them
 * with max, not sum).
 *
 * Bounded cardinality: an account has its own `account` label only among the `accountsLimit` oldest accounts (by
 * creation, then name: adding accounts never moves one out; FLEET_METRICS_ACCOUNTS, default 200). Every other account
 * is folded into `account="_other"`: its counters are summed there (so a sum over `account` is always the fleet's),
 * its budget is summed and its lag is the largest; it has no state series (the unlabelled totals count it). At most 9
 * series per labelled account (requests 1, passes 1, errors 4, budget 1, lag 1, state 1), the same for `_other`, plus
 * a fixed set of totals: 200 accounts make about 1,900 series. Series of an account that is removed go at the next
 * scrape.
 */

/** The label of every account beyond the limit. Not a valid account name (they start with a letter). */
export const OTHER = '_other';

/** What ends a pass badly, by kind: the engine's PassStop. */
const ERROR_KINDS: readonly PassStop[] = ['rate_limited', 'server_error', 'auth_failed', 'failed'];

interface AccountCounts {
  requests: number;
  passes: number;
  errors: Record<PassStop, number>;
}

export interface FleetMetricsOptions {
  /** Accounts with a label of their own (FLEET_METRICS_ACCOUNTS). @default 200 */
  accountsLimit?: number;
  /** Collect Node.js's process series (off in tests that build many). @default true */
  processMetrics?: boolean;
}

export class FleetMetrics {
  readonly registry = new Registry();
  readonly accountsLimit: number;
  /** What this worker did per account, since it started; folded into series at each update. */
  readonly #counts = new Map<string, AccountCounts>();
  /** What it did for accounts since removed: always under `_other`, so that its counters never go down. */
  readonly #removed: AccountCounts = emptyCounts();

  readonly #requests = this.#counter('ticket_mirror_fleet_account_api_requests_total', 'Requests this worker sent for the account, whatever the answer.', ['account']);
  readonly #passes = this.#counter('ticket_mirror_fleet_account_passes_total', 'Passes of the account this worker finished, whatever their outcome.', ['account']);
  readonly #errors = this.#counter(
    'ticket_mirror_fleet_account_errors_total',
    'Passes of the account this worker ended early or failed, by kind: rate_limited, server_error, auth_failed, failed.',
    ['account', 'kind'],
  );
  readonly #budget = this.#gauge('ticket_mirror_fleet_account_budget_remaining_requests', "Requests the account may still send in the rolling 24 h, from its own ledger and limits.", ['account']);
  readonly #lag = this.#gauge('ticket_mirror_fleet_account_lag_seconds', 'Time since the account\'s last pass without an error (since it was added when it never had one).', ['account']);
  readonly #state = this.#gauge('ticket_mirror_fleet_account_state', 'Always 1, for the account\'s state as label: ok, failing, auth_failed, paused, new.', ['account', 'state']);

  readonly #allRequests = this.#counter('ticket_mirror_fleet_api_requests_total', 'Requests this worker sent, all accounts, by HTTP status ("none": no answer).', ['status']);
  readonly #allPasses = this.#counter('ticket_mirror_fleet_passes_total', 'Passes this worker finished, all accounts, by result: ok or the error kind.', ['result']);
  readonly #startDelay = new Histogram({
    name: 'ticket_mirror_fleet_job_start_delay_seconds',
    help: 'How late this worker started a job after it fell due, by work: live (a list or reply due, a first pass, a takeover: its bound is 30 s) or background (a backfill\'s next slice, after its slot).',
    labelNames: ['work'] as const,
    buckets: [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300],
    registers: [this.registry],
  });
  readonly #liveWaiting = this.#gauge('ticket_mirror_fleet_live_jobs_waiting', 'Live jobs due and waiting for a slot of any worker, as this worker last counted them (every 2 s): lasting above 0, the fleet needs slots.');
  readonly #promoted = this.#counter('ticket_mirror_fleet_jobs_promoted_total', 'Background jobs this worker raised to live: their account\'s list fell due, or they are a retry.');
  readonly #accounts = this.#gauge('ticket_mirror_fleet_accounts', 'Accounts of the fleet by state: ok, failing, auth_failed, paused, new.', ['state']);
  readonly #requests24h = this.#gauge('ticket_mirror_fleet_requests_24h', 'Requests of all accounts in the last 24 h, from their ledgers.');
  readonly #budgetLeft = this.#gauge('ticket_mirror_fleet_budget_remaining_requests', 'Requests left in the rolling 24 h, summed over the accounts not paused.');
  readonly #maxLag = this.#gauge('ticket_mirror_fleet_lag_max_seconds', 'The largest lag of an account not paused (see ticket_mirror_fleet_account_lag_seconds).');
  readonly #overdue = this.#gauge('ticket_mirror_fleet_overdue_accounts', 'Accounts whose next pass is more than 30 s past due and not started.');
  readonly #backfill = this.#gauge('ticket_mirror_fleet_backfill_remaining', 'Tickets of all accounts whose detail has never been fetched.');
  readonly #jobs = this.#gauge('ticket_mirror_fleet_jobs', "pg-boss's jobs per queue and state: queued, due (queued or retry, start reached), retry, active.", ['queue', 'state']);
  readonly #oldestDue = this.#gauge('ticket_mirror_fleet_oldest_due_job_seconds', 'How long the oldest due job of the queue has waited to start; 0 when none.', ['queue']);
  readonly #folded = this.#gauge('ticket_mirror_fleet_metrics_folded_accounts', 'Accounts beyond FLEET_METRICS_ACCOUNTS, counted under account="_other".');

  constructor(o: FleetMetricsOptions = {}) {
    this.accountsLimit = o.accountsLimit ?? 200;
    if (!Number.isInteger(this.accountsLimit) || this.accountsLimit < 0) throw new RangeError(`accountsLimit must be a whole number >= 0, got ${this.accountsLimit}`);
    if (o.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
    new Gauge({
      name: 'ticket_mirror_build_info',
      help: 'Always 1; the labels say what runs: the ticket-mirror version, the Node.js version, the database backend.',
      labelNames: ['version', 'node_version', 'backend'] as const,
      registers: [this.registry],
    }).set({ version: VERSION, node_version: process.versions.node, backend: 'postgres' }, 1);
  }

  /** Counts what a worker does (its events, see workerEvents.ts). */
  observe(events: EventEmitter<FleetWorkerEventMap>): void {
    events.on('request:sent', ({ account, entry }) => {
      this.#of(account).requests++;
      this.#allRequests.inc({ status: entry.status === null ? 'none' : String(entry.status) });
    });
    events.on('pass:finished', (report) => {
      const counts = this.#of(report.account);
      counts.passes++;
      const kind = errorKind(report);
      if (kind) counts.errors[kind]++;
      this.#allPasses.inc({ result: kind ?? 'ok' });
    });
    events.on('job:started', ({ lateMs, live }) => this.#startDelay.observe({ work: live ? 'live' : 'background' }, Math.max(0, lateMs) / 1000));
    events.on('jobs:live', ({ promoted, waiting }) => {
      this.#liveWaiting.set(waiting);
      if (promoted > 0) this.#promoted.inc(promoted);
    });
  }

  /** Sets every series from the fleet's state; the account series follow the labelled set it implies. */
  update(status: FleetStatus): void {
    const labelled = labelledAccounts(status, this.accountsLimit);
    const byName = new Map(status.accounts.map((a) => [a.name, a]));
    for (const metric of [this.#requests, this.#passes, this.#errors, this.#budget, this.#lag, this.#state]) metric.reset();
    const other: AccountCounts = emptyCounts();
    addCounts(other, this.#removed);
    let otherBudget = 0;
    let otherLag = 0;
    let folded = 0;
    for (const a of status.accounts) {
      if (labelled.has(a.name)) {
        if (a.budget) this.#budget.set({ account: a.name }, a.budget.dailyLeft);
        this.#lag.set({ account: a.name }, a.lagSeconds);
        this.#state.set({ account: a.name, state: a.state }, 1);
      } else {
        folded++;
        otherBudget += a.budget?.dailyLeft ?? 0;
        otherLag = Math.max(otherLag, a.lagSeconds);
      }
    }
    for (const [account, c] of this.#counts) {
      if (labelled.has(account)) this.#setCounts(account, c);
      else addCounts(other, c);
      // An account no longer in the fleet: its counts stay in `_other` (sums stay the fleet's), its entry goes.
      if (!byName.has(account)) {
        addCounts(this.#removed, c);
        this.#counts.delete(account);
      }
    }
    if (folded > 0 || other.requests > 0 || other.passes > 0) {
      this.#setCounts(OTHER, other);
      this.#budget.set({ account: OTHER }, otherBudget);
      this.#lag.set({ account: OTHER }, otherLag);
    }
    this.#folded.set(folded);
    this.#setTotals(status);
  }

  #setTotals(status: FleetStatus): void {
    const t = status.totals;
    for (const [state, n] of Object.entries(t.states) as Array<[ShownState, number]>) this.#accounts.set({ state }, n);
    this.#requests24h.set(t.requests24h);
    this.#budgetLeft.set(t.budgetLeft24h);
    this.#maxLag.set(t.maxLagSeconds);
    this.#overdue.set(t.overdue);
    this.#backfill.set(Math.max(0, t.total - t.fetched));
    this.#jobs.reset();
    this.#oldestDue.reset();
    for (const q of status.jobs.queues ?? []) {
      for (const state of ['queued', 'due', 'retry', 'active'] as const) this.#jobs.set({ queue: q.name, state }, q[state]);
      this.#oldestDue.set({ queue: q.name }, q.oldestDueWaitSeconds ?? 0);
    }
  }

  #setCounts(account: string, c: AccountCounts): void {
    this.#requests.inc({ account }, c.requests);
    this.#passes.inc({ account }, c.passes);
    for (const kind of ERROR_KINDS) this.#errors.inc({ account, kind }, c.errors[kind]);
  }

  #of(account: string): AccountCounts {
    let c = this.#counts.get(account);
    if (!c) this.#counts.set(account, (c = emptyCounts()));
    return c;
  }

  #counter<L extends string>(name: string, help: string, labelNames: L[] = []): Counter<L> {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  #gauge<L extends string>(name: string, help: string, labelNames: L[] = []): Gauge<L> {
    return new Gauge({ name, help, labelNames, registers: [this.registry] });
  }

  /** The exposition text of every series. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/**
 * The accounts with a label of their own: the `limit` oldest (created first, then by name), so that adding accounts
 * never takes one's series away; only removing one lets the next in.
 */
export function labelledAccounts(status: Pick<FleetStatus, 'accounts'>, limit: number): Set<string> {
  return new Set(
    status.accounts
      .map((a) => ({ name: a.name, created: Date.parse(a.createdAt) }))
      .sort((a, b) => a.created - b.created || (a.name < b.name ? -1 : 1))
      .slice(0, limit)
      .map((a) => a.name),
  );
}

/** What kind of error ended a pass, or null when it ran (a 429 included: that is `rate_limited`, counted as an error). */
export function errorKind(report: Pick<FleetPassReport, 'summary' | 'outcome'>): PassStop | null {
  if (report.summary?.stoppedBy) return report.summary.stoppedBy;
  if (report.outcome.state === 'auth_failed') return 'auth_failed';
  if (report.summary === null || report.outcome.state === 'failing') return 'failed';
  return null;
}

function emptyCounts(): AccountCounts {
  return { requests: 0, passes: 0, errors: { rate_limited: 0, server_error: 0, auth_failed: 0, failed: 0 } };
}

function addCounts(into: AccountCounts, c: AccountCounts): void {
  into.requests += c.requests;
  into.passes += c.passes;
  for (const kind of ERROR_KINDS) into.errors[kind] += c.errors[kind];
}
