import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { queryRows, sql } from '../../src/db/connect.ts';
import { recordDetailFailure } from '../../src/db/repos/details.ts';
import { previousPolls } from '../../src/db/repos/lists.ts';
import { loadSamples } from '../../src/db/repos/ledger.ts';
import { lastRun } from '../../src/db/repos/runs.ts';
import { plannerInputs } from '../../src/db/repos/work.ts';
import { parsePeriod } from '../../src/report/period.ts';
import { loadReportData, ReportSettingsError, reportTimeZone } from '../../src/report/reportData.ts';
import { renderReportPage } from '../../src/report/reportPage.ts';
import { rebuildFromRaw } from '../../src/sync/rebuild.ts';
import { mirrorFigures } from '../../src/db/repos/fleetStatus.ts';
import { recentErrors, requestsPerHour } from '../../src/daemon/statusData.ts';
import { allowedPerDay, budgetAt } from '../../src/sync/budget.ts';
import { formatStatus, mirrorStatus } from '../../src/sync/status.ts';
import { DAY_MS } from '../../src/time.ts';
import { backends, freshPostgres, postgresUrl, type TestDatabase } from '../helpers/db.ts';
import { count, virtualMirror } from '../helpers/mirror.ts';

/** Migrations from 0012 on: the journal's entries after 0011_… (its tag). */
const MIGRATIONS_SINCE_0012: number = (() => {
  const entries: Array<{ tag: string }> = JSON.parse(readFileSync(new URL('../../migrations/meta/_journal.json', import.meta.url), 'utf8')).entries;
  return entries.length - 1 - entries.findIndex((e) => e.tag.startsWith('0011_'));
})();

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

const DEEP = `${'['.repeat(3000)}${']'.repeat(3000)}`;
/** Values the daemon never writes, each a statement (T1 exists) and the check that refuses it. */
const OUT_OF_DOMAIN: Array<{ check: string; statement: ReturnType<typeof sql> }> = [
  { check: 'list_polls_counts_check', statement: sql`insert into list_polls (list, at, items, changes) values ('open', now(), 1, -2)` },
  { check: 'list_polls_counts_check', statement: sql`insert into list_polls (list, at, items, changes, withheld) values ('open', now(), 1, 0, -1)` },
  { check: 'tickets_detail_failures_check', statement: sql`update tickets set detail_failures = -2000 where id = 'T1'` },
  { check: 'tickets_assigned_to_check', statement: sql`update tickets set assigned_to = ${DEEP}::jsonb where id = 'T1'` },
  { check: 'messages_author_check', statement: sql`insert into messages (id, ticket_id, author) values ('M8', 'T1', ${DEEP}::jsonb)` },
  {
    check: 'ticket_history_assigned_to_check',
    statement: sql`insert into ticket_history (ticket_id, in_open, in_self, in_unassigned, in_resolved, valid_from, assigned_to)
      values ('T1', true, false, false, false, now(), ${DEEP}::jsonb)`,
  },
  ...[
    '{"isodow": 1, "opens": "09:00", "closes": "17:00"}',
    '[1]',
    '[{"isodow": "x", "opens": "09:00", "closes": "17:00"}]',
    '[{"isodow": 8, "opens": "09:00", "closes": "17:00"}]',
    '[{"isodow": 1.5, "opens": "09:00", "closes": "17:00"}]',
    '[{"isodow": 1, "opens": "junk", "closes": "17:00"}]',
    '[{"isodow": 1, "opens": 9, "closes": "17:00"}]',
    '[{"isodow": 1, "opens": "17:00", "closes": "09:00"}]',
    '[{"isodow": 1, "opens": "09:00", "closes": "24:01"}]',
    '[{"isodow": 1, "opens": "09:00"}]',
    '[[{"isodow": 1, "opens": "09:00", "closes": "17:00"}]]',
    '[[]]',
    '[{"isodow": 1.0, "opens": "09:00", "closes": "17:00"}]',
  ].map((windows) => ({ check: 'report_settings_business_windows_check', statement: sql`update report_settings set business_windows = ${windows}::jsonb` })),
];

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

  it('a count below zero, jsonb nested deeper than any answer, business windows of another shape are refused', async () => {
    await database.db.execute(sql`insert into report_settings (id) values (true) on conflict do nothing`);
    for (const { check, statement } of OUT_OF_DOMAIN) {
      await expect(database.db.execute(statement), check).rejects.toMatchObject({
        cause: expect.objectContaining({ message: expect.stringContaining(check) }),
      });
    }
    // What the daemon writes passes: REPORT_BUSINESS_HOURS's windows (24:00 included), a value 100 levels deep.
    await database.db.execute(
      sql`update report_settings set business_windows = '[{"isodow": 1, "opens": "09:00", "closes": "17:00"}, {"isodow": 6, "opens": "00:00", "closes": "24:00"}]'`,
    );
    await database.db.execute(sql`update tickets set assigned_to = ${`${'['.repeat(100)}${']'.repeat(100)}`}::jsonb, detail_failures = 0`);
  });

  it('rows written out of the span or the domain before the checks existed are brought into them by the migrations', async () => {
    for (const table of CHECKED_TABLES) await database.db.execute(sql.raw(`alter table ${table} drop constraint ${table}_instants_check`));
    for (const check of new Set(OUT_OF_DOMAIN.map((c) => c.check))) {
      await database.db.execute(sql.raw(`alter table ${check.replace(/_(counts|detail_failures|assigned_to|author|business_windows)_check$/, '')} drop constraint ${check}`));
    }
    await database.db.execute(sql`insert into report_settings (id) values (true) on conflict do nothing`);
    for (const { statement } of OUT_OF_DOMAIN) await database.db.execute(statement);
    await database.db.execute(sql`insert into api_requests (at, method, path) values ('infinity', 'GET', '/x'), ('-infinity', 'GET', '/y')`);
    await database.db.execute(sql`insert into list_polls (list, at, items, changes) values ('open', 'infinity', 1, 0)`);
    await database.db.execute(sql`update tickets set detail_synced_at = '-infinity', detail_retry_after = 'infinity', created_at = '20000-01-01T00:00:00Z'`);
    // 0012 and 0013 (and every one after them), applied again.
    await database.db.execute(sql`delete from __ticket_mirror_migrations where id > (select max(id) - ${MIGRATIONS_SINCE_0012} from __ticket_mirror_migrations)`);
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
    expect(await count(database.db, sql`select count(*)::int as n from list_polls where isfinite(at) and at <= now()`)).toBe(3);
    expect(await count(database.db, sql`select count(*)::int as n from list_polls where changes < 0 or withheld < 0`)).toBe(0);
    const [domain] = await queryRows<{ failures: number; assigned: unknown; authors: number; windows: unknown }>(
      database.db,
      sql`select (select detail_failures from tickets) as failures, (select assigned_to from tickets) as assigned,
          (select count(*)::int from messages where author is not null) as authors, (select business_windows from report_settings) as windows`,
    );
    expect(domain).toEqual({ failures: 0, assigned: null, authors: 0, windows: null });
    const checks = await queryRows<{ name: string }>(
      database.db,
      sql`select conname as name from pg_constraint where contype = 'c' and connamespace = current_schema()::regnamespace`,
    );
    expect(checks.map((c) => c.name)).toEqual(expect.arrayContaining([...new Set(OUT_OF_DOMAIN.map((c) => c.check))]));
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

  it('values within the domain but far from the daemon\'s own are read without failing', async () => {
    const now = Date.now();
    // Two polls of a half hour claiming 2^31 − 1 changes each (and as many items, so that they count): their sum
    // overflowed int4 and failed every plan.
    await database.db.execute(sql`insert into list_polls (list, at, items, changes) values
      ('open', ${new Date(now - 1000).toISOString()}::timestamptz, 2147483647, 2147483647),
      ('open', ${new Date(now - 1000).toISOString()}::timestamptz, 2147483647, 2147483647)`);
    expect((await plannerInputs(database.db, now, [], [])).history.changes[0]).toBe(2 * 2147483647);
    // A failure count at int4's top: the next failure overflowed it, and failed the pass.
    await database.db.execute(sql`update tickets set detail_failures = 2147483647 where id = 'T1'`);
    await recordDetailFailure(database.db, 'T1', new Date(now).toISOString());
    expect(await count(database.db, sql`select detail_failures as n from tickets where id = 'T1'`)).toBe(1_000_000);
    // A pass dated ahead of the clock does not hide the passes that ran.
    await database.db.execute(sql`insert into sync_runs (started_at, finished_at, requests) values
      (${new Date(now - 60_000).toISOString()}::timestamptz, ${new Date(now - 59_000).toISOString()}::timestamptz, 4),
      ('3000-01-01T00:00:00Z', '3000-01-01T00:00:01Z', 9)`);
    expect((await lastRun(database.db, now))?.requests).toBe(4);
    // Nor does a poll dated ahead decide whether the list's shrink is withheld.
    await database.db.execute(sql`insert into list_polls (list, at, items, changes, withheld) values
      ('self', ${new Date(now - 1000).toISOString()}::timestamptz, 10, 0, 0), ('self', '3000-01-01T00:00:00Z', 10, 0, 7)`);
    expect(await previousPolls(database.db, 'self', new Date(now).toISOString())).toEqual({ polled: true, withheld: 0 });
    // A payload nested deeper than any answer fails its ticket in a rebuild, not the rebuild.
    await database.db.execute(sql`insert into tickets (id, first_seen_at, last_seen_at, detail_synced_at, raw) values
      ('T2', now(), now(), now(), ${`{"id": "T2", "deep": ${DEEP}}`}::jsonb)`);
    const rebuilt = await rebuildFromRaw(database.db);
    expect(rebuilt.failed).toEqual([{ id: 'T2', error: 'raw nests deeper than 100 levels, which no answer of the API does' }]);
  });

  it('the report shows an assignee without a name and an instant ahead of the clock, and names a time zone it cannot use', async () => {
    const now = Date.now();
    await database.db.execute(sql`insert into report_settings (id) values (true) on conflict do nothing`);
    await database.db.execute(sql`insert into tickets (id, first_seen_at, last_seen_at, in_open, has_unread_messages, created_at, last_contact_at, assigned_to) values
      ('A1', now(), now(), true, true, '2999-01-01T00:00:00Z', '2999-01-01T00:00:00Z', '{"id": "agent-9"}'),
      ('A2', now(), now(), true, false, now(), now(), '{"id": "agent-8", "name": null}'),
      ('A3', now(), now(), true, false, now(), now(), '"just a string"')`);
    const timeZone = await reportTimeZone(database.db);
    const data = await loadReportData(database.db, parsePeriod({}, new Date(now).toISOString().slice(0, 10)), timeZone, now);
    const html = renderReportPage(data);
    expect(html).toContain('agent-9');
    expect(html).toContain('agent-8');
    expect(html).toContain('(no name)');
    expect(html).not.toMatch(/>-\d/);

    await database.db.execute(sql`update report_settings set time_zone = 'posix/Europe/Berlin'`);
    const told = await reportTimeZone(database.db).catch((error: unknown) => error);
    expect(told).toBeInstanceOf(ReportSettingsError);
    expect((told as Error).message).toBe(
      'report_settings.time_zone "posix/Europe/Berlin" is not a time zone this program knows: set REPORT_TIMEZONE and run `ticket-mirror migrate`, which rewrites the row',
    );
  });

  it('a list poll claiming more changes than its list could show does not stop the sweeps or the re-reads', async () => {
    const m = await virtualMirror(database);
    try {
      await m.runFor(3 * 3_600_000);
      const span = async (ms: number) => {
        const from = m.sim.log.length;
        await m.runFor(ms);
        const sent = m.sim.log.slice(from);
        return { sweeps: sent.filter((r) => r.path === '/api/v1/tickets/resolved').length, details: sent.filter((r) => r.path.startsWith('/api/v1/ticket/')).length };
      };
      const before = await span(2 * 3_600_000);
      // 2^31 − 1 changes in the current half hour: the planner forecast as many details for the day, took every slot
      // for them, and swept once a day (in the history, again the next day at the same hour).
      await database.db.execute(sql`insert into list_polls (list, at, items, changes) values ('open', ${new Date(m.clock.now()).toISOString()}::timestamptz, 1, 2147483647)`);
      const after = await span(2 * 3_600_000);
      expect(before.sweeps).toBeGreaterThan(4);
      expect(after.sweeps).toBeGreaterThanOrEqual(before.sweeps / 2);
      expect(after.details).toBeGreaterThanOrEqual(before.details / 2);
    } finally {
      await m.close();
    }
  });

  it('a ticket marked due at a date to come is fetched once, not at every pass', async () => {
    const m = await virtualMirror(database);
    try {
      await m.runFor(10 * 60_000);
      const [ticket] = await queryRows<{ id: string }>(database.db, sql`select id from tickets where detail_synced_at is not null and in_open limit 1`);
      await database.db.execute(sql`update tickets set detail_due_since = '3000-01-01T00:00:00Z' where id = ${ticket!.id}`);
      const fetches = () => m.sim.log.filter((r) => r.path === `/api/v1/ticket/${ticket!.id}`).length;
      const before = fetches();
      await m.runFor(30 * 60_000);
      expect(fetches() - before).toBe(1);
      expect(await count(database.db, sql`select count(*)::int as n from tickets where detail_due_since is not null`)).toBe(0);
    } finally {
      await m.close();
    }
  });

  it('the budget reads the newest daily limit of the ledger: the next slot is the whole ledger\'s', async () => {
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
      await database.db.execute(sql`insert into sync_runs (started_at, finished_at, requests) values
        (${new Date(NOW - 60_000).toISOString()}::timestamptz, ${new Date(NOW - 59_000).toISOString()}::timestamptz, 0),
        ('3000-01-01T00:00:00Z', '3000-01-01T00:00:01Z', 0)`);
      const [{ schema }] = (await queryRows<{ schema: string }>(database.db, sql`select current_schema() as schema`)) as [{ schema: string }];
      const figures = await mirrorFigures(database.db, [{ schema, minuteLimit: LIMITS.minute, dailyLimit: LIMITS.daily }], NOW);
      const samples = figures.get(schema)!.samples;
      expect(samples).toHaveLength(LIMITS.daily);
      // A clean pass dated ahead of the clock does not make the account look fresh.
      expect(figures.get(schema)!.lastCleanPassAt!.slice(0, 4)).toBe('2026');
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
