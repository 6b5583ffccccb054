import type { ListName } from '../api/endpoints.ts';
import type { ListBody } from '../api/listBody.ts';
import { countMembers, leaverIds, loadMirrorForItems, loadTickets, previousPolls, recordListPoll, writeListRows } from '../db/repos/lists.ts';
import type { Tx } from '../db/connect.ts';
import { diffLeaves, diffListed, withholdsLeaves } from './differ.ts';
import type { ListItem } from '../model/lists.ts';
import { parseListItem, type Problems } from './mapping.ts';

/**
 * One list response into the mirror, inside the caller's transaction, a batch of items at a time: each batch is
 * parsed (ListBody), mapped, compared with its rows and written before the next is read, so that a list of 100,000
 * tickets never holds more than one batch of objects (bench/README.md, "The 100,000-item list"). Then the leaves: the
 * list's members in the mirror that no batch listed, under the shrinking-list rule (differ.ts `confirmShrink`), read
 * and written a batch at a time too. The rows written are those of `diffList` on the whole list, and so is the
 * `list_polls` row.
 *
 * All or nothing: a batch that is not JSON (InvalidResponseError) or an item without a usable id (UnstorableError)
 * throws, and the caller's transaction undoes the batches written before it.
 */

/** Items read, compared and written at once. @default 5,000: larger batches measured no faster (bench/README.md). */
export const LIST_BATCH = 5_000;

export interface ListPollResult {
  /** Items the list held (a ticket listed twice counted once). */
  listed: number;
  /** Ticket rows written: new, changed, joined or left. */
  written: number;
  /** Their tickets. */
  writtenIds: string[];
  /** List-visible changes (0 on the list's first poll). */
  changes: number;
  /** Tickets the mirror had in this list before this poll. */
  members: number;
  /** Leaves held back until the next poll confirms them. */
  withheld: number;
}

export async function writeListPoll(
  tx: Tx,
  list: ListName,
  body: ListBody,
  at: string,
  problems: Problems,
  batchSize = LIST_BATCH,
): Promise<ListPollResult> {
  const before = await previousPolls(tx, list, at);
  const initial = !before.polled;
  const seen = new Set<string>();
  // Written once at the end, with the poll's row (recordListPoll), in one statement: per batch, PostgreSQL scanned the
  // whole table for each (+220 ms a poll of 100,000 items). Their ids are already held by `seen`.
  const unchanged: string[] = [];
  const result: ListPollResult = { listed: 0, written: 0, writtenIds: [], changes: 0, members: 0, withheld: 0 };
  let offset = 0;
  // Each item is mapped as soon as it is parsed: only the batch's ListItems live on while the database compares them.
  const read = (): ListItem[] | null => {
    if (offset >= body.length) return null;
    const items: ListItem[] = [];
    for (const end = Math.min(body.length, offset + batchSize); offset < end; offset++) {
      const item = parseListItem(body.item(offset), offset, list, problems, seen);
      if (item) items.push(item);
    }
    return items;
  };
  for (let items = read(); items; ) {
    const loading = loadMirrorForItems(tx, list, items);
    // Handled below; a failure of the read in between must not leave it unhandled.
    loading.catch(() => {});
    // On PostgreSQL the database compares this batch in its own process while the next one is parsed here: one turn
    // of the event loop sends the query first. (-100 ms a poll of 100,000 items; PGlite runs in this thread anyway.)
    await new Promise((resolve) => setImmediate(resolve));
    let next: ListItem[] | null;
    try {
      next = read();
    } catch (error) {
      await loading.catch(() => {});
      throw error;
    }
    const diff = diffListed(list, items, await loading, at, initial);
    await writeListRows(tx, list, at, diff.writes);
    for (const id of diff.unchanged) unchanged.push(id);
    result.listed += items.length;
    result.written += diff.writes.length;
    for (const w of diff.writes) result.writtenIds.push(w.id);
    result.changes += diff.changes;
    result.members += diff.members;
    items = next;
  }
  // Every listed ticket is in the list now: when the list has no more members than were listed, none left it, and the
  // search for leaves (an anti-join of the table with every listed id, 130 ms at 100,000) is skipped.
  const leaving = (await countMembers(tx, list)) > result.listed ? await leaverIds(tx, list, seen) : [];
  seen.clear();
  result.members += leaving.length;
  if (withholdsLeaves(result.members, leaving.length, before.withheld)) {
    result.withheld = leaving.length;
  } else {
    for (let i = 0; i < leaving.length; i += batchSize) {
      const writes = diffLeaves(list, await loadTickets(tx, leaving.slice(i, i + batchSize)), initial);
      await writeListRows(tx, list, at, writes);
      result.written += writes.length;
      for (const w of writes) result.writtenIds.push(w.id);
      if (!initial) result.changes += writes.length;
    }
  }
  await recordListPoll(tx, list, at, { items: result.listed, changes: result.changes, withheld: result.withheld }, unchanged);
  return result;
}
