import { LIST_NAMES, type ListName } from '../../api/endpoints.ts';
import type { ListState } from '../../sync/planner.ts';
import { isoMicros } from '../../time.ts';
import { queryRows, sql, type Tx } from '../connect.ts';

/**
 * What the planner needs to know of the mirror, and the tickets it picks, each in one query. The orderings are the
 * planner's policy (see sync/planner.ts); they live in SQL so that a mirror of any size is never loaded whole.
 */

const FETCHABLE = sql`deleted_at is null and (detail_retry_after is null or detail_retry_after <= `;

export interface WorkCounts {
  due: number;
  backfill: number;
}

export async function countWork(tx: Tx, now: number): Promise<WorkCounts> {
  const at = isoMicros(now);
  const [row] = await queryRows<{ due: number; backfill: number }>(
    tx,
    sql`select
      count(*) filter (where detail_due_since is not null and (detail_retry_after is null or detail_retry_after <= ${at}::timestamptz))::int as due,
      count(*) filter (where detail_synced_at is null and detail_due_since is null and deleted_at is null
        and (detail_retry_after is null or detail_retry_after <= ${at}::timestamptz))::int as backfill
      from tickets`,
  );
  return { due: row?.due ?? 0, backfill: row?.backfill ?? 0 };
}

/** Tickets whose detail a list asked for, oldest request first. */
export async function pickDue(tx: Tx, now: number, limit: number): Promise<string[]> {
  if (limit <= 0) return [];
  const rows = await queryRows<{ id: string }>(
    tx,
    sql`select id from tickets where detail_due_since is not null
        and (detail_retry_after is null or detail_retry_after <= ${isoMicros(now)}::timestamptz)
        order by detail_due_since, id limit ${limit}`,
  );
  return rows.map((r) => r.id);
}

/** Never-fetched tickets: open before resolved, newest first. */
export async function pickBackfill(tx: Tx, now: number, limit: number): Promise<string[]> {
  if (limit <= 0) return [];
  const rows = await queryRows<{ id: string }>(
    tx,
    sql`select id from tickets where detail_synced_at is null and detail_due_since is null and ${FETCHABLE}${isoMicros(now)}::timestamptz)
        order by in_open desc, in_self desc, in_unassigned desc, created_at desc nulls last, id limit ${limit}`,
  );
  return rows.map((r) => r.id);
}

/**
 * Details to re-read for changes no list shows. The score is staleness over quietness: hours since the detail was read,
 * divided by hours since the ticket last moved (plus one), so a ticket active an hour ago is re-read long before one
 * quiet for a month; tickets in no open list count a tenth.
 */
export async function pickRevalidate(tx: Tx, now: number, limit: number): Promise<string[]> {
  if (limit <= 0) return [];
  const at = isoMicros(now);
  const rows = await queryRows<{ id: string }>(
    tx,
    sql`select id from tickets
        where detail_synced_at is not null and detail_due_since is null and ${FETCHABLE}${at}::timestamptz)
        order by
          extract(epoch from (${at}::timestamptz - detail_synced_at))
          / (extract(epoch from (${at}::timestamptz - greatest(coalesce(last_contact_at, created_at), coalesce(updated_at, created_at), created_at))) / 3600.0 + 1.0)
          * (case when in_open or in_self or in_unassigned then 1.0 else 0.1 end) desc,
          id
        limit ${limit}`,
  );
  return rows.map((r) => r.id);
}

/** Each list's last successful poll and its recent rate of change (over the last `windowHours`). */
export async function listStates(tx: Tx, now: number, windowHours = 6): Promise<Record<ListName, ListState>> {
  const since = isoMicros(now - windowHours * 3_600_000);
  const rows = await queryRows<{ list: ListName; last_ms: string | null; changes: number; first_ms: string | null }>(
    tx,
    sql`select list,
          (extract(epoch from max(at)) * 1000)::bigint as last_ms,
          (coalesce(sum(changes) filter (where at > ${since}::timestamptz), 0))::int as changes,
          (extract(epoch from min(at) filter (where at > ${since}::timestamptz)) * 1000)::bigint as first_ms
        from list_polls group by list`,
  );
  const out = {} as Record<ListName, ListState>;
  for (const l of LIST_NAMES) out[l] = { lastPolledAt: null, changesPerHour: 0 };
  for (const r of rows) {
    if (!(r.list in out)) continue;
    const first = r.first_ms === null ? null : Number(r.first_ms);
    // The first poll of a list finds every ticket "new": it says nothing of the rate of change.
    const hours = first === null ? 0 : Math.max(1, (now - first) / 3_600_000);
    out[r.list] = { lastPolledAt: r.last_ms === null ? null : Number(r.last_ms), changesPerHour: hours > 0 ? r.changes / hours : 0 };
  }
  return out;
}

/** Requests by kind in the last 24 h and last hour, from the ledger. */
export async function requestCounts(tx: Tx, now: number): Promise<{ liveDetailsLastDay: number; backgroundLastDay: number; backgroundLastHour: number }> {
  const [row] = await queryRows<{ live: number; bg_day: number; bg_hour: number }>(
    tx,
    sql`select
      count(*) filter (where kind = 'detail')::int as live,
      count(*) filter (where kind in ('backfill', 'revalidate'))::int as bg_day,
      count(*) filter (where kind in ('backfill', 'revalidate') and at > ${isoMicros(now - 3_600_000)}::timestamptz)::int as bg_hour
      from api_requests where at > ${isoMicros(now - 86_400_000)}::timestamptz`,
  );
  return { liveDetailsLastDay: row?.live ?? 0, backgroundLastDay: row?.bg_day ?? 0, backgroundLastHour: row?.bg_hour ?? 0 };
}
