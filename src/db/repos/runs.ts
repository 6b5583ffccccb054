import { queryRows, sql, type Tx } from '../connect.ts';
import { isoMicros } from '../../time.ts';

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

export interface RunRow {
  started_at: string;
  finished_at: string | null;
  requests: number;
  details_fetched: number;
  error: string | null;
}

/**
 * The latest pass up to `now`, or undefined before the first. One dated ahead of the clock (a row written by hand) is
 * not the latest: it would hide every real pass until then.
 */
export async function lastRun(tx: Tx, now: number): Promise<RunRow | undefined> {
  const [row] = await queryRows<RunRow>(
    tx,
    sql`select started_at, finished_at, requests, details_fetched, error from sync_runs
        where started_at <= ${isoMicros(now)}::timestamptz order by started_at desc, id desc limit 1`,
  );
  return row;
}

/** The last `limit` passes that recorded an error, newest first. */
export function runErrors(tx: Tx, limit: number): Promise<Array<{ started_at: string; error: string }>> {
  return queryRows(tx, sql`select started_at, error from sync_runs where error is not null order by started_at desc, id desc limit ${limit}`);
}
