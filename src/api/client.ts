import got, { type Method, RequestError } from 'got';
import type { Clock } from '../clock.ts';
import {
  AuthError,
  InvalidResponseError,
  NotFoundError,
  RateLimitedError,
  RequestRejectedError,
  TransientError,
} from '../errors.ts';
import { detailPath, LIST_PATHS, replyPath, type ListName, type RequestKind } from './endpoints.ts';

/**
 * The only code that touches the network. It owns the auth headers, timeouts, the retry decisions, the request ledger
 * and the first validation of every response (JSON, and the outer shape; field-level checks are in sync/mapping.ts).
 *
 * Every attempt — retries included — first passes the gate (the quota budget and the per-minute queue), then is
 * recorded in the ledger before it is sent, and settled there whatever its outcome. Retries are few and back off, so a
 * failing service costs a handful of requests, never a storm.
 */

/** What the ledger knows of a request before it is sent. */
export interface LedgerStart {
  at: number;
  method: string;
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

export class ApiClient {
  readonly #o: Required<Omit<ApiClientOptions, 'signal'>> & { signal?: AbortSignal };

  constructor(options: ApiClientOptions) {
    this.#o = {
      timeoutMs: 30_000,
      attempts: 3,
      backoffMs: 2_000,
      maxBackoffMs: 30_000,
      sleep: abortableSleep,
      random: Math.random,
      ...options,
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
    };
  }

  /** Endpoints 1–4. The body must be an array of objects; items are checked further by the differ. */
  async list(name: ListName): Promise<ApiResponse<unknown[]>> {
    const response = await this.#request('GET', LIST_PATHS[name], `list_${name}`);
    if (!Array.isArray(response.body)) {
      throw new InvalidResponseError(`${LIST_PATHS[name]} answered ${describe(response.body)} where a JSON array was expected`);
    }
    return response as ApiResponse<unknown[]>;
  }

  /** Endpoint 5. Throws NotFoundError on 404. `kind` says what the request is for (ledger and queue priority). */
  async detail(id: string, kind: RequestKind = 'detail'): Promise<ApiResponse<JsonObject>> {
    const response = await this.#request('GET', detailPath(id), kind, id);
    if (!isObject(response.body)) {
      throw new InvalidResponseError(`the detail of ${id} is ${describe(response.body)}, not a JSON object`);
    }
    return response as ApiResponse<JsonObject>;
  }

  /**
   * Endpoint 6. Never retried here: a POST that may have reached the server could post the reply twice. The caller
   * (the outbox) knows how to reconcile an ambiguous failure against the ticket's detail before trying again.
   */
  async reply(id: string, message: string): Promise<ApiResponse<{ id: string; created_at: string }>> {
    const response = await this.#request('POST', replyPath(id), 'reply', id, { message });
    const body = response.body;
    if (!isObject(body) || typeof body.id !== 'string' || body.id === '' || typeof body.created_at !== 'string') {
      throw new InvalidResponseError(`the reply to ${id} was answered with ${describe(body)}, not {id, created_at}`);
    }
    return response as ApiResponse<{ id: string; created_at: string }>;
  }

  async #request(method: Method, path: string, kind: RequestKind, ticketId?: string, json?: unknown): Promise<ApiResponse<unknown>> {
    const retryable = method === 'GET';
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#o.gate.run(kind, () => this.#attempt(method, path, kind, ticketId, json));
      } catch (error) {
        const last = !retryable || attempt >= this.#o.attempts;
        if (!(error instanceof TransientError) || last) throw error;
        const ceiling = Math.min(this.#o.maxBackoffMs, this.#o.backoffMs * 2 ** (attempt - 1));
        await this.#o.sleep(Math.round(ceiling * (0.5 + this.#o.random() / 2)), this.#o.signal);
      }
    }
  }

  async #attempt(method: Method, path: string, kind: RequestKind, ticketId: string | undefined, json: unknown): Promise<ApiResponse<unknown>> {
    const started = this.#o.clock.now();
    const startedReal = performance.now();
    const settle = await this.#o.record({ at: started, method, path, kind });
    let status: number | null = null;
    let remaining: number | null = null;
    let limit: number | null = null;
    try {
      const response = await got(this.#o.baseUrl + path, {
        method,
        headers: {
          authorization: `Bearer ${this.#o.token}`,
          accept: 'application/json',
          'content-type': 'application/json',
          'user-agent': 'ticket-mirror',
        },
        body: json === undefined ? undefined : JSON.stringify(json),
        responseType: 'text',
        throwHttpErrors: false,
        followRedirect: false,
        retry: { limit: 0 },
        timeout: { request: this.#o.timeoutMs },
        signal: this.#o.signal,
      });
      status = response.statusCode;
      remaining = headerInt(response.headers['x-ratelimit-remaining']);
      limit = headerInt(response.headers['x-ratelimit-limit']);
      const at = this.#o.clock.now();
      return { body: interpret(response.statusCode, response.headers, response.body, path, ticketId, at), status, at };
    } catch (error) {
      if (error instanceof RequestError) {
        throw new TransientError(`${method} ${path}: ${error.code ?? error.message}`, undefined, { cause: error });
      }
      throw error;
    } finally {
      await settle({
        at: started,
        method,
        path,
        status,
        durationMs: Math.round(performance.now() - startedReal),
        kind,
        ratelimitRemaining: remaining,
        ratelimitLimit: limit,
      });
    }
  }
}

/** Maps one HTTP answer to a value or a named error. */
function interpret(
  status: number,
  headers: Record<string, string | string[] | undefined>,
  text: string,
  path: string,
  ticketId: string | undefined,
  at: number,
): unknown {
  const contentType = String(headers['content-type'] ?? '');
  const looksHtml = /text\/html/i.test(contentType) || /^\s*<(!doctype|html)/i.test(text);
  if (looksHtml && status < 500) {
    // The service shows a login page instead of a JSON error when it does not take the request as an API call.
    throw new AuthError(`the API answered ${path} with an HTML page (HTTP ${status}), not JSON: check TICKETS_API_URL and the token`, status);
  }
  if (status === 401 || status === 403) {
    throw new AuthError(`the API rejected the token (HTTP ${status}${errorText(text)}): check TICKETS_API_TOKEN`, status);
  }
  if (status === 404 && ticketId !== undefined) throw new NotFoundError(ticketId);
  if (status === 429) {
    const retryAfter = headerInt(headers['retry-after']);
    throw new RateLimitedError(`the API answered 429 to ${path}`, at + (retryAfter ?? 60) * 1000);
  }
  if (status >= 500) throw new TransientError(`${path} answered HTTP ${status}`, status);
  if (status >= 400) throw new RequestRejectedError(`${path} answered HTTP ${status}${errorText(text)}`, status);
  if (status < 200 || status >= 300) throw new InvalidResponseError(`${path} answered HTTP ${status}`);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InvalidResponseError(`${path} answered with a body that is not valid JSON (${text.length} bytes)`, { cause: error });
  }
}

function errorText(text: string): string {
  try {
    const body = JSON.parse(text) as unknown;
    if (isObject(body) && typeof body.error === 'string') return `: ${body.error.slice(0, 200)}`;
  } catch {
    // Not JSON: say nothing more.
  }
  return '';
}

function headerInt(value: string | string[] | undefined): number | null {
  const n = Number.parseInt(Array.isArray(value) ? (value[0] ?? '') : (value ?? ''), 10);
  return Number.isFinite(n) ? n : null;
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
