import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fillSupportData } from '../../bench/supportData.ts';
import { parseBusinessHours } from '../../src/config/reportSettings.ts';
import { queryRows, sql, type Tx } from '../../src/db/connect.ts';
import { backlogByDay, createdByHourOfWeek, firstResponseByWeek, resolutionByWeek } from '../../src/db/repos/report.ts';
import { writeReportSettings } from '../../src/db/repos/reportSettings.ts';
import { DEFAULT_REPORT_SETTINGS, type ReportSettings } from '../../src/model/reportSettings.ts';
import { parsePeriod } from '../../src/report/period.ts';
import { loadReportData } from '../../src/report/reportData.ts';
import { HOUR_MS } from '../../src/time.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';
import { mirrorHelpdesk } from '../helpers/helpdeskMirror.ts';

/**
 * The report's queries (db/repos/report.ts) against a mirror on both backends: 30 hours of a helpdesk mirrored from
 * the simulator, the synthetic history the benchmark writes (bench/supportData.ts), and a few hand-made tickets at the
 * edges of days in a time zone with a DST change. The numbers must be the views': the backlog open_backlog_daily's,
 * day by day, in UTC and in another time zone; the weeks response_times_weekly's; the hours ticket_load_hourly's.
 */

const DAY = 24 * HOUR_MS;
const iso = (ms: number) => new Date(ms).toISOString();

/** Hand-made tickets around Sunday 2026-03-29, when Berlin moves from UTC+1 to UTC+2 at 01:00 UTC. */
async function seedEdges(db: Tx): Promise<void> {
  await db.execute(
    sql.raw(`
    insert into tickets (id, status, created_at, closed_at, widget_name, in_open, in_resolved, first_seen_at, last_seen_at, deleted_at) values
    ('e-before', 'open',   '2026-03-28T22:59:59.999999Z', null, 'Edge', true, false, now(), now(), null),
    ('e-first',  'open',   '2026-03-28T23:00:00Z',        null, 'Edge', true, false, now(), now(), null),
    ('e-dst',    'closed', '2026-03-29T01:00:00Z', '2026-03-29T03:00:00Z', 'Edge', false, true, now(), now(), null),
    ('e-last',   'open',   '2026-03-29T21:59:59.999999Z', null, 'Edge', true, false, now(), now(), null),
    ('e-after',  'open',   '2026-03-29T22:00:00Z',        null, 'Edge', true, false, now(), now(), null),
    ('e-gone',   'open',   '2026-03-29T12:00:00Z',        null, 'Edge', true, false, now(), now(), '2026-03-29T13:00:00Z')
  `),
  );
  await db.execute(
    sql.raw(`
    insert into messages (id, ticket_id, message_type, created_at) values
    ('e-first-1', 'e-first', 'outbound', '2026-03-28T23:30:00Z'),
    ('e-dst-1',   'e-dst',   'outbound', '2026-03-29T02:00:00Z')
  `),
  );
  // History that tests the backlog's edges: two open rows in a row (a priority change), a reopening, a deletion in
  // the middle of an open span, a span that starts after its ticket was deleted (it never counts), and one that
  // begins and ends exactly at midnight (it counts at the end of the day before it begins, not of the day it ends).
  await db.execute(
    sql.raw(`
    insert into ticket_history (ticket_id, priority, in_open, in_self, in_unassigned, in_resolved, valid_from, valid_to) values
    ('e-first', 'low',  true,  false, false, false, '2026-03-28T23:00:00Z', '2026-03-30T00:00:00Z'),
    ('e-first', 'high', true,  false, false, false, '2026-03-30T00:00:00Z', null),
    ('e-dst',   null,   true,  false, false, false, '2026-03-29T01:00:00Z', '2026-03-29T03:00:00Z'),
    ('e-dst',   null,   false, false, false, true,  '2026-03-29T03:00:00Z', '2026-03-31T12:00:00Z'),
    ('e-dst',   null,   true,  false, false, false, '2026-03-31T12:00:00Z', null),
    ('e-gone',  null,   true,  false, false, false, '2026-03-29T12:00:00Z', '2026-03-29T14:00:00Z'),
    ('e-gone',  null,   true,  false, false, false, '2026-03-29T14:00:00Z', null),
    ('e-after', null,   true,  false, false, false, '2026-03-30T00:00:00Z', '2026-04-01T00:00:00Z')
  `),
  );
}

describe.each(backends)('the report queries on $name', ({ open }) => {
  let database: TestDatabase;
  let end: number;
  beforeAll(async () => {
    database = await open();
    ({ end } = await mirrorHelpdesk(database, { hours: 30, stepMs: 10 * 60_000 }));
    await fillSupportData(database.db, { tickets: 800, days: 60, end, prefix: 'S' });
    await seedEdges(database.db);
  }, 240_000);
  afterAll(() => database?.destroy());

  it('the backlog equals open_backlog_daily on every day, and for a period within it', async () => {
    const view = await queryRows<{ day: string; open_tickets: number }>(
      database.db,
      sql`select to_char(day, 'YYYY-MM-DD') as day, open_tickets::int as open_tickets from open_backlog_daily order by day`,
    );
    expect(view.length).toBeGreaterThan(60);
    const all = await backlogByDay(database.db, { from: view[0]!.day, to: view.at(-1)!.day, timeZone: 'UTC' });
    expect(all).toEqual(view);
    // Around the hand-made edges: e-gone counts on no day's end (deleted after an hour), e-dst is open again from the 31st.
    const edges = await backlogByDay(database.db, { from: '2026-03-28', to: '2026-04-01', timeZone: 'UTC' });
    expect(edges).toEqual(view.filter((r) => r.day >= '2026-03-28' && r.day <= '2026-04-01'));
    // A period reaching before the first history row and past today has only the view's days.
    const wide = await backlogByDay(database.db, { from: '2020-01-01', to: iso(end + 30 * DAY).slice(0, 10), timeZone: 'UTC' });
    expect(wide).toEqual(view);
  });

  /** Runs `fn` with report_settings as given, then puts the defaults back. */
  async function withSettings(settings: Partial<ReportSettings>, fn: () => Promise<void>): Promise<void> {
    await writeReportSettings(database.db, { ...DEFAULT_REPORT_SETTINGS, ...settings });
    try {
      await fn();
    } finally {
      await writeReportSettings(database.db, DEFAULT_REPORT_SETTINGS);
    }
  }

  it('with REPORT_TIMEZONE set, the backlog equals open_backlog_daily on local days', async () => {
    await withSettings({ timeZone: 'America/Los_Angeles' }, async () => {
      const view = await queryRows<{ day: string; open_tickets: number }>(
        database.db,
        sql`select to_char(day, 'YYYY-MM-DD') as day, open_tickets::int as open_tickets from open_backlog_daily order by day`,
      );
      const utc = await backlogByDay(database.db, { from: view[0]!.day, to: view.at(-1)!.day, timeZone: 'UTC' });
      const local = await backlogByDay(database.db, { from: view[0]!.day, to: view.at(-1)!.day, timeZone: 'America/Los_Angeles' });
      expect(local).toEqual(view);
      // Eight hours apart, the counts at the ends of the days differ.
      expect(local).not.toEqual(utc);
    });
  });

  it('weeks and hours agree with response_times_weekly and ticket_load_hourly, in business hours too', async () => {
    const today = iso(end).slice(0, 10);
    // Four whole weeks, Monday to Sunday, ending before today: every week of the period is whole in both.
    const lastSunday = new Date(end - ((new Date(end).getUTCDay() + 7) % 7 || 7) * DAY);
    const p = { from: iso(lastSunday.getTime() - 27 * DAY).slice(0, 10), to: iso(lastSunday.getTime()).slice(0, 10), timeZone: 'UTC' };
    expect(new Date(`${p.from}T00:00:00Z`).getUTCDay()).toBe(1);
    await withSettings({ businessHours: 'Mon-Fri 09:00-17:00', businessWindows: parseBusinessHours('Mon-Fri 09:00-17:00') }, async () => {
      const weekly = await queryRows<{ week: string; created: number; fr50: number | null; fr90: number | null; frb50: number | null; resolved: number; r50: number | null; rb50: number | null }>(
        database.db,
        sql`select to_char(week, 'YYYY-MM-DD') as week, tickets_created::int as created,
              first_response_p50_seconds::float8 as fr50, first_response_p90_seconds::float8 as fr90,
              first_response_business_p50_seconds::float8 as frb50, tickets_resolved::int as resolved,
              resolution_p50_seconds::float8 as r50, resolution_business_p50_seconds::float8 as rb50
            from response_times_weekly where week between ${p.from}::date and ${p.to}::date order by week`,
      );
      expect(weekly).toHaveLength(4);
      const [, ...fr] = await firstResponseByWeek(database.db, { ...p, business: true });
      const [, ...res] = await resolutionByWeek(database.db, { ...p, business: true });
      expect(fr.map((w) => [w.week, w.tickets, w.p50_s, w.p90_s, w.p50_business_s])).toEqual(weekly.map((w) => [w.week, w.created, w.fr50, w.fr90, w.frb50]));
      expect(res.map((w) => [w.week, w.tickets, w.p50_s, w.p50_business_s])).toEqual(weekly.map((w) => [w.week, w.resolved, w.r50, w.rb50]));
      expect(fr.some((w) => w.p50_business_s !== null && w.p50_business_s < w.p50_s!)).toBe(true);

      const hourly = await queryRows<{ dow: number; hour: number; tickets: number }>(
        database.db,
        sql`select isodow as dow, hour_of_day as hour, sum(tickets_created)::int as tickets from ticket_load_hourly
            where day between ${p.from}::date and ${p.to}::date group by 1, 2 having sum(tickets_created) > 0 order by 1, 2`,
      );
      const cells = await createdByHourOfWeek(database.db, p);
      expect(cells.sort((a, b) => a.dow - b.dow || a.hour - b.hour)).toEqual(hourly);

      const data = await loadReportData(database.db, parsePeriod(p, today), 'UTC', end);
      expect(data.businessHours).toBe('Mon-Fri 09:00-17:00');
      expect(data.summary.medianFirstResponseBusinessSeconds).toBeGreaterThan(0);
    });
    const plain = await loadReportData(database.db, parsePeriod(p, today), 'UTC', end);
    expect([plain.businessHours, plain.summary.medianFirstResponseBusinessSeconds]).toEqual([null, null]);
  });

  it('cuts days at midnight in the time zone, 23 hours on the day DST starts', async () => {
    const p = { from: '2026-03-29', to: '2026-03-29', timeZone: 'Europe/Berlin' };
    const edge = sql`and ticket_id like 'e-%'`;
    const created = await queryRows<{ ticket_id: string }>(
      database.db,
      sql`select ticket_id from ticket_first_response where created_at >= '2026-03-28T23:00:00Z' and created_at < '2026-03-29T22:00:00Z' ${edge} order by 1`,
    );
    expect(created.map((r) => r.ticket_id)).toEqual(['e-dst', 'e-first', 'e-last']);
    const [all, week] = await firstResponseByWeek(database.db, { ...p, from: '2026-03-29' });
    // Every synthetic and mirrored ticket is months later: these three alone are in the period.
    expect(all).toMatchObject({ week: null, tickets: 3, answered: 2, p50_s: 1800 + (3600 - 1800) / 2 });
    expect(week).toMatchObject({ week: '2026-03-23', tickets: 3, answered: 2 });
    const resolved = await resolutionByWeek(database.db, p);
    expect(resolved).toEqual([
      { week: null, tickets: 1, p50_s: 7200, p90_s: 7200, p50_business_s: null },
      { week: '2026-03-23', tickets: 1, p50_s: 7200, p90_s: 7200, p50_business_s: null },
    ]);
    // 01:00 UTC on that Sunday is 03:00 in Berlin (summer time); 23:00 UTC the day before is midnight.
    const cells = await createdByHourOfWeek(database.db, p);
    expect(cells.sort((a, b) => a.hour - b.hour)).toEqual([
      { dow: 7, hour: 0, tickets: 1 },
      { dow: 7, hour: 3, tickets: 1 },
      { dow: 7, hour: 23, tickets: 1 },
    ]);
  });

  it('the page data adds up: totals, weeks, hours, widgets, assignees and the waiting list agree with the views', async () => {
    const today = iso(end).slice(0, 10);
    const period = parsePeriod({ from: iso(end - 59 * DAY).slice(0, 10), to: today }, today);
    const data = await loadReportData(database.db, period, 'UTC', end);
    const start = `${period.from}T00:00:00Z`;
    const [truth] = await queryRows<{ created: number; answered: number; resolved: number; open: number; waiting: number }>(
      database.db,
      sql`select (select count(*)::int from ticket_first_response where created_at >= ${start}::timestamptz) as created,
            (select count(first_response_at)::int from ticket_first_response where created_at >= ${start}::timestamptz) as answered,
            (select count(*)::int from ticket_resolution where closed_at >= ${start}::timestamptz) as resolved,
            (select count(*)::int from tickets where in_open and deleted_at is null) as open,
            (select count(*)::int from unread_waiting) as waiting`,
    );
    expect(truth!.created).toBeGreaterThan(700);
    expect(data.summary).toMatchObject({
      created: truth!.created,
      answered: truth!.answered,
      resolved: truth!.resolved,
      openNow: truth!.open,
      waitingNow: truth!.waiting,
    });
    expect(data.summary.medianFirstResponseSeconds).toBeGreaterThan(0);
    expect(data.firstResponse.reduce((n, w) => n + w.tickets, 0)).toBe(truth!.created);
    expect(data.resolution.reduce((n, w) => n + w.tickets, 0)).toBe(truth!.resolved);
    expect(data.firstResponse.every((w) => new Date(`${w.week}T00:00:00Z`).getUTCDay() === 1)).toBe(true);
    expect(data.hourOfWeek.flat().reduce((a, b) => a + b, 0)).toBe(truth!.created);
    expect(data.widgets.reduce((n, w) => n + w.created, 0)).toBe(truth!.created);
    expect(data.widgets.map((w) => w.widget_name)).toEqual(expect.arrayContaining(['Website chat', 'Help center', 'Contact form', 'E-mail']));
    expect(data.assignees.length).toBeGreaterThan(1);
    expect(data.waiting.length).toBe(Math.min(12, truth!.waiting));
    const waits = data.waiting.map((w) => w.waiting_s!);
    expect(waits).toEqual([...waits].sort((a, b) => b - a));
    expect(data.backlog.length).toBeGreaterThan(55);
  });
});
