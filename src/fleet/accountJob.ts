import type { EventEmitter } from 'node:events';
import type { LedgerEntry } from '../api/client.ts';
import type { Clock } from '../clock.ts';
import type { Lease } from '../daemon/leader.ts';
import type { FleetDatabase } from '../db/fleet.ts';
import { getAccount, type Account, type PassOutcome } from '../db/repos/accounts.ts';
import { nextReplyDueAt } from '../db/repos/outboxDue.ts';
import { ACCOUNT_NAME_PATTERN } from '../db/fleetSchema.ts';
import { AuthError, safeError, safeErrorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { deliverOutbox, newClaimer } from '../outbox/deliver.ts';
import type { PassSummary } from '../sync/events.ts';
import { isoMicros, SECOND_MS } from '../time.ts';
import type { AccountRuntime, RuntimeCache } from './accountRuntime.ts';
import { LIVE_PRIORITY, type JobQueue, type PassJob } from './jobQueue.ts';
import type { LockSession } from './lockSession.ts';
import { backOffEnd, decideOutcome, type Outcome, type PassResult } from './passOutcome.ts';
import type { FleetTiming } from './timing.ts';
import type { FleetWorkerEventMap, SkipReason } from './workerEvents.ts';

/**
 * One job of the queue: one bounded pass of one account, start to end.
 *
 *   the account's row ─ missing or paused: done, no successor; backing off: a successor at the back-off's end
 *   its lock (`ticket-mirror:sync:<schema>`, the one `run` takes; tried once, on the worker's LockSession) ─ held elsewhere: done, no successor
 *     (its holder queues it; if the holder is gone, the reconciler does)
 *   its runtime (database, engine, token opened) ─ one pass, starting no request after the slice or once the worker
 *     stops ─ the reply outbox, with a claimer the lock's session proves gone ─ the plan's wakeAt
 *   the lock released ─ then, in one transaction: the outcome in the row, the job completed, the successor queued
 *
 * The lock is released before the successor is queued, so that a successor due at once (a graceful stop hands the
 * account back) finds it free. If the lock's connection fails mid-pass, the engine's requests are cut off at once:
 * another worker may take the account as soon as PostgreSQL lets the lock go.
 */

export interface JobContext {
  fleet: FleetDatabase;
  queue: JobQueue;
  /** The worker's session for the accounts' locks. */
  locks: LockSession;
  cache: RuntimeCache;
  clock: Clock;
  logger: Logger;
  timing: FleetTiming;
  workerId: string;
  events: EventEmitter<FleetWorkerEventMap>;
  /** Aborted when the worker stops: passes stop starting requests and their accounts are handed back. */
  stopping: AbortSignal;
  /** Aborted when a stop runs out of patience: requests in flight are cut off. */
  hardStop: AbortSignal;
  /** Accounts woken while their pass ran (a reply inserted, an operator's action): their successor is due soon. */
  woken: Map<string, { manual: boolean }>;
  /** True while other accounts' live work waits for a slot: passes then leave their background work for later. */
  liveWaiting: () => boolean;
}

const ACCOUNT_NAME = new RegExp(ACCOUNT_NAME_PATTERN);

export async function runAccountJob(c: JobContext, job: PassJob): Promise<void> {
  const startedAt = c.clock.now();
  // Live work (a list or reply due, a first pass, a takeover) is late from when it fell due; background work from its slot.
  const liveDue = job.liveAt !== null && job.liveAt <= startedAt;
  const live = liveDue || job.priority >= LIVE_PRIORITY;
  const dueAt = liveDue ? Math.max(job.startAfter, job.liveAt!) : job.startAfter;
  c.events.emit('job:started', { account: job.account, jobId: job.id, lateMs: Math.max(0, startedAt - dueAt), live, retryCount: job.retryCount, manual: job.manual });
  const skip = async (reason: SkipReason, successor?: { delayMs: number }) => {
    await c.queue.finish(job, successor ? { successor } : {});
    c.events.emit('job:skipped', { account: job.account, jobId: job.id, reason });
    c.logger.debug({ account: job.account, reason }, 'fleet job skipped');
  };
  // Hostile data: a job inserted by hand with another shape is let go.
  if (!ACCOUNT_NAME.test(job.account)) return skip('invalid');
  if ((await c.queue.claimChain(job)) === 'redundant') return skip('redundant');
  const account = await getAccount(c.fleet.db, job.account);
  if (!account) return skip('missing');
  if (account.pausedAt !== null) return skip('paused');
  const notBefore = backOffEnd(account.notBefore === null ? null : Date.parse(account.notBefore), startedAt);
  if (!job.manual && notBefore !== null) return skip('backing_off', { delayMs: Math.max(notBefore - startedAt, c.timing.successorGapMs) });

  const lease = await c.locks.tryLock(account.schemaName);
  if (!lease) return skip('busy');

  let pass: PassRun;
  try {
    pass = await runPass(c, account, lease);
  } finally {
    await lease.release();
  }
  await record(c, job, account, pass, startedAt);
}


interface PassRun {
  result: PassResult | null;
  summary: PassSummary | null;
  planWakeAt: number | null;
  /** When the plan's next list falls due, or a reply row: live work, queued ahead of background work. */
  liveAt: number | null;
  nextSlotAt: number;
  minGapMs: number;
  /** Cut off by the lock's loss or a hard stop: not the account's fault. */
  interrupted: boolean;
}

async function runPass(c: JobContext, account: Account, lease: Lease): Promise<PassRun> {
  const run: PassRun = { result: null, summary: null, planWakeAt: null, liveAt: null, nextSlotAt: 0, minGapMs: 60 * SECOND_MS, interrupted: false };
  const logger = c.logger.child({ account: account.name });
  let rt: AccountRuntime | undefined;
  try {
    rt = await c.cache.acquire(account);
  } catch (error) {
    // The token does not open, the database cannot be opened or migrated: the account backs off, the fleet goes on.
    run.result = { kind: 'failed', error: safeError(error) };
    run.interrupted = c.hardStop.aborted;
    return run;
  }
  if (lease.lost.aborted) {
    // The lock went while the runtime was opened (a database migrated, say): no request without it.
    run.interrupted = true;
    c.cache.release(rt);
    return run;
  }
  const runtime = rt;
  const cut = () => runtime.abort.abort(lease.lost.reason);
  lease.lost.addEventListener('abort', cut, { once: true });
  const forward = (entry: LedgerEntry) => c.events.emit('request:sent', { account: account.name, entry });
  const finished = (summary: PassSummary) => (run.summary = summary);
  runtime.engine.events.on('request:sent', forward);
  runtime.engine.events.on('pass:finished', finished);
  try {
    try {
      const summary = await runtime.engine.pass({ until: c.clock.now() + c.timing.sliceMs, yield: c.stopping, yieldBackground: c.liveWaiting });
      run.result = { kind: 'passed', summary };
      if (!lease.lost.aborted && !c.stopping.aborted) run.result.afterPassError = await deliver(c, runtime, lease, logger);
    } catch (error) {
      run.result = { kind: 'failed', error: safeError(error), summary: run.summary ?? undefined };
    }
    run.interrupted = lease.lost.aborted || c.hardStop.aborted;
    try {
      // The plan's instant, or sooner when a reply row falls due (a retry, a check of one a dead worker left sending).
      const replyDue = await nextReplyDueAt(runtime.database.db);
      const plan = await runtime.engine.plan();
      run.planWakeAt = replyDue === null ? plan.wakeAt : Math.min(plan.wakeAt, replyDue);
      run.liveAt = replyDue === null ? plan.nextPollAt : Math.min(plan.nextPollAt, replyDue);
      const budget = runtime.engine.gate.snapshot();
      run.nextSlotAt = budget.nextSlotAt;
      if (budget.minuteAllowed > 0) run.minGapMs = Math.ceil((60 * SECOND_MS) / budget.minuteAllowed);
    } catch (error) {
      logger.warn({ err: safeErrorMessage(error) }, 'could not plan the next pass');
      runtime.broken = true;
    }
  } finally {
    runtime.engine.events.off('request:sent', forward);
    runtime.engine.events.off('pass:finished', finished);
    lease.lost.removeEventListener('abort', cut);
    if (run.interrupted) runtime.broken = true;
    c.cache.release(runtime);
  }
  return run;
}

/** The reply outbox after the pass, as `run` delivers it; an error is returned (an AuthError backs the account off). */
async function deliver(c: JobContext, rt: AccountRuntime, lease: Lease, logger: Logger): Promise<Error | undefined> {
  try {
    const report = await deliverOutbox({
      db: rt.database.db,
      client: rt.engine.client,
      clock: c.clock,
      logger,
      // The lock's session proves this deliverer gone once it is: the next holder settles what it left sending early.
      claimer: newClaimer({ embedded: false, session: lease.session }),
      signal: AbortSignal.any([lease.lost, c.stopping, AbortSignal.timeout(c.timing.deliverySliceMs)]),
    });
    if (report.sent + report.failed + report.waiting > 0) logger.info(report, 'reply outbox');
    return undefined;
  } catch (error) {
    const e = safeError(error);
    if (!(e instanceof AuthError)) logger.error({ err: e.message }, 'reply outbox failed');
    return e;
  }
}

/** The pass's outcome into the row, the job completed and its successor queued (jobQueue.finish, one transaction). */
async function record(c: JobContext, job: PassJob, account: Account, pass: PassRun, startedAt: number): Promise<void> {
  const now = c.clock.now();
  const logger = c.logger.child({ account: account.name });
  let outcome: Outcome;
  if (pass.interrupted || !pass.result) {
    // Not the account's doing: its state stays, and it is run again soon (by this worker or another).
    outcome = {
      state: account.state,
      failures: account.failures,
      notBefore: account.notBefore === null ? null : Date.parse(account.notBefore),
      lastError: account.lastError,
      nextPassAt: now,
    };
  } else {
    outcome = decideOutcome({
      now,
      failures: account.failures,
      result: pass.result,
      planWakeAt: pass.planWakeAt,
      nextSlotAt: pass.nextSlotAt,
      minGapMs: pass.minGapMs,
      maxWaitMs: c.timing.maxWaitMs,
    });
  }
  const gap = c.timing.successorGapMs;
  let delayMs = Math.max(outcome.nextPassAt - now, gap);
  // A pass that had to make room for the stop: its account is handed back, due at once for another worker.
  const handedBack = c.stopping.aborted && (pass.interrupted || pass.summary?.yielded === true || pass.result === null);
  if (handedBack) delayMs = 0;
  const woken = c.woken.get(account.name);
  c.woken.delete(account.name);
  const backingOff = outcome.notBefore !== null && outcome.notBefore > now;
  if (woken && (!backingOff || woken.manual)) delayMs = Math.min(delayMs, gap);
  const row: PassOutcome = {
    state: outcome.state,
    failures: outcome.failures,
    notBefore: outcome.notBefore === null ? null : isoMicros(outcome.notBefore),
    lastPassAt: isoMicros(pass.summary?.finishedAt ?? now),
    lastPassRequests: pass.summary?.requests ?? 0,
    lastError: outcome.lastError === null ? null : outcome.lastError.slice(0, 2000),
    nextPassAt: isoMicros(now + delayMs),
    worker: c.workerId,
  };
  // Fairness: a pass for a list that falls due (or a reply) goes before background work (a backfill's next slice) that
  // is due as long or longer; pg-boss fetches by priority, then by age.
  // A background successor carries when its list falls due: the queue raises it to live then (jobQueue.promote).
  // An interrupted pass (its lock lost, a hard stop) did not do its live work either.
  const live = woken !== undefined || handedBack || pass.interrupted || (pass.liveAt !== null && pass.liveAt <= now + delayMs + SECOND_MS);
  const liveInMs = !live && pass.liveAt !== null ? pass.liveAt - now : undefined;
  await c.queue.finish(job, {
    outcome: row,
    successor: {
      delayMs,
      ...(live ? { priority: LIVE_PRIORITY } : {}),
      ...(liveInMs !== undefined ? { liveInMs } : {}),
      ...(woken?.manual ? { manual: true } : {}),
    },
  });

  const report = {
    account: account.name,
    worker: c.workerId,
    jobId: job.id,
    startedAt,
    finishedAt: now,
    summary: pass.summary,
    outcome,
    nextPassAt: now + delayMs,
    handedBack,
    interrupted: pass.interrupted,
  };
  c.events.emit('pass:finished', report);
  const line = {
    requests: row.lastPassRequests,
    state: outcome.state,
    yielded: pass.summary?.yielded === true,
    tookMs: now - startedAt,
    nextPassInSeconds: Math.round(delayMs / SECOND_MS),
    ...(handedBack ? { handedBack } : {}),
    ...(pass.interrupted ? { interrupted: true } : {}),
    ...(outcome.lastError && outcome.state !== 'ok' ? { err: outcome.lastError } : {}),
  };
  if (outcome.state === 'auth_failed') logger.error(line, 'the API rejected the token of this account (or it does not open): this account backs off, the fleet goes on');
  else if (outcome.state === 'failing') logger.warn(line, 'fleet pass failed: this account backs off');
  else if (row.lastPassRequests > 0 || handedBack || pass.interrupted) logger.info(line, 'fleet pass');
  else logger.debug(line, 'fleet pass');
}
