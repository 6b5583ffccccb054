import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseBusinessHours } from '../../src/config/reportSettings.ts';
import { openDatabase, queryRows, sql, type Tx } from '../../src/db/connect.ts';
import { readReportSettings, writeReportSettings } from '../../src/db/repos/reportSettings.ts';
import { ConfigError } from '../../src/errors.ts';
import { DEFAULT_REPORT_SETTINGS, type ReportSettings } from '../../src/model/reportSettings.ts';
import { backends, postgresUrl, type TestDatabase } from '../helpers/db.ts';

/**
 * The views in the team's time zone and business hours, across the two daylight-saving changes of 2026 in
 * Europe/Berlin: clocks go forward on Sunday 29 March at 02:00 (01:00 UTC; that day has 23 hours) and back on Sunday
 * 25 October at 03:00 (01:00 UTC; 25 hours). Instants are read back as UTC text, so both drivers answer alike.
 */

const iso = (column: string) => sql.raw(`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')`);

const BERLIN_OFFICE: ReportSettings = {
  timeZone: 'Europe/Berlin',
  businessHours: 'Mon-Fri 09:00-17:00',
  businessWindows: parseBusinessHours('Mon-Fri 09:00-17:00'),
  slaFirstResponseSeconds: 4 * 3600,
  slaResolutionSeconds: 2 * 86400,
};
const HOUR = 3600;

async function seconds(db: Tx, query: ReturnType<typeof sql>): Promise<number | null> {
  const [row] = await queryRows<{ s: number | null }>(db, sql`select (${query})::float8 as s`);
  return row!.s === null ? null : Number(row!.s);
}

/** One ticket created at every UTC hour from `from` (included) to `to` (excluded). */
function hourlyTickets(prefix: string, from: string, to: string): string {
  return `insert into tickets (id, created_at, first_seen_at, last_seen_at)
    select '${prefix}' || to_char(h, 'MMDDHH24'), h, now(), now()
    from generate_series(timestamptz '${from}', timestamptz '${to}' - interval '1 hour', interval '1 hour') as h`;
}

describe.each(backends)('report time zone and business hours on $name', ({ open }) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await open();
    await writeReportSettings(database.db, BERLIN_OFFICE);
  });
  afterAll(() => database.destroy());

  it('business_seconds counts the opening hours across a weekend and either daylight-saving change', async () => {
    const db = database.db;
    // Friday 16:00 CET to Monday 10:00 CEST: an hour on Friday, an hour on Monday, whatever the offsets in between.
    expect(await seconds(db, sql`business_seconds('2026-03-27T15:00:00Z', '2026-03-30T08:00:00Z')`)).toBe(2 * HOUR);
    // Friday 16:00 CEST to Monday 10:00 CET.
    expect(await seconds(db, sql`business_seconds('2026-10-23T14:00:00Z', '2026-10-26T09:00:00Z')`)).toBe(2 * HOUR);
    // Monday 09:00 CEST is 07:00 UTC: at 07:30 UTC half an hour has passed.
    expect(await seconds(db, sql`business_seconds('2026-03-30T06:00:00Z', '2026-03-30T07:30:00Z')`)).toBe(HOUR / 2);
    // A whole week (two full business weeks from a Monday 00:00 local): 5 × 8 h each.
    expect(await seconds(db, sql`business_seconds('2026-03-22T23:00:00Z', '2026-04-05T22:00:00Z')`)).toBe(80 * HOUR);
    expect(await seconds(db, sql`business_seconds('2026-03-30T12:00:00Z', '2026-03-30T12:00:00Z')`)).toBe(0);
    expect(await seconds(db, sql`business_seconds('2026-03-30T12:00:00Z', '2026-03-30T11:00:00Z')`)).toBe(0);
    expect(await seconds(db, sql`business_seconds(null, '2026-03-30T11:00:00Z')`)).toBeNull();
    // Sundays open around the clock: the Sunday of each change has 23 and 25 hours.
    const sundays = `'[{"isodow": 7, "opens": "00:00", "closes": "24:00"}]'::jsonb`;
    expect(await seconds(db, sql`business_seconds('2026-03-28T00:00:00Z', '2026-03-31T00:00:00Z', 'Europe/Berlin', ${sql.raw(sundays)})`)).toBe(23 * HOUR);
    expect(await seconds(db, sql`business_seconds('2026-10-24T00:00:00Z', '2026-10-27T00:00:00Z', 'Europe/Berlin', ${sql.raw(sundays)})`)).toBe(25 * HOUR);
    // The same stretch in UTC: 24 hours.
    expect(await seconds(db, sql`business_seconds('2026-03-28T00:00:00Z', '2026-03-31T00:00:00Z', 'UTC', ${sql.raw(sundays)})`)).toBe(24 * HOUR);
  });

  it('business_seconds agrees with counting every window of every day, over a year of spans of every length', async () => {
    // Deterministic spans in 2026, from a minute to half a year, at whole seconds.
    let seed = 17;
    const next = () => (seed = (seed * 48271) % 2147483647);
    const start = Date.UTC(2026, 0, 1) / 1000;
    const spans = Array.from({ length: 150 }, (_, i) => {
      const a = start + (next() % (365 * 86400));
      const length = [60, 3600, 86400, 7 * 86400, 60 * 86400, 180 * 86400][i % 6]!;
      return [a, a + (next() % length) + 1] as const;
    });
    const values = sql.raw(spans.map(([a, b]) => `(to_timestamp(${a}), to_timestamp(${b}))`).join(', '));
    // Office hours, and a Sunday night window that holds both clock changes of Europe/Berlin and of New York.
    const windows = JSON.stringify([
      ...parseBusinessHours('Mon-Fri 09:00-17:00'),
      { isodow: 7, opens: '01:00', closes: '04:00' },
    ]);
    for (const zone of ['Europe/Berlin', 'America/New_York', 'Asia/Kolkata']) {
      const [row] = await queryRows<{ spans: number; differ: number; total: number }>(
        database.db,
        sql`with spans(a, b) as (values ${values}),
            counted as (
              select business_seconds(a, b, ${zone}, ${windows}::jsonb) as fast,
                (select coalesce(sum(extract(epoch from least(b, o.closes_at) - greatest(a, o.opens_at))), 0)::float8
                 from jsonb_to_recordset(${windows}::jsonb) as w(isodow int, opens text, closes text)
                 join generate_series((a at time zone ${zone})::date::timestamp, (b at time zone ${zone})::date::timestamp, interval '1 day') as d(day)
                   on extract(isodow from d.day) = w.isodow
                 cross join lateral (select (d.day + w.opens::interval) at time zone ${zone} as opens_at,
                                            (d.day + w.closes::interval) at time zone ${zone} as closes_at) as o
                 where o.closes_at > a and o.opens_at < b) as reference
              from spans)
            select count(*)::int as spans, count(*) filter (where fast is distinct from reference)::int as differ, sum(fast)::float8 as total
            from counted`,
      );
      expect(row).toMatchObject({ spans: 150, differ: 0 });
      expect(row!.total).toBeGreaterThan(0);
    }
    // Open around the clock, business time is elapsed time, whatever the clocks do.
    const always = JSON.stringify(parseBusinessHours('Mon-Sun 00:00-24:00'));
    const [row] = await queryRows<{ differ: number }>(
      database.db,
      sql`select count(*) filter (where business_seconds(a, b, 'Europe/Berlin', ${always}::jsonb) <> extract(epoch from b - a)::float8)::int as differ
          from (values ${values}) as spans(a, b)`,
    );
    expect(row).toEqual({ differ: 0 });
  });

  it('ticket_load_hourly cuts days at local midnight: 23 hours on 29 March, 25 on 25 October', async () => {
    const db = database.db;
    await db.execute(sql.raw(hourlyTickets('spring', '2026-03-27T00:00:00Z', '2026-04-01T00:00:00Z')));
    await db.execute(sql.raw(hourlyTickets('autumn', '2026-10-23T00:00:00Z', '2026-10-28T00:00:00Z')));
    const days = await queryRows<{ day: string; hours: number; tickets: number; first: string; twos: number }>(
      db,
      sql`select day::text as day, count(*)::int as hours, sum(tickets_created)::int as tickets, ${iso('min(hour)')} as first,
                 count(*) filter (where hour_of_day = 2)::int as twos
          from ticket_load_hourly
          where day in ('2026-03-28', '2026-03-29', '2026-03-30', '2026-10-24', '2026-10-25', '2026-10-26')
          group by day order by day`,
    );
    expect(days).toEqual([
      { day: '2026-03-28', hours: 24, tickets: 24, first: '2026-03-27T23:00:00Z', twos: 1 },
      { day: '2026-03-29', hours: 23, tickets: 23, first: '2026-03-28T23:00:00Z', twos: 0 },
      { day: '2026-03-30', hours: 24, tickets: 24, first: '2026-03-29T22:00:00Z', twos: 1 },
      { day: '2026-10-24', hours: 24, tickets: 24, first: '2026-10-23T22:00:00Z', twos: 1 },
      { day: '2026-10-25', hours: 25, tickets: 25, first: '2026-10-24T22:00:00Z', twos: 2 },
      { day: '2026-10-26', hours: 24, tickets: 24, first: '2026-10-25T23:00:00Z', twos: 1 },
    ]);
    const [sunday] = await queryRows<{ isodow: number }>(db, sql`select distinct isodow from ticket_load_hourly where day = '2026-03-29'`);
    expect(sunday).toEqual({ isodow: 7 });
    await db.execute(sql`delete from tickets where id like 'spring%' or id like 'autumn%'`);
  });

  it('open_backlog_daily counts at each local midnight; reply_delivery and response_times_weekly use local days and weeks', async () => {
    const db = database.db;
    // k1 open from Friday; k2 opened at 00:30 on Monday 30 March in Berlin (22:30 UTC on Sunday), answered at once.
    await db.execute(sql`
      insert into tickets (id, created_at, in_open, first_seen_at, last_seen_at) values
        ('k1', '2026-03-27T12:00:00Z', true, now(), now()),
        ('k2', '2026-03-29T22:30:00Z', true, now(), now())`);
    await db.execute(sql`
      insert into ticket_history (ticket_id, in_open, in_self, in_unassigned, in_resolved, valid_from) values
        ('k1', true, false, false, false, '2026-03-27T12:00:00Z'),
        ('k2', true, false, false, false, '2026-03-29T22:30:00Z')`);
    await db.execute(sql`
      insert into messages (id, ticket_id, message_type, created_at, outbound_sent) values
        ('km1', 'k2', 'outbound', '2026-03-29T22:40:00Z', true)`);
    const backlog = await queryRows<{ day: string; as_of: string; open_tickets: number }>(
      db,
      sql`select day::text as day, ${iso('as_of')} as as_of, open_tickets::int as open_tickets
          from open_backlog_daily where day between '2026-03-27' and '2026-03-30' order by day`,
    );
    expect(backlog).toEqual([
      { day: '2026-03-27', as_of: '2026-03-27T23:00:00Z', open_tickets: 1 },
      { day: '2026-03-28', as_of: '2026-03-28T23:00:00Z', open_tickets: 1 },
      // 23 hours later; k2 was opened after this midnight.
      { day: '2026-03-29', as_of: '2026-03-29T22:00:00Z', open_tickets: 1 },
      { day: '2026-03-30', as_of: '2026-03-30T22:00:00Z', open_tickets: 2 },
    ]);
    expect(await queryRows(db, sql`select day::text as day, outbound_messages::int as n from reply_delivery`)).toEqual([
      { day: '2026-03-30', n: 1 },
    ]);
    expect(
      await queryRows(db, sql`select week::text as week, ${iso('week_start')} as week_start, tickets_created::int as created
                              from response_times_weekly order by week`),
    ).toEqual([
      { week: '2026-03-23', week_start: '2026-03-22T23:00:00Z', created: 1 },
      { week: '2026-03-30', week_start: '2026-03-29T22:00:00Z', created: 1 },
    ]);

    // The same rows in UTC, as soon as the settings say so.
    await writeReportSettings(db, { ...BERLIN_OFFICE, timeZone: 'UTC' });
    try {
      const [day29] = await queryRows(db, sql`select ${iso('as_of')} as as_of, open_tickets::int as n from open_backlog_daily where day = '2026-03-29'`);
      expect(day29).toEqual({ as_of: '2026-03-30T00:00:00Z', n: 2 });
      expect(await queryRows(db, sql`select day::text as day from reply_delivery`)).toEqual([{ day: '2026-03-29' }]);
      expect(await queryRows(db, sql`select week::text as week, tickets_created::int as created from response_times_weekly`)).toEqual([
        { week: '2026-03-23', created: 2 },
      ]);
    } finally {
      await writeReportSettings(db, BERLIN_OFFICE);
      await db.execute(sql`delete from messages where ticket_id in ('k1', 'k2')`);
      await db.execute(sql`delete from ticket_history where ticket_id in ('k1', 'k2')`);
      await db.execute(sql`delete from tickets where id in ('k1', 'k2')`);
    }
  });

  it('first response and resolution in business hours, and the SLA judged on the business clock', async () => {
    const db = database.db;
    // s1: Friday 16:00 CET, answered Monday 10:00 CEST (2 business hours, 65 wall-clock hours), closed Tuesday 10:00.
    // s2: Monday 09:00 CEST, never answered, still open. s3: Monday 09:00, answered at 10:00, closed Thursday 17:00.
    await db.execute(sql`
      insert into tickets (id, status, created_at, closed_at, in_open, first_seen_at, last_seen_at) values
        ('s1', 'resolved', '2026-03-27T15:00:00Z', '2026-03-31T08:00:00Z', false, now(), now()),
        ('s2', 'open',     '2026-03-30T07:00:00Z', null,                   true,  now(), now()),
        ('s3', 'resolved', '2026-03-30T07:00:00Z', '2026-04-02T15:00:00Z', false, now(), now())`);
    await db.execute(sql`
      insert into messages (id, ticket_id, message_type, created_at) values
        ('s1m', 's1', 'outbound', '2026-03-30T08:00:00Z'),
        ('s3m', 's3', 'outbound', '2026-03-30T08:00:00Z')`);
    try {
      expect(
        await queryRows(db, sql`select ticket_id, first_response_seconds as wall, first_response_business_seconds as business
                                from ticket_first_response where ticket_id like 's%' order by 1`),
      ).toEqual([
        { ticket_id: 's1', wall: 65 * HOUR, business: 2 * HOUR },
        { ticket_id: 's2', wall: null, business: null },
        { ticket_id: 's3', wall: HOUR, business: HOUR },
      ]);
      expect(
        await queryRows(db, sql`select ticket_id, resolution_seconds as wall, resolution_business_seconds as business
                                from ticket_resolution where ticket_id like 's%' order by 1`),
      ).toEqual([
        // Friday 1 h, Monday 8 h, Tuesday 1 h.
        { ticket_id: 's1', wall: 89 * HOUR, business: 10 * HOUR },
        // Monday to Thursday, 8 h each.
        { ticket_id: 's3', wall: 80 * HOUR, business: 32 * HOUR },
      ]);
      const sla = () =>
        queryRows(db, sql`select ticket_id, sla_clock, first_response_elapsed_seconds as fr, first_response_breached as fr_late,
                                 resolution_elapsed_seconds as res, resolution_breached as res_late,
                                 first_response_target_seconds as fr_target, resolution_target_seconds as res_target
                          from ticket_sla where ticket_id in ('s1', 's3') order by 1`);
      expect(await sla()).toEqual([
        { ticket_id: 's1', sla_clock: 'business_hours', fr: 2 * HOUR, fr_late: false, res: 10 * HOUR, res_late: false, fr_target: 4 * HOUR, res_target: 48 * HOUR },
        { ticket_id: 's3', sla_clock: 'business_hours', fr: HOUR, fr_late: false, res: 32 * HOUR, res_late: false, fr_target: 4 * HOUR, res_target: 48 * HOUR },
      ]);
      // s2 has waited since March: late on both counts already.
      expect(await queryRows(db, sql`select ticket_id, first_response_breached as fr, resolution_breached as res from sla_breaches where ticket_id like 's%'`)).toEqual([
        { ticket_id: 's2', fr: true, res: true },
      ]);

      // Without business hours the wall clock judges: s1 waited 65 hours for its answer and took 89 to resolve; s3 took 80.
      await writeReportSettings(db, { ...BERLIN_OFFICE, businessHours: null, businessWindows: null });
      expect(await sla()).toEqual([
        { ticket_id: 's1', sla_clock: 'calendar', fr: 65 * HOUR, fr_late: true, res: 89 * HOUR, res_late: true, fr_target: 4 * HOUR, res_target: 48 * HOUR },
        { ticket_id: 's3', sla_clock: 'calendar', fr: HOUR, fr_late: false, res: 80 * HOUR, res_late: true, fr_target: 4 * HOUR, res_target: 48 * HOUR },
      ]);
      expect(await seconds(db, sql`select first_response_business_seconds from ticket_first_response where ticket_id = 's1'`)).toBeNull();
      // Without targets nothing is judged.
      await writeReportSettings(db, DEFAULT_REPORT_SETTINGS);
      const [unjudged] = await queryRows<{ n: number; judged: number }>(
        db,
        sql`select count(*)::int as n, count(first_response_breached)::int + count(resolution_breached)::int as judged from ticket_sla`,
      );
      expect(unjudged).toEqual({ n: 3, judged: 0 });
      expect(await queryRows(db, sql`select * from sla_breaches`)).toEqual([]);
    } finally {
      await writeReportSettings(db, BERLIN_OFFICE);
    }
  });

  it('refuses a time zone PostgreSQL does not know, naming REPORT_TIMEZONE, and keeps the settings', async () => {
    const error = await writeReportSettings(database.db, { ...BERLIN_OFFICE, timeZone: 'Mars/Olympus' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual(['REPORT_TIMEZONE="Mars/Olympus" is not a time zone this PostgreSQL knows (see pg_timezone_names)']);
    expect((await readReportSettings(database.db)).timeZone).toBe('Europe/Berlin');
  });
});

describe.each(backends)('migrate writes the report settings on $name', ({ name }) => {
  it('from the configuration, and changes updated_at only when they change', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tm-report-'));
    const schema = `tm_report_${process.pid}`;
    const openWith = (report: ReportSettings) =>
      name === 'pglite' ? openDatabase({ pgliteDir: dir, report }) : openDatabase({ databaseUrl: postgresUrl!, schema, report });
    try {
      let database = await openWith(BERLIN_OFFICE);
      await database.migrate();
      const first = await readReportSettings(database.db);
      expect(first).toEqual({ ...BERLIN_OFFICE, updatedAt: expect.any(String) });
      await database.migrate();
      expect(await readReportSettings(database.db)).toEqual(first);
      await database.close();

      database = await openWith({ ...BERLIN_OFFICE, slaResolutionSeconds: 3 * 86400 });
      await database.migrate();
      const second = await readReportSettings(database.db);
      expect(second.slaResolutionSeconds).toBe(3 * 86400);
      expect(second.updatedAt! > first.updatedAt!).toBe(true);
      await database.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
      if (name === 'postgres') {
        const client = new pg.Client({ connectionString: postgresUrl! });
        await client.connect();
        await client.query(`drop schema if exists ${schema} cascade`);
        await client.end();
      }
    }
  });
});
