import type { IncomingHttpHeaders } from 'node:http';
import { scrubSecrets } from '../logger.ts';
import { toEpochMicros } from '../time.ts';

/**
 * What the answer to a reply POST (endpoint 6) proves. A POST decides whether a reply may be sent again, so its answer
 * is read by one rule, stricter than a GET's: only an answer that proves the service did NOT create the message may
 * ever lead to another POST; only one that carries the new message's `{id, created_at}` proves it did. Everything else
 * is "outcome unknown", settled by reading the ticket's detail (outbox/reconcile.ts), never by posting again.
 *
 * | answer                                                           | verdict     |
 * |------------------------------------------------------------------|-------------|
 * | 2xx with a JSON `{id: non-empty string, created_at: timestamp}`  | created     |
 * | 400, 401, 403, 405, 413, 415, 422 with the API's `{"error"}` body | refused     |
 * | 404 with the API's JSON `{"error": string}` body                 | not_found   |
 * | an HTML page, whatever its status (a proxy, a login page)        | unknown     |
 * | a 2xx that is empty, not JSON, cut short, or of another shape    | unknown     |
 * | any 4xx without the API's JSON body (a gateway's), 408, 409, 418 | unknown     |
 * | 429 from the server (a throttle may stand in front of the API)   | unknown     |
 * | 3xx (never followed), 5xx, 1xx, any other status                 | unknown     |
 *
 * A POST that got no answer at all is unknown too (a timeout, a reset connection), unless it provably never left:
 * see `sentNothing`. A refusal by the local budget happens before anything is sent and never reaches here.
 */

export interface CreatedReply {
  id: string;
  created_at: string;
}

export type ReplyVerdict =
  | { kind: 'created'; reply: CreatedReply }
  | { kind: 'refused'; status: number; error: string }
  | { kind: 'not_found'; error: string }
  | { kind: 'unknown'; reason: string; throttled: boolean };

export type ReplyVerdictKind = ReplyVerdict['kind'];

/**
 * Statuses whose API error body proves the request was refused before anything was created: the spec's faulty
 * requests (400, 401, 403 — "a 4xx with a JSON `error`"), and those that refuse a request unread (405, 413, 415) or
 * unvalidated (422). Not 408, 409 or 429: a timeout, a conflict or a throttle may follow a write.
 */
const REFUSALS: ReadonlySet<number> = new Set([400, 401, 403, 405, 413, 415, 422]);

export function classifyReplyAnswer(status: number, headers: IncomingHttpHeaders, body: string): ReplyVerdict {
  const unknown = (what: string): ReplyVerdict => ({ kind: 'unknown', reason: `HTTP ${status} ${what}`, throttled: status === 429 });
  if (isHtml(headers, body)) return unknown('with an HTML page, not the API');
  const json = parseJson(body);
  if (status >= 200 && status < 300) {
    if (json === undefined) return unknown(Buffer.byteLength(body) === 0 ? 'with an empty body' : `with a body that is not JSON (${Buffer.byteLength(body)} bytes)`);
    const reply = createdReply(json);
    return reply ? { kind: 'created', reply } : unknown('without the new message\'s {"id", "created_at"}');
  }
  const apiError = apiErrorOf(json);
  if (apiError !== null && REFUSALS.has(status)) return { kind: 'refused', status, error: apiError };
  if (apiError !== null && status === 404) return { kind: 'not_found', error: apiError };
  if (status === 429) return unknown('(throttled by the server or something in front of it)');
  if (status >= 300 && status < 400) return unknown('(a redirect, not followed)');
  if (status === 401 || status === 403 || status === 404 || status === 422) return unknown('without the API\'s {"error"} body (a gateway or proxy?)');
  return unknown('');
}

/**
 * Whether a POST that got no answer provably never left this host: the connection was refused, or the host name did
 * not resolve. `code` is the Node system error's (got's RequestError carries it). A timeout, a reset, a cut connection
 * may all come after the service read the request.
 */
export function sentNothing(code: string | undefined): boolean {
  return code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN';
}

function createdReply(value: unknown): CreatedReply | null {
  if (!isRecord(value)) return null;
  const { id, created_at } = value;
  if (typeof id !== 'string' || id.trim() === '' || typeof created_at !== 'string' || toEpochMicros(created_at) === null) return null;
  return { id, created_at };
}

/** The API's error text: a JSON object with a string `error`; null for anything else. */
function apiErrorOf(value: unknown): string | null {
  return isRecord(value) && typeof value.error === 'string' ? scrubSecrets(value.error).slice(0, 200) : null;
}

function isHtml(headers: IncomingHttpHeaders, body: string): boolean {
  return /text\/html/i.test(String(headers['content-type'] ?? '')) || /^\s*<(!doctype|html)/i.test(body.replace(/^\uFEFF/, ''));
}

/** The body as JSON; undefined when it is empty or not JSON (a byte-order mark is tolerated, as RFC 8259 allows). */
function parseJson(body: string): unknown {
  const text = body.replace(/^\uFEFF/, '');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
