import { ApiClient, type LedgerEntry, type LedgerStart, type SettleLedger } from '../api/client.ts';
import { LIST_NAMES, type ListName, type RequestKind } from '../api/endpoints.ts';
import type { Clock } from '../clock.ts';
import type { Db } from '../db/connect.ts';
import { markDeleted, recordDetailFailure, writeDetail } from '../db/repos/details.ts';
import type { LedgerSample } from '../model/ledgerSample.ts';
import { requestUsage } from '../model/plannerHistory.ts';
import { dropRequest, insertRequest, loadSamples, newestRequestId, openRequest, settleRequest, type LedgerGained } from '../db/repos/ledger.ts';
import { restampFuture } from '../db/repos/clockSetBack.ts';
import { collapsePassStates } from '../db/repos/history.ts';
import { markMissingAfterSweep } from '../db/repos/lists.ts';
import { insertRun } from '../db/repos/runs.ts';
import {
  countWork,
  pickBackfill,
  pickDue,
  ListActivity,
  pickRevalidate,
  plannerInputs,
  revalidationMultipliers,
  type RevalidationSample,
} from '../db/repos/work.ts';
import {
  AuthError,
  coerceError,
  InvalidResponseError,
  isWriteDataError,
  NotFoundError,
  RequestRejectedError,
  safeError,
  safeErrorMessage,
  TransientError,
} from '../errors.ts';
import type { Logger } from '../logger.ts';
import { intOption } from '../options.ts';
import { storableText } from '../text.ts';
import { CLOCK_SET_BACK_MS, DAY_MS, isoMicros } from '../time.ts';
import type { BudgetLimits } from './budget.ts';
import { passStopOf, SyncEvents, type PassSummary } from './events.ts';
import { BudgetGate } from './gate.ts';
import { writeListPoll } from './listPoll.ts';
import { mapDetail, Problems, UnstorableError } from './mapping.ts';
import { planPass, type Plan } from './planner.ts';

/**
 * One sync pass: plan, poll the lists the plan names, diff and write each, fetch the details it allows, record the
 * pass. Every decision reads the injected clock once and passes `now` down, so the same engine runs in real time
 * (`run`, `sync`) and in virtual time (the tests and the benchmark).
 *
 * Failure rules: an auth failure ends the pass and is thrown (nothing else can succeed); a 429 or a spent budget ends
 * the pass quietly; a server error that outlived its retries ends the pass (no storm); a list that answers garbage
 * changes nothing; a detail that cannot be stored is reported, backed off, and the pass goes on.
 */

export interface EngineOptions {
  db: Db;
  apiUrl: string;
  apiToken: string;
  clock: Clock;
  limits: BudgetLimits;
  logger: Logger;
  /** Enforce the minute limit with real timers (off in virtual time). @default true */
  realTime?: boolean;
  /** Passed to the API client (virtual-time runs advance their clock instead of sleeping). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  signal?: AbortSignal;
  /** Requests in flight at once. @default 2 */
  concurrency?: number;
  /** Largest API answer read (API_MAX_RESPONSE_BYTES). @default 64 MiB, the client's */
  maxResponseBytes?: number;
  /** Per-request timeout of the API client. @default 30000, the client's */
  timeoutMs?: number;
  /** See ApiClientOptions.tokenWorked. @default false */
  tokenWorked?: boolean;
}

/**
 * A pass that must make room (a fleet worker's slice, a graceful stop): it stops *starting* requests once `until` (an
 * instant on the engine's clock) has passed or `yield` is aborted, lets the ones in flight finish and writes what they
 * brought. Unlike the engine's `signal`, which cuts requests off, nothing fetched is lost. The planner sees the work
 * left at the next pass.
 */
export interface PassOptions {
  /** Start no request at or after this instant (epoch ms, the engine's clock). @default no limit */
  until?: number;
  /** Start no request once this is aborted. @default never */
  yield?: AbortSignal;
  /**
   * Asked before each background request (a backfill, a revalidation): true ends the pass there, as `until` does, while
   * its live work (polls, the details they made due) is done. A fleet worker says true while other accounts' live work
   * waits for a slot. @default never
   */
  yieldBackground?: () => boolean;
}

export class SyncEngine {
  readonly events = new SyncEvents();
  readonly #o: EngineOptions;
  #gate: BudgetGate | undefined;
  #client: ApiClient | undefined;
  #pendingLedger: Promise<void> = Promise.resolve();
  #requestsThisPass = 0;
  /** The tickets this pass changed in the mirror (PassSummary.ticketsChanged is how many). */
  readonly #changedThisPass = new Set<string>();
  /** Consecutive detail fetches that failed with a server or network error. */
  #transientStreak = 0;
  /** Consecutive detail fetches the API answered 403: one is that ticket's, two the token's. */
  #forbiddenStreak = 0;
  /**
   * When each list's answer was last found unusable. Such a poll records nothing (list_polls), so the planner would
   * find the list due at every pass and ask for it again, the same answer each time; it is due a sweep after the
   * failure instead, as after a poll that worked. Kept in memory: after a restart a failed list is asked for once more.
   */
  readonly #listFailedAt = new Map<ListName, number>();
  /** The lists' activity, kept between plans (see ListActivity). */
  readonly #listActivity = new ListActivity();
  /** The newest ledger row the last look covered (see #othersSpent), and the rows this engine wrote after it. */
  #ledgerSeen = 0;
  readonly #ownRows = new Set<number>();

  constructor(options: EngineOptions) {
    intOption('concurrency', options.concurrency, 2);
    this.#o = options;
  }

  /** Loads the ledger of the last 24 h: the budget survives restarts. */
  async init(): Promise<void> {
    if (this.#gate) return;
    const { db, clock, limits } = this.#o;
    this.#ledgerSeen = await newestRequestId(db);
    const samples = await this.#loadSamples(clock.now());
    this.#gate = new BudgetGate({ limits, clock, samples, realTimeInterval: this.#o.realTime !== false, concurrency: this.#o.concurrency });
    this.#client = new ApiClient({
      baseUrl: this.#o.apiUrl,
      token: this.#o.apiToken,
      clock,
      gate: this.#gate,
      record: (start) => this.#record(start),
      tokenWorked: this.#o.tokenWorked ?? false,
      ...(this.#o.maxResponseBytes ? { maxResponseBytes: this.#o.maxResponseBytes } : {}),
      ...(this.#o.timeoutMs ? { timeoutMs: this.#o.timeoutMs } : {}),
      ...(this.#o.sleep ? { sleep: this.#o.sleep } : {}),
      ...(this.#o.signal ? { signal: this.#o.signal } : {}),
    });
  }

  #loadSamples(now: number): Promise<LedgerSample[]> {
    return loadSamples(this.#o.db, now - DAY_MS, this.#o.limits, (missing) =>
      this.#o.logger.warn({ missing }, 'api_requests lacks requests that sync_runs recorded in the last 24 h (a TRUNCATE or DELETE?): counted as sent at the end of their passes'),
    );
  }

  /**
   * Before a pass (read with the plan's inputs): when another process wrote to the ledger since the last look — a
   * `sync`, `check`, `reply` or `attachment` beside `run` (on PostgreSQL, or through the embedded database's SQL socket)
   * — the budget is loaded again. Before, the gate held the ledger as it was at start plus its own requests, and a
   * daemon beside 240 `check`s went on spending a budget it believed three quarters unspent, past the daily limit into
   * a 429 (a helper's probe). Tells whether it loaded the budget again.
   */
  async #othersSpent(now: number, gained: LedgerGained): Promise<boolean> {
    for (const id of this.#ownRows) if (id <= gained.latest) this.#ownRows.delete(id);
    this.#ledgerSeen = Math.max(this.#ledgerSeen, gained.latest);
    if (gained.others) this.gate.reload(await this.#loadSamples(now));
    return gained.others;
  }

  get gate(): BudgetGate {
    if (!this.#gate) throw new Error('SyncEngine.init() first');
    return this.#gate;
  }

  /** The limits this engine keeps to. */
  get limits(): BudgetLimits {
    return this.#o.limits;
  }

  /** Tickets whose detail is due, and never-fetched ones, now. */
  workCounts(now = this.#o.clock.now()): Promise<{ due: number; backfill: number }> {
    return countWork(this.#o.db, now);
  }

  /** Whether the API's JSON has come back for this token (through this engine, or before it: the option). */
  get tokenWorked(): boolean {
    return this.#client?.tokenWorked ?? this.#o.tokenWorked ?? false;
  }

  get client(): ApiClient {
    if (!this.#client) throw new Error('SyncEngine.init() first');
    return this.#client;
  }

  /**
   * The plan a pass would follow now. A pass's plan (`lookAtLedger`) also looks at what the ledger gained since the
   * last pass, in the same statement, and loads the budget again when another process spent some (#othersSpent).
   */
  async plan(now = this.#o.clock.now(), lookAtLedger = false): Promise<Plan> {
    await this.init();
    const { db } = this.#o;
    if (lookAtLedger) await this.#pendingLedger;
    const ledger = lookAtLedger ? { after: this.#ledgerSeen, own: [...this.#ownRows] } : undefined;
    const inputs = await plannerInputs(db, now, this.gate.sentAt(), this.gate.backgroundSentAt(), this.#listActivity, ledger);
    const { lists, work: counts } = inputs;
    let { history } = inputs;
    if (inputs.ledger && (await this.#othersSpent(now, inputs.ledger))) {
      history = { ...history, ...requestUsage(this.gate.sentAt(), now, this.gate.backgroundSentAt()) };
    }
    for (const [list, at] of this.#listFailedAt) {
      if (at > (lists[list].lastPolledAt ?? -Infinity)) lists[list] = { lastPolledAt: at };
    }
    return planPass({
      now,
      budget: this.gate.snapshot(now),
      lists,
      dueCount: counts.due,
      backfillCount: counts.backfill,
      openCount: counts.open,
      oldestDetailAt: counts.oldestDetailAt,
      oldestOpenDetailAt: counts.oldestOpenDetailAt,
      history,
    });
  }

  /** One pass. Throws on a rejected token or an unexpected failure (after recording the pass); a 429, a spent budget or
   * server trouble end it quietly, with the reason in `stoppedBy`. `options.until` and `options.yield` end it early
   * and quietly too, at a request boundary (`yielded` in the summary): see PassOptions. */
  async pass(options: PassOptions = {}): Promise<PassSummary> {
    await this.init();
    const startedAt = this.#o.clock.now();
    await this.#afterClockSetBack(startedAt);
    const plan = await this.plan(startedAt, true);
    this.events.safeEmit('pass:started', { at: startedAt, plan });
    this.#requestsThisPass = 0;
    this.#changedThisPass.clear();
    this.#transientStreak = 0;
    this.#forbiddenStreak = 0;
    const summary: PassSummary = {
      startedAt,
      finishedAt: startedAt,
      requests: 0,
      polls: [],
      ticketsChanged: 0,
      detailsFetched: 0,
      deleted: 0,
      missing: 0,
      errors: [],
      failedLists: [],
      stoppedBy: null,
    };
    // Asked before each request is started, never while one is in flight: what was fetched is written.
    const yieldNow = (background = false) => {
      if (summary.yielded) return true;
      const due =
        (options.until !== undefined && this.#o.clock.now() >= options.until) ||
        options.yield?.aborted === true ||
        (background && options.yieldBackground?.() === true);
      if (due) summary.yielded = true;
      return due;
    };
    try {
      await this.#runPlan(plan, summary, yieldNow);
    } catch (error) {
      // Told safely: a database error's message would list the ticket's content (see DatabaseError).
      const e = safeError(error);
      summary.errors.push(e.message);
      summary.stoppedBy = passStopOf(e);
      summary.stopError = e;
      // A throttled or troubled service ends the pass quietly (the summary says why); anything else is the caller's.
      if (summary.stoppedBy !== 'rate_limited' && summary.stoppedBy !== 'server_error') {
        await this.#collapseStates(summary);
        await this.#finish(summary);
        throw e;
      }
    }
    await this.#collapseStates(summary);
    await this.#finish(summary);
    return summary;
  }

  /**
   * When the newest ledger row lies ahead of the clock, the clock was set back: what the mirror stamped meanwhile is
   * brought back to now, and the budget reloaded (db/repos/clockSetBack.ts). The gate holds the ledger's last 24 h (a
   * fleet worker rebuilds the engine when another process wrote to it), so otherwise this costs no query.
   */
  async #afterClockSetBack(now: number): Promise<void> {
    const { db, logger, limits } = this.#o;
    const aheadMs = (this.gate.newestAt ?? now) - now;
    if (aheadMs <= CLOCK_SET_BACK_MS) return;
    await db.transaction((tx) => restampFuture(tx, now));
    this.gate.clockSetBack(await loadSamples(db, now - DAY_MS, limits), aheadMs);
    logger.warn(
      { aheadMs: Math.round(aheadMs), now: isoMicros(now) },
      'the clock was set back: what the mirror recorded while it ran ahead is restamped to now (README, "Clock skew")',
    );
  }

  async #runPlan(plan: Plan, summary: PassSummary, yieldNow: (background?: boolean) => boolean): Promise<void> {
    const polled = new Set<ListName>();
    let changes = 0;
    const poll = async (list: ListName) => {
      const result = await this.#poll(list, summary);
      if (result === null) return;
      polled.add(list);
      changes += result.changes;
    };
    for (const list of plan.polls) {
      if (yieldNow()) return;
      await poll(list);
    }
    // A probe that found a change: the rest of a sweep, so that the change shows in every list at once.
    const followed = plan.followUp.length > 0 && changes > 0;
    if (followed) {
      for (const list of plan.followUp) {
        if (yieldNow()) return;
        await poll(list);
      }
    }
    if ((plan.sweep || followed) && LIST_NAMES.every((l) => polled.has(l))) {
      const at = isoMicros(this.#o.clock.now());
      summary.missing = await markMissingAfterSweep(this.#o.db, at);
    }
    const now = this.#o.clock.now();
    // Picked after the polls, so the details they just made due are fetched in this very pass.
    const counts = plan.polls.length > 0 ? await countWork(this.#o.db, now) : null;
    const dueLimit = counts ? Math.min(counts.due, plan.due + plan.backfill + plan.revalidate) : plan.due;
    const due = await pickDue(this.#o.db, now, dueLimit);
    const rest = plan.due + plan.backfill + plan.revalidate - due.length;
    const backfill = await pickBackfill(this.#o.db, now, Math.min(plan.backfill, rest));
    const revalidateLimit = Math.min(plan.revalidate, rest - backfill.length);
    const revalidate =
      revalidateLimit > 0
        ? await pickRevalidate(this.#o.db, now, revalidateLimit, plan.revalidateMinAgeMs, await revalidationMultipliers(this.#o.db), plan.revalidateMaxAgeMs)
        : [];
    // What each re-read teaches the order: as its ticket stood when it was picked.
    const samples = new Map(revalidate.map((p) => [p.id, p]));
    const jobs: Array<[string, RequestKind]> = [
      ...due.map((id): [string, RequestKind] => [id, 'detail']),
      ...backfill.map((id): [string, RequestKind] => [id, 'backfill']),
      ...revalidate.map(({ id }): [string, RequestKind] => [id, 'revalidate']),
    ];
    // Workers take jobs in order and stop taking new ones after a failure that ends the pass.
    let stop: Error | null = null;
    let next = 0;
    const worker = async () => {
      while (!stop && next < jobs.length && !yieldNow(jobs[next]![1] !== 'detail')) {
        const [id, kind] = jobs[next++]!;
        try {
          await this.#fetchDetail(id, kind, summary, kind === 'revalidate' ? samples.get(id) : undefined);
        } catch (error) {
          stop ??= coerceError(error);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(jobs.length, this.#o.concurrency ?? 2) }, worker));
    if (stop) throw stop;
  }

  /** Polls one list and writes its diff: its list-visible changes; null when the list could not be used (nothing was changed). */
  async #poll(list: ListName, summary: PassSummary): Promise<{ changes: number } | null> {
    let response;
    try {
      response = await this.client.list(list);
    } catch (error) {
      // An answer that cannot be used, or the API refusing this list alone (a 4xx other than for the token or the rate:
      // a 404 or 410 for a route gone, a 400), fails this list, not the pass: the other lists and the details go on,
      // and it is asked for again at its interval. Until it answers, no sweep is whole, so nothing is marked missing.
      if (error instanceof InvalidResponseError || error instanceof RequestRejectedError || isBodylessNotFound(error)) {
        this.#listFailed(list, error, summary);
        return null;
      }
      throw error;
    }
    const problems = new Problems();
    const tellProblems = () => {
      if (problems.lines.length > 0) this.#o.logger.warn({ list, problems: problems.lines }, 'odd values in a list response');
    };
    const at = isoMicros(response.at);
    let poll;
    try {
      // Read, compared and written a batch at a time; a batch that turns out unusable undoes the others (listPoll.ts).
      poll = await this.#o.db.transaction((tx) => writeListPoll(tx, list, response.body, at, problems));
    } catch (error) {
      tellProblems();
      // A value the database refuses fails this list's write (rolled back whole), not the pass; so does a body that
      // was not JSON after all, or an item without a usable id.
      if (error instanceof InvalidResponseError || error instanceof UnstorableError || isWriteDataError(error)) {
        this.#listFailed(list, safeError(error), summary);
        return null;
      }
      throw error;
    }
    tellProblems();
    summary.polls.push(list);
    // Tickets, not rows: one in three lists and its detail in the same pass is one ticket changed.
    for (const id of poll.writtenIds) this.#changedThisPass.add(id);
    summary.ticketsChanged = this.#changedThisPass.size;
    if (poll.withheld > 0) {
      this.#o.logger.warn(
        { list, members: poll.members, listed: poll.listed, withheld: poll.withheld },
        'list shrank by more than half: nothing leaves it until the next poll confirms',
      );
    }
    this.events.safeEmit('list:polled', { list, at: response.at, items: poll.listed, changes: poll.changes, withheld: poll.withheld });
    return { changes: poll.changes };
  }

  #listFailed(list: ListName, error: Error, summary: PassSummary): void {
    this.#listFailedAt.set(list, this.#o.clock.now());
    summary.errors.push(`${list} list: ${error.message}`);
    summary.failedLists.push(list);
    this.#o.logger.warn({ list, err: error.message }, 'list response unusable; nothing changed');
    this.events.safeEmit('list:failed', { list, error });
  }

  /** Fetches and stores one detail; a re-read's `sample` (from pickRevalidate) is counted in the same transaction. */
  async #fetchDetail(id: string, kind: RequestKind, summary: PassSummary, sample?: RevalidationSample): Promise<void> {
    const requestedAt = isoMicros(this.#o.clock.now());
    const { db } = this.#o;
    try {
      const response = await this.client.detail(id, kind);
      const mapped = mapDetail(response.body, id);
      if (mapped.problems.length > 0) this.#o.logger.warn({ ticket: id, problems: mapped.problems }, 'odd values in a ticket detail');
      // A re-read teaches the revalidation order whether it found a change (db/repos/work.ts), in the detail's statement.
      const result = await db.transaction((tx) =>
        writeDetail(tx, mapped, isoMicros(response.at), requestedAt, sample ? { sample, at: response.at } : undefined),
      );
      if (result.heldElsewhere.length > 0) {
        this.#o.logger.warn(
          { ticket: id, heldElsewhere: result.heldElsewhere.slice(0, 20) },
          "ids another ticket holds: left with it (the mirror's message and attachment ids are global)",
        );
      }
      this.#transientStreak = 0;
      this.#forbiddenStreak = 0;
      summary.detailsFetched++;
      if (result.changed) summary.ticketsChanged = this.#changedThisPass.add(id).size;
      this.events.safeEmit('detail:fetched', { id, changed: result.changed, kind });
    } catch (error) {
      const e = coerceError(error);
      if (e instanceof NotFoundError) {
        const at = isoMicros(this.#o.clock.now());
        if (await markDeleted(db, id, at, requestedAt)) {
          summary.deleted++;
          this.events.safeEmit('detail:deleted', { id });
          return;
        }
        // A list still shows it (the API out of step with itself, or an id its detail route cannot serve): not gone,
        // but failing, backed off until it leaves the lists or its detail answers.
        await recordDetailFailure(db, id, at);
        const told = `the API answered 404 (${e.message}), but a list still shows it: not marked deleted`;
        summary.errors.push(`ticket ${id}: ${told}`);
        this.#o.logger.warn({ ticket: id, err: told }, 'ticket detail not stored; will retry later');
        this.events.safeEmit('detail:failed', { id, error: e });
        return;
      }
      // One ticket whose detail keeps failing must not block the queue behind it: it backs off on its own. Two server
      // errors in a row, though, say the service is in trouble, and end the pass. So does a database that cannot write
      // at all (connection lost, disk full …), unlike one that refused this ticket's data (see isWriteDataError).
      // A 403 for one ticket's detail, when the token is otherwise accepted, is about that ticket (the service may forbid
      // some): it backs off alone, or it would hold every pass behind it with the token's own back-off. Two in a row,
      // on different tickets, are taken as the token's.
      const forbidden = e instanceof AuthError && e.status === 403 && ++this.#forbiddenStreak < 2;
      const transient = e instanceof TransientError;
      if (transient && ++this.#transientStreak >= 2) {
        await recordDetailFailure(db, id, isoMicros(this.#o.clock.now()));
        throw e;
      }
      if (
        forbidden ||
        transient ||
        e instanceof UnstorableError ||
        e instanceof InvalidResponseError ||
        e instanceof RequestRejectedError ||
        isWriteDataError(e)
      ) {
        await recordDetailFailure(db, id, isoMicros(this.#o.clock.now()));
        const told = safeErrorMessage(e);
        summary.errors.push(`ticket ${id}: ${told}`);
        this.#o.logger.warn({ ticket: id, err: told }, forbidden ? 'ticket detail forbidden; this ticket backs off, the others go on' : 'ticket detail not stored; will retry later');
        this.events.safeEmit('detail:failed', { id, error: safeError(e) });
        return;
      }
      throw safeError(e, `ticket ${id}`);
    }
  }

  /**
   * The ledger row of a request is written before it is sent (a crash mid-request still counts it) and settled once its
   * outcome is known; the gate hears of it then, having counted it as in flight meanwhile. Rows are written in order;
   * a failed write is logged, never allowed to break the request's caller (a row that could not be opened is inserted
   * whole when the outcome is known). A request that never left this host (connection refused, host not found) cost
   * the token nothing: its row is dropped, the gate never hears of it, and the log tells of the attempt.
   */
  async #record(start: LedgerStart): Promise<SettleLedger> {
    this.#requestsThisPass++;
    let id: number | undefined;
    await this.#ledgerWrite(async () => {
      id = await openRequest(this.#o.db, start);
      this.#ownRows.add(id);
    });
    return (entry: LedgerEntry) => {
      if (entry.notSent !== undefined) {
        this.#requestsThisPass--;
        this.#o.logger.warn(
          { kind: entry.kind, method: entry.method, path: entry.path, code: entry.notSent },
          'request not sent (the API could not be reached): not counted against the budget',
        );
        return this.#ledgerWrite(async () => {
          if (id !== undefined) await dropRequest(this.#o.db, id);
        });
      }
      this.gate.note(entry);
      this.events.safeEmit('request:sent', entry);
      return this.#ledgerWrite(() => (id === undefined ? insertRequest(this.#o.db, entry) : settleRequest(this.#o.db, id, entry)));
    };
  }

  #ledgerWrite(write: () => Promise<void>): Promise<void> {
    this.#pendingLedger = this.#pendingLedger
      .then(write)
      .catch((error: unknown) => this.#o.logger.error({ err: safeErrorMessage(error) }, 'could not record a request in api_requests'));
    return this.#pendingLedger;
  }

  /**
   * Each list, and each detail, was written on its own: a ticket the pass saw change has a history row for each of those
   * writes. One row per observed state: the pass's rows of a ticket are made one (see collapsePassStates) — also when
   * the pass ended early (a 429 after the polls), or the rows of a moment no poll saw would stay.
   */
  async #collapseStates(summary: PassSummary): Promise<void> {
    if (summary.polls.length === 0) return;
    try {
      await this.#o.db.transaction((tx) => collapsePassStates(tx, isoMicros(summary.startedAt)));
    } catch (error) {
      this.#o.logger.warn({ err: safeErrorMessage(error) }, 'could not make the pass\'s history rows one per ticket');
    }
  }

  async #finish(summary: PassSummary): Promise<void> {
    await this.#pendingLedger;
    summary.requests = this.#requestsThisPass;
    summary.finishedAt = this.#o.clock.now();
    if (summary.requests > 0 || summary.errors.length > 0) {
      await insertRun(this.#o.db, isoMicros(summary.startedAt), isoMicros(summary.finishedAt), {
        requests: summary.requests,
        ticketsChanged: summary.ticketsChanged,
        detailsFetched: summary.detailsFetched,
        // An API's error text may hold a NUL, which PostgreSQL refuses even here.
        error: summary.errors.length > 0 ? storableText(summary.errors.join('; ').slice(0, 4000)) : null,
      });
    }
    const budget = this.gate.snapshot(summary.finishedAt);
    if (budget.dailyLeft < budget.dailyAllowed * 0.1) {
      this.events.safeEmit('budget:low', { dailyLeft: budget.dailyLeft, dailyAllowed: budget.dailyAllowed });
    }
    this.events.safeEmit('pass:finished', summary);
  }
}

/** A 404 without the API's {"error"} body (a gateway's): a TransientError for a detail, a route gone for a list. */
function isBodylessNotFound(error: unknown): error is TransientError {
  return error instanceof TransientError && error.status === 404;
}
