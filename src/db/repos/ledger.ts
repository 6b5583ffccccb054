import type { SQL } from 'drizzle-orm';
import type { LedgerEntry, LedgerStart } from '../../api/client.ts';
import type { LedgerSample } from '../../model/ledgerSample.ts';
import { DAY_MS, isoMicros } from '../../time.ts';
import { queryRows, sql, type Tx } from '../connect.ts';

/** One row per request sent, failures included: the budget is computed from these rows. */
export async function insertRequest(tx: Tx, e: LedgerEntry): Promise<void> {
  await tx.execute(sql`
    insert into api_requests (at, method, path, status, duration_ms, kind, ratelimit_remaining)
    values (${isoMicros(e.at)}::timestamptz, ${e.method}, ${e.path}, ${e.status}, ${e.durationMs}, ${e.kind}, ${e.ratelimitRemaining})`);
}

/**
 * A request about to be sent: its row with no outcome yet (status and duration null), so that a crash mid-request still
 * leaves it counted. `settleRequest` fills in the outcome.
 */
export async function openRequest(tx: Tx, e: LedgerStart): Promise<number> {
  const [row] = await queryRows<{ id: string | number }>(
    tx,
    sql`insert into api_requests (at, method, path, kind) values (${isoMicros(e.at)}::timestamptz, ${e.method}, ${e.path}, ${e.kind}) returning id`,
  );
  return Number(row!.id);
}

/** The outcome of the request `openRequest` recorded. */
export async function settleRequest(tx: Tx, id: number, e: LedgerEntry): Promise<void> {
  await tx.execute(sql`
    update api_requests set status = ${e.status}, duration_ms = ${e.durationMs}, ratelimit_remaining = ${e.ratelimitRemaining}
    where id = ${id}`);
}

/**
 * Forgets the row of a request that provably never left this host (connection refused, host not found): it cost the
 * token nothing, and the contract's ledger has one row per request sent. The log tells of the attempt.
 */
export async function dropRequest(tx: Tx, id: number): Promise<void> {
  await tx.execute(sql`delete from api_requests where id = ${id} and status is null`);
}

/**
 * The ledger's samples since `since` (epoch ms), oldest first, with those it lacks (see missingFromLedger);
 * `onMissing` hears how many those are.
 */
export async function loadSamples(
  tx: Tx,
  since: number,
  limits: { minute: number; daily: number },
  onMissing?: (count: number) => void,
): Promise<LedgerSample[]> {
  // No 24 h holds more than the daily limit: beyond it the budget is spent either way, and when the next request may go
  // depends on the newest `daily` requests alone (budget.ts), so only those are read — a user's millions of rows would
  // otherwise fill the daemon's memory. (What other clients of the token use is estimated from the rows read; with more
  // rows than the limit, from the newest only. The count used is then the limit, not the rows.)
  // (A row ahead of the clock is restamped to now as a clock set back: engine.ts. None lies beyond the year 9999:
  // schema.ts, instantsInSpan.)
  // An instant is cut to its millisecond, not rounded: 11:59:59.9999 is sent in the hour of 11:00 (the planner's
  // buckets), and the budget's slot after a sample is 1 ms after its expiry anyway.
  const rows = await queryRows<{ at_ms: string | number; remaining: number | null; status: number | null; kind: string | null }>(
    tx,
    sql`select floor(extract(epoch from at) * 1000)::bigint as at_ms, ratelimit_remaining as remaining, status, kind
        from (select at, id, ratelimit_remaining, status, kind from api_requests where at > ${isoMicros(since)}::timestamptz
              order by at desc, id desc limit ${limits.daily}) newest
        order by at, id`,
  );
  const samples: LedgerSample[] = rows.map((r) => ({
    at: Number(r.at_ms),
    remaining: r.remaining,
    limit: r.remaining === null ? null : limits.minute,
    status: r.status,
    kind: r.kind,
  }));
  const missing = await missingFromLedger(tx, since, limits.minute);
  if (missing.length === 0) return samples;
  // Of the missing too, those that free last are kept (the safe side), and the daily limit of all.
  let room = limits.daily;
  for (const m of missing.sort((a, b) => b.at - a.at)) {
    const count = Math.min(m.count, room);
    room -= count;
    for (let i = 0; i < count; i++) samples.push({ at: m.at, remaining: null, limit: null, status: null });
  }
  onMissing?.(limits.daily - room);
  return samples.sort((a, b) => a.at - b.at).slice(-limits.daily);
}

/**
 * Requests the passes since `since` recorded in `sync_runs` that the ledger no longer holds: a user's TRUNCATE or DELETE
 * of api_requests (it is theirs to query, and to clean up) made a restarted daemon believe the day's budget unspent, and
 * spend it again. Each pass's shortfall counts as sent at its end — what frees last, so the budget errs on the safe
 * side. (A pass's ledger rows lie within its start and end; a clock set back restamps both tables alike. The passes are
 * looked up by their start, which the index has: none lasts a day.) sync_runs is the user's table too: a row claiming
 * more than a pass of its length could send at `minuteLimit` (and one minute more) counts that many, and one that ends
 * after the window's end (`since` + 24 h) none, so a forged row cannot hold the budget beyond a real pass's worth (in
 * numeric: no minute limit overflows it); loadSamples keeps at most the daily limit of them in all, so forged rows
 * cannot fill memory either.
 */
async function missingFromLedger(tx: Tx, since: number, minuteLimit: number): Promise<Array<{ at: number; count: number }>> {
  const rows = await queryRows<{ at_ms: string | number; missing: number }>(
    tx,
    sql`select (extract(epoch from r.finished_at) * 1000)::bigint as at_ms,
          least(r.requests::numeric, (ceil(extract(epoch from (r.finished_at - r.started_at)) / 60) + 1) * ${minuteLimit}::numeric)::int
            - (select count(*) from api_requests a where a.at >= r.started_at and a.at <= r.finished_at)::int as missing
        from sync_runs r
        where r.started_at > ${isoMicros(since - DAY_MS)}::timestamptz and r.finished_at > ${isoMicros(since)}::timestamptz
          and r.finished_at <= ${isoMicros(since + DAY_MS)}::timestamptz and r.finished_at >= r.started_at and r.requests > 0`,
  );
  return rows.filter((r) => r.missing > 0).map((r) => ({ at: Number(r.at_ms), count: r.missing }));
}

/**
 * Requests after `since` up to `until` (epoch ms; a row ahead of the clock is not an hour of the chart) by clock hour
 * (UTC), each hour that has any: its start, its requests, how many
 * failed — a 429, a 5xx, no answer, or a row opened before `unsettledBefore` and never settled (its process died
 * mid-request). A row opened since then without an outcome is in flight, not failed.
 */
export function requestsByHour(
  tx: Tx,
  since: number,
  until: number,
  unsettledBefore: number,
): Promise<Array<{ hour_ms: string | number; requests: number; failed: number }>> {
  return queryRows(
    tx,
    sql`select (extract(epoch from date_trunc('hour', at, 'UTC')) * 1000)::bigint as hour_ms,
          count(*)::int as requests,
          count(*) filter (where status = 429 or status >= 500
            or (status is null and (duration_ms is not null or at < ${isoMicros(unsettledBefore)}::timestamptz)))::int as failed
        from api_requests where at > ${isoMicros(since)}::timestamptz and at <= ${isoMicros(until)}::timestamptz
        group by 1`,
  );
}

/**
 * The newest id api_requests' sequence gave (0 when none): the newest row a process recorded. A row inserted with an id
 * of its own (by hand) does not move the sequence: counted by max(id), one with the highest id there is made every
 * request after it look older, and read back into a JavaScript number, out of bigint's range (every pass then failed).
 */
const SEQUENCE_LAST = sql`coalesce(pg_sequence_last_value(pg_get_serial_sequence('api_requests', 'id')::regclass), 0)`;

/** The id of the newest ledger row a process recorded (see SEQUENCE_LAST), 0 when there is none. */
export async function newestRequestId(tx: Tx): Promise<number> {
  const [row] = await queryRows<{ id: string | number | null }>(tx, sql`select ${SEQUENCE_LAST} as id`);
  return Number(row?.id ?? 0);
}

/** What the ledger gained after a row: its newest id then, and whether any of the rows is another process's. */
export interface LedgerGained {
  latest: number;
  others: boolean;
}

/**
 * What the ledger gained after row `after` (an id), as one JSON value `[latest, others]` for a statement to select
 * (plannerInputs reads it with the plan's inputs): its newest id then (null when nothing), and how many of the rows are
 * not among `own` — another process (a `sync`, `check` or `reply` beside `run`) spent the token's budget. Only the rows
 * the sequence numbered count (SEQUENCE_LAST): one inserted by hand is no process's request.
 */
export function ledgerGainedSql(after: number, own: readonly number[]): SQL {
  return sql`(select json_build_array(max(id), count(*) filter (where id not in (select jsonb_array_elements_text(${JSON.stringify(own)}::jsonb)::bigint)))
      from api_requests where id > ${after} and id <= ${SEQUENCE_LAST})`;
}

/** ledgerGainedSql's value read. */
export function ledgerGainedOf(after: number, value: [string | number | null, number] | null | undefined): LedgerGained {
  return { latest: Number(value?.[0] ?? after), others: (value?.[1] ?? 0) > 0 };
}
