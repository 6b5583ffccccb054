import type { ListName } from '../api/endpoints.ts';
import type { ListDiff, ListItem, ListMirror, ListRowWrite } from '../model/lists.ts';
import { emptyState, sameState, trackedOf, type MirrorTicket, type TrackedState } from '../model/ticketState.ts';

/**
 * The differ: one list response against the mirror, as a pure function. It returns what to write; the writer
 * (db/repos/lists.ts) carries it out, a fixed number of statements per batch of items, in the poll's one transaction
 * (sync/listPoll.ts).
 *
 * A list tells four things of each ticket (name, email, status, has_unread_messages, created_at) plus membership of
 * that list. A change to any of them, a new ticket, or a ticket joining or leaving the list is a *list-visible change*:
 * the ticket's detail is due (`detail_due_since`), because whatever moved it may have changed more than the list shows.
 */

export const FLAG: Record<ListName, 'inOpen' | 'inSelf' | 'inUnassigned' | 'inResolved'> = {
  open: 'inOpen',
  self: 'inSelf',
  unassigned: 'inUnassigned',
  resolved: 'inResolved',
};

const LIST_FIELDS = ['name', 'email', 'status', 'hasUnreadMessages', 'createdAt'] as const;

/** The listed side of a list's diff: what the items of one batch change (see diffListed). */
export interface ListedDiff {
  /** New or changed listed tickets (all `seen`). */
  writes: ListRowWrite[];
  unchanged: string[];
  /** List-visible changes among them (0 on a list's first poll). */
  changes: number;
  /** Listed tickets the mirror had in this list before this poll. */
  members: number;
}

/**
 * `initial` is the first poll of this list: what it shows is the backlog, not news, so its tickets wait for the
 * paced backfill instead of jumping the queue as due details.
 *
 * The whole list's diff: its items (diffListed) and the mirror's members it no longer lists (diffLeaves). The engine
 * applies the two halves apart — the items a batch at a time, the leaves once every batch is in (sync/listPoll.ts) —
 * and gets this very diff.
 */
export function diffList(
  list: ListName,
  items: readonly ListItem[],
  mirror: ListMirror,
  at: string,
  initial = false,
): ListDiff {
  const listed = diffListed(list, items, mirror, at, initial);
  const ids = new Set<string>();
  for (const item of items) ids.add(item.id);
  const flag = FLAG[list];
  const leavers = [...mirror.tickets.values()].filter((old) => old[flag] && !ids.has(old.id));
  const leaves = diffLeaves(list, leavers, initial);
  return {
    list,
    at,
    writes: [...listed.writes, ...leaves],
    unchanged: listed.unchanged,
    changes: initial ? 0 : listed.changes + leaves.length,
    members: listed.members + leaves.length,
    withheld: 0,
  };
}

/**
 * The listed items against the mirror's view of them (`mirror.tickets` may hold other tickets too: they are not
 * looked at). Items must not repeat an id (parseListItems drops repeats).
 */
export function diffListed(list: ListName, items: readonly ListItem[], mirror: ListMirror, at: string, initial = false): ListedDiff {
  const { tickets, fresh } = mirror;
  const flag = FLAG[list];
  const writes: ListRowWrite[] = [];
  const unchanged: string[] = [];
  let changes = 0;
  // Listed tickets the mirror has in this list: set aside by the database as unchanged (it checked the flag), or
  // returned with the flag set.
  let members = 0;

  for (const item of items) {
    const old = tickets.get(item.id);
    if (old?.[flag]) members++;
    if (!old && fresh && !fresh.has(item.id)) {
      unchanged.push(item.id);
      members++;
      continue;
    }
    if (!old) {
      changes++;
      const state: TrackedState = { ...emptyState(), status: item.status, [flag]: true };
      writes.push({
        id: item.id,
        isNew: true,
        seen: true,
        name: item.name,
        email: item.email,
        status: item.status,
        hasUnreadMessages: item.hasUnreadMessages,
        createdAt: item.createdAt,
        flag: true,
        due: !initial,
        newState: state,
        changedAfter: null,
      });
      continue;
    }
    const joined = !old[flag];
    const revived = old.deletedAt !== null || old.missingSince !== null;
    if (!joined && !revived && !listFieldsChanged(item, old)) {
      unchanged.push(item.id);
      continue;
    }
    const merged = listFieldsToStore(item, old);
    changes++;
    const state: TrackedState = { ...trackedOf(old), status: merged.status, [flag]: true };
    const stateChanged = !sameState(state, old);
    writes.push({
      id: item.id,
      isNew: false,
      seen: true,
      ...merged,
      flag: true,
      due: !initial,
      newState: stateChanged ? state : null,
      changedAfter: stateChanged ? old.stateSeenAt : null,
    });
  }
  return { writes, unchanged, changes: initial ? 0 : changes, members };
}

/** The writes of tickets that left the list: members of it in the mirror that the response no longer lists. */
export function diffLeaves(list: ListName, leavers: Iterable<MirrorTicket>, initial = false): ListRowWrite[] {
  const flag = FLAG[list];
  const writes: ListRowWrite[] = [];
  for (const old of leavers) {
    const state: TrackedState = { ...trackedOf(old), [flag]: false };
    writes.push({
      id: old.id,
      isNew: false,
      seen: false,
      name: old.name,
      email: old.email,
      status: old.status,
      hasUnreadMessages: old.hasUnreadMessages,
      createdAt: old.createdAt,
      flag: false,
      due: !initial && old.deletedAt === null,
      newState: state,
      changedAfter: old.stateSeenAt,
    });
  }
  return writes;
}

/** The fewest tickets whose leaving a list makes a shrink to confirm (see confirmShrink). */
export const SHRINK_MIN_LEAVING = 10;

/** Whether `leaving` of the `members` the mirror has in a list is a shrink to confirm: more than half, and at least 10. */
export function isSuspectShrink(members: number, leaving: number): boolean {
  return leaving >= SHRINK_MIN_LEAVING && leaving * 2 > members;
}

/** Whether the shrinking-list rule (confirmShrink) holds back `leaving` leaves of `members`, after a poll that withheld `previousWithheld`. */
export function withholdsLeaves(members: number, leaving: number, previousWithheld: number): boolean {
  return previousWithheld <= 0 && isSuspectShrink(members, leaving);
}

/**
 * The shrinking-list rule. An answer that would take more than half of the tickets the mirror has in a list out of it,
 * and at least 10, is as likely a glitch (a gateway's empty 200, a cut page) as news (a mass resolve). The first such
 * answer is written without its leaves — new tickets and changed fields go in, nothing leaves the list, no history
 * row, no detail becomes due — and the poll records how many it withheld (`list_polls.withheld`, so a restart keeps
 * it). The next poll of that list decides: if it shows the shrink again, it is applied; if the list is back to normal,
 * that normal answer is applied and the glitch is forgotten. `previousWithheld` is what the list's last poll withheld.
 */
export function confirmShrink(diff: ListDiff, previousWithheld: number): ListDiff {
  let leaving = 0;
  for (const w of diff.writes) if (!w.seen) leaving++;
  if (!withholdsLeaves(diff.members, leaving, previousWithheld)) return diff;
  return {
    ...diff,
    writes: diff.writes.filter((w) => w.seen),
    changes: Math.max(0, diff.changes - leaving),
    withheld: leaving,
  };
}

function listFieldsChanged(item: ListItem, old: MirrorTicket): boolean {
  if (item.unstorable.length > 0) return LIST_FIELDS.some((key) => !item.unstorable.includes(key) && item[key] !== old[key]);
  return (
    item.name !== old.name ||
    item.email !== old.email ||
    item.status !== old.status ||
    item.hasUnreadMessages !== old.hasUnreadMessages ||
    item.createdAt !== old.createdAt
  );
}

/** The list's fields as they will be stored: the item's, except those no column could hold or the item lacks, which keep the mirror's. */
function listFieldsToStore(item: ListItem, old: MirrorTicket): Pick<ListItem, (typeof LIST_FIELDS)[number]> {
  const pick = <K extends (typeof LIST_FIELDS)[number]>(key: K) => (item.unstorable.includes(key) ? old[key] : item[key]);
  return {
    name: pick('name'),
    email: pick('email'),
    status: pick('status'),
    hasUnreadMessages: pick('hasUnreadMessages'),
    createdAt: pick('createdAt'),
  };
}
