/** The API's paths (spec, Endpoints). List paths use `tickets`; detail and reply use the singular `ticket`. */

export const LIST_NAMES = ['open', 'self', 'unassigned', 'resolved'] as const;
export type ListName = (typeof LIST_NAMES)[number];

export const LIST_PATHS: Record<ListName, string> = {
  open: '/api/v1/tickets',
  self: '/api/v1/tickets/self',
  unassigned: '/api/v1/tickets/unassigned',
  resolved: '/api/v1/tickets/resolved',
};

export const detailPath = (id: string) => `/api/v1/ticket/${pathSegment(id)}`;
export const replyPath = (id: string) => `/api/v1/ticket/${pathSegment(id)}/reply`;

/**
 * A value as one path segment, whatever it holds: percent-encoded so that no `/`, `?`, `#` or `%` in it ends or changes
 * the segment, and never a dot-segment — `.` and `..` become `%2E` and `%2E%2E`, which the client sends as they are
 * (URL parsing would resolve even those; see the client's `sendPathAsIs`).
 */
export function pathSegment(value: string): string {
  const encoded = encodeURIComponent(value);
  return encoded === '.' || encoded === '..' ? encoded.replaceAll('.', '%2E') : encoded;
}

/**
 * What a request was for; stored in `api_requests.kind`. `detail` answers a change a list showed; `backfill` fetches a
 * never-fetched ticket; `revalidate` re-reads a detail for changes lists cannot show; `lookup` serves a command.
 */
export type RequestKind = `list_${ListName}` | 'detail' | 'backfill' | 'revalidate' | 'lookup' | 'reply';

/** Background work (backfill, revalidation), as `api_requests.kind` says: what the pace of revalidation counts. */
export function isBackgroundKind(kind: string | null | undefined): boolean {
  return kind === 'backfill' || kind === 'revalidate';
}
