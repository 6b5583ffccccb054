import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
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
  ThrottledError,
  TransientError,
} from '../errors.ts';
import {
  classifyGetAnswer,
  classifyListAnswer,
  describe,
  headerInt,
  isObject,
  retryAfterMs,
  type AnswerMemory,
  type HttpAnswer,
  type JsonObject,
  type RawAnswer,
} from './answers.ts';
import { detailPath, LIST_PATHS, replyPath, type ListName, type RequestKind } from './endpoints.ts';
import { ListBody } from './listBody.ts';
import { classifyReplyAnswer, sentNothing, type CreatedReply } from './replyAnswer.ts';

/**
 * The only code that touches the network. It owns the auth headers, timeouts, the retry decisions, the request ledger
 * and the first validation of every response (JSON, and the outer shape; field-level checks are in sync/mapping.ts).
 *
 * Every attempt — retries included — first passes the gate (the quota budget and the per-minute queue), then is
 * recorded in the ledger before it is sent, and settled there whatever its outcome. Retries are few and back off, so a
 * failing service costs a handful of requests, never a storm.
 *
 * Hostile answers (classified in answers.ts): only the API's own JSON counts as the API's word. A 404 without its
 * `{error}` body is a gateway's, and transient; an HTML page or a redirect (never followed: it would take the token
 * elsewhere) is a configuration or token problem until the token has worked in this client, and after that a hiccup,
 * retried, until it persists; an answer over `maxResponseBytes` is cut off; odd status codes and bodies are named
 * errors, never retried in a loop.
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
  /**
   * The API's JSON has already come back for this token in this process (an earlier term of a replica, an earlier
   * pass of a fleet account): a first HTML page is then a hiccup, not proof of a wrong URL or token. @default false
   */
  tokenWorked?: boolean;
  signal?: AbortSignal;
}

export interface ApiResponse<T> {
  body: T;
  status: number;
  /** Clock time at which the response arrived: the instant the data was observed. */
  at: number;
}

export { isObject, type JsonObject } from './answers.ts';

export interface ReplyOptions {
  /**
   * Runs once the request may go (after the gate's queue and budget), right before it is sent; what it throws is
   * thrown as it is, and nothing is sent. The outbox checks there that the row is still its own.
   */
  beforeSend?: () => Promise<void>;
}


export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024;


export class ApiClient {
  readonly #o: Required<Omit<ApiClientOptions, 'signal'>> & { signal?: AbortSignal };
  /** The path of the base URL (`/helpdesk` in `https://host/helpdesk`), prefixed to every request target. */
  readonly #basePath: string;
  /** What its answers taught this client: whether the API's JSON came back (a page is then a hiccup first), and the run of pages since. */
  readonly #memory: AnswerMemory;

  constructor(options: ApiClientOptions) {
    this.#o = {
      timeoutMs: 30_000,
      attempts: 3,
      backoffMs: 2_000,
      maxBackoffMs: 30_000,
      maxResponseBytes: DEFAULT_MAX_RESPONSE_BYTES,
      sleep: abortableSleep,
      random: Math.random,
      tokenWorked: false,
      ...options,
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
    };
    this.#memory = { worked: this.#o.tokenWorked, pages: null };
    this.#basePath = new URL(this.#o.baseUrl).pathname.replace(/\/+$/, '');
  }

  /** Whether the API's JSON has come back through this client (or `tokenWorked` said it had before). */
  get tokenWorked(): boolean {
    return this.#memory.worked;
  }

  /**
   * Endpoints 1–4. The body must be an array; it is kept as its bytes and read in batches (see ListBody), whose items
   * are checked further by the mapping. A batch that turns out not to be JSON throws InvalidResponseError when read.
   */
  async list(name: ListName): Promise<ApiResponse<ListBody>> {
    const path = LIST_PATHS[name];
    // A list's body stays bytes (it may be tens of megabytes); any other answer is read as text.
    const response = await this.#get(path, `list_${name}`, (a) => classifyListAnswer(a, path, this.#memory));
    if (response.body instanceof ListBody) return response as ApiResponse<ListBody>;
    if (!Array.isArray(response.body)) {
      throw new InvalidResponseError(`${LIST_PATHS[name]} answered ${describe(response.body)} where a JSON array was expected`);
    }
    return { ...response, body: ListBody.of(response.body) };
  }

  /**
   * Endpoint 5. Throws NotFoundError on the API's own 404 (with its `{error}` body) only. `kind` says what the request is
   * for (ledger and queue priority).
   */
  async detail(id: string, kind: RequestKind = 'detail'): Promise<ApiResponse<JsonObject>> {
    const path = detailPath(id);
    const response = await this.#get(path, kind, (a) => classifyGetAnswer(textOf(a), path, id, this.#memory));
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
        const a = textOf(await this.#send('POST', path, 'reply', { message }));
        if (a.status === 429) {
          // Thrown as such so that the gate holds every request back for its Retry-After; read below like any answer.
          answer = a;
          throw new ThrottledError(`the API answered 429 to ${path}`, a.at + retryAfterMs(a.headers, a.at));
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
        this.#memory.worked = true;
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
          verdict.throttled ? answer.at + retryAfterMs(answer.headers, answer.at) : undefined,
        );
    }
  }

  /** A GET, retried on transient trouble (an answer too large excepted: it would be as large again). */
  async #get(path: string, kind: RequestKind, classify: (answer: RawAnswer) => unknown): Promise<ApiResponse<unknown>> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#o.gate.run(kind, async () => {
          const answer = await this.#send('GET', path, kind);
          return { body: classify(answer), status: answer.status, at: answer.at };
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
  async #send(method: Method, path: string, kind: RequestKind, json?: unknown): Promise<RawAnswer> {
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
        responseType: 'buffer',
        throwHttpErrors: false,
        // A redirect could lead anywhere, with the token: it is an answer like any other (see classifyGetAnswer in answers.ts).
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
        return { status, headers, bytes: response.body, at: this.#o.clock.now() };
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

}

/** The answer with its body decoded, as got decodes a text body. */
function textOf({ bytes, ...answer }: RawAnswer): HttpAnswer {
  return { ...answer, text: bytes.toString('utf8') };
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
