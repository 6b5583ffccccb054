import type { ListName } from '../../api/endpoints.ts';
import type { ListDiff, MirrorTicket } from '../../sync/differ.ts';
import { queryRows, sql, type Tx } from '../connect.ts';
import { recordStateChanges } from './history.ts';
import { MIRROR_COLUMNS, toMirrorTicket, type MirrorRecord } from './rows.ts';

const FLAG_COLUMN: Record<ListName, string> = {
  open: 'in_open',
  self: 'in_self',
  unassigned: 'in_unassigned',
  resolved: 'in_resolved',
};

/** The mirror's view of a list: the tickets it names and those the mirror believes are in it. One query. */
export async function loadMirrorForList(tx: Tx, list: ListName, ids: readonly string[]): Promise<Map<string, MirrorTicket>> {
  const rows = await queryRows<MirrorRecord>(
    tx,
    sql`select ${sql.raw(MIRROR_COLUMNS)} from tickets
      where ${sql.raw(FLAG_COLUMN[list])} or id in (select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))`,
  );
  return new Map(rows.map((r) => [r.id, toMirrorTicket(r)]));
}

/** Writes one list diff: a fixed number of statements for any list size. Call inside a transaction. */
export async function applyListDiff(tx: Tx, diff: ListDiff): Promise<void> {
  const { at } = diff;
  const flag = sql.raw(FLAG_COLUMN[diff.list]);
  if (diff.writes.length > 0) {
    const rows = JSON.stringify(
      diff.writes.map((w) => ({
        id: w.id,
        name: w.name,
        email: w.email,
        status: w.status,
        has_unread_messages: w.hasUnreadMessages,
        created_at: w.createdAt,
        flag: w.flag,
        seen: w.seen,
        due: w.due,
        state_changed: w.newState !== null,
      })),
    );
    await tx.execute(sql`
      insert into tickets as t (id, name, email, status, has_unread_messages, created_at, ${flag},
        first_seen_at, last_seen_at, detail_due_since, state_seen_at)
      select r.id, r.name, r.email, r.status, r.has_unread_messages, r.created_at, r.flag,
        ${at}::timestamptz, ${at}::timestamptz, case when r.due then ${at}::timestamptz end, ${at}::timestamptz
      from jsonb_to_recordset(${rows}::jsonb) as r(id text, name text, email text, status text,
        has_unread_messages boolean, created_at timestamptz, flag boolean, seen boolean, due boolean, state_changed boolean)
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
      where id in (select jsonb_array_elements_text(${JSON.stringify(diff.unchanged)}::jsonb))`);
  }
  await recordStateChanges(
    tx,
    diff.writes.filter((w) => w.newState !== null).map((w) => ({ ticketId: w.id, state: w.newState!, changedAfter: w.changedAfter })),
    at,
  );
  await tx.execute(sql`
    insert into list_polls (list, at, items, changes)
    values (${diff.list}, ${at}::timestamptz, ${diff.writes.filter((w) => w.seen).length + diff.unchanged.length}, ${diff.changes})`);
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

