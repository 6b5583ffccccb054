import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows, sql, type Tx } from '../../src/db/connect.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';

/**
 * The BI views of migrations/0001_bi_views.sql against a small known dataset, on both backends. Instants are read back
 * as canonical text (`iso`), counts as int, so both drivers answer alike.
 */

const iso = (column: string) => sql.raw(`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`);

const ANN = `'{"id":"a1","name":"Ann","email":"ann@example.com"}'::jsonb`;
const BOB = `'{"id":"a2","name":"Bob","email":"bob@example.com"}'::jsonb`;

async function seed(db: Tx): Promise<void> {
  // t1 open, Ann, unread; t2 resolved, Ann; t3 open, unassigned (SQL null), unread; t4 deleted (never closed in
  // history); t5 open, Bob; t6 open, unassigned as JSON null.
  await db.execute(
    sql.raw(`
    insert into tickets (id, status, has_unread_messages, closed_at, last_contact_at, created_at, assigned_to, widget_id,
                         widget_name, in_open, in_resolved, first_seen_at, last_seen_at, deleted_at) values
    ('t1', 'open',    true,  null,                          '2024-03-02T10:00:00Z', '2024-03-01T09:00:00Z',        ${ANN}, 'w1', 'Web',  true,  false, now(), now(), null),
    ('t2', 'closed',  false, '2024-03-03T12:00:00.75Z',     '2024-03-03T12:00:00Z', '2024-03-01T12:00:00.5Z',      ${ANN}, 'w1', 'Web',  false, true,  now(), now(), null),
    ('t3', 'pending', true,  null,                          '2024-03-02T08:00:00Z', '2024-03-02T08:00:00Z',        null,   'w2', 'Mail', true,  false, now(), now(), null),
    ('t4', 'open',    true,  '2024-03-02T00:00:00Z',        '2024-03-01T10:00:00Z', '2024-03-01T10:00:00Z',        ${ANN}, 'w1', 'Web',  true,  false, now(), now(), '2024-03-03T06:00:00Z'),
    ('t5', 'open',    false, null,                          '2024-03-04T00:00:00Z', '2024-03-04T00:00:00.000001Z', ${BOB}, 'w2', 'Mail', true,  false, now(), now(), null),
    ('t6', 'pending', false, null,                          '2024-03-05T00:00:00Z', '2024-03-05T00:00:00Z',        'null'::jsonb, 'w1', 'Web', true, false, now(), now(), null)
  `),
  );
  await db.execute(
    sql.raw(`
    insert into messages (id, ticket_id, message_type, created_at, outbound_sent, outbound_delivered_at, outbound_bounced,
                          outbound_spam_complaint, outbound_error, removed_at) values
    ('m1',  't1', 'inbound',  '2024-03-01T09:00:00Z',        false, null,                   false, false, null,           null),
    ('m2',  't1', 'outbound', '2024-03-01T09:30:00.25Z',     true,  '2024-03-01T09:30:05Z', false, false, null,           null),
    ('m3',  't1', 'outbound', '2024-03-01T09:10:00Z',        true,  null,                   false, false, null,           '2024-03-02T00:00:00Z'),
    ('m4',  't1', 'inbound',  '2024-03-02T10:00:00.123456Z', false, null,                   false, false, null,           null),
    ('m5',  't1', 'inbound',  '2024-03-02T11:00:00Z',        false, null,                   false, false, null,           '2024-03-03T00:00:00Z'),
    ('m6',  't2', 'outbound', '2024-03-01T12:00:00.5Z',      true,  null,                   true,  false, null,           null),
    ('m7',  't2', 'outbound', '2024-03-02T01:00:00Z',        true,  '2024-03-02T01:00:09Z', false, true,  'mailbox full', null),
    ('m8',  't4', 'outbound', '2024-03-01T11:00:00Z',        true,  '2024-03-01T11:00:01Z', false, false, null,           null),
    ('m9',  't3', 'note',     '2024-03-02T09:00:00Z',        false, null,                   false, false, null,           null),
    ('m10', 't1', 'outbound', '2024-03-02T23:30:00-02:00',   false, null,                   false, false, 'rejected',     null)
  `),
  );
  await db.execute(
    sql.raw(`
    insert into ticket_history (ticket_id, in_open, in_self, in_unassigned, in_resolved, valid_from, valid_to) values
    ('t1', true,  false, false, false, '2024-03-01T09:05:00Z', null),
    ('t2', true,  false, false, false, '2024-03-01T12:05:00Z', '2024-03-03T12:00:01Z'),
    ('t2', false, false, false, true,  '2024-03-03T12:00:01Z', null),
    ('t3', true,  false, true,  false, '2024-03-02T08:05:00Z', null),
    ('t4', true,  false, false, false, '2024-03-01T10:05:00Z', null),
    ('t5', true,  false, false, false, '2024-03-04T00:05:00Z', null),
    ('t6', true,  false, true,  false, '2024-03-05T00:00:00Z', null)
  `),
  );
}

describe.each(backends)('BI views on $name', ({ open }) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await open();
    await seed(database.db);
  });
  afterAll(() => database.destroy());

  it('open_backlog_daily counts tickets open at each UTC midnight, a deleted one until its deletion', async () => {
    const rows = await queryRows<{ day: string; as_of: string; open_tickets: number }>(
      database.db,
      sql`select day::text as day, ${iso('as_of')} as as_of, open_tickets::int as open_tickets
          from open_backlog_daily where day <= date '2024-03-06' order by day`,
    );
    expect(rows).toEqual([
      { day: '2024-03-01', as_of: '2024-03-02T00:00:00.000000Z', open_tickets: 3 }, // t1, t2, t4
      { day: '2024-03-02', as_of: '2024-03-03T00:00:00.000000Z', open_tickets: 4 }, // + t3
      { day: '2024-03-03', as_of: '2024-03-04T00:00:00.000000Z', open_tickets: 2 }, // t2 resolved, t4 deleted
      { day: '2024-03-04', as_of: '2024-03-05T00:00:00.000000Z', open_tickets: 4 }, // + t5, + t6 (opened at as_of)
      { day: '2024-03-05', as_of: '2024-03-06T00:00:00.000000Z', open_tickets: 4 },
      { day: '2024-03-06', as_of: '2024-03-07T00:00:00.000000Z', open_tickets: 4 },
    ]);
    const [span] = await queryRows<{ days: number; expected: number; today_is_now: boolean; today_open: number }>(
      database.db,
      sql`select count(*)::int as days,
                 ((now() at time zone 'UTC')::date - date '2024-03-01' + 1)::int as expected,
                 bool_and(as_of = now()) filter (where day = (now() at time zone 'UTC')::date) as today_is_now,
                 max(open_tickets) filter (where day = (now() at time zone 'UTC')::date)::int as today_open
          from open_backlog_daily`,
    );
    expect(span).toEqual({ days: span!.expected, expected: span!.expected, today_is_now: true, today_open: 4 });
  });

  it('ticket_first_response takes the first outbound message strictly after creation, ignoring removed ones', async () => {
    const rows = await queryRows<{ ticket_id: string; created_at: string; first_response_at: string | null; s: number | null }>(
      database.db,
      sql`select ticket_id, ${iso('created_at')} as created_at, ${iso('first_response_at')} as first_response_at,
                 first_response_seconds as s
          from ticket_first_response order by ticket_id`,
    );
    expect(rows).toEqual([
      { ticket_id: 't1', created_at: '2024-03-01T09:00:00.000000Z', first_response_at: '2024-03-01T09:30:00.250000Z', s: 1800.25 },
      // m6 has the ticket's own creation instant: not a response.
      { ticket_id: 't2', created_at: '2024-03-01T12:00:00.500000Z', first_response_at: '2024-03-02T01:00:00.000000Z', s: 46799.5 },
      { ticket_id: 't3', created_at: '2024-03-02T08:00:00.000000Z', first_response_at: null, s: null },
      { ticket_id: 't5', created_at: '2024-03-04T00:00:00.000001Z', first_response_at: null, s: null },
      { ticket_id: 't6', created_at: '2024-03-05T00:00:00.000000Z', first_response_at: null, s: null },
    ]);
  });

  it('ticket_resolution lists resolved tickets that are not deleted, with seconds to close', async () => {
    const rows = await queryRows<{ ticket_id: string; closed_at: string; s: number }>(
      database.db,
      sql`select ticket_id, ${iso('closed_at')} as closed_at, resolution_seconds as s from ticket_resolution order by 1`,
    );
    expect(rows).toEqual([{ ticket_id: 't2', closed_at: '2024-03-03T12:00:00.750000Z', s: 172800.25 }]);
  });

  it('open_by_assignee groups open tickets, SQL null and JSON null both as unassigned', async () => {
    const rows = await queryRows<{ assignee_id: string | null; assignee_name: string; n: number; oldest: string; unread: number }>(
      database.db,
      sql`select assignee_id, assignee_name, open_tickets::int as n, ${iso('oldest_created_at')} as oldest,
                 unread_tickets::int as unread
          from open_by_assignee order by assignee_name`,
    );
    expect(rows).toEqual([
      { assignee_id: 'a1', assignee_name: 'Ann', n: 1, oldest: '2024-03-01T09:00:00.000000Z', unread: 1 },
      { assignee_id: 'a2', assignee_name: 'Bob', n: 1, oldest: '2024-03-04T00:00:00.000001Z', unread: 0 },
      { assignee_id: null, assignee_name: 'unassigned', n: 2, oldest: '2024-03-02T08:00:00.000000Z', unread: 1 },
    ]);
  });

  it('open_by_widget groups open tickets by widget', async () => {
    const rows = await queryRows<{ widget_id: string; widget_name: string; n: number; oldest: string; unread: number }>(
      database.db,
      sql`select widget_id, widget_name, open_tickets::int as n, ${iso('oldest_created_at')} as oldest,
                 unread_tickets::int as unread
          from open_by_widget order by widget_id`,
    );
    expect(rows).toEqual([
      { widget_id: 'w1', widget_name: 'Web', n: 2, oldest: '2024-03-01T09:00:00.000000Z', unread: 1 },
      { widget_id: 'w2', widget_name: 'Mail', n: 2, oldest: '2024-03-02T08:00:00.000000Z', unread: 1 },
    ]);
  });

  it('unread_waiting lists open unread tickets, longest waiting first, seconds measured to now()', async () => {
    // now() is fixed within a statement, so the expected seconds are computed in the same statement.
    const rows = await queryRows<{ ticket_id: string; since: string; exact: boolean; assignee_name: string | null }>(
      database.db,
      sql`select ticket_id, ${iso('waiting_since')} as since, assignee_name,
                 waiting_seconds = extract(epoch from now() - waiting_since)::double precision as exact
          from unread_waiting`,
    );
    expect(rows).toEqual([
      // t3 has no inbound message: last_contact_at stands in.
      { ticket_id: 't3', since: '2024-03-02T08:00:00.000000Z', assignee_name: null, exact: true },
      // t1: m4, the last inbound message still present (m5 was removed).
      { ticket_id: 't1', since: '2024-03-02T10:00:00.123456Z', assignee_name: 'Ann', exact: true },
    ]);
    const [seconds] = await queryRows<{ s: number; expected: number }>(
      database.db,
      sql`select waiting_seconds as s,
                 extract(epoch from now() - timestamptz '2024-03-02T10:00:00.123456Z')::double precision as expected
          from unread_waiting where ticket_id = 't1'`,
    );
    expect(seconds!.s).toBe(seconds!.expected);
    expect(seconds!.s).toBeGreaterThan(0);
  });

  it('reply_delivery counts outbound outcomes per UTC day, whatever the session time zone', async () => {
    const rows = await database.db.transaction(async (tx) => {
      await tx.execute(sql`set local time zone 'Pacific/Kiritimati'`);
      return queryRows<Record<string, number | string>>(
        tx,
        sql`select day::text as day, outbound_messages::int as outbound, sent::int as sent, delivered::int as delivered,
                   bounced::int as bounced, spam_complaints::int as spam, errors::int as errors
            from reply_delivery order by day`,
      );
    });
    expect(rows).toEqual([
      // m2 delivered, m6 bounced (m3 removed, m8 on a deleted ticket)
      { day: '2024-03-01', outbound: 2, sent: 2, delivered: 1, bounced: 1, spam: 0, errors: 0 },
      { day: '2024-03-02', outbound: 1, sent: 1, delivered: 1, bounced: 0, spam: 1, errors: 1 },
      // m10 was written with a -02:00 offset: 01:30 UTC on the 3rd.
      { day: '2024-03-03', outbound: 1, sent: 0, delivered: 0, bounced: 0, spam: 0, errors: 1 },
    ]);
  });

  it('every view carries a comment', async () => {
    const rows = await queryRows<{ name: string; commented: boolean }>(
      database.db,
      sql`select c.relname as name, obj_description(c.oid, 'pg_class') is not null as commented
          from pg_class c where c.relkind = 'v' and c.relnamespace = current_schema()::regnamespace order by 1`,
    );
    expect(rows).toEqual(
      [
        'agents',
        'open_backlog_daily',
        'open_by_assignee',
        'open_by_widget',
        'reply_delivery',
        'response_times_weekly',
        'sla_breaches',
        'ticket_first_response',
        'ticket_load_hourly',
        'ticket_resolution',
        'ticket_sla',
        'tickets_current',
        'unread_waiting',
      ].map(
        (name) => ({ name, commented: true }),
      ),
    );
  });
});
