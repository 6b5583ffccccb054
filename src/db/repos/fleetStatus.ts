import type { SQL } from 'drizzle-orm';
import type { LedgerSample } from '../../model/ledgerSample.ts';
import { DAY_MS, isoMicros } from '../../time.ts';
import { queryRows, quoteIdent, sql, type Tx } from '../connect.ts';
import { FETCHED, LIVE } from './status.ts';

/**
 * What `fleet status`, the fleet's /metrics and its status page read of each account's own mirror (its schema): the
 * ledger of the last 24 h (for sync/budget.ts), the backfill's counts (the predicates of repos/status.ts) and the last
 * pass without an error. Many accounts are read in one statement — a UNION ALL of one branch per schema, each naming
 * its tables — so that 1,000 accounts cost ~20 statements, not thousands.
 *
 * The ledger travels as three int4 arrays per account, not a row per request: up to 1,440 rows a day for each of 1,000
 * accounts would be 1.4 million row objects to build. It is still most of the cost: see the README (fleet status).
 */

export interface MirrorFigures {
  /** The ledger since 24 h before `now`, oldest first: what `loadSamples` returns for the same window. */
  samples: LedgerSample[];
  /** Tickets not deleted, and those of them with a detail (repos/status.ts's LIVE and FETCHED). */
  live: number;
  fetched: number;
  /** When the newest pass that recorded no error finished (canonical as PostgreSQL writes it), or null. */
  lastCleanPassAt: string | null;
}

/** Of `schemas`, those holding a migrated mirror (the three tables read here exist), in the order given. */
export async function migratedSchemas(tx: Tx, schemas: readonly string[]): Promise<Set<string>> {
  if (schemas.length === 0) return new Set();
  const rows = await queryRows<{ schema: string }>(
    tx,
    sql`select s as schema from unnest(${`{${schemas.join(',')}}`}::text[]) as s
        where to_regclass(quote_ident(s) || '.tickets') is not null
          and to_regclass(quote_ident(s) || '.api_requests') is not null
          and to_regclass(quote_ident(s) || '.sync_runs') is not null`,
  );
  return new Set(rows.map((r) => r.schema));
}

interface FiguresRow {
  schema: string;
  live: number;
  fetched: number;
  /** int4[] literals, `{1,2,NULL}`: see intList. */
  at_ms: string;
  remaining: string;
  status: string;
  last_clean: string | null;
}

/**
 * The figures of each schema (each must be migrated: see migratedSchemas), by schema, in one statement. `minuteLimit`
 * gives each sample its limit, as loadSamples does; of the ledger, as there, only the newest `dailyLimit` rows are read.
 */
export async function mirrorFigures(
  tx: Tx,
  accounts: ReadonlyArray<{ schema: string; minuteLimit: number; dailyLimit: number }>,
  now: number,
): Promise<Map<string, MirrorFigures>> {
  const result = new Map<string, MirrorFigures>();
  if (accounts.length === 0) return result;
  const sinceMs = Math.floor(now) - DAY_MS;
  const since = isoMicros(sinceMs);
  const branches = accounts.map(({ schema, dailyLimit }) => figuresOf(schema, since, dailyLimit));
  const rows = await queryRows<FiguresRow>(tx, sql.join(branches, sql` union all `));
  const limits = new Map(accounts.map((a) => [a.schema, a.minuteLimit]));
  for (const r of rows) {
    const minuteLimit = limits.get(r.schema)!;
    const [at, remainings, statuses] = [intList(r.at_ms), intList(r.remaining), intList(r.status)];
    const samples: LedgerSample[] = new Array(at.length);
    for (let i = 0; i < at.length; i++) {
      // As loadSamples: the limit of the minute is the configured one whenever the server said what remains.
      const remaining = remainings[i] ?? null;
      samples[i] = { at: sinceMs + at[i]!, remaining, limit: remaining === null ? null : minuteLimit, status: statuses[i] ?? null };
    }
    result.set(r.schema, { samples, live: r.live, fetched: r.fetched, lastCleanPassAt: r.last_clean });
  }
  return result;
}

/**
 * An int4[] as PostgreSQL writes it (`{1,-2,NULL}`). The arrays come as text and are split here: the driver's own
 * array parser took 5x as long, seconds for a fleet's ledgers.
 */
export function intList(literal: string): Array<number | null> {
  if (literal.length <= 2) return [];
  const parts = literal.slice(1, -1).split(',');
  const out: Array<number | null> = new Array(parts.length);
  for (let i = 0; i < parts.length; i++) out[i] = parts[i] === 'NULL' ? null : Number(parts[i]);
  return out;
}

/** One schema's branch; its name is a checked identifier, quoted anyway. */
function figuresOf(schema: string, since: string, dailyLimit: number): SQL {
  const s = sql.raw(quoteIdent(schema));
  // The ledger's window, order and cap are loadSamples's (at > since, the newest `dailyLimit`, by at then id). Each
  // instant travels as whole ms after `since` (an int4: a day is 86.4 million), rounded half up from its microseconds
  // as loadSamples's ::bigint rounds: date_part and integer arithmetic instead of extract's numeric, which made this
  // statement three times slower. A row ahead of the clock (the account's next pass restamps it, as a clock set back)
  // reads as at most 20 days ahead, which int4 holds: a year 3000, inserted by hand, cannot fail the statement of every
  // account in the batch.
  return sql`(select ${schema}::text as schema, t.live, t.fetched, l.at_ms, l.remaining, l.status, r.last_clean
    from (select count(*) filter (where ${LIVE})::int as live, count(*) filter (where ${FETCHED})::int as fetched
          from ${s}.tickets) t,
      (select coalesce(array_agg(at_ms), '{}')::text as at_ms, coalesce(array_agg(remaining), '{}')::text as remaining,
              coalesce(array_agg(status), '{}')::text as status
         from (select ((round(date_part('epoch', least(at, ${since}::timestamptz + interval '20 days') - ${since}::timestamptz)
                        * 1000000)::bigint + 500) / 1000)::int as at_ms, ratelimit_remaining as remaining, status
                 from (select at, id, ratelimit_remaining, status from ${s}.api_requests where at > ${since}::timestamptz
                       order by at desc, id desc limit ${dailyLimit}) newest
                 order by at, id) w) l,
      (select (select finished_at::text from ${s}.sync_runs where error is null and finished_at is not null
                 and started_at <= ${since}::timestamptz + interval '1 day'
               order by started_at desc, id desc limit 1) as last_clean) r)`;
}

/**
 * Jobs of `queue` that are due (created or retry, start_after reached) and not started, and how long the oldest has
 * waited (seconds, at the database's now): what pg-boss's getQueueSize cannot tell — its queued count includes every
 * account's next pass, queued for later. Reads pg-boss 10's job table (`<jobsSchema>.job`), as repos/fleetJobs.ts does.
 */
export async function dueJobs(tx: Tx, o: { jobsSchema: string; queue: string }): Promise<{ due: number; oldestWaitSeconds: number | null }> {
  const [row] = await queryRows<{ due: number; oldest: number | null }>(
    tx,
    sql`select count(*)::int as due, extract(epoch from now() - min(start_after))::float8 as oldest
        from ${sql.raw(`${quoteIdent(o.jobsSchema)}.job`)}
        where name = ${o.queue} and state < 'active' and start_after <= now()`,
  );
  return { due: row?.due ?? 0, oldestWaitSeconds: row?.oldest ?? null };
}

/** The accounts (singleton keys) with an active job in `queue`, and when it started (canonical as PostgreSQL writes it). */
export async function activeJobs(tx: Tx, o: { jobsSchema: string; queue: string }): Promise<Map<string, string>> {
  const rows = await queryRows<{ account: string; started: string }>(
    tx,
    sql`select singleton_key as account, started_on::text as started from ${sql.raw(`${quoteIdent(o.jobsSchema)}.job`)}
        where name = ${o.queue} and state = 'active' and singleton_key is not null`,
  );
  return new Map(rows.map((r) => [r.account, r.started]));
}

/** Whether the control schema (the search_path of the fleet database) has its accounts table: a fleet exists there. */
export async function fleetExists(tx: Tx): Promise<boolean> {
  const [row] = await queryRows<{ exists: boolean }>(tx, sql`select to_regclass('accounts') is not null as exists`);
  return row?.exists === true;
}
