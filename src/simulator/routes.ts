import type { TicketGroup } from './types.ts';

/** The API's routes and the validation of endpoint 6's body: pure functions of what the request says. */

export type Route =
  | { kind: 'list'; group: TicketGroup }
  | { kind: 'detail'; id: string }
  | { kind: 'reply'; id: string }
  | { kind: 'wrongMethod'; path: string; allowed: string }
  | { kind: 'notFound'; path: string };

const LISTS = new Map<string, TicketGroup>([
  ['/api/v1/tickets', 'open'],
  ['/api/v1/tickets/self', 'self'],
  ['/api/v1/tickets/unassigned', 'unassigned'],
  ['/api/v1/tickets/resolved', 'resolved'],
]);

// Note the singular `ticket` of endpoints 5 and 6, against the plural of the lists.
const DETAIL = /^\/api\/v1\/ticket\/([^/]+)$/;
const REPLY = /^\/api\/v1\/ticket\/([^/]+)\/reply$/;

/** The route of a request target (path and query; the query is ignored, as the service takes no parameters). */
export function matchRoute(method: string, target: string): Route {
  let path = target.split('?', 1)[0]!;
  // The service's web server drops a trailing slash (a Laravel convention).
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  const reading = method === 'GET' || method === 'HEAD';

  const group = LISTS.get(path);
  if (group) return reading ? { kind: 'list', group } : { kind: 'wrongMethod', path, allowed: 'GET, HEAD' };
  const detail = DETAIL.exec(path);
  if (detail) {
    return withId(detail[1]!, path, (id) => (reading ? { kind: 'detail', id } : wrongMethod(path, 'GET, HEAD')));
  }
  const reply = REPLY.exec(path);
  if (reply) {
    return withId(reply[1]!, path, (id) => (method === 'POST' ? { kind: 'reply', id } : wrongMethod(path, 'POST')));
  }
  return { kind: 'notFound', path };
}

function wrongMethod(path: string, allowed: string): Route {
  return { kind: 'wrongMethod', path, allowed };
}

/** Decodes the id segment (`%41` is `A`); a malformed escape names no ticket. */
function withId(raw: string, path: string, route: (id: string) => Route): Route {
  try {
    return route(decodeURIComponent(raw));
  } catch {
    return { kind: 'notFound', path };
  }
}

export type ReplyBody = { ok: true; message: string } | { ok: false; status: 400 | 422; error: string };

/**
 * Endpoint 6's body, by the service's rules: `message` is required, a string, and at least 3 characters long once
 * trimmed (Laravel trims every input and turns an empty one into null; `min` counts characters, not bytes).
 * An empty body is an empty input; one that is not JSON at all is a 400.
 */
export function parseReplyBody(raw: Buffer): ReplyBody {
  let input: unknown = {};
  if (raw.length > 0) {
    try {
      input = JSON.parse(raw.toString('utf8'));
    } catch {
      return { ok: false, status: 400, error: 'The request body is not valid JSON.' };
    }
  }
  const isObject = typeof input === 'object' && input !== null && !Array.isArray(input);
  const value = isObject ? (input as Record<string, unknown>).message : undefined;
  const message = typeof value === 'string' ? value.trim() : value;
  if (message === undefined || message === null || message === '') {
    return { ok: false, status: 422, error: 'The message field is required.' };
  }
  if (typeof message !== 'string') return { ok: false, status: 422, error: 'The message field must be a string.' };
  if ([...message].length < 3) {
    return { ok: false, status: 422, error: 'The message field must be at least 3 characters.' };
  }
  return { ok: true, message };
}
