import type { IncomingMessage } from 'node:http';
import { ManualClock, type Clock } from '../clock.ts';
import type { AccountRegistry, AccountSpec, SimulatorAccount } from './accounts.ts';
import { FAULT_KINDS, type FaultSpec, type ScriptedAnswer } from './faults.ts';
import { jsonAnswer, readBody, type Answer } from './http.ts';
import { UnknownTicketError, type SimulatorModel } from './model.ts';

/**
 * Control routes under `/__sim/` on the API origin, for drivers in another process (the daemon's end-to-end tests,
 * the demo). Not part of the faked API: no auth, no quota, not logged.
 *
 * - `POST /__sim/mutate` `{ "op": "resolve", "args": ["Ab12Cd34"] }` → the model method's result
 * - `GET /__sim/truth` → `groundTruth()`; `GET /__sim/log` → the request log
 * - `POST /__sim/faults` a FaultSpec (`match` is a substring; `matchRegex` a RegExp source; `answer` as
 *   `{status, headers, body}`; `afterApplication: true`) → 204;
 *   `DELETE /__sim/faults` → 204, all cleared
 * - `POST /__sim/clock` `{ "advanceMs": 60000 }` → `{ "now": ms }`; 409 unless the clock is a ManualClock
 *
 * Many accounts: `mutate`, `truth`, `log` and `faults` act on the account whose token the header `x-sim-account`
 * carries (without it, the first account; an unknown token → 404). The clock is the simulator's, shared by all.
 * - `GET /__sim/accounts` → every account's ordinal, seed, sizes, limits and whether it is built (no tokens)
 * - `POST /__sim/accounts` an AccountSpec `{ "token": "…", "seed": 7, … }`, or `{ "accounts": [spec, …] }` (all or
 *   none) → 201 with their summaries
 */

const ACCOUNT_HEADER = 'x-sim-account';

export const ADMIN_PREFIX = '/__sim/';

const MUTATIONS = [
  'newTicket',
  'inboundMessage',
  'agentReply',
  'reply',
  'setStatus',
  'resolve',
  'reopen',
  'assign',
  'unassign',
  'setPriority',
  'deleteTicket',
  'markRead',
  'randomTicketId',
] as const;
type Mutation = (typeof MUTATIONS)[number];

export interface AdminContext {
  clock: Clock;
  accounts: AccountRegistry;
}

export async function adminAnswer(ctx: AdminContext, req: IncomingMessage): Promise<Answer> {
  const route = `${req.method} ${new URL(req.url ?? '/', 'http://sim.invalid').pathname}`;
  try {
    const account = (): SimulatorAccount => selectAccount(ctx.accounts, req);
    switch (route) {
      case 'GET /__sim/truth':
        return jsonAnswer(200, account().model.groundTruth());
      case 'GET /__sim/log':
        return jsonAnswer(200, account().log);
      case 'POST /__sim/mutate':
        return mutate(account().model, await jsonBody(req));
      case 'POST /__sim/faults':
        account().faults.inject(faultSpec(await jsonBody(req)));
        return noContent();
      case 'DELETE /__sim/faults':
        account().faults.clear();
        return noContent();
      case 'POST /__sim/clock':
        return advanceClock(ctx.clock, await jsonBody(req));
      case 'GET /__sim/accounts':
        return jsonAnswer(200, ctx.accounts.all().map((a) => a.summary()));
      case 'POST /__sim/accounts':
        return addAccounts(ctx.accounts, await jsonBody(req));
      default:
        return jsonAnswer(404, { error: `no simulator control route ${route}` });
    }
  } catch (error) {
    if (error instanceof UnknownTicketError || error instanceof UnknownAccountError) {
      return jsonAnswer(404, { error: error.message });
    }
    return jsonAnswer(400, { error: error instanceof Error ? error.message : String(error) });
  }
}

class UnknownAccountError extends Error {
  override name = 'UnknownAccountError';
}

/** The account `x-sim-account` names; the first one without the header. */
function selectAccount(accounts: AccountRegistry, req: IncomingMessage): SimulatorAccount {
  const token = req.headers[ACCOUNT_HEADER];
  if (token === undefined) return accounts.first();
  const account = typeof token === 'string' ? accounts.get(token) : undefined;
  if (!account) throw new UnknownAccountError(`no simulator account has the token given in ${ACCOUNT_HEADER}`);
  return account;
}

function addAccounts(accounts: AccountRegistry, body: Record<string, unknown>): Answer {
  const specs = body.accounts === undefined ? [body] : body.accounts;
  if (!Array.isArray(specs)) throw new TypeError('accounts must be an array of accounts');
  const fields = ['token', 'seed', 'openTickets', 'resolvedTickets', 'dailyLimit', 'minuteLimit'] as const;
  const checked = specs.map((spec: unknown): AccountSpec => {
    if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) throw new TypeError('an account must be an object');
    const s = spec as Record<string, unknown>;
    const unknown = Object.keys(s).filter((key) => !(fields as readonly string[]).includes(key));
    if (unknown.length > 0) throw new TypeError(`an account has only ${fields.join(', ')}`);
    return {
      token: optional(s.token, 'string', 'token') ?? '',
      seed: optional(s.seed, 'number', 'seed'),
      openTickets: optional(s.openTickets, 'number', 'openTickets'),
      resolvedTickets: optional(s.resolvedTickets, 'number', 'resolvedTickets'),
      dailyLimit: optional(s.dailyLimit, 'number', 'dailyLimit'),
      minuteLimit: optional(s.minuteLimit, 'number', 'minuteLimit'),
    };
  });
  return jsonAnswer(201, accounts.addAll(checked).map((a) => a.summary()));
}

function mutate(model: SimulatorModel, body: Record<string, unknown>): Answer {
  const { op, args = [] } = body;
  if (!MUTATIONS.includes(op as Mutation)) throw new TypeError(`op must be one of ${MUTATIONS.join(', ')}`);
  if (!Array.isArray(args)) throw new TypeError('args must be an array');
  const method = model[op as Mutation] as (...a: unknown[]) => unknown;
  // JSON has no undefined: randomTicketId's "none" is null.
  return jsonAnswer(200, method.apply(model, args) ?? null);
}

function faultSpec(body: Record<string, unknown>): FaultSpec {
  const { kind, match, matchRegex, times, delayMs, retryAfterSec, answer, bytes, chunked, afterApplication } = body;
  if (!FAULT_KINDS.includes(kind as FaultSpec['kind'])) {
    throw new TypeError(`kind must be one of ${FAULT_KINDS.join(', ')}`);
  }
  return {
    kind: kind as FaultSpec['kind'],
    match: typeof matchRegex === 'string' ? new RegExp(matchRegex) : optional(match, 'string', 'match'),
    times: optional(times, 'number', 'times'),
    delayMs: optional(delayMs, 'number', 'delayMs'),
    retryAfterSec: optional(retryAfterSec, 'number', 'retryAfterSec'),
    answer: scriptedAnswer(answer),
    bytes: optional(bytes, 'number', 'bytes'),
    chunked: chunked === undefined || chunked === null ? undefined : chunked === true,
    afterApplication: afterApplication === true,
  };
}

function scriptedAnswer(value: unknown): ScriptedAnswer | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) throw new TypeError('answer must be an object');
  const { status, headers, body } = value as Record<string, unknown>;
  const headerValues = headers === undefined || headers === null ? {} : headers;
  if (typeof headerValues !== 'object' || Array.isArray(headerValues) || Object.values(headerValues).some((v) => typeof v !== 'string')) {
    throw new TypeError('answer.headers must be an object of strings');
  }
  return {
    status: optional(status, 'number', 'answer.status') ?? 200,
    headers: headerValues as Record<string, string>,
    body: optional(body, 'string', 'answer.body'),
  };
}

function advanceClock(clock: Clock, body: Record<string, unknown>): Answer {
  if (!(clock instanceof ManualClock)) return jsonAnswer(409, { error: 'the simulator runs on the system clock' });
  const advanceMs = optional(body.advanceMs, 'number', 'advanceMs') ?? 0;
  return jsonAnswer(200, { now: clock.advance(advanceMs) });
}

function optional<T extends 'string' | 'number'>(
  value: unknown,
  type: T,
  field: string,
): (T extends 'string' ? string : number) | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== type) throw new TypeError(`${field} must be a ${type}`);
  return value as T extends 'string' ? string : number;
}

async function jsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const raw = (await readBody(req)).toString('utf8');
  const value: unknown = raw === '' ? {} : JSON.parse(raw);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError('body must be a JSON object');
  }
  return value as Record<string, unknown>;
}

function noContent(): Answer {
  return { status: 204, headers: {}, body: '' };
}
