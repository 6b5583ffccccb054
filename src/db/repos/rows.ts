import { canonicalTimestamp } from '../../time.ts';
import type { MirrorTicket } from '../../sync/differ.ts';

/** The columns the differ reads, in one place; `ts()` canonicalises PostgreSQL's timestamp output. */
export const MIRROR_COLUMNS = `id, name, email, status, priority, assigned_to, has_unread_messages, created_at,
  in_open, in_self, in_unassigned, in_resolved, detail_due_since, missing_since, deleted_at, state_seen_at`;

export interface MirrorRecord {
  id: string;
  name: string | null;
  email: string | null;
  status: string | null;
  priority: string | null;
  assigned_to: unknown;
  has_unread_messages: boolean | null;
  created_at: string | null;
  in_open: boolean;
  in_self: boolean;
  in_unassigned: boolean;
  in_resolved: boolean;
  detail_due_since: string | null;
  missing_since: string | null;
  deleted_at: string | null;
  state_seen_at: string | null;
}

export function toMirrorTicket(r: MirrorRecord): MirrorTicket {
  return {
    id: r.id,
    name: r.name,
    email: r.email,
    status: r.status,
    priority: r.priority,
    assignedTo: r.assigned_to ?? null,
    hasUnreadMessages: r.has_unread_messages,
    createdAt: ts(r.created_at),
    inOpen: r.in_open,
    inSelf: r.in_self,
    inUnassigned: r.in_unassigned,
    inResolved: r.in_resolved,
    detailDueSince: ts(r.detail_due_since),
    missingSince: ts(r.missing_since),
    deletedAt: ts(r.deleted_at),
    stateSeenAt: ts(r.state_seen_at),
  };
}

export function ts(value: string | null): string | null {
  return value === null ? null : canonicalTimestamp(value);
}
