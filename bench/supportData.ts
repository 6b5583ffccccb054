import { sql, type Db, type Tx } from '../src/db/connect.ts';

/**
 * A helpdesk's history written straight into a mirror's tables with generate_series, for the report's benchmark
 * (`npm run bench:report`, 100,000 tickets) and its screenshot: the shape of what `sync` stores — tickets with their
 * list flags, messages, and ticket_history rows — without the months of syncing it would take to get there.
 *
 * Deterministic: every random draw is a hash of the ticket's number and the draw's own number, so the same options give
 * the same rows on PostgreSQL and PGlite alike. The shape: arrivals in office hours (08–18 UTC, Monday to Friday; a
 * fifth of them at other hours, few at weekends); most tickets answered within hours, some
 * after days; 95 % resolved after minutes to days; a third of the open ones waiting on an unread message; eight agents
 * and 12 % unassigned; four widgets, the chat busiest.
 */

export interface SupportDataOptions {
  tickets: number;
  /** Tickets arrive over this many days up to `end`. */
  days: number;
  /** The present, epoch ms: nothing happens after it. */
  end: number;
  /** Ticket ids are `${prefix}0000001` …, so several fills can share a database. @default 'B' */
  prefix?: string;
}

const AGENTS = ['Alex Morgan', 'Priya Raman', 'Jonas Weber', 'Chloé Martin', 'Kenji Watanabe', 'Fatima Zahra', 'Diego Álvarez', 'Maja Nowak'];

/** A uniform draw in [0, 1) for ticket `g.i`, the same for the same `k`. */
const u = (k: number) => `(('x' || substr(md5(g.i::text || ':${k}'), 1, 8))::bit(32)::bigint::float8 / 4294967296)`;

/** One row per ticket with everything its rows are made of; every statement below recomputes it identically. */
function supportBaseSql(o: Required<SupportDataOptions>): string {
  const end = `'${new Date(o.end).toISOString()}'::timestamptz`;
  const agents = AGENTS.map((name, i) => `'{"id":"agent-${i + 1}","name":"${name}","email":"agent${i + 1}@helpdesk.example"}'`).join(', ');
  return `
    select g.i, '${o.prefix}' || lpad(g.i::text, 7, '0') as id, c.created_at,
      case when ${u(6)} < 0.95 and c.created_at + r.resolution < ${end} then c.created_at + r.resolution end as closed_at,
      case when ${u(8)} < 0.93 and c.created_at + r.first_response < ${end}
        then c.created_at + least(r.first_response, r.resolution - interval '1 minute') end as first_response_at,
      ${u(9)} < 0.35 as follow_up, ${u(10)} as follow_up_at,
      case when ${u(12)} < 0.12 then null else (array[${agents}])[1 + floor(${u(11)} * 8)::int]::jsonb end as assigned_to,
      case when ${u(13)} < 0.45 then 'Website chat' when ${u(13)} < 0.7 then 'Help center'
           when ${u(13)} < 0.9 then 'Contact form' else 'E-mail' end as widget_name,
      case when ${u(14)} < 0.08 then 'urgent' when ${u(14)} < 0.3 then 'high' when ${u(14)} < 0.85 then 'normal' else 'low' end as priority,
      ${end} as now
    from generate_series(1, ${o.tickets}) as g(i)
    cross join lateral (
      select date_trunc('day', ${end} at time zone 'UTC') - floor(${u(1)} * ${o.days}) * interval '1 day'
        + (case when ${u(2)} < 0.8 then 8 + ${u(3)} * 10 else ${u(3)} * 24 end) * interval '1 hour' as t0
    ) as a
    cross join lateral (
      -- Most weekend arrivals move to the Thursday or Friday before; one still in the future moves a week back.
      select (case when extract(isodow from a.t0) >= 6 and ${u(4)} < 0.85 then a.t0 - interval '2 days' else a.t0 end) at time zone 'UTC' as t1
    ) as b
    cross join lateral (select case when b.t1 > ${end} then b.t1 - interval '7 days' else b.t1 end as created_at) as c
    cross join lateral (
      select interval '1 second' * (900 + 5 * 86400 * power(${u(5)}, 3)) as resolution,
             interval '1 second' * (60 + 12 * 3600 * power(${u(7)}, 3)) as first_response
    ) as r`;
}

/** Writes `tickets` tickets with their messages and history into the mirror's tables (in the caller's schema). */
export async function fillSupportData(db: Db, options: SupportDataOptions): Promise<void> {
  const o = { prefix: 'B', ...options };
  // The draws once per ticket, in a temporary table (so one session: a transaction): as a CTE, every reference to a
  // column would repeat its whole expression, and PostgreSQL's JIT compiler takes minutes over the result.
  await db.transaction(async (tx) => {
    await tx.execute(sql.raw(`create temporary table support_base on commit drop as ${supportBaseSql(o)}`));
    await insertRows(tx);
  });
}

async function insertRows(tx: Tx): Promise<void> {
  // The last inbound message of an open ticket waiting on us: after the reply, before now.
  const followUp = `b.first_response_at + (b.now - b.first_response_at) * b.follow_up_at`;
  const waiting = `b.closed_at is null and b.first_response_at is not null and b.follow_up`;
  await tx.execute(
    sql.raw(`insert into tickets (id, name, email, status, priority, has_unread_messages, replied_to_customer, closed_at,
      last_contact_at, created_at, updated_at, assigned_to, widget_id, widget_name, in_open, in_unassigned, in_resolved,
      first_seen_at, last_seen_at, detail_synced_at)
    select b.id, 'Customer ' || b.i, 'customer' || b.i || '@example.com',
      case when b.closed_at is not null then 'closed' when b.first_response_at is null then 'open' else 'pending' end,
      b.priority, ${waiting}, b.first_response_at is not null, b.closed_at,
      greatest(b.created_at, b.first_response_at, b.closed_at, case when ${waiting} then ${followUp} end),
      b.created_at, coalesce(b.closed_at, b.first_response_at, b.created_at), b.assigned_to,
      'w-' || md5(b.widget_name), b.widget_name,
      b.closed_at is null, b.closed_at is null and b.assigned_to is null, b.closed_at is not null,
      b.created_at + interval '2 minutes', b.now, b.now
    from support_base b`),
  );
  await tx.execute(
    sql.raw(`insert into messages (id, ticket_id, message_type, ticket_status, message, outbound_sent, outbound_delivered_at,
      outbound_bounced, outbound_spam_complaint, created_at)
    select b.id || '-' || m.k, b.id, m.type, 'open', m.text, m.type = 'outbound',
      case when m.type = 'outbound' then m.at + interval '5 seconds' end, false, false, m.at
    from support_base b
    cross join lateral (values
      (1, 'inbound', b.created_at, 'Hello, I need help with my order.'),
      (2, 'outbound', b.first_response_at, 'Thanks for writing, we are on it.'),
      (3, 'inbound', case when ${waiting} then ${followUp} end, 'Any news on this?'),
      (4, 'outbound', case when b.closed_at > coalesce(b.first_response_at, b.created_at) then b.closed_at - interval '1 minute' end,
        'Fixed now, closing this ticket.')
    ) as m(k, type, at, text)
    where m.at is not null`),
  );
  // One history row while the ticket is open, from when the mirror first saw it, and one after its closing.
  await tx.execute(
    sql.raw(`insert into ticket_history (ticket_id, status, priority, assigned_to, in_open, in_self, in_unassigned, in_resolved,
      valid_from, valid_to, changed_after)
    select b.id, h.status, b.priority, b.assigned_to, h.open, false, h.open and b.assigned_to is null, not h.open,
      h.valid_from, h.valid_to, h.changed_after
    from support_base b
    cross join lateral (values
      ('open', true, b.created_at + interval '2 minutes', b.closed_at, null::timestamptz),
      ('closed', false, b.closed_at, null, b.closed_at - interval '1 minute')
    ) as h(status, open, valid_from, valid_to, changed_after)
    where h.valid_from is not null`),
  );
}
