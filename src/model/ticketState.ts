/**
 * The ticket as the mirror tracks it: the state `ticket_history` records, and what the differ compares a list with.
 * Shared by the differ (sync/differ.ts) and the repositories that write it (db/repos/details.ts, lists.ts, history.ts).
 */

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

/** The state of a ticket the mirror has never seen. */
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
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}
