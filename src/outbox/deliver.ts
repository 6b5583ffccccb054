import { randomUUID } from 'node:crypto';
import type { ApiClient } from '../api/client.ts';
import type { Clock } from '../clock.ts';
import type { Db } from '../db/connect.ts';
import { writeDetail } from '../db/repos/details.ts';
import { countDueReplies } from '../db/repos/outboxDue.ts';
import {
  checkLater,
  claimedMessageIds,
  claimForCheck,
  failUnreadable,
  lockNextDue,
  markFailed,
  markPending,
  markRefused,
  markSending,
  markSent,
  releaseAbandonedClaims,
  stillClaimed,
  tokenUser,
  unmatchedTexts,
  type Claimer,
  type OutboxRow,
} from '../db/repos/outbox.ts';
import type { OutboxState } from '../db/schema.ts';
import {
  AuthError,
  coerceError,
  InvalidResponseError,
  NotFoundError,
  RateLimitedError,
  ReplyNotSentError,
  ReplyOutcomeUnknownError,
  ReplyShareSpentError,
  RequestRejectedError,
  TransientError,
} from '../errors.ts';
import type { Logger } from '../logger.ts';
import { intOption, msOption } from '../options.ts';
import { mapDetail, UnstorableError } from '../sync/mapping.ts';
import { HOUR_MS, isoMicros, timestampOrNull, toEpochMicros } from '../time.ts';
import { recordPostedCopy, unstorableId } from './postReply.ts';
import { reconcile } from './reconcile.ts';
import { checkAgainDelayMs, MAX_ATTEMPTS, MAX_UNKNOWN_MS, recheckDelayMs, replyTextProblem } from './states.ts';

/**
 * Delivers the reply outbox: every row a SQL client INSERTed is POSTed to endpoint 6 once, and only once.
 *
 * Exactly once rests on one rule: a row is committed as `sending` (attempts + 1, `sending_since`) before its POST
 * leaves, in a transaction of its own, taken with FOR UPDATE SKIP LOCKED so that concurrent deliverers never take the
 * same row. A row found in `sending` later — after a crash or kill in either window (before the POST, or after it and
 * before its result was recorded), or after a POST whose answer was lost (5xx, timeout, a cut body) — is never sent
 * blindly again: it is reconciled against the ticket's detail (one request; see reconcile.ts). The reply found there
 * makes the row `sent`; no trace of it sends the row again, up to MAX_ATTEMPTS.
 *
 * The lease: `next_attempt_at` of a `sending` row is when another deliverer may take it over. It is set far beyond the
 * POST's timeout, so a live deliverer always records its result first; a deliverer that stalls longer than the lease
 * (a frozen VM) can lose the row to another, whose reconciliation then decides — and before its POST leaves, a
 * deliverer makes sure the row is still its own (`stillClaimed`), so one that wakes up late posts nothing.
 *
 * After a crash the lease need not be waited out when the claimer is provably gone (see Claimer in the repository:
 * the embedded database's folder lock, the PostgreSQL leader lock's session): each run first brings such rows due
 * SETTLE_MS after they were claimed — the POST's own timeout, by which a live sender would have given up on it — and
 * checks them against their tickets then (`releaseAbandonedClaims`). A claimer nothing can prove gone (a `sync` on
 * PostgreSQL) keeps its lease.
 *
 * What cannot be known for sure — the one window: the POST reached the service, but its answer was lost AND the
 * ticket's detail does not show the reply when it is checked (the service lists it late, or stores it with another
 * text). Reconciliation waits at least a minute before it looks, which covers a late listing in practice. A recent
 * reply by the token's user with another text is taken as possibly this one: the row ends `failed` with an error that
 * says so, rather than risk a second post. Only when the detail shows no recent reply by the user at all is the row
 * sent again.
 */

export interface OutboxHooks {
  /** Runs after the row is committed as `sending`, before its POST. Tests throw here to simulate a kill. */
  afterMarkSending?: (row: OutboxRow) => void | Promise<void>;
  /** Runs after the POST was answered 201, before the result is recorded. Tests throw here to simulate a kill. */
  afterPost?: (row: OutboxRow, reply: { id: string; created_at: string }) => void | Promise<void>;
}

/** How long a row may stay `sending` before it is checked, unless `leaseMs` says otherwise. */
const LEASE_MS = 120_000;
/** How long after its claim a row whose claimer is provably gone is checked, unless `settleMs` says otherwise. */
const SETTLE_MS = 30_000;

/**
 * A claimer for one deliverer (see Claimer): `embedded` when it has the embedded database open itself; else `leader`
 * with the session of the PostgreSQL leader lock it holds; else one nothing can prove gone.
 */
export function newClaimer(o: { embedded: boolean; session?: { pid: number; startedAt: string } | undefined }): Claimer {
  const id = randomUUID();
  if (o.embedded) return { id, via: 'embedded' };
  if (o.session) return { id, via: 'leader', session: o.session };
  return { id, via: null };
}

export interface DeliverOptions {
  db: Db;
  /** The sync engine's client (`engine.client`, after `engine.init()`): the same budget, queue and ledger. */
  client: ApiClient;
  clock: Clock;
  logger: Logger;
  /** Stops taking rows once aborted. */
  signal?: AbortSignal;
  /** Rows handled per call, so that one daemon tick stays short. @default 25 */
  maxRows?: number;
  /**
   * How long a row may stay `sending` before another deliverer checks it: far above the longest a POST can take (up to
   * a minute in the gate's queue, then the client's 30 s timeout). @default 120000
   */
  leaseMs?: number;
  /**
   * Who claims rows, and how its death can be proven (see newClaimer); it also decides which abandoned rows this
   * deliverer may settle early. @default one nothing can prove gone
   */
  claimer?: Claimer;
  /** How long after its claim a row whose claimer is provably gone is checked. @default 30000 */
  settleMs?: number;
  hooks?: OutboxHooks;
}

/** DeliverOptions with the claimer decided, as the steps below use them. */
type Deliverer = DeliverOptions & { claimer: Claimer };

/** A POST that did not leave: the row was no longer this deliverer's when it was about to (see stillClaimed). */
class ClaimLostError extends Error {
  override name = 'ClaimLostError';
}

/** Where the rows this run touched stand at its end. */
export interface OutboxReport {
  sent: number;
  failed: number;
  /** Left pending or sending, for a later run. */
  waiting: number;
}

/** What one step did to a row; `stop` ends the run (the budget is spent). */
interface Step {
  id: string;
  state: OutboxState;
  stop?: boolean;
}

/**
 * Delivers due rows, oldest first, up to `maxRows` steps (a row found not posted is sent again in the same run).
 * Throws AuthError (after putting the row back) and database errors.
 */
export async function deliverOutbox(options: DeliverOptions): Promise<OutboxReport> {
  const maxRows = intOption('maxRows', options.maxRows, 25);
  msOption('leaseMs', options.leaseMs, LEASE_MS, 1);
  const settleMs = msOption('settleMs', options.settleMs, SETTLE_MS);
  const o: Deliverer = { ...options, claimer: options.claimer ?? newClaimer({ embedded: false }) };
  if (!o.signal?.aborted) await releaseAbandoned(o, settleMs);
  const states = new Map<string, OutboxState>();
  for (let i = 0; i < maxRows && !o.signal?.aborted; i++) {
    const step = await deliverNext(o);
    if (!step) break;
    states.set(step.id, step.state);
    if (step.stop) break;
  }
  const report: OutboxReport = { sent: 0, failed: 0, waiting: 0 };
  for (const state of states.values()) {
    if (state === 'sent' || state === 'failed') report[state]++;
    else report.waiting++;
  }
  return report;
}

/**
 * The daemon's after-pass work: `afterPass: outboxAfterPass({ db, clock, logger, client: () => engine.client })`, with
 * the count of rows due now that the daemon's loop watches while it sleeps.
 * `client` is read at each call, so it can follow the engine of the current term of leadership.
 */
export function outboxAfterPass(
  o: Omit<DeliverOptions, 'client' | 'signal'> & { client: () => ApiClient },
): ((signal: AbortSignal) => Promise<void>) & { waiting: () => Promise<number> } {
  const run = async (signal: AbortSignal) => {
    const report = await deliverOutbox({ ...o, client: o.client(), signal });
    if (report.sent + report.failed + report.waiting > 0) o.logger.info(report, 'reply outbox');
  };
  // The daemon's sleeping loop asks this, and wakes when it grows: a reply inserted is sent within seconds.
  return Object.assign(run, { waiting: () => countDueReplies(o.db, isoMicros(o.clock.now())) });
}

/** Brings rows a crashed claimer left `sending` due early (see releaseAbandonedClaims), and says so. */
async function releaseAbandoned(o: Deliverer, settleMs: number): Promise<void> {
  const now = isoMicros(o.clock.now());
  const released = await o.db.transaction((tx) =>
    releaseAbandonedClaims(tx, { claimer: o.claimer, embedded: o.claimer.via === 'embedded', now, settleMs }),
  );
  for (const r of released) {
    o.logger.warn({ outbox: r.id, ticket: r.ticketId, checkAt: r.dueAt }, 'reply left sending by a sender that is gone (a crash?): to be checked against the ticket');
  }
}

/** Takes the next due row and moves it on; undefined when none is due. */
async function deliverNext(o: Deliverer): Promise<Step | undefined> {
  const now = o.clock.now();
  const claim = await o.db.transaction(async (tx) => {
    const row = await lockNextDue(tx, isoMicros(now));
    if (!row) return undefined;
    if ('columns' in row) return { unreadable: row, error: await failUnreadable(tx, row) };
    const lease = isoMicros(now + (o.leaseMs ?? LEASE_MS));
    if (row.state === 'sending') return { check: true, row: (await claimForCheck(tx, row, lease, o.claimer))! };
    const problem = replyTextProblem(row.message);
    if (problem) return { check: false, row: (await markFailed(tx, row, problem))! };
    return { check: false, row: (await markSending(tx, row, isoMicros(now), lease, o.claimer))! };
  });
  if (!claim) return undefined;
  if (claim.unreadable) {
    o.logger.warn({ outbox: claim.unreadable.id, ticket: claim.unreadable.ticketId, err: claim.error }, 'reply not sent');
    return { id: claim.unreadable.id, state: 'failed' };
  }
  if (claim.row.state === 'failed') return finish(o, claim.row.id, claim.row);
  return claim.check ? check(o, claim.row) : send(o, claim.row);
}

async function send(o: Deliverer, row: OutboxRow): Promise<Step> {
  await o.hooks?.afterMarkSending?.(row);
  // Asked after the budget's queue, right before the POST leaves: a deliverer that stalled may have lost the row.
  const beforeSend = async () => {
    if (!(await o.db.transaction((tx) => stillClaimed(tx, row, o.claimer)))) throw new ClaimLostError(`reply_outbox ${row.id} is no longer claimed by this deliverer`);
  };
  let reply;
  try {
    reply = (await o.client.reply(row.ticketId, row.message, { beforeSend })).body;
  } catch (error) {
    if (error instanceof ClaimLostError) {
      o.logger.error({ outbox: row.id, ticket: row.ticketId }, 'reply not sent: another deliverer took the row over while this one waited');
      return { id: row.id, state: 'sending' };
    }
    return postFailed(o, row, coerceError(error));
  }
  await o.hooks?.afterPost?.(row, reply);
  const at = isoMicros(o.clock.now());
  const moved = await o.db.transaction(async (tx) => {
    const sentAt = timestampOrNull(reply.created_at);
    // An id longer than the mirror stores (mapping.ts MAX_ID_BYTES; no index holds it) is the service's all the same:
    // the row is sent without it. Its write failed after the POST and left the row to a check that could not find it.
    const unstorable = unstorableId(reply.id);
    if (unstorable) return markSent(tx, row, null, sentAt, `posted; ${unstorable}`);
    const author = await tokenUser(tx);
    await recordPostedCopy(tx, { ticketId: row.ticketId, messageId: reply.id, text: row.message, createdAt: reply.created_at, author }, at, o.logger);
    return markSent(tx, row, reply.id, sentAt);
  });
  if (!moved) {
    // Only a deliverer that stalled past its lease gets here; the one that took the row over decided its fate.
    o.logger.error({ outbox: row.id, ticket: row.ticketId, message: reply.id }, 'reply posted after this deliverer lost the row');
    return { id: row.id, state: 'sending' };
  }
  o.logger.info({ outbox: row.id, ticket: row.ticketId, message: reply.id }, 'reply sent');
  return { id: row.id, state: 'sent' };
}

/**
 * A POST that did not create the reply for sure. What its error proves decides (see ApiClient.reply):
 *
 * - the API's 404: the ticket is gone → `failed`; its 422: the service refused this text → `failed`;
 * - the API's 401/403: nothing was created → `pending`, and the AuthError goes up (the daemon backs off);
 * - refused by the local budget, or a connection that was refused (nothing left this host) → `pending`, later;
 * - anything else — an HTML page, a 5xx, a timeout, a redirect, a 429 from the server, a 2xx without the new
 *   message's id, an unexpected error — may have posted the reply: the row stays `sending`, to be checked against
 *   the ticket's detail, never posted again before that.
 *
 * An attempt counts from the moment its row was claimed, and is given back only when the local budget refused it
 * (no request was made: see markRefused).
 */
async function postFailed(o: Deliverer, row: OutboxRow, e: Error): Promise<Step> {
  const now = o.clock.now();
  const { db } = o;
  if (e instanceof NotFoundError) return finish(o, row.id, await db.transaction((tx) => markFailed(tx, row, `ticket ${row.ticketId} not found`)));
  if (e instanceof RequestRejectedError) {
    return finish(o, row.id, await db.transaction((tx) => markFailed(tx, row, `the service refused the reply: ${e.message}`)));
  }
  if (e instanceof AuthError) {
    await db.transaction((tx) => markPending(tx, row, null, e.message));
    throw e;
  }
  if (e instanceof RateLimitedError) {
    // The local budget said no before anything was sent: the same row goes first when a slot frees up, its attempt back.
    await db.transaction((tx) => markRefused(tx, row, isoMicros(e.retryAt), e.message));
    if (e instanceof ReplyShareSpentError) {
      o.logger.warn({ outbox: row.id, ticket: row.ticketId, retryAt: new Date(e.retryAt).toISOString() }, `reply waits: ${e.message}`);
    }
    return { id: row.id, state: 'pending', stop: true };
  }
  if (e instanceof ReplyNotSentError) {
    // The service cannot be reached; the rows after this one would fare no better.
    await db.transaction((tx) => markPending(tx, row, isoMicros(now + recheckDelayMs(row.attempts)), e.message));
    o.logger.warn({ outbox: row.id, ticket: row.ticketId, err: e.message }, 'reply not sent: the API cannot be reached; will try again');
    return { id: row.id, state: 'pending', stop: true };
  }
  // The reply may have been posted. A throttled answer is checked no earlier than its Retry-After allows.
  const retryAt = e instanceof ReplyOutcomeUnknownError && e.retryAt !== undefined ? e.retryAt : 0;
  const checkAt = isoMicros(Math.max(now + recheckDelayMs(row.attempts), retryAt));
  await db.transaction((tx) => checkLater(tx, row, checkAt, `outcome unknown, to be checked against the ticket: ${e.message}`));
  o.logger.warn({ outbox: row.id, ticket: row.ticketId, err: e.message }, 'reply outcome unknown; will check the ticket before any retry');
  // Something unexpected (not an answer of the API's): the caller must hear of it.
  if (!(e instanceof ReplyOutcomeUnknownError)) throw e;
  return { id: row.id, state: 'sending', ...(retryAt > now ? { stop: true } : {}) };
}

/** Reconciles a row left in `sending` against its ticket's detail. */
async function check(o: Deliverer, row: OutboxRow): Promise<Step> {
  const requestedAt = isoMicros(o.clock.now());
  let response;
  try {
    response = await o.client.detail(row.ticketId, 'lookup');
  } catch (error) {
    return checkFailed(o, row, coerceError(error));
  }
  let detail;
  try {
    detail = mapDetail(response.body, row.ticketId);
  } catch (error) {
    if (!(error instanceof UnstorableError)) throw error;
    const reason = `the POST's outcome is unknown and the ticket's detail cannot be read (${error.message}); not sent again, to rule out a duplicate`;
    return finish(o, row.id, await o.db.transaction((tx) => markFailed(tx, row, reason)));
  }
  const at = isoMicros(response.at);
  const moved = await o.db.transaction(async (tx) => {
    const verdict = reconcile({
      messages: detail.messages,
      text: row.message,
      sendingSince: row.sendingSince ?? row.requestedAt,
      claimed: await claimedMessageIds(tx, row.ticketId),
      others: await unmatchedTexts(tx, row.ticketId, row.id),
      self: await tokenUser(tx),
    });
    // The detail is fresh: the mirror gets it for free, the reply's message included.
    await writeDetail(tx, detail, at, requestedAt);
    switch (verdict.outcome) {
      case 'posted':
        return markSent(tx, row, verdict.message.id, verdict.message.createdAt);
      case 'ambiguous':
        return markFailed(tx, row, verdict.reason);
      case 'absent':
        if (row.attempts >= MAX_ATTEMPTS) return markFailed(tx, row, `not delivered after ${row.attempts} attempts; last: ${row.error ?? 'unknown'}`);
        return markPending(tx, row, null, row.error ?? 'not posted: no trace of it in the ticket');
    }
  });
  return finish(o, row.id, moved);
}

/** The detail request of a reconciliation failed: the outcome stays unknown. */
async function checkFailed(o: Deliverer, row: OutboxRow, e: Error): Promise<Step> {
  const { db } = o;
  if (e instanceof NotFoundError) return finish(o, row.id, await db.transaction((tx) => markFailed(tx, row, `ticket ${row.ticketId} not found`)));
  if (e instanceof RateLimitedError) {
    await db.transaction((tx) => checkLater(tx, row, isoMicros(e.retryAt)));
    return { id: row.id, state: 'sending', stop: true };
  }
  // The service refused the request itself (a 4xx: an id it does not take, a path too long for it): it would refuse
  // every check alike, and the outcome can never be known.
  if (e instanceof RequestRejectedError) {
    const reason = `the POST's outcome is unknown and the ticket's detail cannot be read (${e.message}); not sent again, to rule out a duplicate`;
    return finish(o, row.id, await db.transaction((tx) => markFailed(tx, row, reason)));
  }
  const now = o.clock.now();
  // Checks do not count as attempts: the wait grows with the time the outcome has been unknown instead, and ends.
  const unknownForMs = now - Number(toEpochMicros(row.sendingSince ?? row.requestedAt)! / 1000n);
  const apiFailure = e instanceof TransientError || e instanceof InvalidResponseError;
  if (apiFailure && unknownForMs >= MAX_UNKNOWN_MS) {
    const reason =
      `the POST's outcome is unknown and the ticket's detail could not be read for ${MAX_UNKNOWN_MS / HOUR_MS} h (last: ${e.message}); ` +
      'not sent again, to rule out a duplicate: check the ticket, and set state back to pending to send it anyway';
    return finish(o, row.id, await db.transaction((tx) => markFailed(tx, row, reason)));
  }
  await db.transaction((tx) => checkLater(tx, row, isoMicros(now + checkAgainDelayMs(row.attempts, unknownForMs))));
  // A rejected token, or something unexpected: the caller must hear of it.
  if (!apiFailure) throw e;
  return { id: row.id, state: 'sending' };
}

/** Logs where a row ended; a null row was taken over by another deliverer meanwhile. */
function finish(o: DeliverOptions, id: string, row: OutboxRow | null): Step {
  if (!row) return { id, state: 'sending' };
  if (row.state === 'failed') o.logger.warn({ outbox: row.id, ticket: row.ticketId, err: row.error }, 'reply not sent');
  else if (row.state === 'sent') o.logger.info({ outbox: row.id, ticket: row.ticketId }, 'reply found in the ticket: sent');
  else o.logger.info({ outbox: row.id, ticket: row.ticketId, state: row.state }, 'reply to be sent again: no trace of it in the ticket');
  return { id, state: row.state };
}
