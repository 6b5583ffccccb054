import type { ListName } from '../../api/endpoints.ts';
import type { ListDiff, ListItem, ListMirror } from '../../model/lists.ts';
import type { MirrorTicket } from '../../model/ticketState.ts';
import { queryRows, sql, type Tx } from '../connect.ts';
import { recordStateChanges } from './history.ts';
import { boolColumn, MIRROR_TICKET_COLUMNS, textColumn } from './rows.ts';

const FLAG_COLUMN: Record<ListName, string> = {
  open: 'in_open',
  self: 'in_self',
  unassigned: 'in_unassigned',
  resolved: 'in_resolved',
};

/**
 * The mirror's side of a list response (see `ListMirror`), in two queries whatever the list's size. The database
 * compares every listed item with its row and returns only the tickets that may have changed (a list field, the
 * membership, a missing or deleted mark) and those that left the list; the differ looks at those alone. Equal in the
 * database means equal to the differ (text byte for byte, instants to the microsecond), so nothing changed is missed;
 * a row returned that the differ finds unchanged (a field the item could not give) costs nothing but its reading.
 */
export async function loadMirrorForList(tx: Tx, list: ListName, items: readonly ListItem[]): Promise<ListMirror> {
  const flag = sql.raw(FLAG_COLUMN[list]);
  const ids = textColumn(items, (i) => i.id);
  const rows = await queryRows<MirrorTicket>(
    tx,
    sql`with l as (
        select * from unnest(${ids}, ${textColumn(items, (i) => i.name)}, ${textColumn(items, (i) => i.email)},
          ${textColumn(items, (i) => i.status)}, ${boolColumn(items, (i) => i.hasUnreadMessages)},
          ${textColumn(items, (i) => i.createdAt, 'timestamptz')}) as l(l_id, l_name, l_email, l_status, l_unread, l_created_at))
      select ${sql.raw(MIRROR_TICKET_COLUMNS)} from tickets t join l on l_id = t.id
      where not t.${flag} or t.deleted_at is not null or t.missing_since is not null
        or t.name is distinct from l_name or t.email is distinct from l_email or t.status is distinct from l_status
        or t.has_unread_messages is distinct from l_unread or t.created_at is distinct from l_created_at
      union all
      select ${sql.raw(MIRROR_TICKET_COLUMNS)} from tickets t where t.${flag} and not exists (select 1 from l where l_id = t.id)`,
  );
  const [fresh] = await queryRows<{ ids: string[] }>(
    tx,
    sql`select coalesce(array_agg(l.id), '{}') as ids from unnest(${ids}) as l(id)
      where not exists (select 1 from tickets t where t.id = l.id)`,
  );
  const tickets = new Map<string, MirrorTicket>();
  for (const row of rows) tickets.set(row.id, row);
  return { tickets, fresh: new Set(fresh?.ids ?? []) };
}

/** Writes one list diff: a fixed number of statements for any list size. Call inside a transaction. */
export async function applyListDiff(tx: Tx, diff: ListDiff): Promise<void> {
  const { at, writes } = diff;
  const flag = sql.raw(FLAG_COLUMN[diff.list]);
  if (writes.length > 0) {
    await tx.execute(sql`
      insert into tickets as t (id, name, email, status, has_unread_messages, created_at, ${flag},
        first_seen_at, last_seen_at, detail_due_since, state_seen_at)
      select r.id, r.name, r.email, r.status, r.has_unread_messages, r.created_at, r.flag,
        ${at}::timestamptz, ${at}::timestamptz, case when r.due then ${at}::timestamptz end, ${at}::timestamptz
      from unnest(${textColumn(writes, (w) => w.id)}, ${textColumn(writes, (w) => w.name)}, ${textColumn(writes, (w) => w.email)},
        ${textColumn(writes, (w) => w.status)}, ${boolColumn(writes, (w) => w.hasUnreadMessages)},
        ${textColumn(writes, (w) => w.createdAt, 'timestamptz')}, ${boolColumn(writes, (w) => w.flag)}, ${boolColumn(writes, (w) => w.due)})
        as r(id, name, email, status, has_unread_messages, created_at, flag, due)
      on conflict (id) do update set
        name = excluded.name,
        email = excluded.email,
        status = excluded.status,
        has_unread_messages = excluded.has_unread_messages,
        created_at = excluded.created_at,
        ${flag} = excluded.${flag},
        last_seen_at = case when excluded.${flag} then excluded.last_seen_at else t.last_seen_at end,
        missing_since = case when excluded.${flag} then null else t.missing_since end,
        deleted_at = case when excluded.${flag} then null else t.deleted_at end,
        detail_due_since = coalesce(t.detail_due_since, excluded.detail_due_since),
        state_seen_at = excluded.state_seen_at`);
  }
  if (diff.unchanged.length > 0) {
    await tx.execute(sql`
      update tickets set last_seen_at = ${at}::timestamptz, state_seen_at = ${at}::timestamptz
      where id = any(${textColumn(diff.unchanged, (id) => id)})`);
  }
  await recordStateChanges(
    tx,
    diff.writes.filter((w) => w.newState !== null).map((w) => ({ ticketId: w.id, state: w.newState!, changedAfter: w.changedAfter })),
    at,
  );
  let listed = diff.unchanged.length;
  for (const w of writes) if (w.seen) listed++;
  await tx.execute(sql`
    insert into list_polls (list, at, items, changes, withheld)
    values (${diff.list}, ${at}::timestamptz, ${listed}, ${diff.changes}, ${diff.withheld})`);
}

/** How many leaves the last poll of `list` withheld (the differ's `confirmShrink`); 0 when none, or never polled. */
export async function lastPollWithheld(tx: Tx, list: ListName): Promise<number> {
  const [row] = await queryRows<{ withheld: number }>(
    tx,
    sql`select withheld from list_polls where list = ${list} order by at desc, id desc limit 1`,
  );
  return Number(row?.withheld ?? 0);
}

/**
 * After a sweep in which all four lists answered: a ticket in none of them is missing (and its detail is due, once,
 * to tell a deletion from a move the lists do not show). Returns how many became missing.
 */
export async function markMissingAfterSweep(tx: Tx, at: string): Promise<number> {
  const rows = await queryRows<{ id: string }>(
    tx,
    sql`update tickets set missing_since = ${at}::timestamptz,
        detail_due_since = case when deleted_at is null then coalesce(detail_due_since, ${at}::timestamptz) else detail_due_since end
      where not (in_open or in_self or in_unassigned or in_resolved) and missing_since is null
      returning id`,
  );
  return rows.length;
}
