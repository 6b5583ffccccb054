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

/** Whatever a `catch` receives, as an Error. */
export function coerceError(value: unknown): Error {
  if (value instanceof Error) return value;
  return new Error(typeof value === 'string' ? value : JSON.stringify(value));
}

/**
 * SQLSTATEs worth retrying a transaction for: serialization failures, deadlocks, and lost connections.
 */
export const RETRYABLE_SQLSTATES: ReadonlySet<string> = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '57P01', // admin_shutdown
  '08000', // connection_exception
  '08003', // connection_does_not_exist
  '08006', // connection_failure
]);

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
