import { DrizzleQueryError } from 'drizzle-orm';

/**
 * The few named errors of ticket-mirror. Each sets `name` and chains `cause`; the CLI maps them to exit codes
 * (ConfigError and AuthError → 2, everything else → 1).
 */

export class ConfigError extends Error {
  override name = 'ConfigError';
  /** One line per bad variable, each starting with the variable's name. */
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(problems.length === 1 ? problems[0]! : `${problems.length} configuration problems: ${problems.join('; ')}`);
    this.problems = problems;
  }
}

/** The service rejected the token (401/403) or answered with a login page: retrying cannot help. */
export class AuthError extends Error {
  override name = 'AuthError';
  constructor(
    message: string,
    readonly status: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** 404 from the detail or reply endpoint. */
export class NotFoundError extends Error {
  override name = 'NotFoundError';
  constructor(readonly ticketId: string) {
    super(`ticket ${ticketId} not found`);
  }
}

/** 429 from the service, or the local budget says no request may be sent now. */
export class RateLimitedError extends Error {
  override name = 'RateLimitedError';
  constructor(
    message: string,
    /** Epoch ms before which no request should be sent. */
    readonly retryAt: number,
  ) {
    super(message);
  }
}

/** The service itself answered 429 (too many requests): the token's limits were spent, by this client or another. */
export class ThrottledError extends RateLimitedError {
  override name = 'ThrottledError';
}

/** A reply the gate refused because replies have used their share of the day (sync/gate.ts REPLY_SHARE): not sent. */
export class ReplyShareSpentError extends RateLimitedError {
  override name = 'ReplyShareSpentError';
}

/** A 5xx, a timeout, a reset connection: worth a bounded number of retries. */
export class TransientError extends Error {
  override name = 'TransientError';
  constructor(
    message: string,
    readonly status?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * An answer that did not come from the API — an HTML page or a redirect — after the token had worked in this process:
 * a proxy or gateway hiccup, retried like a server error. The client turns it into an AuthError once it persists.
 */
export class NotApiAnswerError extends TransientError {
  override name = 'NotApiAnswerError';
}

/** An answer larger than API_MAX_RESPONSE_BYTES: that request failed (it is not retried at once: it would be as big). */
export class ResponseTooLargeError extends TransientError {
  override name = 'ResponseTooLargeError';
  constructor(
    message: string,
    /** Bytes announced (Content-Length) or, without one, read when reading stopped. */
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(message);
  }
}

/** A response that does not have the shape the spec gives (bad JSON, wrong types). Never retried blindly. */
export class InvalidResponseError extends Error {
  override name = 'InvalidResponseError';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** 4xx other than the above (400, 422 …): the request itself is wrong. */
export class RequestRejectedError extends Error {
  override name = 'RequestRejectedError';
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/**
 * A reply POST whose answer does not prove either way whether the service created the message (an HTML page, a 5xx,
 * a timeout, a redirect, a 2xx without `{id, created_at}` …; see api/replyAnswer.ts). It must be settled by reading
 * the ticket's detail, never by posting again.
 */
export class ReplyOutcomeUnknownError extends Error {
  override name = 'ReplyOutcomeUnknownError';
  constructor(
    message: string,
    /** The answer's status; null when none arrived. */
    readonly status: number | null,
    /** Epoch ms before which the ticket should not be asked (a 429's Retry-After); undefined when none was given. */
    readonly retryAt?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A reply POST that provably never left: the connection was refused or the host name did not resolve. */
export class ReplyNotSentError extends TransientError {
  override name = 'ReplyNotSentError';
}

/** What a configured host that cannot be listened on is, by the listen's error code. */
const UNLISTENABLE_HOST: Readonly<Record<string, string>> = {
  ENOTFOUND: 'host not found',
  EADDRNOTAVAIL: 'not an address of this machine',
};

/**
 * A listen's failure that says the configured host is not this machine's (it does not resolve, or is another's
 * address), as a ConfigError naming its variable; null for any other failure. Told by `run`'s and `fleet run`'s servers alike (daemon/service.ts, cli/commands/fleet.ts).
 */
export function unlistenableHost(error: unknown, host: { variable: string; value: string }): ConfigError | null {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (code === undefined || !Object.hasOwn(UNLISTENABLE_HOST, code)) return null;
  return new ConfigError([
    `${host.variable}=${host.value} cannot be listened on: ${UNLISTENABLE_HOST[code]}; set ${host.variable} to an address of this machine (127.0.0.1, the default; 0.0.0.0 for every interface)`,
  ]);
}

/** Whatever a `catch` receives, as an Error. */
export function coerceError(value: unknown): Error {
  if (value instanceof Error) return value;
  return new Error(typeof value === 'string' ? value : JSON.stringify(value));
}

/**
 * The SQLSTATE of a database error, looked for along its `cause` chain (drizzle wraps the driver's error in a
 * DrizzleQueryError); null for anything else. A Node system error's code (ECONNRESET …) is not one.
 */
export function sqlStateOf(error: unknown): string | null {
  let e: unknown = error;
  for (let depth = 0; depth < 8 && typeof e === 'object' && e !== null; depth++) {
    const { code, syscall } = e as { code?: unknown; syscall?: unknown };
    if (typeof code === 'string' && syscall === undefined && /^(?=.*\d)[0-9A-Z]{5}$/.test(code)) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return null;
}

/**
 * SQLSTATE classes that speak of the data one write carried, not of the database: data exceptions (22: a value a
 * column refuses), integrity and check violations (23, 27, 44), a cardinality violation (21), a rollback of that
 * transaction (40: serialization failure, deadlock), a program limit (54: a row too big for an index) and an error a
 * trigger raised (P0). The next write may well succeed. Every other class (08 connection, 53 resources, 57 shutdown,
 * 58 system, 42 a missing table …) says the database is in trouble: every write would fail alike.
 */
const WRITE_DATA_CLASSES: ReadonlySet<string> = new Set(['21', '22', '23', '27', '40', '44', '54', 'P0']);

/** Whether a failed write failed for its own data (see WRITE_DATA_CLASSES): a failure of that one ticket, not of the pass. */
export function isWriteDataError(error: unknown): boolean {
  const state = sqlStateOf(error);
  return state !== null && WRITE_DATA_CLASSES.has(state.slice(0, 2));
}

/** The database's schema was migrated by a newer version of ticket-mirror (see db/connect.ts). */
export class NewerSchemaError extends Error {
  override name = 'NewerSchemaError';
}

/**
 * A database error, told safely: the database's own message, its SQLSTATE and what was being written (the ticket),
 * nothing else. Unlike the other errors it does not chain `cause`: drizzle's DrizzleQueryError lists every bound
 * parameter in its message (names, e-mails, message text), and whatever holds it may end up in `sync_runs.error`, a
 * log line, `/readyz` or the status page, none of which has authentication. The stack keeps the original's frames.
 */
export class DatabaseError extends Error {
  override name = 'DatabaseError';
  constructor(
    message: string,
    readonly sqlState: string | null,
  ) {
    super(message);
  }
}

/**
 * What may be stored and shown of any error (see DatabaseError): for a database error "<the database's message>
 * (SQLSTATE xxxxx)" — or the underlying cause's message when the driver gave no SQLSTATE (a lost connection) — and for
 * anything else its message.
 */
export function safeErrorMessage(error: unknown): string {
  if (error instanceof DatabaseError) return error.message;
  const state = sqlStateOf(error);
  if (state !== null) {
    // The link that carries the code: the driver's error, whose message is the database's own.
    const dbError = chain(error).find((e) => (e as { code?: unknown }).code === state) as { message?: unknown };
    return `${withoutValues(String(dbError.message ?? 'database error'), state)} (SQLSTATE ${state})${STATE_HINTS[state] ?? ''}`;
  }
  const query = chain(error).findLast((e) => e instanceof DrizzleQueryError);
  if (query) return query.cause === undefined ? 'a database query failed' : safeErrorMessage(query.cause);
  return coerceError(error).message;
}

/** `error` as it may travel: a database error becomes a DatabaseError (see safeErrorMessage), prefixed with `context`. */
export function safeError(error: unknown, context?: string): Error {
  if (error instanceof DatabaseError && context === undefined) return error;
  const e = coerceError(error);
  const state = sqlStateOf(e);
  if (state === null && !chain(e).some((link) => link instanceof DrizzleQueryError)) return e;
  const safe = new DatabaseError(`${context ? `${context}: ` : ''}${safeErrorMessage(e)}`, state);
  // The frames say where it failed; the original's first lines hold its (unsafe) message.
  const frames = (e.stack ?? '').split('\n').filter((line) => /^\s+at /.test(line));
  if (frames.length > 0) safe.stack = `${safe.name}: ${safe.message}\n${frames.join('\n')}`;
  return safe;
}

/** An error and its causes, outermost first. */
function chain(error: unknown): object[] {
  const out: object[] = [];
  for (let e: unknown = error; typeof e === 'object' && e !== null && out.length < 8; e = (e as { cause?: unknown }).cause) out.push(e);
  return out;
}

/** What a SQLSTATE means for the person who reads it, where the database's own words do not say. */
const STATE_HINTS: Readonly<Record<string, string>> = {
  '55P03':
    ': another session held a lock on a table the mirror writes for longer than lock_timeout (a transaction left open, LOCK TABLE, ALTER, CREATE INDEX: pg_stat_activity shows which)',
};

/**
 * The first line of a database's message. PostgreSQL quotes the offending value in some data exceptions (`invalid
 * input syntax for type integer: "…"`, `value "…" is out of range`): that value is the ticket's content, so it goes.
 */
function withoutValues(message: string, state: string): string {
  const text = message.split('\n')[0]!.slice(0, 300);
  if (!state.startsWith('22')) return text;
  return text.replace(/: "(?:[^"]|"")*"$/, ': "…"').replace(/\bvalue "(?:[^"]|"")*"/g, 'value "…"');
}
