import { isoMicros } from '../../time.ts';
import { queryRows, sql, type Tx } from '../connect.ts';

/** The counts `status` and the status page show (`mirrorStatus`), and the health check's probe. */

type TicketCount = 'tickets' | 'open' | 'self' | 'unassigned' | 'resolved' | 'missing' | 'deleted' | 'live' | 'fetched' | 'due';

/** One row of counts over `tickets` (see the query for each); instants as PostgreSQL writes them. */
export type TicketCounts = Record<TicketCount, number> & {
  oldest_due: string | null;
  /** The oldest detail of an open ticket. */
  oldest_open: string | null;
  /** Median age of open tickets' details at `now`, minutes. */
  median_open_age: number | string | null;
};

/** The backfill's "all": tickets not deleted. Shared with the fleet's per-account counts (repos/fleetStatus.ts). */
export const LIVE = sql`deleted_at is null`;
/**
 * The backfill's "fetched of live": the same filter and one more condition, so it can never exceed live (it once
 * counted deleted tickets too, and the demo said "212 of 211").
 */
export const FETCHED = sql`deleted_at is null and detail_synced_at is not null`;

export async function ticketCounts(tx: Tx, now: number): Promise<TicketCounts> {
  const [row] = await queryRows<TicketCounts>(
    tx,
    sql`select count(*)::int as tickets,
      count(*) filter (where in_open and deleted_at is null)::int as open,
      count(*) filter (where in_self and deleted_at is null)::int as self,
      count(*) filter (where in_unassigned and deleted_at is null)::int as unassigned,
      count(*) filter (where in_resolved and deleted_at is null)::int as resolved,
      count(*) filter (where missing_since is not null and deleted_at is null)::int as missing,
      count(*) filter (where deleted_at is not null)::int as deleted,
      count(*) filter (where ${LIVE})::int as live,
      count(*) filter (where ${FETCHED})::int as fetched,
      count(*) filter (where detail_due_since is not null)::int as due,
      min(detail_due_since) as oldest_due,
      min(detail_synced_at) filter (where in_open and deleted_at is null) as oldest_open,
      (percentile_cont(0.5) within group (order by greatest(0, extract(epoch from (${isoMicros(now)}::timestamptz - detail_synced_at))) / 60)
        filter (where in_open and deleted_at is null and detail_synced_at is not null)) as median_open_age
      from tickets`,
  );
  return row!;
}

export interface RowCounts {
  /** Messages and attachments not removed. */
  messages: number;
  attachments: number;
  /** Outbox rows pending or sending. */
  pending: number;
  failed: number;
}

export async function rowCounts(tx: Tx): Promise<RowCounts> {
  const [row] = await queryRows<RowCounts>(
    tx,
    sql`select (select count(*)::int from messages where removed_at is null) as messages,
      (select count(*)::int from attachments where removed_at is null) as attachments,
      (select count(*)::int from reply_outbox where state in ('pending', 'sending')) as pending,
      (select count(*)::int from reply_outbox where state = 'failed') as failed`,
  );
  return row!;
}

/** The cheapest statement there is: resolves once the database answers. */
export async function ping(tx: Tx): Promise<void> {
  await queryRows(tx, sql`select 1`);
}
