import type { ListName } from '../../api/endpoints.ts';
import type { ListDiff, ListItem, ListMirror, ListRowWrite } from '../../model/lists.ts';
import type { MirrorTicket } from '../../model/ticketState.ts';
import { queryRows, sql, type Tx } from '../connect.ts';
import { recordStateChanges } from './history.ts';
import { AHEAD_OF_CLOCK, boolColumn, MIRROR_TICKET_COLUMNS, textColumn } from './rows.ts';

const FLAG_COLUMN: Record<ListName, string> = {
  open: 'in_open',
  self: 'in_self',
  unassigned: 'in_unassigned',
  resolved: 'in_resolved',
};

/**
 * The mirror's side of a whole list response (see `ListMirror`): the listed tickets (loadMirrorForItems) and the
 * members of the list it no longer lists. The engine reads the two apart, a batch at a time (sync/listPoll.ts).
 */
export async function loadMirrorForList(tx: Tx, list: ListName, items: readonly ListItem[]): Promise<ListMirror> {
  const mirror = await loadMirrorForItems(tx, list, items);
  const leavers = await loadTickets(tx, await leaverIds(tx, list, items.map((i) => i.id)));
  const tickets = new Map(mirror.tickets);
  for (const row of leavers) tickets.set(row.id, row);
  return { tickets, fresh: mirror.fresh };
}

/**
 * The mirror's side of some listed items, in one query whatever their number. The database compares every item with
 * its row and returns only the tickets that may have changed (a list field, the membership, a missing or deleted mark)
 * and the ids it does not have (`fresh`); the differ looks at those alone. Each item finds its row through the primary
 * key (the `limit 1` keeps the lateral join a nested loop): a plain join hashed the whole table for every batch, 60 ms
 * a batch of 5,000 against 100,000 rows where the lookups take 18. Equal in the database means equal to the
 * differ (text byte for byte, instants to the microsecond), so nothing changed is missed; a row returned that the
 * differ finds unchanged (a field the item could not give) costs nothing but its reading.
 */
export async function loadMirrorForItems(tx: Tx, list: ListName, items: readonly ListItem[]): Promise<ListMirror> {
  const flag = sql.raw(FLAG_COLUMN[list]);
  const rows = await queryRows<MirrorTicket & { listedId: string }>(
    tx,
    sql`with l as (
        select * from unnest(${textColumn(items, (i) => i.id)}, ${textColumn(items, (i) => i.name)}, ${textColumn(items, (i) => i.email)},
          ${textColumn(items, (i) => i.status)}, ${boolColumn(items, (i) => i.hasUnreadMessages)},
          ${textColumn(items, (i) => i.createdAt, 'timestamptz')}) as l(l_id, l_name, l_email, l_status, l_unread, l_created_at))
      select l_id as "listedId", ${sql.raw(MIRROR_TICKET_COLUMNS)} from l
      left join lateral (
        select *, not ${flag} or deleted_at is not null or missing_since is not null
          or name is distinct from l_name or email is distinct from l_email or status is distinct from l_status
          or has_unread_messages is distinct from l_unread or created_at is distinct from l_created_at as odd
        from tickets where id = l_id limit 1) t on true
      where t.id is null or t.odd`,
  );
  const tickets = new Map<string, MirrorTicket>();
  const fresh = new Set<string>();
  for (const { listedId, ...row } of rows) {
    if (row.id === null) fresh.add(listedId);
    else tickets.set(row.id, row);
  }
  return { tickets, fresh };
}

/** How many tickets the mirror has in `list`. */
export async function countMembers(tx: Tx, list: ListName): Promise<number> {
  const [row] = await queryRows<{ n: number }>(tx, sql`select count(*)::int as n from tickets where ${sql.raw(FLAG_COLUMN[list])}`);
  return Number(row?.n ?? 0);
}

/** The tickets the mirror has in `list` that are not among `listed`, by id. */
export async function leaverIds(tx: Tx, list: ListName, listed: Iterable<string>): Promise<string[]> {
  const flag = sql.raw(FLAG_COLUMN[list]);
  const rows = await queryRows<{ id: string }>(
    tx,
    sql`select t.id from tickets t where t.${flag}
      and not exists (select 1 from unnest(${textColumn([...listed], (id) => id)}) as l(id) where l.id = t.id)
      order by t.id`,
  );
  return rows.map((r) => r.id);
}

/** The mirror's rows of these tickets, as the differ reads them. */
export async function loadTickets(tx: Tx, ids: readonly string[]): Promise<MirrorTicket[]> {
  if (ids.length === 0) return [];
  return queryRows<MirrorTicket>(tx, sql`select ${sql.raw(MIRROR_TICKET_COLUMNS)} from tickets where id = any(${textColumn(ids, (id) => id)})`);
}

/** Writes one list diff. Call inside a transaction. */
export async function applyListDiff(tx: Tx, diff: ListDiff): Promise<void> {
  await writeListRows(tx, diff.list, diff.at, diff.writes);
  let listed = diff.unchanged.length;
  for (const w of diff.writes) if (w.seen) listed++;
  await recordListPoll(tx, diff.list, diff.at, { items: listed, changes: diff.changes, withheld: diff.withheld }, diff.unchanged);
}

/**
 * Writes the rows of (part of) one list diff, the history rows of their state changes included: a fixed number of
 * statements however many rows. Call inside the poll's transaction.
 */
export async function writeListRows(tx: Tx, list: ListName, at: string, writes: readonly ListRowWrite[]): Promise<void> {
  const flag = sql.raw(FLAG_COLUMN[list]);
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
  await recordStateChanges(
    tx,
    writes.filter((w) => w.newState !== null).map((w) => ({ ticketId: w.id, state: w.newState!, changedAfter: w.changedAfter })),
    at,
  );
}

/**
 * Ends a poll, in one statement: its `list_polls` row (how many items it listed, its list-visible changes, the leaves it
 * withheld), and the listed tickets it found unchanged marked seen at `at` (every listed ticket's row is written, in a
 * batch or here).
 */
export async function recordListPoll(
  tx: Tx,
  list: ListName,
  at: string,
  poll: { items: number; changes: number; withheld: number },
  unchanged: readonly string[],
): Promise<void> {
  await tx.execute(sql`
    with seen as (
      update tickets set last_seen_at = ${at}::timestamptz, state_seen_at = ${at}::timestamptz
      where id = any(${textColumn(unchanged, (id) => id)}))
    insert into list_polls (list, at, items, changes, withheld)
    values (${list}, ${at}::timestamptz, ${poll.items}, ${poll.changes}, ${poll.withheld})`);
}

/**
 * What the polls of `list` before this one say: whether there was any (`polled`: the first poll's leaves are no
 * changes), and how many leaves the last one before `at` withheld (the differ's `confirmShrink`; 0 when none, or never
 * polled). A poll dated more than a minute after `at` is not the last one (a row written by hand: see plannerInputs).
 */
export async function previousPolls(tx: Tx, list: ListName, at: string): Promise<{ polled: boolean; withheld: number }> {
  const [row] = await queryRows<{ polled: boolean; withheld: number | null }>(
    tx,
    sql`select exists (select from list_polls where list = ${list}) as polled,
        (select withheld from list_polls where list = ${list} and at <= ${at}::timestamptz + ${AHEAD_OF_CLOCK}
         order by at desc, id desc limit 1) as withheld`,
  );
  return { polled: row?.polled === true, withheld: Number(row?.withheld ?? 0) };
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
