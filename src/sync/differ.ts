import type { ListName } from '../api/endpoints.ts';
import type { ListItem } from './mapping.ts';

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

/** The state `ticket_history` tracks: a new row whenever any of it changes. */
export interface TrackedState {
  status: string | null;
  priority: string | null;
  assignedTo: unknown;
  inOpen: boolean;
  inSelf: boolean;
  inUnassigned: boolean;
  inResolved: boolean;
}

/** What the differ needs of a mirrored ticket. Timestamps are canonical strings. */
export interface MirrorTicket extends TrackedState {
  id: string;
  name: string | null;
  email: string | null;
  hasUnreadMessages: boolean | null;
  createdAt: string | null;
  detailDueSince: string | null;
  missingSince: string | null;
  deletedAt: string | null;
  stateSeenAt: string | null;
}

/** A ticket row as the list leaves it. `seen` rows were in the list; the others just left it. */
export interface ListRowWrite {
  id: string;
  isNew: boolean;
  seen: boolean;
  name: string | null;
  email: string | null;
  status: string | null;
  hasUnreadMessages: boolean | null;
  createdAt: string | null;
  flag: boolean;
  /** The detail is due from this poll on. */
  due: boolean;
  /** The tracked state changed: a history row, with `changedAfter` the last time the old state was observed. */
  newState: TrackedState | null;
  changedAfter: string | null;
}

export interface ListDiff {
  list: ListName;
  at: string;
  /** New or changed tickets, and tickets that left the list. */
  writes: ListRowWrite[];
  /** Listed tickets with nothing new: only `last_seen_at` and `state_seen_at` move. */
  unchanged: string[];
  /** Count of list-visible changes (new tickets, changed fields, joins and leaves); 0 on a list's first poll. */
  changes: number;
}

const LIST_FIELDS = ['name', 'email', 'status', 'hasUnreadMessages', 'createdAt'] as const;

/**
 * The mirror's side of one list response. Without `fresh`, `tickets` holds every mirrored ticket that is listed or was
 * in the list. With it (what db/repos/lists.ts gives), the database has already set aside the listed tickets whose
 * list fields and membership it holds exactly as listed: `tickets` holds only the others that it has, and those that
 * were in the list; `fresh` the listed ids it does not have at all; any other listed ticket is unchanged.
 */
export interface ListMirror {
  tickets: ReadonlyMap<string, MirrorTicket>;
  fresh?: ReadonlySet<string>;
}

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

  for (const item of items) {
    const old = tickets.get(item.id);
    if (old?.[flag]) stayed.add(item.id);
    if (!old && fresh && !fresh.has(item.id)) {
      unchanged.push(item.id);
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
  return { list, at, writes, unchanged, changes: initial ? 0 : changes };
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

export function emptyState(): TrackedState {
  return { status: null, priority: null, assignedTo: null, inOpen: false, inSelf: false, inUnassigned: false, inResolved: false };
}

export function trackedOf(t: TrackedState): TrackedState {
  return {
    status: t.status,
    priority: t.priority,
    assignedTo: t.assignedTo ?? null,
    inOpen: t.inOpen,
    inSelf: t.inSelf,
    inUnassigned: t.inUnassigned,
    inResolved: t.inResolved,
  };
}

export function sameState(a: TrackedState, b: TrackedState): boolean {
  return (
    a.status === b.status &&
    a.priority === b.priority &&
    a.inOpen === b.inOpen &&
    a.inSelf === b.inSelf &&
    a.inUnassigned === b.inUnassigned &&
    a.inResolved === b.inResolved &&
    sameJson(a.assignedTo ?? null, b.assignedTo ?? null)
  );
}

/** Structural equality of JSON values, blind to key order (jsonb reorders keys). */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}
