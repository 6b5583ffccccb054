import type { ListName } from '../api/endpoints.ts';
import type { MirrorTicket, TrackedState } from './ticketState.ts';

/**
 * One list response on its way into the mirror: its items as mapped (sync/mapping.ts), the mirror's side of it
 * (db/repos/lists.ts `loadMirrorForList`), and the diff between them (sync/differ.ts) that db/repos/lists.ts
 * `applyListDiff` writes.
 */

/** One item of a list response. */
export interface ListItem {
  id: string;
  name: string | null;
  email: string | null;
  status: string | null;
  hasUnreadMessages: boolean | null;
  createdAt: string | null;
  /** Fields of this item no column could hold, or missing or null in it; they keep their mirrored values. */
  unstorable: readonly string[];
}

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
  /** Tickets the mirror had in this list before this poll. */
  members: number;
  /** Leaves held back until the next poll confirms them (sync/differ.ts `confirmShrink`); 0 when none were. */
  withheld: number;
}
