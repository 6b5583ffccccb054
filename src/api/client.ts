import type { IncomingHttpHeaders } from 'node:http';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import got, { type Method, type RequestFunction, RequestError } from 'got';
import type { Clock } from '../clock.ts';
import {
  AuthError,
  InvalidResponseError,
  NotApiAnswerError,
  NotFoundError,
  RateLimitedError,
  ReplyNotSentError,
  ReplyOutcomeUnknownError,
  RequestRejectedError,
  ResponseTooLargeError,
  TransientError,
} from '../errors.ts';
import { detailPath, LIST_PATHS, replyPath, type ListName, type RequestKind } from './endpoints.ts';
import { classifyReplyAnswer, sentNothing, type CreatedReply } from './replyAnswer.ts';

/**
 * The only code that touches the network. It owns the auth headers, timeouts, the retry decisions, the request ledger
 * and the first validation of every response (JSON, and the outer shape; field-level checks are in sync/mapping.ts).
 *
 * Every attempt — retries included — first passes the gate (the quota budget and the per-minute queue), then is
 * recorded in the ledger before it is sent, and settled there whatever its outcome. Retries are few and back off, so a
 * failing service costs a handful of requests, never a storm.
 *
 * Hostile answers (see `classify`): only the API's own JSON counts as the API's word. A 404 without its `{error}` body
 * is a gateway's, and transient; an HTML page or a redirect (never followed: it would take the token elsewhere) is a
 * configuration or token problem until the token has worked in this client, and after that a hiccup, retried, until it
 * persists; an answer over `maxResponseBytes` is cut off; odd status codes and bodies are named errors, never retried
 * in a loop.
 */

/** What the ledger knows of a request before it is sent. */
export interface LedgerStart {
  at: number;
  method: string;
  /** The request target as sent (escaped). */
  path: string;
  kind: RequestKind;
}

export interface LedgerEntry extends LedgerStart {
  /** Null when no response arrived. */
  status: number | null;
  durationMs: number;
  /** The server's x-ratelimit-remaining, when given. */
  ratelimitRemaining: number | null;
  ratelimitLimit: number | null;
  /**
   * Set (to the system error code: ECONNREFUSED, ENOTFOUND, EAI_AGAIN) when the request provably never left this host:
   * it cost the token nothing, so it is not charged to the budget (the ledger drops its row, the gate its sample).
   */
  notSent?: string;
}

/** Settles the ledger record of one request with its outcome. Called exactly once. Must not throw. */
export type SettleLedger = (entry: LedgerEntry) => Promise<void>;

/** Decides when a request may go out. `run` waits for the queue and the budget; it throws RateLimitedError to refuse. */
export interface RequestGate {
  run<T>(kind: RequestKind, send: () => Promise<T>): Promise<T>;
}

export interface ApiClientOptions {
  baseUrl: string;
  token: string;
  clock: Clock;
  gate: RequestGate;
  /**
   * Called, and awaited, right before each request is sent (retries included): records it with no outcome yet, so that
   * a crash mid-request still counts it, and returns the function that settles that record. Must not throw.
   */
  record: (start: LedgerStart) => Promise<SettleLedger>;
  /** Per-attempt timeout. @default 30000 */
  timeoutMs?: number;
  /** Attempts for server and network errors, the first included. @default 3 */
  attempts?: number;
  /** First back-off; doubled each retry, capped at `maxBackoffMs`, with full jitter. @default 2000 */
  backoffMs?: number;
  /** @default 30000 */
  maxBackoffMs?: number;
  /** Largest response body read (after decompression); a larger answer fails. @default 67108864 (64 MiB) */
  maxResponseBytes?: number;
  /** Abortable sleep; the virtual-time runner passes one that advances its clock. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Source of jitter in [0, 1). @default Math.random */
  random?: () => number;
  signal?: AbortSignal;
}

export interface ApiResponse<T> {
  body: T;
  status: number;
  /** Clock time at which the response arrived: the instant the data was observed. */
  at: number;
}

export type JsonObject = Record<string, unknown>;

export interface ReplyOptions {
  /**
   * Runs once the request may go (after the gate's queue and budget), right before it is sent; what it throws is
   * thrown as it is, and nothing is sent. The outbox checks there that the row is still its own.
   */
  beforeSend?: () => Promise<void>;
}

/** One HTTP answer as it arrived, before anything is concluded from it. */
interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  at: number;
}

export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

/** An HTML page or a redirect after the token has worked becomes an AuthError on this many answers in a row … */
const PAGES_FOR_AUTH = 3;
/** … spread over at least this long (clock time): a hiccup passes sooner. */
const PAGES_FOR_AUTH_MS = 2 * 60_000;
/** A Retry-After beyond this is not believed: one answer must not stop the mirror for longer than the daily window. */
const MAX_RETRY_AFTER_S = 24 * 3600;

export class ApiClient {
  readonly #o: Required<Omit<ApiClientOptions, 'signal'>> & { signal?: AbortSignal };
  /** The path of the base URL (`/helpdesk` in `https://host/helpdesk`), prefixed to every request target. */
  readonly #basePath: string;
  /** JSON has come back from the API through this client: from now on a page in its place is a hiccup first. */
  #worked = false;
  /** HTML pages and redirects in a row after the token had worked: how many, and when the first arrived. */
  #pages: { count: number; firstAt: number } | null = null;

  constructor(options: ApiClientOptions) {
    this.#o = {
      timeoutMs: 30_000,
      attempts: 3,
      backoffMs: 2_000,
      maxBackoffMs: 30_000,
      maxResponseBytes: DEFAULT_MAX_RESPONSE_BYTES,
      sleep: abortableSleep,
      random: Math.random,
      ...options,
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
    };
    this.#basePath = new URL(this.#o.baseUrl).pathname.replace(/\/+$/, '');
  }

  /** Endpoints 1–4. The body must be an array of objects; items are checked further by the differ. */
  async list(name: ListName): Promise<ApiResponse<unknown[]>> {
    const response = await this.#get(LIST_PATHS[name], `list_${name}`);
    if (!Array.isArray(response.body)) {
      throw new InvalidResponseError(`${LIST_PATHS[name]} answered ${describe(response.body)} where a JSON array was expected`);
    }
    return response as ApiResponse<unknown[]>;
  }

  /**
   * Endpoint 5. Throws NotFoundError on the API's own 404 (with its `{error}` body) only. `kind` says what the request is
   * for (ledger and queue priority).
   */
  async detail(id: string, kind: RequestKind = 'detail'): Promise<ApiResponse<JsonObject>> {
    const response = await this.#get(detailPath(id), kind, id);
    if (!isObject(response.body)) {
      throw new InvalidResponseError(`the detail of ${id} is ${describe(response.body)}, not a JSON object`);
    }
    return response as ApiResponse<JsonObject>;
  }

  /**
   * Endpoint 6. Never retried here: a POST that may have reached the server could post the reply twice. Its answer is
   * read by the POST's own rule (api/replyAnswer.ts), and every failure says what it proves:
   *
   * - NotFoundError (the API's 404), AuthError (its 401/403), RequestRejectedError (its 422): nothing was created;
   * - RateLimitedError: the local budget refused the request, which was not sent;
   * - ReplyNotSentError: the connection was refused or the host not found, nothing left this host;
   * - ReplyOutcomeUnknownError: anything else (an HTML page, a 5xx, a timeout, a redirect, a 429 from the server, a
   *   2xx without `{id, created_at}` …): the reply may have been posted. The caller (the outbox) settles it against the
   *   ticket's detail before anything is sent again.
   */
  async reply(id: string, message: string, options: ReplyOptions = {}): Promise<ApiResponse<CreatedReply>> {
    const path = replyPath(id);
    let answer: HttpAnswer | undefined;
    // Until the request is handed to #send, nothing has left: a failure before that (the gate refusing, `beforeSend`
    // throwing) is thrown as it is.
    let sending = false;
    try {
      answer = await this.#o.gate.run('reply', async () => {
        await options.beforeSend?.();
        sending = true;
        const a = await this.#send('POST', path, 'reply', { message });
        if (a.status === 429) {
          // Thrown as such so that the gate holds every request back for its Retry-After; read below like any answer.
          answer = a;
          throw new RateLimitedError(`the API answered 429 to ${path}`, a.at + retryAfterMs(a.headers));
        }
        return a;
      });
    } catch (error) {
      if (!sending) throw error;
      if (!answer) throw unansweredReply(path, error);
    }
    const verdict = classifyReplyAnswer(answer.status, answer.headers, answer.text);
    switch (verdict.kind) {
      case 'created':
        this.#worked = true;
        return { body: verdict.reply, status: answer.status, at: answer.at };
      case 'not_found':
        throw new NotFoundError(id);
      case 'refused':
        if (verdict.status === 401 || verdict.status === 403) {
          throw new AuthError(`the API rejected the token (HTTP ${verdict.status}: ${verdict.error}): check TICKETS_API_TOKEN`, verdict.status);
        }
        throw new RequestRejectedError(`${path} answered HTTP ${verdict.status}: ${verdict.error}`, verdict.status);
      case 'unknown':
        throw new ReplyOutcomeUnknownError(
          `${path} answered ${verdict.reason}`,
          answer.status,
          verdict.throttled ? answer.at + retryAfterMs(answer.headers) : undefined,
        );
    }
  }

  /** A GET, retried on transient trouble (an answer too large excepted: it would be as large again). */
  async #get(path: string, kind: RequestKind, ticketId?: string): Promise<ApiResponse<unknown>> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#o.gate.run(kind, async () => {
          const answer = await this.#send('GET', path, kind);
          return { body: this.#classify(answer, path, ticketId), status: answer.status, at: answer.at };
        });
      } catch (error) {
        const retry = error instanceof TransientError && !(error instanceof ResponseTooLargeError);
        if (!retry || attempt >= this.#o.attempts) throw error;
        const ceiling = Math.min(this.#o.maxBackoffMs, this.#o.backoffMs * 2 ** (attempt - 1));
        await this.#o.sleep(Math.round(ceiling * (0.5 + this.#o.random() / 2)), this.#o.signal);
      }
    }
  }

  /**
   * One HTTP exchange: ledger record first, then the request (redirects not followed, body capped), then the record
   * settled. Throws TransientError when no whole answer arrived (network, timeout), ResponseTooLargeError past the cap.
   */
  async #send(method: Method, path: string, kind: RequestKind, json?: unknown): Promise<HttpAnswer> {
    const at = this.#o.clock.now();
    const startedReal = performance.now();
    const settle = await this.#o.record({ at, method, path, kind });
    let status: number | null = null;
    let headers: IncomingHttpHeaders = {};
    let notSent: string | undefined;
    const cap = this.#o.maxResponseBytes;
    try {
      const request = got(this.#o.baseUrl + path, {
        method,
        headers: {
          authorization: `Bearer ${this.#o.token}`,
          accept: 'application/json',
          'content-type': 'application/json',
          'user-agent': 'ticket-mirror',
        },
        body: json === undefined ? undefined : JSON.stringify(json),
        request: sendPathAsIs(this.#basePath + path),
        responseType: 'text',
        throwHttpErrors: false,
        // A redirect could lead anywhere, with the token: it is an answer like any other (see `classify`).
        followRedirect: false,
        retry: { limit: 0 },
        timeout: { request: this.#o.timeoutMs },
        signal: this.#o.signal,
      });
      let over: { bytes: number; announced: boolean } | null = null;
      // The first progress event carries the Content-Length; the next ones count the bytes read (decompressed).
      request.on('downloadProgress', ({ transferred, total }) => {
        if (over) return;
        if (total !== undefined && total > cap) over = { bytes: total, announced: true };
        else if (transferred > cap) over = { bytes: transferred, announced: false };
        if (over) request.cancel();
      });
      try {
        const response = await request;
        status = response.statusCode;
        headers = response.headers;
        return { status, headers, text: response.body, at: this.#o.clock.now() };
      } catch (error) {
        if (error instanceof RequestError && error.response) {
          status = error.response.statusCode;
          headers = error.response.headers;
        }
        if (over) {
          const { bytes, announced } = over;
          const size = announced ? `Content-Length ${bytes} bytes` : `more than ${bytes} bytes read without a Content-Length; reading stopped`;
          throw new ResponseTooLargeError(`${method} ${path}: the answer is larger than the ${cap}-byte cap of API_MAX_RESPONSE_BYTES (${size})`, bytes, cap);
        }
        if (error instanceof RequestError) {
          const code = systemCode(error);
          // A refused connection or an unknown host: nothing reached the server (a timeout or a reset may have).
          if (status === null && sentNothing(code)) notSent = code;
          throw new TransientError(`${method} ${path}: ${error.code ?? error.message}`, undefined, { cause: error });
        }
        throw error;
      }
    } finally {
      await settle({
        at,
        method,
        path,
        kind,
        status,
        durationMs: Math.round(performance.now() - startedReal),
        ratelimitRemaining: headerInt(headers['x-ratelimit-remaining']),
        ratelimitLimit: headerInt(headers['x-ratelimit-limit']),
        ...(notSent === undefined ? {} : { notSent }),
      });
    }
  }

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
   */
  #classify(a: HttpAnswer, path: string, ticketId: string | undefined): unknown {
    const { status } = a;
    // Parsed once: a list can be tens of megabytes.
    const json = parseJson(a.text);
    const apiError = json && isObject(json.value) && typeof json.value.error === 'string' ? json.value.error.slice(0, 200) : null;
    const says = apiError ? `: ${apiError}` : '';
    // Any JSON answer ends a run of pages: the way to the API is open.
    if (json) this.#pages = null;
    if (status === 401 || status === 403) throw new AuthError(`the API rejected the token (HTTP ${status}${says}): check TICKETS_API_TOKEN`, status);
    if (status === 429) throw new RateLimitedError(`the API answered 429 to ${path}`, a.at + retryAfterMs(a.headers));
    if (status === 404) {
      if (apiError === null) {
        throw new TransientError(`${path} answered 404 without the API's {"error"} body (a gateway or proxy?): not taken as a deleted ticket`, status);
      }
      if (ticketId !== undefined) throw new NotFoundError(ticketId);
      throw new RequestRejectedError(`${path} answered HTTP 404${says}`, status);
    }
    if ((status >= 300 && status < 400) || (status < 500 && !json && looksHtml(a))) this.#notApiAnswer(a, path);
    if (status === 408 || status >= 500) throw new TransientError(`${path} answered HTTP ${status}${says}`, status);
    if (status >= 400) throw new RequestRejectedError(`${path} answered HTTP ${status}${says}`, status);
    if (status !== 200 && status !== 201 && status !== 203) {
      throw new InvalidResponseError(`${path} answered HTTP ${status}, which is not an answer this API gives`);
    }
    if (!json) {
      const bytes = Buffer.byteLength(a.text);
      throw new InvalidResponseError(`${path} answered with ${bytes === 0 ? 'an empty body' : `a body that is not valid JSON (${bytes} bytes)`}`);
    }
    this.#worked = true;
    return json.value;
  }

  /** An HTML page or a redirect where JSON was expected. */
  #notApiAnswer(a: HttpAnswer, path: string): never {
    const what =
      a.status >= 300 && a.status < 400
        ? `a redirect (HTTP ${a.status}) to ${locationOrigin(a.headers.location)}, not followed`
        : `an HTML page (HTTP ${a.status}), not JSON`;
    // Nothing has worked yet: the URL or the token is wrong (the service shows its login page to requests it does not
    // take as API calls), and retrying cannot help.
    if (!this.#worked) throw new AuthError(`the API answered ${path} with ${what}: check TICKETS_API_URL and the token`, a.status);
    const pages = (this.#pages = this.#pages ? { ...this.#pages, count: this.#pages.count + 1 } : { count: 1, firstAt: a.at });
    const spanMs = a.at - pages.firstAt;
    if (pages.count >= PAGES_FOR_AUTH && spanMs >= PAGES_FOR_AUTH_MS) {
      throw new AuthError(
        `the API answered ${path} with ${what}, ${pages.count} times in a row over ${Math.round(spanMs / 1000)} s: check TICKETS_API_URL and the token`,
        a.status,
      );
    }
    throw new NotApiAnswerError(`${path} answered with ${what} (${pages.count} in a row; a proxy or gateway?): retrying`, a.status);
  }
}

/**
 * What a reply POST that got no answer proves: the gate's refusal (never sent) as it is; a refused connection or an
 * unknown host as ReplyNotSentError; anything else — a timeout, a reset, a cut or oversized body, an abort — as
 * ReplyOutcomeUnknownError, for the request may have reached the service.
 */
function unansweredReply(path: string, error: unknown): Error {
  if (error instanceof RateLimitedError) return error;
  const code = systemCode(error);
  if (sentNothing(code)) return new ReplyNotSentError(`POST ${path} was not sent (${code})`, undefined, { cause: error });
  const message = error instanceof Error ? error.message : String(error);
  return new ReplyOutcomeUnknownError(`POST ${path} got no complete answer (${message})`, null, undefined, { cause: error });
}

/** The Node system error code (ECONNREFUSED …) along an error's `cause` chain. */
function systemCode(error: unknown): string | undefined {
  let e: unknown = error;
  for (let depth = 0; depth < 8 && typeof e === 'object' && e !== null; depth++) {
    const { code } = e as { code?: unknown };
    if (typeof code === 'string' && /^E[A-Z_]+$/.test(code)) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * Sends `target` as the request target exactly as given. got parses its URL, and URL parsing resolves `%2E%2E` as
 * `..` (WHATWG URL): the escaped id `..` would become another path. Node's `path` option is sent verbatim.
 */
function sendPathAsIs(target: string): RequestFunction {
  return (url, options, callback) => (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, { ...options, path: target }, callback);
}

function looksHtml(a: HttpAnswer): boolean {
  return /text\/html/i.test(String(a.headers['content-type'] ?? '')) || /^\s*<(!doctype|html)/i.test(a.text.replace(/^\uFEFF/, ''));
}

/** The body as JSON, or null when it is empty or not JSON. */
function parseJson(text: string): { value: unknown } | null {
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

/** Retry-After in delta-seconds, at most a day; 60 s when absent or given as a date. */
function retryAfterMs(headers: IncomingHttpHeaders): number {
  const seconds = headerInt(headers['retry-after']);
  return Math.min(seconds ?? 60, MAX_RETRY_AFTER_S) * 1000;
}

/** A header that must be a non-negative whole number; anything else (a date, `-5`, `1e9`, garbage) is null. */
function headerInt(value: string | string[] | undefined): number | null {
  const text = (Array.isArray(value) ? value[0] : value)?.trim() ?? '';
  return /^\d{1,9}$/.test(text) ? Number(text) : null;
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
