import type { SQL } from 'drizzle-orm';
import { queryRows, sql, type Tx } from '../connect.ts';

/**
 * The report page's queries (`/report`, `ticket-mirror report`): the support dashboard's questions, asked of the BI
 * views (migrations 0001 and 0007), for a period of whole days in the report's time zone (report_settings, as the
 * views cut them). Every number is cast in SQL (`::int`, `::float8`) so both drivers answer with JavaScript numbers;
 * instants come back as text in the time zone.
 */

export interface PeriodBounds {
  /** First day, `YYYY-MM-DD`. */
  from: string;
  /** Last day, `YYYY-MM-DD`, included. */
  to: string;
  /** IANA time zone the days and hours are cut in: report_settings.time_zone, the views' own. */
  timeZone: string;
  /** Business hours are set (report_settings.business_windows): the business-hours percentiles are computed too. */
  business?: boolean;
}

/** The period's first instant and the instant after its last day, as SQL. */
function bounds(p: PeriodBounds): { start: SQL; end: SQL } {
  return {
    start: sql`(${p.from}::date::timestamp at time zone ${p.timeZone})`,
    end: sql`((${p.to}::date + 1)::timestamp at time zone ${p.timeZone})`,
  };
}

/**
 * Settings of the report's transaction: PostgreSQL's JIT compiler spends more time compiling these one-off
 * aggregates (a fifth of a second each on 100,000 tickets) than it saves. `set local` ends with the transaction.
 */
export async function reportSession(tx: Tx): Promise<void> {
  await tx.execute(sql`set local jit = off`);
}

/**
 * Open tickets at the end of each day of the period: open_backlog_daily's numbers, for its days in the period (none
 * before the first ticket_history row, none after today), computed in one pass over ticket_history instead of one per
 * day. The view counts, for each day, the open spans that cover its end (`as_of`); that is the number of spans begun
 * by then minus the number ended by then, so each span is an event +1 at its start and −1 at its end, summed by the
 * first day whose `as_of` is at or after the event, and the days' counts are running sums. (A ticket's history rows
 * never overlap, so counting spans counts tickets, as the view's count(DISTINCT ticket_id) does.) On 100,000 tickets
 * the view takes seconds per month asked for; this takes the same time for any period.
 */
export function backlogByDay(tx: Tx, p: PeriodBounds): Promise<Array<{ day: string; open_tickets: number }>> {
  return queryRows(
    tx,
    sql`with per_day as (
          -- An event counts from the day whose end (the local midnight after it) is at or after it; today's end is now().
          select ((e.at at time zone ${p.timeZone}) - interval '1 microsecond')::date as day, sum(e.delta)::int as delta
          from (
            -- Every history row has its ticket (a foreign key): only the deleted ones can shorten a span.
            select h.valid_from, least(h.valid_to, d.deleted_at) as valid_to
            from ticket_history h
            left join (select id, deleted_at from tickets where deleted_at is not null) as d on d.id = h.ticket_id
            where h.in_open
          ) as s
          cross join lateral (values (s.valid_from, 1), (s.valid_to, -1)) as e(at, delta)
          -- A span cut to nothing by its ticket's deletion never counts.
          where (s.valid_to is null or s.valid_to > s.valid_from) and e.at <= now()
          group by 1
        ),
        bounds as (
          select greatest(${p.from}::date, (select (min(valid_from) at time zone ${p.timeZone})::date from ticket_history)) as first,
            least(${p.to}::date, (now() at time zone ${p.timeZone})::date) as last
        )
        select to_char(d.day, 'YYYY-MM-DD') as day,
          ((select coalesce(sum(delta), 0) from per_day, bounds where per_day.day < bounds.first)
            + sum(coalesce(per_day.delta, 0)) over (order by d.day))::int as open_tickets
        from bounds
        cross join lateral generate_series(bounds.first::timestamp, bounds.last::timestamp, interval '1 day') as g(d)
        cross join lateral (select g.d::date as day) as d
        left join per_day on per_day.day = d.day
        order by d.day`,
  );
}

export interface WeekRow {
  /** Monday of the week, `YYYY-MM-DD`; null for the row of the whole period. */
  week: string | null;
  tickets: number;
  p50_s: number | null;
  p90_s: number | null;
  /** The median counted in business hours; null unless `business`. */
  p50_business_s: number | null;
}

/** The median of a business-hours column, only when business hours are set (business_seconds() costs a lookup a row). */
function businessMedian(p: PeriodBounds, column: 'first_response_business_seconds' | 'resolution_business_seconds'): SQL {
  return p.business ? sql`percentile_cont(0.5) within group (order by ${sql.raw(column)})::float8` : sql`null::float8`;
}

/**
 * First response by week of creation (ticket_first_response): tickets, answered, median and 90th percentile; the
 * row with a null week is the whole period's (grouping sets: the view's per-ticket lookup is made once for both).
 */
export function firstResponseByWeek(tx: Tx, p: PeriodBounds): Promise<Array<WeekRow & { answered: number }>> {
  const { start, end } = bounds(p);
  return queryRows(
    tx,
    sql`select to_char(date_trunc('week', created_at at time zone ${p.timeZone}), 'YYYY-MM-DD') as week,
          count(*)::int as tickets, count(first_response_seconds)::int as answered,
          percentile_cont(0.5) within group (order by first_response_seconds)::float8 as p50_s,
          percentile_cont(0.9) within group (order by first_response_seconds)::float8 as p90_s,
          ${businessMedian(p, 'first_response_business_seconds')} as p50_business_s
        from ticket_first_response where created_at >= ${start} and created_at < ${end}
        group by grouping sets ((1), ()) order by 1 nulls first`,
  );
}

/** Resolution time by week of closing (ticket_resolution), and for the whole period (null week), as above. */
export function resolutionByWeek(tx: Tx, p: PeriodBounds): Promise<WeekRow[]> {
  const { start, end } = bounds(p);
  return queryRows(
    tx,
    sql`select to_char(date_trunc('week', closed_at at time zone ${p.timeZone}), 'YYYY-MM-DD') as week,
          count(*)::int as tickets,
          percentile_cont(0.5) within group (order by resolution_seconds)::float8 as p50_s,
          percentile_cont(0.9) within group (order by resolution_seconds)::float8 as p90_s,
          ${businessMedian(p, 'resolution_business_seconds')} as p50_business_s
        from ticket_resolution where closed_at >= ${start} and closed_at < ${end}
        group by grouping sets ((1), ()) order by 1 nulls first`,
  );
}

/** Tickets created in the period by ISO day of the week (1 = Monday) and hour, the cells that have any. */
export function createdByHourOfWeek(tx: Tx, p: PeriodBounds): Promise<Array<{ dow: number; hour: number; tickets: number }>> {
  const { start, end } = bounds(p);
  return queryRows(
    tx,
    sql`select extract(isodow from created_at at time zone ${p.timeZone})::int as dow,
          extract(hour from created_at at time zone ${p.timeZone})::int as hour, count(*)::int as tickets
        from tickets where deleted_at is null and created_at >= ${start} and created_at < ${end}
        group by 1, 2`,
  );
}

export interface WidgetRow {
  widget_name: string | null;
  /** Tickets created in the period from this widget. */
  created: number;
  /** Open now (open_by_widget). */
  open_tickets: number;
  unread_tickets: number;
}

/** Per widget: tickets created in the period, and open now (open_by_widget); the `limit` busiest. */
export function byWidget(tx: Tx, p: PeriodBounds, limit: number): Promise<WidgetRow[]> {
  const { start, end } = bounds(p);
  return queryRows(
    tx,
    sql`with created as (
          select widget_id, widget_name, count(*)::int as n from tickets
          where deleted_at is null and created_at >= ${start} and created_at < ${end} group by 1, 2
        )
        select coalesce(c.widget_name, o.widget_name) as widget_name, coalesce(c.n, 0)::int as created,
          coalesce(o.open_tickets, 0)::int as open_tickets, coalesce(o.unread_tickets, 0)::int as unread_tickets
        from created c
        full join open_by_widget o
          on coalesce(c.widget_id, '') = coalesce(o.widget_id, '') and coalesce(c.widget_name, '') = coalesce(o.widget_name, '')
        order by 2 desc, 3 desc, 1 limit ${limit}`,
  );
}

export interface AssigneeRow {
  /** Null when the service's assigned_to has no name (`{"id": "a1"}`, `{"name": null}`, a bare string). */
  assignee_name: string | null;
  assignee_id: string | null;
  open_tickets: number;
  unread_tickets: number;
  /** The oldest open ticket's age now, seconds. */
  oldest_age_s: number | null;
  /** Open tickets of all assignees together. */
  all_open: number;
}

/** Open tickets now by assignee (open_by_assignee), the `limit` with most. */
export function openByAssignee(tx: Tx, limit: number): Promise<AssigneeRow[]> {
  return queryRows(
    tx,
    sql`select assignee_name, assignee_id, open_tickets::int as open_tickets, unread_tickets::int as unread_tickets,
          extract(epoch from now() - oldest_created_at)::float8 as oldest_age_s,
          (sum(open_tickets) over ())::int as all_open
        from open_by_assignee order by open_tickets desc, assignee_name limit ${limit}`,
  );
}

export interface WaitingRow {
  ticket_id: string;
  name: string | null;
  priority: string | null;
  assignee_name: string | null;
  widget_name: string | null;
  /** `YYYY-MM-DD HH:MM` in the time zone. */
  waiting_since: string | null;
  waiting_s: number | null;
  /** Customers waiting, all of them. */
  all_waiting: number;
}

/** The customers waiting longest now (unread_waiting). */
export function waitingLongest(tx: Tx, timeZone: string, limit: number): Promise<WaitingRow[]> {
  return queryRows(
    tx,
    sql`select ticket_id, name, priority, assignee_name, widget_name,
          to_char(waiting_since at time zone ${timeZone}, 'YYYY-MM-DD HH24:MI') as waiting_since,
          waiting_seconds::float8 as waiting_s, (count(*) over ())::int as all_waiting
        from unread_waiting order by unread_waiting.waiting_since asc nulls last, ticket_id limit ${limit}`,
  );
}
