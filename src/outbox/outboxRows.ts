import { and, asc, eq, inArray, isNotNull, isNull, lte, or, sql } from 'drizzle-orm';
import type { PgUpdateSetSource } from 'drizzle-orm/pg-core';
import type { Tx } from '../db/connect.ts';
import { ts } from '../db/repos/rows.ts';
import { messages, replyOutbox, type OutboxState } from '../db/schema.ts';
import { canTransition } from './states.ts';

/**
 * The `reply_outbox` repository: plain functions of (tx, args); the deliverer owns the transactions.
 *
 * Every move is fenced: it applies only while the row still has the state and the `next_attempt_at` its caller read.
 * `next_attempt_at` doubles as the lease of a `sending` row (see deliver.ts), so a deliverer that stalled past its
 * lease cannot overwrite what another one decided meanwhile.
 */

export interface OutboxRow {
  id: number;
  ticketId: string;
  message: string;
  state: OutboxState;
  attempts: number;
  error: string | null;
  // Timestamps in canonical form (YYYY-MM-DDTHH:MM:SS.ffffffZ), as the comparisons need them.
  requestedAt: string;
  /** When a pending row may be sent, or a sending row's lease ends (see deliver.ts). Also the fence of every move. */
  nextAttemptAt: string | null;
  sendingSince: string | null;
}

type OutboxRecord = typeof replyOutbox.$inferSelect;

function toOutboxRow(r: OutboxRecord): OutboxRow {
  return {
    id: r.id,
    ticketId: r.ticketId,
    message: r.message,
    state: r.state,
    attempts: r.attempts,
    error: r.error,
    requestedAt: ts(r.requestedAt)!,
    nextAttemptAt: ts(r.nextAttemptAt),
    sendingSince: ts(r.sendingSince),
  };
}

/**
 * The oldest row that is due (pending, or sending with its lease run out), locked until the caller's transaction
 * ends. SKIP LOCKED: concurrent deliverers each take a different row and never wait for each other.
 */
export async function lockNextDue(tx: Tx, now: string): Promise<OutboxRow | undefined> {
  const [row] = await tx
    .select()
    .from(replyOutbox)
    .where(
      and(
        inArray(replyOutbox.state, ['pending', 'sending']),
        or(isNull(replyOutbox.nextAttemptAt), lte(replyOutbox.nextAttemptAt, now)),
      ),
    )
    .orderBy(asc(replyOutbox.id))
    .limit(1)
    .for('update', { skipLocked: true });
  return row && toOutboxRow(row);
}

/** Claimed for a POST: the attempt counts from now, and the lease runs until `leaseUntil`. */
export function markSending(tx: Tx, row: OutboxRow, now: string, leaseUntil: string): Promise<OutboxRow | null> {
  return moveRow(tx, row, 'sending', {
    attempts: sql`${replyOutbox.attempts} + 1`,
    sendingSince: now,
    nextAttemptAt: leaseUntil,
    error: null,
  });
}

/** Still `sending`: its outcome is checked against the ticket's detail at `checkAt`. */
export function checkLater(tx: Tx, row: OutboxRow, checkAt: string, error?: string): Promise<OutboxRow | null> {
  return moveRow(tx, row, 'sending', { nextAttemptAt: checkAt, ...(error === undefined ? {} : { error }) });
}

export function markSent(tx: Tx, row: OutboxRow, messageId: string, sentAt: string | null): Promise<OutboxRow | null> {
  return moveRow(tx, row, 'sent', { messageId, sentAt, error: null, nextAttemptAt: null });
}

export function markFailed(tx: Tx, row: OutboxRow, error: string): Promise<OutboxRow | null> {
  return moveRow(tx, row, 'failed', { error, nextAttemptAt: null });
}

/**
 * Back to `pending`, to be sent at `retryAt` (null: on the next run). `refused`: the service never took the POST (the
 * budget, a 429, the token), so the attempt does not count against the row's tries.
 */
export function markPending(tx: Tx, row: OutboxRow, retryAt: string | null, error: string, refused: boolean): Promise<OutboxRow | null> {
  return moveRow(tx, row, 'pending', {
    nextAttemptAt: retryAt,
    error,
    ...(refused ? { attempts: sql`greatest(${replyOutbox.attempts} - 1, 0)` } : {}),
  });
}

/** Applies one allowed transition if the row is still as `row` saw it; the updated row, or null when it was not. */
async function moveRow(
  tx: Tx,
  row: OutboxRow,
  to: OutboxState,
  changes: Omit<PgUpdateSetSource<typeof replyOutbox>, 'state'>,
): Promise<OutboxRow | null> {
  if (!canTransition(row.state, to)) throw new Error(`reply_outbox ${row.id}: ${row.state} → ${to} is not an allowed transition`);
  const [updated] = await tx
    .update(replyOutbox)
    .set({ ...changes, state: to })
    .where(
      and(
        eq(replyOutbox.id, row.id),
        eq(replyOutbox.state, row.state),
        row.nextAttemptAt === null ? isNull(replyOutbox.nextAttemptAt) : eq(replyOutbox.nextAttemptAt, row.nextAttemptAt),
      ),
    )
    .returning();
  return updated ? toOutboxRow(updated) : null;
}

/** Message ids of the ticket that outbox rows were matched with: reconciliation must not match them again. */
export async function claimedMessageIds(tx: Tx, ticketId: string): Promise<Set<string>> {
  const rows = await tx
    .select({ id: replyOutbox.messageId })
    .from(replyOutbox)
    .where(and(eq(replyOutbox.ticketId, ticketId), isNotNull(replyOutbox.messageId)));
  return new Set(rows.map((r) => r.id!));
}

/**
 * The token's user (the API's `user` object), learnt from a reply the outbox is known to have posted once a detail
 * showed it; null until then. Nothing else can be trusted for it: taking the wrong user for the token's own could
 * make reconciliation miss a posted reply and send it twice.
 */
export async function tokenUser(tx: Tx): Promise<unknown> {
  const [row] = await tx
    .select({ author: messages.author })
    .from(replyOutbox)
    .innerJoin(messages, eq(messages.id, replyOutbox.messageId))
    .where(and(eq(replyOutbox.state, 'sent'), isNotNull(messages.author)))
    .orderBy(asc(replyOutbox.id))
    .limit(1);
  return row?.author ?? null;
}
