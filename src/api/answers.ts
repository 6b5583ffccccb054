import type { IncomingHttpHeaders } from 'node:http';
import { AuthError, InvalidResponseError, NotApiAnswerError, NotFoundError, RateLimitedError, RequestRejectedError, ThrottledError, TransientError } from '../errors.ts';
import { scrubSecrets } from '../logger.ts';
import { MAX_JSON_DEPTH, scanListBody, type ListBody } from './listBody.ts';

/**
 * What a GET's answer means, decided apart from the network (client.ts sends; this reads). Pure but for the
 * `AnswerMemory` the client hands in: whether the API's JSON has come through yet, and the run of pages since.
 * The reply POST's answers have their own rules in replyAnswer.ts.
 */

/** One HTTP answer as it arrived, before anything is concluded from it. */
export interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  at: number;
}

/** One HTTP answer as the client received it: the body's bytes, not yet decoded. */
export interface RawAnswer extends Omit<HttpAnswer, 'text'> {
  bytes: Buffer;
}

export type JsonObject = Record<string, unknown>;

/** What one client remembers between answers. */
export interface AnswerMemory {
  /** The API's JSON has come through at least once: an HTML page is no longer proof of a wrong URL or token. */
  worked: boolean;
  /** HTML pages or redirects in a row since the last JSON answer. */
  pages: { count: number; firstAt: number } | null;
}

/** An HTML page or a redirect after the token has worked becomes an AuthError on this many answers in a row … */
const PAGES_FOR_AUTH = 3;
/** … spread over at least this long (clock time): a hiccup passes sooner. */
const PAGES_FOR_AUTH_MS = 2 * 60_000;
/** A Retry-After beyond this is not believed: one answer must not stop the mirror for longer than the daily window. */
const MAX_RETRY_AFTER_S = 24 * 3600;

/**
 * What a GET's answer means: the body, or a named error.
 *
 * | answer                                                    | error                                         |
 * |-----------------------------------------------------------|-----------------------------------------------|
 * | 401, 403                                                  | AuthError                                     |
 * | 429                                                       | RateLimitedError (Retry-After, at most 24 h)  |
 * | 404 with the API's `{"error": "…"}`                       | NotFoundError (detail) / RequestRejectedError |
 * | 404 with anything else (a gateway's, HTML, empty)         | TransientError                                |
 * | an HTML page (other than a 404 or 5xx), any 3xx           | AuthError until the token has worked; then    |
 * |                                                           | NotApiAnswerError, AuthError once persisting  |
 * | 408, 5xx                                                  | TransientError                                |
 * | other 4xx                                                 | RequestRejectedError                          |
 * | 1xx, 2xx other than 200/201/203                           | InvalidResponseError                          |
 * | 200/201/203 with an empty, non-JSON or truncated body     | InvalidResponseError                          |
 * | 200/201/203 with JSON nested deeper than MAX_JSON_DEPTH    | InvalidResponseError                          |
 */
export function classifyGetAnswer(a: HttpAnswer, path: string, ticketId: string | undefined, memory: AnswerMemory): unknown {
  const { status } = a;
  // Parsed once: a list can be tens of megabytes.
  const json = parseJson(a.text);
  const apiError = json && isObject(json.value) && typeof json.value.error === 'string' ? scrubSecrets(json.value.error).slice(0, 200) : null;
  const says = apiError ? `: ${apiError}` : '';
  // Any JSON answer ends a run of pages: the way to the API is open.
  if (json) memory.pages = null;
  if (status === 401 || status === 403) throw new AuthError(`the API rejected the token (HTTP ${status}${says}): check TICKETS_API_TOKEN`, status);
  if (status === 429) throw new ThrottledError(`the API answered 429 to ${path}`, a.at + retryAfterMs(a.headers, a.at));
  if (status === 404) {
    if (apiError === null) {
      throw new TransientError(`${path} answered 404 without the API's {"error"} body (a gateway or proxy?): not taken as a deleted ticket`, status);
    }
    if (ticketId !== undefined) throw new NotFoundError(ticketId);
    throw new RequestRejectedError(`${path} answered HTTP 404${says}`, status);
  }
  if ((status >= 300 && status < 400) || (status < 500 && !json && looksHtml(a))) notApiAnswer(a, path, memory);
  if (status === 408 || status >= 500) throw new TransientError(`${path} answered HTTP ${status}${says}`, status);
  if (status >= 400) throw new RequestRejectedError(`${path} answered HTTP ${status}${says}`, status);
  if (status !== 200 && status !== 201 && status !== 203) {
    throw new InvalidResponseError(`${path} answered HTTP ${status}, which is not an answer this API gives`);
  }
  if (!json) {
    const bytes = Buffer.byteLength(a.text);
    throw new InvalidResponseError(`${path} answered with ${bytes === 0 ? 'an empty body' : `a body that is not valid JSON (${bytes} bytes)`}`);
  }
  if (nestsTooDeep(a.text)) throw new InvalidResponseError(`${path} answered with JSON nested deeper than ${MAX_JSON_DEPTH} levels, which no answer of this API is`);
  memory.worked = true;
  return json.value;
}

/**
 * A list's answer: a 200/201/203 whose body is a whole JSON array by its brackets is a ListBody, its bytes read later
 * in batches (a malformed element throws InvalidResponseError then: listBody.ts); anything else is classified, decoded,
 * as any GET's answer. Such a body counts as the API's JSON (`memory.worked`) before its elements are parsed: no page
 * or gateway answers a complete `[…]`.
 */
export function classifyListAnswer(a: RawAnswer, path: string, memory: AnswerMemory): ListBody | unknown {
  if (a.status === 200 || a.status === 201 || a.status === 203) {
    const body = scanListBody(a.bytes);
    if (body) {
      memory.pages = null;
      memory.worked = true;
      return body;
    }
  }
  return classifyGetAnswer({ status: a.status, headers: a.headers, at: a.at, text: a.bytes.toString('utf8') }, path, undefined, memory);
}

/** An HTML page or a redirect where JSON was expected. */
function notApiAnswer(a: HttpAnswer, path: string, memory: AnswerMemory): never {
  const what =
    a.status >= 300 && a.status < 400
      ? `a redirect (HTTP ${a.status}) to ${locationOrigin(a.headers.location)}, not followed`
      : `an HTML page (HTTP ${a.status}), not JSON`;
  // Nothing has worked yet: the URL or the token is wrong (the service shows its login page to requests it does not
  // take as API calls), and retrying cannot help.
  if (!memory.worked) throw new AuthError(`the API answered ${path} with ${what}: check TICKETS_API_URL and the token`, a.status);
  const pages = (memory.pages = memory.pages ? { ...memory.pages, count: memory.pages.count + 1 } : { count: 1, firstAt: a.at });
  const spanMs = a.at - pages.firstAt;
  if (pages.count >= PAGES_FOR_AUTH && spanMs >= PAGES_FOR_AUTH_MS) {
    throw new AuthError(
      `the API answered ${path} with ${what}, ${pages.count} times in a row over ${Math.round(spanMs / 1000)} s: check TICKETS_API_URL and the token`,
      a.status,
    );
  }
  // Not "retrying": the daemon does (and says so), but `sync`, whose pass this ends, exits with this text.
  throw new NotApiAnswerError(`${path} answered with ${what} (${pages.count} in a row, after JSON answers: a proxy or gateway?)`, a.status);
}

export function looksHtml(a: HttpAnswer): boolean {
  return /text\/html/i.test(String(a.headers['content-type'] ?? '')) || /^\s*<(!doctype|html)/i.test(a.text.replace(/^\uFEFF/, ''));
}

/** Whether JSON text nests arrays and objects deeper than MAX_JSON_DEPTH (brackets inside strings do not count). */
export function nestsTooDeep(json: string): boolean {
  let depth = 0;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === 0x22) {
      // A string: skipped to its closing quote, escapes and all.
      for (i++; i < json.length && json.charCodeAt(i) !== 0x22; i++) if (json.charCodeAt(i) === 0x5c) i++;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_JSON_DEPTH) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

/** The body as JSON, or null when it is empty or not JSON. */
export function parseJson(text: string): { value: unknown } | null {
  // A byte-order mark is not JSON, but some proxies add one (RFC 8259 lets a parser ignore it).
  const json = text.replace(/^\uFEFF/, '');
  if (json.trim() === '') return null;
  try {
    return { value: JSON.parse(json) as unknown };
  } catch {
    return null;
  }
}

/** Where a redirect points, origin only: its path or query may carry anything, a signed parameter included. */
function locationOrigin(location: string | undefined): string {
  if (!location) return 'nowhere (no Location)';
  try {
    return new URL(location).origin;
  } catch {
    return 'a path on the same host';
  }
}

/**
 * The wait a Retry-After asks for, at most a day: delta-seconds, or an HTTP date (RFC 9110), read against `at`, when the
 * answer came — a date in the past is no wait; 60 s when it is absent or neither.
 */
export function retryAfterMs(headers: IncomingHttpHeaders, at?: number): number {
  const value = headers['retry-after'];
  const seconds = headerInt(value);
  if (seconds !== null) return Math.min(seconds, MAX_RETRY_AFTER_S) * 1000;
  const text = (Array.isArray(value) ? value[0] : value)?.trim() ?? '';
  // An IMF-fixdate or one of the obsolete forms: a weekday's name, then letters, digits, spaces, colons, commas, dashes.
  const date = at !== undefined && /^[a-z]{3,9}, [\w :,-]{10,40}$/i.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isFinite(date)) return Math.min(Math.max(0, date - at!), MAX_RETRY_AFTER_S * 1000);
  return 60_000;
}

/** A header that must be a non-negative whole number; anything else (a date, `-5`, `1e9`, garbage) is null. */
export function headerInt(value: string | string[] | undefined): number | null {
  const text = (Array.isArray(value) ? value[0] : value)?.trim() ?? '';
  return /^\d{1,9}$/.test(text) ? Number(text) : null;
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}
