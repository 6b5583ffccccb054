import type { TrackedState } from '../../model/ticketState.ts';
import { queryRows, sql, type Tx } from '../connect.ts';
import { boolColumn, textColumn } from './rows.ts';

export interface StateChange {
  ticketId: string;
  state: TrackedState;
  /** The last time the previous state was still observed; null for a ticket's first row. */
  changedAfter: string | null;
}

/**
 * Appends one `ticket_history` row per change and closes each ticket's previous row, in two statements for any number
 * of tickets. The change happened in (changed_after, valid_from].
 */
export async function recordStateChanges(tx: Tx, changes: readonly StateChange[], at: string): Promise<void> {
  if (changes.length === 0) return;
  const ids = textColumn(changes, (c) => c.ticketId);
  await tx.execute(sql`
    update ticket_history set valid_to = ${at}::timestamptz
    where valid_to is null and ticket_id = any(${ids})`);
  await tx.execute(sql`
    insert into ticket_history (ticket_id, status, priority, assigned_to, in_open, in_self, in_unassigned, in_resolved, valid_from, changed_after)
    select r.ticket_id, r.status, r.priority, r.assigned_to::jsonb, r.in_open, r.in_self, r.in_unassigned, r.in_resolved,
      ${at}::timestamptz, r.changed_after
    from unnest(${ids}, ${textColumn(changes, (c) => c.state.status)}, ${textColumn(changes, (c) => c.state.priority)},
      ${textColumn(changes, (c) => (c.state.assignedTo == null ? null : JSON.stringify(c.state.assignedTo)))},
      ${boolColumn(changes, (c) => c.state.inOpen)}, ${boolColumn(changes, (c) => c.state.inSelf)},
      ${boolColumn(changes, (c) => c.state.inUnassigned)}, ${boolColumn(changes, (c) => c.state.inResolved)},
      ${textColumn(changes, (c) => c.changedAfter, 'timestamptz')})
      as r(ticket_id, status, priority, assigned_to, in_open, in_self, in_unassigned, in_resolved, changed_after)`);
}

/**
 * One row per observed state, after a pass: each list's poll, and each detail, is written in a transaction of its own
 * and records the states it changed, so a ticket that moved from one list to another between two polls of the same
 * pass got a row for a state no poll saw — in `self` and still in `unassigned`, for the milliseconds between the two
 * polls (a helper's contract probe) — and one assigned to the user got a row in `self` still assigned to nobody, until
 * its detail came in the same pass. The rows the pass recorded since `since` (its start) are made one per ticket: the
 * last state, its `changed_after` the first one's (the last time the state before the pass was seen), the row before
 * the pass ending where it begins; and when that last state is the one before the pass, no row at all (the row before
 * the pass is current again). Call at the end of a pass.
 */
export async function collapsePassStates(tx: Tx, since: string): Promise<void> {
  await tx.execute(sql`
    with runs as (
      select ticket_id, min(valid_from) as first_from,
        (array_agg(changed_after order by valid_from, id))[1] as first_changed_after,
        (array_agg(id order by valid_from desc, id desc))[1] as last_id
      from ticket_history where valid_from >= ${since}::timestamptz
      group by ticket_id having count(*) > 1
    ),
    before_pass as (
      update ticket_history p set valid_to = l.valid_from
      from runs r join ticket_history l on l.id = r.last_id
      where p.ticket_id = r.ticket_id and p.valid_from < ${since}::timestamptz and p.valid_to = r.first_from
    ),
    transient as (
      delete from ticket_history h using runs r
      where h.ticket_id = r.ticket_id and h.valid_from >= ${since}::timestamptz and h.id <> r.last_id
    )
    update ticket_history h set changed_after = r.first_changed_after from runs r where h.id = r.last_id`);
  // Back where it was before the pass: the pass's row goes (first, for the one current row per ticket), the one before
  // it is current again.
  const back = await queryRows<{ previous: string | number }>(
    tx,
    sql`delete from ticket_history l using ticket_history p
        where l.valid_from >= ${since}::timestamptz and l.valid_to is null
          and p.ticket_id = l.ticket_id and p.valid_from < ${since}::timestamptz and p.valid_to = l.valid_from
          and (l.status, l.priority, l.assigned_to, l.in_open, l.in_self, l.in_unassigned, l.in_resolved)
            is not distinct from (p.status, p.priority, p.assigned_to, p.in_open, p.in_self, p.in_unassigned, p.in_resolved)
        returning p.id as previous`,
  );
  if (back.length > 0) {
    await tx.execute(sql`update ticket_history set valid_to = null
      where id in (select jsonb_array_elements_text(${JSON.stringify(back.map((b) => String(b.previous)))}::jsonb)::bigint)`);
  }
}

export interface HistoryRow {
  ticket_id: string;
  status: string | null;
  priority: string | null;
  assigned_to: unknown;
  in_open: boolean;
  in_self: boolean;
  in_unassigned: boolean;
  in_resolved: boolean;
  valid_from: string;
  valid_to: string | null;
  changed_after: string | null;
}

export function historyOf(tx: Tx, ticketId: string): Promise<HistoryRow[]> {
  return queryRows<HistoryRow>(tx, sql`select * from ticket_history where ticket_id = ${ticketId} order by valid_from, id`);
}
