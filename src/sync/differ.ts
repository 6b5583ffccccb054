import type { ListName } from '../api/endpoints.ts';
import type { ListDiff, ListItem, ListMirror, ListRowWrite } from '../model/lists.ts';
import { emptyState, sameState, trackedOf, type MirrorTicket, type TrackedState } from '../model/ticketState.ts';

/**
 * The differ: one list response against the mirror, as a pure function. It returns what to write; the writer
 * (db/repos/lists.ts) carries it out in one transaction with a fixed number of statements, whatever the list's size.
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

/**
 * `initial` is the first poll of this list: what it shows is the backlog, not news, so its tickets wait for the
 * paced backfill instead of jumping the queue as due details.
 */
export function diffList(
  list: ListName,
  items: readonly ListItem[],
  mirror: ListMirror,
  at: string,
  initial = false,
): ListDiff {
  const { tickets, fresh } = mirror;
  const flag = FLAG[list];
  const writes: ListRowWrite[] = [];
  const unchanged: string[] = [];
  // The listed tickets the mirror has in this list; any other it has there just left.
  const stayed = new Set<string>();
  let changes = 0;
  // Listed tickets the database set aside as unchanged: members of the list (it checked the flag).
  let setAside = 0;
  let leaves = 0;

  for (const item of items) {
    const old = tickets.get(item.id);
    if (old?.[flag]) stayed.add(item.id);
    if (!old && fresh && !fresh.has(item.id)) {
      unchanged.push(item.id);
      setAside++;
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

  for (const old of tickets.values()) {
    if (!old[flag] || stayed.has(old.id)) continue;
    changes++;
    leaves++;
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
  return { list, at, writes, unchanged, changes: initial ? 0 : changes, members: setAside + stayed.size + leaves, withheld: 0 };
}

/** The fewest tickets whose leaving a list makes a shrink to confirm (see confirmShrink). */
export const SHRINK_MIN_LEAVING = 10;

/** Whether `leaving` of the `members` the mirror has in a list is a shrink to confirm: more than half, and at least 10. */
export function isSuspectShrink(members: number, leaving: number): boolean {
  return leaving >= SHRINK_MIN_LEAVING && leaving * 2 > members;
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
  if (previousWithheld > 0 || !isSuspectShrink(diff.members, leaving)) return diff;
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

/** The list's fields as they will be stored: the item's, except those no column could hold, which keep the mirror's. */
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
