import { queryRows, sql, type Tx } from '../connect.ts';

export interface RunTotals {
  requests: number;
  ticketsChanged: number;
  detailsFetched: number;
  error: string | null;
}

/** Records one sync pass in `sync_runs`. */
export async function insertRun(tx: Tx, startedAt: string, finishedAt: string, totals: RunTotals): Promise<number> {
  const [row] = await queryRows<{ id: number }>(
    tx,
    sql`insert into sync_runs (started_at, finished_at, requests, tickets_changed, details_fetched, error)
        values (${startedAt}::timestamptz, ${finishedAt}::timestamptz, ${totals.requests}, ${totals.ticketsChanged},
          ${totals.detailsFetched}, ${totals.error})
        returning id`,
  );
  return Number(row!.id);
}
