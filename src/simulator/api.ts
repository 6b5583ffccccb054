import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Clock } from '../clock.ts';
import type { Fault } from './faults.ts';
import {
  BodyTooLargeError,
  encodedJsonAnswer,
  errorPage,
  htmlAnswer,
  jsonAnswer,
  loginPage,
  phpJson,
  readBody,
  send,
  wantsJson,
  type Answer,
} from './http.ts';
import type { SimulatorModel } from './model.ts';
import type { RateDecision, RateLimiter } from './rateLimiter.ts';
import { matchRoute, parseReplyBody } from './routes.ts';
import type { TicketListItem } from './types.ts';

/** One request received by the API origin. `status` is 0 while unanswered, and stays 0 for a `reset` fault. */
export interface RequestLogEntry {
  /** Clock time (epoch ms) of arrival. */
  at: number;
  method: string;
  /** The request target: path and query, as sent. */
  path: string;
  status: number;
}

/** Whoever a request is logged for: the account its token names, or the simulator's record of strangers. */
export interface RequestOwner {
  record(entry: RequestLogEntry): void;
  /** The fault queued for the owner's next request to `target`, if any (using it counts it down). */
  takeFault(target: string): Fault | undefined;
  /** The per-minute limit the `x-ratelimit-limit` header shows. */
  readonly minuteLimit: number;
}

/** An account, as the API origin sees it. */
export interface ApiAccount extends RequestOwner {
  readonly token: string;
  /** Its helpdesk (built on first use). */
  readonly model: SimulatorModel;
  readonly limiter: RateLimiter;
}

export interface ApiContext {
  clock: Clock;
  /** The account a bearer token names; undefined when it names none. */
  account(token: string | undefined): ApiAccount | undefined;
  /**
   * The owner of a request whose token names no account (missing or wrong). A single-account simulator gives its one
   * account: such requests are in its log and meet its faults, as they always did.
   */
  stranger: RequestOwner;
  /** Real-time delay before each answer. */
  latencyMs: number;
}

/**
 * The API origin. Order of decisions, read once per request at arrival time `now`:
 * whose request (by token) → log → pick a fault → count against the quota → (fault or) throttle → route → answer.
 * Every answer, errors and faults included, carries the rate-limit headers of the account (or of the stranger).
 */
export function createApiHandler(ctx: ApiContext): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  // The lists are frozen arrays shared until the next change, so each one is encoded once.
  const encodedLists = new WeakMap<readonly Readonly<TicketListItem>[], string>();
  const listBody = (items: readonly Readonly<TicketListItem>[]): string => {
    let body = encodedLists.get(items);
    if (body === undefined) encodedLists.set(items, (body = phpJson(items)));
    return body;
  };

  return async (req, res) => {
    const now = ctx.clock.now();
    const entry: RequestLogEntry = { at: now, method: req.method ?? 'GET', path: req.url ?? '/', status: 0 };
    const account = ctx.account(bearerToken(req));
    const owner: RequestOwner = account ?? ctx.stranger;
    owner.record(entry);
    const fault = owner.takeFault(entry.path);
    // Requests with a bad token are nobody's: they count against no user's quota.
    const decision = account && fault?.kind !== 'status429' ? account.limiter.consume(account.token, now) : undefined;
    // The service does its work (a reply is stored); what follows takes its answer.
    if (fault?.afterApplication) await appAnswer(req, account, decision, now, listBody).catch(() => undefined);
    if (fault?.kind === 'reset') {
      req.socket.destroy();
      return;
    }
    // Never answered: the connection stays open until the client gives up or the simulator closes.
    if (fault?.kind === 'hang') return;
    const delayMs = ctx.latencyMs + (fault?.kind === 'slow' ? fault.delayMs : 0);
    if (delayMs > 0) await sleep(delayMs);

    let answer: Answer;
    try {
      answer = faultAnswer(req, fault) ?? (await appAnswer(req, account, decision, now, listBody));
    } catch (error) {
      answer =
        error instanceof BodyTooLargeError
          ? errorAnswer(req, 413, 'Payload Too Large')
          : errorAnswer(req, 500, 'Server Error');
    }
    if (fault?.kind === 'truncated') answer = truncated(answer);
    // A scripted answer is sent as given: whatever sent it is not the service, which adds the rate-limit headers.
    if (fault?.kind !== 'answer') {
      answer.headers['x-ratelimit-limit'] = String(owner.minuteLimit);
      // Without a counted request (bad token) nothing was used up; an injected 429 claims the minute is spent.
      const remaining = decision?.remaining ?? (fault?.kind === 'status429' ? 0 : owner.minuteLimit);
      answer.headers['x-ratelimit-remaining'] = String(remaining);
    }
    entry.status = answer.status;
    send(res, answer);
  };
}

async function appAnswer(
  req: IncomingMessage,
  account: ApiAccount | undefined,
  decision: RateDecision | undefined,
  now: number,
  listBody: (items: readonly Readonly<TicketListItem>[]) => string,
): Promise<Answer> {
  if (!account) return errorAnswer(req, 401, 'Unauthenticated.');
  if (decision && !decision.allowed) return tooManyAttempts(req, decision.retryAfterSec);
  const route = matchRoute(req.method ?? 'GET', req.url ?? '/');
  switch (route.kind) {
    case 'list':
      return encodedJsonAnswer(200, listBody(account.model.list(route.group)));
    case 'detail': {
      const detail = account.model.detail(route.id, now);
      return detail ? jsonAnswer(200, detail) : errorAnswer(req, 404, 'Ticket not found.');
    }
    case 'reply': {
      const raw = await readBody(req);
      // As in the service, the ticket is looked up before the body is validated.
      if (!account.model.hasTicket(route.id)) return errorAnswer(req, 404, 'Ticket not found.');
      const body = parseReplyBody(raw);
      if (!body.ok) return errorAnswer(req, body.status, body.error);
      return jsonAnswer(201, account.model.reply(route.id, body.message));
    }
    case 'wrongMethod': {
      const message =
        `The ${req.method} method is not supported for route ${route.path.slice(1)}. ` +
        `Supported methods: ${route.allowed}.`;
      const answer = errorAnswer(req, 405, message);
      answer.headers.allow = route.allowed;
      return answer;
    }
    case 'notFound':
      return errorAnswer(req, 404, `The route ${route.path.slice(1)} could not be found.`);
  }
}

/** The answer of a fault that replaces the application's; undefined for faults that let it answer. */
function faultAnswer(req: IncomingMessage, fault: Fault | undefined): Answer | undefined {
  switch (fault?.kind) {
    case 'status500':
      return errorAnswer(req, 500, 'Server Error');
    case 'status503':
      return errorAnswer(req, 503, 'Service Unavailable');
    case 'status429':
      return tooManyAttempts(req, fault.retryAfterSec);
    case 'html':
      return htmlAnswer(200, loginPage());
    case 'answer':
      return { status: fault.answer!.status, headers: { ...fault.answer!.headers }, body: fault.answer!.body ?? '' };
    case 'oversized':
      return oversized(fault.oversized!.bytes, fault.oversized!.chunked);
    default:
      return undefined;
  }
}

/** A valid JSON array (an empty list padded with spaces) of exactly `bytes` bytes. */
function oversized(bytes: number, chunked: boolean): Answer {
  const body = Buffer.alloc(bytes, 0x20);
  body[0] = 0x5b; // [
  body[bytes - 1] = 0x5d; // ]
  return { status: 200, headers: { 'content-type': 'application/json' }, body, chunked };
}

/** A 200 that claims JSON but carries only the first half of the real body's bytes. */
function truncated(answer: Answer): Answer {
  const body = typeof answer.body === 'string' ? Buffer.from(answer.body) : answer.body;
  const half = body.subarray(0, Math.floor(body.length / 2));
  return { status: 200, headers: { 'content-type': 'application/json' }, body: half };
}

function tooManyAttempts(req: IncomingMessage, retryAfterSec: number): Answer {
  const answer = errorAnswer(req, 429, 'Too Many Attempts.');
  answer.headers['retry-after'] = String(retryAfterSec);
  return answer;
}

/**
 * An error as the service sends it: `{"error": "..."}` to clients that accept JSON; otherwise an HTML page — for a
 * 401 the login page with status 200, which is where following the service's redirect to /login ends.
 */
function errorAnswer(req: IncomingMessage, status: number, message: string): Answer {
  if (wantsJson(req)) return jsonAnswer(status, { error: message });
  return status === 401 ? htmlAnswer(200, loginPage()) : htmlAnswer(status, errorPage(status, message));
}

/** The token of an `Authorization: Bearer <token>` header (the scheme is case-insensitive). */
function bearerToken(req: IncomingMessage): string | undefined {
  return /^bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
}
