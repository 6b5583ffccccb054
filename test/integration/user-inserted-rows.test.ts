import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { queryRows, sql } from '../../src/db/connect.ts';
import { loadSamples } from '../../src/db/repos/ledger.ts';
import { mirrorFigures } from '../../src/db/repos/fleetStatus.ts';
import { recentErrors, requestsPerHour } from '../../src/daemon/statusData.ts';
import { allowedPerDay, budgetAt } from '../../src/sync/budget.ts';
import { formatStatus, mirrorStatus } from '../../src/sync/status.ts';
import { DAY_MS } from '../../src/time.ts';
import { backends, freshPostgres, postgresUrl, type TestDatabase } from '../helpers/db.ts';
import { count, virtualMirror } from '../helpers/mirror.ts';

/**
 * The mirror's tables are the user's to query, and to write: rows they insert are outside input. Millions of ledger
 * rows must not fill the daemon's memory (its budget reads the newest `daily` alone, which is all the budget depends
 * on); an instant PostgreSQL holds but the mirror cannot read (`infinity`, a date BC, a year 20000) is refused at the
 * insert, and one the mirror can read but lies ahead of the clock (a year 3000) must not stop the daemon, `status`,
 * the status page, `fleet status`, or any list's polls.
 */

const LIMITS = { daily: 1440, minute: 60, reserve: 0.1 };
const NOW = Date.UTC(2026, 0, 5, 12, 0);
const ROWS = 100_000;
const YEAR_3000 = Date.UTC(3000, 0, 1);

/** ROWS requests spread over the 24 h before `now` (the newest at `now` - 1 s), and one dated the year 3000. */
async function forge(database: TestDatabase, now: number): Promise<void> {
  await database.db.execute(sql`
    insert into api_requests (at, method, path, status, kind)
    select ${new Date(now - 1000).toISOString()}::timestamptz - (i * interval '1 millisecond' * ${Math.floor((DAY_MS - 2000) / ROWS)}),
           'GET', '/api/v1/tickets', 200, 'list_open'
    from generate_series(0, ${ROWS - 1}) as i`);
  await database.db.execute(sql`
    insert into api_requests (at, method, path, status, kind) values (${new Date(YEAR_3000).toISOString()}::timestamptz, 'GET', '/api/v1/tickets', 200, 'list_open')`);
}

/** Instant columns the check covers, by table, each with a statement that writes `instant` into one (T1 exists). */
const OUT_OF_SPAN: Array<{ table: string; insert: (instant: string) => ReturnType<typeof sql> }> = [
  { table: 'api_requests', insert: (v) => sql`insert into api_requests (at, method, path) values (${v}::timestamptz, 'GET', '/x')` },
  { table: 'list_polls', insert: (v) => sql`insert into list_polls (list, at, items, changes) values ('open', ${v}::timestamptz, 1, 0)` },
  { table: 'sync_runs', insert: (v) => sql`insert into sync_runs (started_at, finished_at) values (now(), ${v}::timestamptz)` },
  { table: 'revalidation_learning', insert: (v) => sql`insert into revalidation_learning values (99, 1, 1, 1, ${v}::timestamptz)` },
  { table: 'tickets', insert: (v) => sql`update tickets set detail_synced_at = ${v}::timestamptz where id = 'T1'` },
  { table: 'tickets', insert: (v) => sql`update tickets set created_at = ${v}::timestamptz where id = 'T1'` },
  { table: 'messages', insert: (v) => sql`insert into messages (id, ticket_id, created_at) values ('M9', 'T1', ${v}::timestamptz)` },
  { table: 'attachments', insert: (v) => sql`insert into attachments (id, ticket_id, synced_at) values ('A9', 'T1', ${v}::timestamptz)` },
  {
    table: 'ticket_history',
    insert: (v) => sql`insert into ticket_history (ticket_id, in_open, in_self, in_unassigned, in_resolved, valid_from, valid_to)
      values ('T1', true, false, false, false, now(), ${v}::timestamptz)`,
  },
];

const CHECKED_TABLES = [...new Set(OUT_OF_SPAN.map((c) => c.table))];

describe.each(backends)('rows a user inserts, on $name', { timeout: 120_000 }, ({ open }) => {
  let database: TestDatabase;
  beforeEach(async () => {
    database = await open();
    await database.db.execute(sql`insert into tickets (id, first_seen_at, last_seen_at) values ('T1', now(), now())`);
  });
  afterEach(() => database.destroy());

  it('an instant outside the years 0001–9999 is refused at the insert, naming the table; the bounds are allowed', async () => {
    for (const { table, insert } of OUT_OF_SPAN) {
      for (const instant of ['infinity', '-infinity', '0044-03-15 00:00:00+00 BC', '20000-01-01T00:00:00Z']) {
        await expect(database.db.execute(insert(instant)), `${table} ${instant}`).rejects.toMatchObject({
          cause: expect.objectContaining({ message: expect.stringContaining(`${table}_instants_check`) }),
        });
      }
    }
    for (const { table, insert } of OUT_OF_SPAN) {
      await expect(database.db.execute(insert('9999-12-31T23:59:59.999999Z')), table).resolves.toBeDefined();
    }
  });

  it('rows written out of the span before the check existed are brought into it by the migration', async () => {
    for (const table of CHECKED_TABLES) await database.db.execute(sql.raw(`alter table ${table} drop constraint ${table}_instants_check`));
    await database.db.execute(sql`insert into api_requests (at, method, path) values ('infinity', 'GET', '/x'), ('-infinity', 'GET', '/y')`);
    await database.db.execute(sql`insert into list_polls (list, at, items, changes) values ('open', 'infinity', 1, 0)`);
    await database.db.execute(sql`update tickets set detail_synced_at = '-infinity', detail_retry_after = 'infinity', created_at = '20000-01-01T00:00:00Z'`);
    await database.db.execute(sql`delete from __ticket_mirror_migrations where id = (select max(id) from __ticket_mirror_migrations)`);
    const [before] = await queryRows<{ now: string }>(database.db, sql`select now()::text as now`);
    await database.migrate();

    const constraints = await queryRows<{ name: string }>(
      database.db,
      sql`select conname as name from pg_constraint where conname like '%instants_check' and connamespace = current_schema()::regnamespace order by 1`,
    );
    expect(constraints.map((c) => c.name)).toEqual(CHECKED_TABLES.map((t) => `${t}_instants_check`).sort());
    const [api] = await queryRows<{ first: string; ahead: number }>(
      database.db,
      sql`select min(at) = '0001-01-01T00:00:00Z' as first, count(*) filter (where at >= ${before!.now}::timestamptz and at <= now())::int as ahead
          from api_requests`,
    );
    expect(api).toEqual({ first: true, ahead: 1 });
    const [ticket] = await queryRows<{ synced: boolean; retry: boolean; created: boolean }>(
      database.db,
      sql`select detail_synced_at = '0001-01-01T00:00:00Z' as synced, detail_retry_after <= now() as retry, created_at <= now() as created from tickets`,
    );
    expect(ticket).toEqual({ synced: true, retry: true, created: true });
    expect(await count(database.db, sql`select count(*)::int as n from list_polls where isfinite(at) and at <= now()`)).toBe(1);
  });

  it('an error written into sync_runs reaches status and the status page as one safe line: no escape, no secret', async () => {
    const hostile = `\x1b[2J\x1b]0;owned\x07HTTP 500\r\nAuthorization: Bearer sekrit-123 ${'x'.repeat(100_000)}`;
    await database.db.execute(sql`insert into sync_runs (started_at, finished_at, requests, error) values (now(), now(), 1, ${hostile})`);
    const status = await mirrorStatus(database.db, { dailyLimit: LIMITS.daily, minuteLimit: LIMITS.minute, reserve: LIMITS.reserve }, Date.now());
    const text = formatStatus(status);
    const [page] = await recentErrors(database.db, 10);
    for (const shown of [status.lastSync!.error!, text, page!.error]) {
      expect(shown).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/);
      expect(shown).not.toContain('sekrit');
    }
    expect(status.lastSync!.error).toMatch(/^\[2J\]0;ownedHTTP 500 Authorization: Bearer \[redacted\] x+…$/);
    expect(status.lastSync!.error).toHaveLength(300);
    expect(page!.error).toBe(status.lastSync!.error);
    expect(text.split('\n').filter((l) => l.startsWith('last sync'))).toHaveLength(1);
  });

  it('the budget reads the newest daily limit of the ledger and is exactly what the whole ledger gives', async () => {
    await forge(database, NOW);
    const samples = await loadSamples(database.db, NOW - DAY_MS, LIMITS);
    expect(samples).toHaveLength(LIMITS.daily);
    expect(samples.at(-1)!.at).toBe(YEAR_3000);
    expect(samples.every((s, i) => i === 0 || s.at >= samples[i - 1]!.at)).toBe(true);

    // The next request may go when the allowance's oldest request of the whole ledger frees: looked up in SQL.
    const budget = budgetAt(LIMITS, samples, NOW);
    expect(budget.dailyLeft).toBe(0);
    const [freesAt] = await queryRows<{ ms: string }>(
      database.db,
      sql`select (extract(epoch from at) * 1000)::bigint as ms from api_requests
          where at > ${new Date(NOW - DAY_MS).toISOString()}::timestamptz and at <= ${new Date(NOW).toISOString()}::timestamptz
          order by at desc offset ${allowedPerDay(LIMITS) - 2} limit 1`,
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

  it('a poll dated the year 3000 does not hold its list, and a request so dated is restamped to now: the mirror goes on', async () => {
    const m = await virtualMirror(database);
    try {
      await m.runFor(5 * 60_000);
      await database.db.execute(sql`insert into list_polls (list, at, items, changes) values ('resolved', ${new Date(YEAR_3000).toISOString()}::timestamptz, 1, 0)`);
      const polls = () => m.sim.log.filter((r) => r.path === '/api/v1/tickets/resolved').length;
      const before = polls();
      await m.runFor(30 * 60_000);
      expect(polls()).toBeGreaterThan(before);

      await database.db.execute(sql`insert into api_requests (at, method, path, status, kind) values (${new Date(YEAR_3000).toISOString()}::timestamptz, 'GET', '/api/v1/tickets', 200, 'list_open')`);
      await m.restart();
      const requests = m.sim.log.length;
      await m.runFor(60_000);
      const ahead = sql`select count(*)::int as n from api_requests where at > ${new Date(m.clock.now()).toISOString()}::timestamptz`;
      expect(await count(database.db, ahead)).toBe(0);
      await m.runFor(30 * 60_000);
      expect(m.sim.log.length).toBeGreaterThan(requests);
    } finally {
      await m.close();
    }
  });
});

describe.skipIf(!postgresUrl)("rows a user inserts into an account's api_requests, in fleet status", () => {
  it('are read the newest daily limit at most, and an instant ahead of the clock does not fail the batch', async () => {
    const database = await freshPostgres();
    try {
      await forge(database, NOW);
      const [{ schema }] = (await queryRows<{ schema: string }>(database.db, sql`select current_schema() as schema`)) as [{ schema: string }];
      const figures = await mirrorFigures(database.db, [{ schema, minuteLimit: LIMITS.minute, dailyLimit: LIMITS.daily }], NOW);
      const samples = figures.get(schema)!.samples;
      expect(samples).toHaveLength(LIMITS.daily);
      // The year 3000 reads as 20 days ahead (int4 milliseconds), the newest still.
      expect(samples.at(-1)!.at).toBe(NOW - DAY_MS + 20 * DAY_MS);
      // The rest are the ledger's newest, as loadSamples reads them, and the budget is the same.
      const single = await loadSamples(database.db, NOW - DAY_MS, LIMITS);
      expect(samples.slice(0, -1).map((s) => s.at)).toEqual(single.slice(0, -1).map((s) => s.at));
      expect(budgetAt(LIMITS, samples, NOW).nextSlotAt).toBe(budgetAt(LIMITS, single, NOW).nextSlotAt);
    } finally {
      await database.destroy();
    }
  });
});
