import type { SQL } from 'drizzle-orm';
import { queryRows, sql, type Tx } from '../connect.ts';
import type { OutboxState } from '../schema.ts';
import { ts } from './rows.ts';

/**
 * The `reply_outbox` repository: plain functions of (tx, args); the deliverer (outbox/deliver.ts) owns the
 * transactions.
 *
 * Every move is fenced: it applies only while the row still has the state and the `next_attempt_at` its caller read.
 * `next_attempt_at` doubles as the lease of a `sending` row (see deliver.ts), so a deliverer that stalled past its
 * lease cannot overwrite what another one decided meanwhile.
 */

/**
 * The reply outbox's state machine, as data. A row is INSERTed `pending` by any SQL client and ends `sent` or `failed`
 * (an INSERT that sets any column the daemon writes is turned into a `failed`, forged row by a trigger; see 0005):
 *
 *   pending → sending   claimed: committed before the POST, so a crash after it can never lead to a blind re-send
 *   pending → failed    the text is too short for the service once trimmed: nothing is sent
 *   sending → sent      the POST answered 201, or the ticket's detail shows the reply (reconciliation)
 *   sending → failed    the API refused the reply (its 404, its 422), the tries are used up, or the outcome is ambiguous
 *   sending → pending   the POST certainly did not post: the local budget refused it, the connection was refused, the
 *                       API's 401/403 — or reconciliation found no trace of it
 *   sending → sending   the outcome is unknown for now (any other answer, no answer, a crash): check the ticket later
 *
 * `sent` and `failed` are final: the deliverer never leaves them (a person may re-queue a failed row with SQL).
 */
export const OUTBOX_TRANSITIONS = {
  pending: ['sending', 'failed'],
  sending: ['sent', 'failed', 'pending', 'sending'],
  sent: [],
  failed: [],
} as const satisfies Record<OutboxState, readonly OutboxState[]>;

export function canTransition(from: OutboxState, to: OutboxState): boolean {
  return (OUTBOX_TRANSITIONS[from] as readonly OutboxState[]).includes(to);
}

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

interface OutboxRecord {
  id: number | string;
  ticket_id: string;
  message: string;
  state: OutboxState;
  attempts: number;
  error: string | null;
  requested_at: string;
  next_attempt_at: string | null;
  sending_since: string | null;
}

const OUTBOX_COLUMNS = sql.raw('id, ticket_id, message, state, attempts, error, requested_at, next_attempt_at, sending_since');

function toOutboxRow(r: OutboxRecord): OutboxRow {
  return {
    id: Number(r.id),
    ticketId: r.ticket_id,
    message: r.message,
    state: r.state,
    attempts: r.attempts,
    error: r.error,
    requestedAt: ts(r.requested_at)!,
    nextAttemptAt: ts(r.next_attempt_at),
    sendingSince: ts(r.sending_since),
  };
}

/**
 * The oldest row that is due (pending, or sending with its lease run out), locked until the caller's transaction
 * ends. SKIP LOCKED: concurrent deliverers each take a different row and never wait for each other. Only rows inserted
 * as requests: a forged one (see the trigger reply_outbox_inserted, migration 0005) is never delivered, whatever its
 * state says.
 */
export async function lockNextDue(tx: Tx, now: string): Promise<OutboxRow | undefined> {
  // The states are written out, not parameters, so that the partial index reply_outbox_open_idx serves the query.
  const [row] = await queryRows<OutboxRecord>(
    tx,
    sql`select ${OUTBOX_COLUMNS} from reply_outbox
        where state in ('pending', 'sending') and (next_attempt_at is null or next_attempt_at <= ${now}::timestamptz)
          and inserted_as = 'request'
        order by id limit 1
        for update skip locked`,
  );
  return row && toOutboxRow(row);
}

/** Claimed for a POST: the attempt counts from now, and the lease runs until `leaseUntil`. */
export function markSending(tx: Tx, row: OutboxRow, now: string, leaseUntil: string): Promise<OutboxRow | null> {
  return moveRow(
    tx,
    row,
    'sending',
    sql`attempts = attempts + 1, sending_since = ${now}::timestamptz, next_attempt_at = ${leaseUntil}::timestamptz, error = null`,
  );
}

/** Still `sending`: its outcome is checked against the ticket's detail at `checkAt`. */
export function checkLater(tx: Tx, row: OutboxRow, checkAt: string, error?: string): Promise<OutboxRow | null> {
  return moveRow(tx, row, 'sending', sql`next_attempt_at = ${checkAt}::timestamptz${error === undefined ? sql`` : sql`, error = ${error}`}`);
}

export function markSent(tx: Tx, row: OutboxRow, messageId: string, sentAt: string | null): Promise<OutboxRow | null> {
  return moveRow(tx, row, 'sent', sql`message_id = ${messageId}, sent_at = ${sentAt}::timestamptz, error = null, next_attempt_at = null`);
}

export function markFailed(tx: Tx, row: OutboxRow, error: string): Promise<OutboxRow | null> {
  return moveRow(tx, row, 'failed', sql`error = ${error}, next_attempt_at = null`);
}

/**
 * Back to `pending`, to be sent at `retryAt` (null: on the next run), when the POST certainly did not post. The attempt
 * still counts: attempts are never given back, so no answer, however it is read, can make a row be sent without end.
 */
export function markPending(tx: Tx, row: OutboxRow, retryAt: string | null, error: string): Promise<OutboxRow | null> {
  return moveRow(tx, row, 'pending', sql`next_attempt_at = ${retryAt}::timestamptz, error = ${error}`);
}

/**
 * Applies one allowed transition, with the column assignments `set`, if the row is still as `row` saw it; the updated
 * row, or null when it was not.
 */
async function moveRow(tx: Tx, row: OutboxRow, to: OutboxState, set: SQL): Promise<OutboxRow | null> {
  if (!canTransition(row.state, to)) throw new Error(`reply_outbox ${row.id}: ${row.state} → ${to} is not an allowed transition`);
  const [updated] = await queryRows<OutboxRecord>(
    tx,
    sql`update reply_outbox set ${set}, state = ${to}
        where id = ${row.id} and state = ${row.state} and next_attempt_at is not distinct from ${row.nextAttemptAt}::timestamptz
        returning ${OUTBOX_COLUMNS}`,
  );
  return updated ? toOutboxRow(updated) : null;
}

/**
 * Message ids of the ticket that outbox rows were matched with: reconciliation must not match them again. Only rows
 * inserted as requests count: a forged row's message_id (see the trigger reply_outbox_inserted) could otherwise hide
 * a posted reply from reconciliation, which would then send it again.
 */
export async function claimedMessageIds(tx: Tx, ticketId: string): Promise<Set<string>> {
  const rows = await queryRows<{ message_id: string }>(
    tx,
    sql`select message_id from reply_outbox where ticket_id = ${ticketId} and message_id is not null and inserted_as = 'request'`,
  );
  return new Set(rows.map((r) => r.message_id));
}

/**
 * The token's user (the API's `user` object), learnt from a reply the outbox is known to have posted once a detail
 * showed it; null until then. Nothing else can be trusted for it: taking the wrong user for the token's own could
 * make reconciliation miss a posted reply and send it twice.
 */
export async function tokenUser(tx: Tx): Promise<unknown> {
  const [row] = await queryRows<{ author: unknown }>(
    tx,
    sql`select m.author from reply_outbox o join messages m on m.id = o.message_id
        where o.state = 'sent' and o.inserted_as = 'request' and m.author is not null
        order by o.id limit 1`,
  );
  return row?.author ?? null;
}
