import { queryRows, sql, type Db } from '../connect.ts';

/**
 * Reply rows the deliverer would take at `now` (`lockNextDue`'s condition, without a lock): the daemon's loop asks
 * while it sleeps, and wakes when the number grows — a row inserted, or a retry falling due. Served by the partial
 * index reply_outbox_open_idx.
 */
export async function countDueReplies(db: Db, now: string): Promise<number> {
  const [row] = await queryRows<{ n: number }>(
    db,
    sql`select count(*)::int as n from reply_outbox
        where state in ('pending', 'sending') and (next_attempt_at is null or next_attempt_at <= ${now}::timestamptz)
          and inserted_as = 'request'`,
  );
  return row?.n ?? 0;
}
