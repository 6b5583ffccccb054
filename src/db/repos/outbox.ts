import type { SQL } from 'drizzle-orm';
import { queryRows, sql, type Tx } from '../connect.ts';
import { FIRST_INSTANT, LAST_INSTANT } from '../instants.ts';
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
 *   pending → failed    the text is shorter than the service's 3 characters: nothing is sent
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
  /** The row's id, a bigint in decimal: a row a person inserted may have any id, beyond a JavaScript number's precision. */
  id: string;
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
  id: string;
  ticket_id: string;
  message: string;
  state: OutboxState;
  attempts: number;
  error: string | null;
  requested_at: string;
  next_attempt_at: string | null;
  sending_since: string | null;
}

const OUTBOX_COLUMNS = sql.raw('id::text as id, ticket_id, message, state, attempts, error, requested_at, next_attempt_at, sending_since');

function toOutboxRow(r: OutboxRecord): OutboxRow {
  return {
    id: r.id,
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
 * A due row the deliverer cannot read: one of its instants lies outside the years 0001–9999 that the mirror's
 * instants span (see time.ts) — `infinity`, a year 12000, a date BC — inserted so, or set so by hand.
 */
export interface UnreadableRow {
  id: string;
  ticketId: string;
  /** The columns outside those years. */
  columns: string[];
}

const INSTANTS = ['requested_at', 'next_attempt_at', 'sending_since'] as const;

/** The names of the columns among INSTANTS that hold an instant outside the years 0001–9999 (none: an empty array). */
const UNREADABLE = sql.raw(
  `array_remove(array[${INSTANTS.map(
    (c) => `case when ${c} < ${FIRST_INSTANT} or ${c} > ${LAST_INSTANT} then '${c}' end`,
  ).join(', ')}], null) as unreadable`,
);

/**
 * The oldest row that is due (pending, or sending with its lease run out), locked until the caller's transaction
 * ends. SKIP LOCKED: concurrent deliverers each take a different row and never wait for each other. Only rows inserted
 * as requests: a forged one (see the trigger reply_outbox_inserted, migration 0005) is never delivered, whatever its
 * state says. A row with an instant the mirror cannot read comes as an UnreadableRow, for failUnreadable.
 */
export async function lockNextDue(tx: Tx, now: string): Promise<OutboxRow | UnreadableRow | undefined> {
  // The states are written out, not parameters, so that the partial index reply_outbox_open_idx serves the query.
  const [row] = await queryRows<OutboxRecord & { unreadable: string[] }>(
    tx,
    sql`select ${OUTBOX_COLUMNS}, ${UNREADABLE} from reply_outbox
        where state in ('pending', 'sending') and (next_attempt_at is null or next_attempt_at <= ${now}::timestamptz)
          and inserted_as = 'request'
        order by id limit 1
        for update skip locked`,
  );
  if (!row) return undefined;
  if (row.unreadable.length > 0) return { id: row.id, ticketId: row.ticket_id, columns: row.unreadable };
  return toOutboxRow(row);
}

/**
 * Ends a row lockNextDue found unreadable `failed`, nothing sent (a `sending` one may have been posted: it is not sent
 * again either), saying which columns to set right. The caller's transaction holds the row's lock, so no fence is
 * needed (nor possible: its `next_attempt_at` may be the instant that cannot be read).
 */
export async function failUnreadable(tx: Tx, row: UnreadableRow): Promise<string> {
  const error =
    `${row.columns.join(', ')} ${row.columns.length === 1 ? 'is' : 'are'} outside the years 0001–9999: not sent` +
    (row.columns.includes('requested_at') ? '; insert ticket_id and message only' : '; only ticket-mirror writes next_attempt_at and sending_since');
  await tx.execute(
    sql`update reply_outbox set state = 'failed', error = ${error}, next_attempt_at = null, ${UNCLAIMED}
        where id = ${row.id} and state in ('pending', 'sending')`,
  );
  return error;
}

/**
 * Who works on a row while it is claimed (see the claim columns, migration 0008), and what can later prove that this
 * claimer is gone, so that a row it left `sending` need not wait out its lease:
 *
 * - `embedded`: it had the embedded database open itself, which only one process can (the data folder's lock, taken
 *   over only from a process that no longer runs). Any other `embedded` claimer seen by a process that has the
 *   database open is dead.
 * - `leader`: it led on PostgreSQL, holding the leader lock in `session`. Once that session is gone from
 *   pg_stat_activity, the claimer no longer leads: it stopped its requests when it lost the lock, or it is dead.
 * - null: nothing can prove it (a `sync` on PostgreSQL): its rows wait out their lease.
 */
export interface Claimer {
  /** Unique per claimer: a term of leadership, one command's run. */
  id: string;
  via: 'embedded' | 'leader' | null;
  /** With `leader`: the backend of the session holding the leader lock, as pg_stat_activity shows it. */
  session?: { pid: number; startedAt: string } | undefined;
}

/** The claim columns, set while a deliverer works on a row (a POST or a check in flight) and cleared by every other move. */
function claimedBy(c: Claimer): SQL {
  const session = c.via === 'leader' ? c.session : undefined;
  return sql`claimed_by = ${c.id}, claimed_via = ${c.via}, claimer_pid = ${session?.pid ?? null}::integer,
    claimer_started = ${session?.startedAt ?? null}::timestamptz`;
}

const UNCLAIMED = sql`claimed_by = null, claimed_via = null, claimer_pid = null, claimer_started = null`;

/**
 * Claimed for a POST: the attempt counts from now, and the lease runs until `leaseUntil`. The count stops at the
 * integer's largest value, which a person may have set by hand: adding to it would fail the claim on every pass.
 */
export function markSending(tx: Tx, row: OutboxRow, now: string, leaseUntil: string, claimer: Claimer): Promise<OutboxRow | null> {
  return moveRow(
    tx,
    row,
    'sending',
    sql`attempts = least(attempts, 2147483646) + 1, sending_since = ${now}::timestamptz, next_attempt_at = ${leaseUntil}::timestamptz, error = null,
      ${claimedBy(claimer)}`,
  );
}

/** A `sending` row claimed for a check of its ticket's detail, until `leaseUntil`. */
export function claimForCheck(tx: Tx, row: OutboxRow, leaseUntil: string, claimer: Claimer): Promise<OutboxRow | null> {
  return moveRow(tx, row, 'sending', sql`next_attempt_at = ${leaseUntil}::timestamptz, ${claimedBy(claimer)}`);
}

/** Still `sending`, no longer claimed: its outcome is checked against the ticket's detail at `checkAt`. */
export function checkLater(tx: Tx, row: OutboxRow, checkAt: string, error?: string): Promise<OutboxRow | null> {
  return moveRow(
    tx,
    row,
    'sending',
    sql`next_attempt_at = ${checkAt}::timestamptz${error === undefined ? sql`` : sql`, error = ${error}`}, ${UNCLAIMED}`,
  );
}

/**
 * Whether `row` is still claimed by `claimer` with the lease it was given: asked right before its POST leaves, so that
 * a claimer that stalled (a frozen VM) while its row was settled by another never posts it.
 */
export async function stillClaimed(tx: Tx, row: OutboxRow, claimer: Claimer): Promise<boolean> {
  const [found] = await queryRows<{ id: unknown }>(
    tx,
    sql`select id from reply_outbox where id = ${row.id} and state = 'sending' and claimed_by = ${claimer.id}
          and next_attempt_at is not distinct from ${row.nextAttemptAt}::timestamptz`,
  );
  return found !== undefined;
}

/**
 * Rows left claimed by a claimer that is provably gone (see Claimer) — a crash, a kill -9 — come due once `settleMs`
 * have passed since they entered `sending` (at once if that is past) instead of when their lease ends; the deliverer
 * then checks them against their tickets like any row whose outcome is unknown. `embedded`: the caller has the
 * embedded database open itself, which proves every other embedded claimer dead. Rows claimed by `claimer` itself, or
 * by a claimer nothing can prove gone, are left alone. Returns the rows moved, with when they come due.
 */
export async function releaseAbandonedClaims(
  tx: Tx,
  o: { claimer: Claimer; embedded: boolean; now: string; settleMs: number },
): Promise<Array<{ id: string; ticketId: string; dueAt: string }>> {
  const due = sql`greatest(sending_since + ${o.settleMs}::double precision * interval '1 millisecond', ${o.now}::timestamptz)`;
  // A claimer's session is alive while one with its pid shows; when another user's sessions hide their backend_start
  // (no pg_read_all_stats), a session with that pid counts as alive: never settle on a guess.
  const rows = await queryRows<{ id: string; ticket_id: string; next_attempt_at: string }>(
    tx,
    sql`update reply_outbox o set next_attempt_at = ${due}
        where state = 'sending' and inserted_as = 'request' and claimed_by is not null and claimed_by <> ${o.claimer.id}
          and sending_since is not null and next_attempt_at > ${due}
          and ((claimed_via = 'embedded' and ${o.embedded}::boolean)
            or (claimed_via = 'leader' and claimer_pid is not null and not exists (
              select 1 from pg_stat_activity a
              where a.pid = o.claimer_pid and (a.backend_start is null or a.backend_start = o.claimer_started))))
        returning id::text as id, ticket_id, next_attempt_at`,
  );
  return rows.map((r) => ({ id: r.id, ticketId: r.ticket_id, dueAt: ts(r.next_attempt_at)! }));
}

/**
 * The reply went out. `messageId` is the service's id of it; null when the mirror cannot store that id (see
 * outbox/deliver.ts), `note` then saying why.
 */
export function markSent(tx: Tx, row: OutboxRow, messageId: string | null, sentAt: string | null, note: string | null = null): Promise<OutboxRow | null> {
  return moveRow(
    tx,
    row,
    'sent',
    sql`message_id = ${messageId}, sent_at = ${sentAt}::timestamptz, error = ${note}, next_attempt_at = null, ${UNCLAIMED}`,
  );
}

export function markFailed(tx: Tx, row: OutboxRow, error: string): Promise<OutboxRow | null> {
  return moveRow(tx, row, 'failed', sql`error = ${error}, next_attempt_at = null, ${UNCLAIMED}`);
}

/**
 * Back to `pending`, to be sent at `retryAt` (null: on the next run), when the POST certainly did not post. The attempt
 * still counts: no answer of the API's, however it is read, can make a row be sent without end (see markRefused for
 * the one exception, a request never made).
 */
export function markPending(tx: Tx, row: OutboxRow, retryAt: string | null, error: string): Promise<OutboxRow | null> {
  return moveRow(tx, row, 'pending', sql`next_attempt_at = ${retryAt}::timestamptz, error = ${error}, ${UNCLAIMED}`);
}

/**
 * Back to `pending` at `retryAt` with its attempt given back: the local budget refused the POST, so no request was
 * made. Counted, the refusals of a busy minute used up a row's five attempts before its first POST, and a lost answer
 * after it left no retry at all.
 */
export function markRefused(tx: Tx, row: OutboxRow, retryAt: string, error: string): Promise<OutboxRow | null> {
  return moveRow(tx, row, 'pending', sql`attempts = greatest(attempts - 1, 0), next_attempt_at = ${retryAt}::timestamptz, error = ${error}, ${UNCLAIMED}`);
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

/** The texts of the ticket's outbox rows other than `exceptId` that no message was matched with (see reconcile's `others`). */
export async function unmatchedTexts(tx: Tx, ticketId: string, exceptId: string): Promise<string[]> {
  const rows = await queryRows<{ message: string }>(
    tx,
    sql`select message from reply_outbox
        where ticket_id = ${ticketId} and id <> ${exceptId} and message_id is null and inserted_as = 'request' and message is not null`,
  );
  return rows.map((r) => r.message);
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
