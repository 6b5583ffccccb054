import { isoMicros } from '../../time.ts';
import { sql, type Tx } from '../connect.ts';

/**
 * A host clock set back: it ran ahead (a bad real-time clock at boot, a virtual machine restored with the wrong time)
 * while the mirror worked, then NTP or a person set it right. Every instant the mirror wrote meanwhile lies in the
 * future, and each of them would hold the mirror still until the clock caught up with it: the ledger's requests fill
 * the current minute (the budget waits), a list polled "later" is never due, a ticket whose detail was due "since
 * later" is fetched on every pass and never cleared (a retry storm), a reply waits for a retry time or a lease a year
 * away. So when the newest ledger row lies ahead of now by more than CLOCK_SET_BACK_MS (time.ts), every instant the
 * mirror wrote from its clock is brought back to now: the latest the thing it records can truly have happened. The API's own instants (created_at, updated_at,
 * closed_at, last_contact_at, a message's created_at) are its data, and are never touched.
 *
 * What that costs: the restamped requests count in the 24 h window as if sent now, longer than their truth (the
 * budget never counts less than was sent); states the history recorded while the clock was ahead become periods of no
 * length at now (when they held is not known); and the ledger's hours put those requests at now.
 */

/**
 * Brings every instant the mirror wrote from its own clock back to `now` where it lies ahead of it. Call inside a
 * transaction, with no reply being delivered: a claimed reply is its deliverer's (its moves are fenced on
 * `next_attempt_at`), and is left alone.
 */
export async function restampFuture(tx: Tx, now: number): Promise<void> {
  const at = sql`${isoMicros(now)}::timestamptz`;
  // Not least(column, now): least() skips nulls, and would stamp every empty column of the row (deleted_at …) now.
  const restamp = async (table: string, columns: readonly string[]) => {
    const sets = sql.join(
      columns.map((c) => sql`${sql.raw(c)} = case when ${sql.raw(c)} > ${at} then ${at} else ${sql.raw(c)} end`),
      sql`, `,
    );
    const ahead = sql.join(
      columns.map((c) => sql`${sql.raw(c)} > ${at}`),
      sql` or `,
    );
    await tx.execute(sql`update ${sql.raw(table)} set ${sets} where ${ahead}`);
  };
  await restamp('api_requests', ['at']);
  await restamp('list_polls', ['at']);
  await restamp('tickets', [
    'first_seen_at',
    'last_seen_at',
    'detail_synced_at',
    'missing_since',
    'deleted_at',
    'detail_due_since',
    'state_seen_at',
    'detail_retry_after',
  ]);
  await restamp('messages', ['synced_at', 'removed_at']);
  await restamp('attachments', ['synced_at', 'removed_at']);
  await restamp('ticket_history', ['valid_from', 'valid_to', 'changed_after']);
  await restamp('sync_runs', ['started_at', 'finished_at']);
  await restamp('revalidation_learning', ['updated_at']);
  // Replies: a pending one's retry time; a sending one's start and lease, the lease keeping its length (the check of
  // its outcome still waits as long after the POST as it was meant to). Sent ones keep sent_at: final, and read only.
  await tx.execute(sql`
    update reply_outbox set next_attempt_at = ${at}
    where state = 'pending' and claimed_by is null and next_attempt_at > ${at}`);
  await tx.execute(sql`
    update reply_outbox
    set next_attempt_at = ${at} + greatest(interval '0', next_attempt_at - sending_since), sending_since = ${at}
    where state = 'sending' and claimed_by is null and sending_since > ${at}`);
}
