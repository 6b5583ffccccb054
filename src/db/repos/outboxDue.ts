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

/**
 * When the deliverer would next find a reply row to take (epoch ms; now or earlier when one is due already), or null
 * when none waits: a fleet worker queues an account's next pass no later than this, as the daemon's loop wakes for it.
 * A row a person set to `infinity` never falls due, and one set to `-infinity` is due now: no instant beyond the
 * integer's range is computed.
 */
export async function nextReplyDueAt(db: Db): Promise<number | null> {
  const [row] = await queryRows<{ any_now: boolean | null; at_ms: string | number | null }>(
    db,
    sql`select bool_or(next_attempt_at is null or next_attempt_at = '-infinity') as any_now,
          (extract(epoch from min(next_attempt_at) filter (where isfinite(next_attempt_at))) * 1000)::bigint as at_ms
        from reply_outbox where state in ('pending', 'sending') and inserted_as = 'request'`,
  );
  if (row?.any_now) return 0;
  return row?.at_ms == null ? null : Number(row.at_ms);
}
