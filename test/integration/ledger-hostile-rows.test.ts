import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { queryRows, sql } from '../../src/db/connect.ts';
import { loadSamples } from '../../src/db/repos/ledger.ts';
import { mirrorFigures } from '../../src/db/repos/fleetStatus.ts';
import { requestsPerHour } from '../../src/daemon/statusData.ts';
import { allowedPerDay, budgetAt } from '../../src/sync/budget.ts';
import { mirrorStatus } from '../../src/sync/status.ts';
import { DAY_MS } from '../../src/time.ts';
import { backends, freshPostgres, postgresUrl, type TestDatabase } from '../helpers/db.ts';
import { count, virtualMirror } from '../helpers/mirror.ts';

/**
 * api_requests is the user's table to query, and to write: rows they insert are outside input. Millions of them must
 * not fill the daemon's memory (its budget reads the newest `daily` alone, which is all the budget depends on), and
 * an instant PostgreSQL holds but the mirror does not (`infinity`, a year 3000) must not stop the daemon's start,
 * `status`, the status page or `fleet status`.
 */

const LIMITS = { daily: 1440, minute: 60, reserve: 0.1 };
const NOW = Date.UTC(2026, 0, 5, 12, 0);
const ROWS = 100_000;

/** ROWS requests spread over the 24 h before NOW (the newest at NOW - 1 s), and two dated ahead of any clock. */
async function forge(database: TestDatabase, now: number): Promise<void> {
  await database.db.execute(sql`
    insert into api_requests (at, method, path, status, kind)
    select ${new Date(now - 1000).toISOString()}::timestamptz - (i * interval '1 millisecond' * ${Math.floor((DAY_MS - 2000) / ROWS)}),
           'GET', '/api/v1/tickets', 200, 'list_open'
    from generate_series(0, ${ROWS - 1}) as i`);
  await database.db.execute(sql`
    insert into api_requests (at, method, path, status, kind) values
      ('infinity', 'GET', '/api/v1/tickets', 200, 'list_open'),
      ('3000-01-01T00:00:00Z', 'GET', '/api/v1/tickets', 200, 'list_open')`);
}

describe.each(backends)('rows a user inserts into api_requests, on $name', { timeout: 120_000 }, ({ open }) => {
  let database: TestDatabase;
  beforeEach(async () => {
    database = await open();
  });
  afterEach(() => database.destroy());

  it('the budget reads the newest daily limit of them and is exactly what the whole ledger gives', async () => {
    await forge(database, NOW);
    const samples = await loadSamples(database.db, NOW - DAY_MS, LIMITS);
    expect(samples).toHaveLength(LIMITS.daily);
    // `infinity` reads as the last instant of the year 9999, the newest; the year 3000 before it.
    expect(samples.at(-1)!.at).toBe(Date.UTC(9999, 11, 31, 23, 59, 59, 999) + 1);
    expect(samples.at(-2)!.at).toBe(Date.UTC(3000, 0, 1));
    expect(samples.every((s, i) => i === 0 || s.at >= samples[i - 1]!.at)).toBe(true);

    // The next request may go when the allowance's oldest request of the whole ledger frees: looked up in SQL.
    const budget = budgetAt(LIMITS, samples, NOW);
    expect(budget.dailyLeft).toBe(0);
    const [freesAt] = await queryRows<{ ms: string }>(
      database.db,
      sql`select (extract(epoch from at) * 1000)::bigint as ms from api_requests
          where at > ${new Date(NOW - DAY_MS).toISOString()}::timestamptz and at <= ${new Date(NOW).toISOString()}::timestamptz
          order by at desc offset ${allowedPerDay(LIMITS) - 3} limit 1`,
    );
    expect(budget.nextSlotAt).toBe(Number(freesAt!.ms) + DAY_MS + 1);

    // status and the status page's hourly chart read the same ledger; the chart's 24 clock hours (NOW is one's start)
    // count what lies within them, not what lies ahead of the clock.
    const status = await mirrorStatus(database.db, { dailyLimit: LIMITS.daily, minuteLimit: LIMITS.minute, reserve: LIMITS.reserve }, NOW);
    expect(status.budget.dailyLeft).toBe(0);
    const hours = await requestsPerHour(database.db, NOW);
    const inChart = await count(
      database.db,
      sql`select count(*)::int as n from api_requests where at >= ${new Date(hours[0]!.start).toISOString()}::timestamptz and at <= ${new Date(NOW).toISOString()}::timestamptz`,
    );
    expect(inChart).toBeGreaterThan(ROWS * 0.9);
    expect(hours.reduce((n, h) => n + h.requests, 0)).toBe(inChart);
  });

  it('a row dated infinity is restamped to now at the next pass, and the mirror goes on', async () => {
    const m = await virtualMirror(database);
    try {
      await m.runFor(5 * 60_000);
      await database.db.execute(sql`insert into api_requests (at, method, path, status, kind) values ('infinity', 'GET', '/api/v1/tickets', 200, 'list_open')`);
      await m.restart();
      const before = await count(database.db, sql`select count(*)::int as n from api_requests`);
      await m.runFor(60_000);
      expect(await count(database.db, sql`select count(*)::int as n from api_requests where not isfinite(at)`)).toBe(0);
      expect(await count(database.db, sql`select count(*)::int as n from api_requests where at > ${new Date(m.clock.now()).toISOString()}::timestamptz`)).toBe(0);
      // It counts as a request sent (the safe side), and the passes after it sent requests again.
      expect(await count(database.db, sql`select count(*)::int as n from api_requests`)).toBeGreaterThan(before);
    } finally {
      await m.close();
    }
  });
});

describe.skipIf(!postgresUrl)('rows a user inserts into an account\'s api_requests, in fleet status', () => {
  it('are read the newest daily limit at most, and an instant ahead of any clock does not fail the batch', async () => {
    const database = await freshPostgres();
    try {
      await forge(database, NOW);
      const [{ schema }] = (await queryRows<{ schema: string }>(database.db, sql`select current_schema() as schema`)) as [{ schema: string }];
      const figures = await mirrorFigures(database.db, [{ schema, minuteLimit: LIMITS.minute, dailyLimit: LIMITS.daily }], NOW);
      const samples = figures.get(schema)!.samples;
      expect(samples).toHaveLength(LIMITS.daily);
      // Ahead of the clock by 20 days at most (int4 milliseconds), the newest still.
      expect(samples.at(-1)!.at).toBe(NOW - DAY_MS + 20 * DAY_MS);
      // The rest are the ledger's newest, as loadSamples reads them.
      const single = await loadSamples(database.db, NOW - DAY_MS, LIMITS);
      expect(samples.slice(0, -2).map((s) => s.at)).toEqual(single.slice(0, -2).map((s) => s.at));
      expect(budgetAt(LIMITS, samples, NOW).nextSlotAt).toBe(budgetAt(LIMITS, single, NOW).nextSlotAt);
    } finally {
      await database.destroy();
    }
  });
});
