import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse as parseDotenv } from 'dotenv';
import { z } from 'zod';
import { ConfigError } from '../errors.ts';
import { LOG_LEVELS, type LogLevel } from '../logger.ts';
import { rememberSecret } from '../secrets.ts';
import type { ReportSettings } from '../model/reportSettings.ts';
import { fleetKeyProblem } from './fleetKey.ts';
import { readAtMost, readProblem } from './readAtMost.ts';
import { parseBusinessHours, parseDuration, parseTimeZone } from './reportSettings.ts';

/**
 * Configuration is parsed once, here. Every variable of the public contract, its default, and a check; all problems are
 * reported together, each naming its variable. Only the CLI reads `process.env`: it hands it here (cli/context.ts, and
 * `demo` with values of its own), and its last-resort error report looks at LOG_LEVEL itself (cli/program.ts), since the
 * configuration may be what failed.
 */

const LOG_FORMATS = ['json', 'pretty'] as const;

/**
 * A number variable, empty or blank taken as unset (its default), as every text variable is: coerced as it was, an
 * empty value read as 0 — `API_RESERVE=` left no reserve, `HTTP_PORT=` turned the server off. Written in decimals
 * only: JavaScript's Number() also reads `0x10` (16), `1e3` and `Infinity`, a typo turned into a value.
 */
const number = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (typeof v !== 'string' ? v : v.trim() === '' ? undefined : DECIMAL.test(v) ? v : Number.NaN), schema);

const DECIMAL = /^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)\s*$/;

const port = (fallback: number) =>
  number(
    z.coerce
      .number({ error: 'must be a port number' })
      .int('must be a whole number')
      .min(0, 'must be between 0 and 65535')
      .max(65535, 'must be between 0 and 65535')
      .default(fallback),
  );

const positiveInt = (fallback: number) =>
  number(z.coerce.number({ error: 'must be a number' }).int('must be a whole number').positive('must be above 0').default(fallback));

/** A transform from a parser that throws: its message becomes the variable's problem. */
const parsedBy =
  <T>(parse: (value: string) => T) =>
  (value: string, ctx: z.RefinementCtx): T => {
    try {
      return parse(value);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message });
      return z.NEVER;
    }
  };

const optionalText = z
  .string()
  .trim()
  .transform((v) => (v === '' ? undefined : v))
  .optional();

/** An API base URL: TICKETS_API_URL's rule, and a fleet account's `--api-url` (see parseApiUrl). */
const apiUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL such as https://helpdesk.example.com' })
  // A user name or password in the URL becomes a Basic Authorization header (got), which replaces the bearer token:
  // every request would be refused as unauthenticated, and blamed on the token.
  .refine((u) => {
    // Said once the URL is an http(s) one: a URL that does not parse, or of another scheme, is one problem already.
    if (!URL.canParse(u)) return true;
    const url = new URL(u);
    return !/^https?:$/.test(url.protocol) || (url.username === '' && url.password === '');
  }, 'must not hold a user name or password: the API authenticates with the token alone (TICKETS_API_TOKEN)')
  // Every request appends its path (/api/v1/...) to the base: after a query or a fragment that path would be part of
  // them, and every request would go to the base itself.
  .refine((u) => !/[?#]/.test(u), 'must not hold a query (?…) or a fragment (#…): every request appends /api/v1/… to it')
  .transform((u) => u.replace(/\/+$/, ''));

/** An API URL as an error shows it: secrets masked, and nothing of a query or fragment (a key may ride in one). */
function shownApiUrl(value: string): string {
  return maskSecrets(value).replace(/([?#]).*$/s, '$1…');
}

const EnvSchema = z.object({
  /** The service's base URL; requests go to `${TICKETS_API_URL}/api/v1/...`. Required for run, sync and reply. */
  TICKETS_API_URL: optionalText.pipe(apiUrl.optional()),
  /** Bearer token. */
  TICKETS_API_TOKEN: optionalText,
  /** A file holding the token (container secrets). */
  TICKETS_API_TOKEN_FILE: optionalText,
  /** `postgres://...` of a real PostgreSQL; unset → embedded PGlite. */
  DATABASE_URL: optionalText.pipe(
    z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must start with postgres:// or postgresql://')
      .refine(readsAsPostgresUrl, 'is not a URL (check the host, the port and any [ ] or % in it)')
      .optional(),
  ),
  /** @default ./data/pglite */
  PGLITE_DIR: optionalText.transform((v) => v ?? './data/pglite'),
  /** @default 5433; 0 = off */
  PGLITE_PORT: port(5433),
  /** @default public */
  DB_SCHEMA: optionalText.pipe(
    z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case SQL identifier (letters, digits, _)')
      .refine((v) => !v.startsWith('pg_'), 'must not start with pg_ (PostgreSQL keeps those names)')
      // PostgreSQL's own too: it takes tables, but pg_dump leaves them out of every backup.
      .refine((v) => v !== 'information_schema', 'must not be information_schema (PostgreSQL keeps it: pg_dump leaves it out of backups)')
      .default('public'),
  ),
  /** The fleet's control schema (accounts, views across them; pg-boss in `<FLEET_SCHEMA>_jobs`). @default ticket_mirror_fleet */
  FLEET_SCHEMA: optionalText.pipe(
    z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,56}$/, 'must be a lower-case SQL identifier (letters, digits, _) of at most 57 characters')
      .refine((v) => !v.startsWith('pg_'), 'must not start with pg_ (PostgreSQL keeps those names)')
      .default('ticket_mirror_fleet'),
  ),
  /**
   * Fleet accounts with a Prometheus label of their own on `fleet run`'s /metrics (the oldest first); the others are
   * summed as account="_other", so the series stay bounded (fleet/metrics.ts). @default 200
   */
  FLEET_METRICS_ACCOUNTS: number(
    z.coerce
      .number({ error: 'must be a number of accounts' })
      .int('must be a whole number')
      .min(0, 'must be between 0 and 10000')
      .max(10_000, 'must be between 0 and 10000')
      .default(200),
  ),
  /** Requests per rolling 24 h. @default 1440 */
  API_DAILY_LIMIT: positiveInt(1440),
  /** Requests per minute. @default 60 */
  API_MINUTE_LIMIT: positiveInt(60),
  /**
   * Largest API answer read, in bytes; a larger one fails that request. At most 512 MiB: an answer is held as one
   * string, and V8's strings end not far above. @default 67108864 (64 MiB)
   */
  API_MAX_RESPONSE_BYTES: number(
    z.coerce
      .number({ error: 'must be a number of bytes' })
      .int('must be a whole number of bytes')
      .min(1024, 'must be at least 1024 bytes')
      .max(512 * 1024 * 1024, 'must be at most 536870912 (512 MiB)')
      .default(64 * 1024 * 1024),
  ),
  /** Fraction of both limits left unused for other clients of the token. @default 0.1 */
  API_RESERVE: number(
    z.coerce
      .number({ error: 'must be a number' })
      .min(0, 'must be between 0 and 0.9')
      .max(0.9, 'must be between 0 and 0.9')
      .default(0.1),
  ),
  /** @default 9464; 0 = off */
  HTTP_PORT: port(9464),
  /** @default 127.0.0.1 */
  HTTP_HOST: optionalText.transform((v) => v ?? '127.0.0.1'),
  /** @default info */
  LOG_LEVEL: optionalText.pipe(z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(', ')}` }).default('info')),
  /** IANA time zone the BI views cut days, weeks and hours in. @default UTC */
  REPORT_TIMEZONE: optionalText.pipe(z.string().transform(parsedBy(parseTimeZone)).default('UTC')),
  /** Opening hours for business-time durations, e.g. `Mon-Fri 09:00-17:00`. @default unset (none) */
  REPORT_BUSINESS_HOURS: optionalText.pipe(z.string().transform(parsedBy(parseBusinessHours)).optional()),
  /** First-response target of the SLA views, e.g. `4h`. @default unset (not judged) */
  REPORT_SLA_FIRST_RESPONSE: optionalText.pipe(z.string().transform(parsedBy(parseDuration)).optional()),
  /** Resolution target of the SLA views, e.g. `2d`. @default unset (not judged) */
  REPORT_SLA_RESOLUTION: optionalText.pipe(z.string().transform(parsedBy(parseDuration)).optional()),
  /** json or pretty. @default pretty when stderr is a terminal, json otherwise (decided by the CLI) */
  LOG_FORMAT: optionalText.pipe(z.enum(LOG_FORMATS, { error: `must be one of ${LOG_FORMATS.join(', ')}` }).optional()),
});

export interface Config {
  readonly apiUrl: string | undefined;
  /** Never logged; see `redactedConfig`. */
  readonly apiToken: string | undefined;
  readonly databaseUrl: string | undefined;
  readonly pgliteDir: string;
  readonly pglitePort: number;
  /** The SQL socket's password (PGLITE_PASSWORD); never logged. Unset: one generated once, kept in PGLITE_DIR. */
  readonly pglitePassword: string | undefined;
  readonly dbSchema: string;
  /**
   * FLEET_KEY as given (checked: 32 bytes as base64 or hex), for fleet/tokenSeal.ts's parseFleetKey; never logged (see
   * `redactedConfig`). Only the fleet's commands read it.
   */
  readonly fleetKey: string | undefined;
  /** FLEET_SCHEMA: the fleet's control schema. */
  readonly fleetSchema: string;
  /** FLEET_METRICS_ACCOUNTS: accounts with a label of their own on the fleet's /metrics. */
  readonly fleetMetricsAccounts: number;
  readonly dailyLimit: number;
  readonly minuteLimit: number;
  readonly reserve: number;
  readonly maxResponseBytes: number;
  readonly httpPort: number;
  readonly httpHost: string;
  readonly logLevel: LogLevel;
  /** Unset: the CLI picks pretty on a terminal and JSON otherwise. */
  readonly logFormat: 'json' | 'pretty' | undefined;
  /** REPORT_TIMEZONE, REPORT_BUSINESS_HOURS, REPORT_SLA_*: written into report_settings by every migrate. */
  readonly report: ReportSettings;
  /** What loadConfig changed of a value given (TICKETS_API_URL ending in /api/v1), said in the log where it is used. */
  readonly notes: readonly string[];
}

export interface LoadConfigOptions {
  /** Where `.env` is looked for. @default process.cwd() */
  cwd?: string;
  /** Read `.env` at all. @default true */
  dotenv?: boolean;
  /**
   * Count a missing TICKETS_API_URL or token among the problems, so that a command that needs the API reports them
   * together with every other one (see `requireApi`). @default false
   */
  requireApi?: boolean;
  /** How long a TICKETS_API_TOKEN_FILE that is a named pipe is waited for (tests). @default PIPE_WAIT_MS, 10 s */
  pipeWaitMs?: number;
}

/** Reads `.env` (the environment wins over it), validates everything, and returns a frozen Config or throws ConfigError. */
export function loadConfig(env: Record<string, string | undefined>, options: LoadConfigOptions = {}): Config {
  const cwd = options.cwd ?? process.cwd();
  const merged = { ...(options.dotenv === false ? {} : readDotenv(cwd)), ...env };
  const parsed = EnvSchema.safeParse(merged);
  const problems: string[] = [];
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const name = String(issue.path[0] ?? 'environment');
      const value = merged[name] ?? '';
      const shown = name === 'TICKETS_API_URL' ? shownApiUrl(value) : maskSecrets(value);
      // A value of a megabyte made a line of a megabyte: the start says which it is.
      problems.push(`${name}=${JSON.stringify(shown.length > 200 ? `${shown.slice(0, 199)}…` : shown)} ${issue.message}`);
    }
  }
  // One setting given two ways: when the environment gives the token either way, `.env`'s way is not used either (a
  // TICKETS_API_TOKEN_FILE of a container's secret beside the TICKETS_API_TOKEN of a copied .env.example was refused).
  const tokenFrom = env.TICKETS_API_TOKEN?.trim() || env.TICKETS_API_TOKEN_FILE?.trim() ? env : merged;
  const token = resolveToken(tokenFrom, cwd, problems, options.pipeWaitMs);
  rememberSecret(token);
  const pglitePassword = resolvePglitePassword(merged, problems);
  const fleetKey = resolveFleetKey(merged, problems);
  if (options.requireApi) problems.unshift(...missingApi(merged, token, problems));
  if (parsed.success) problems.push(...portClash(parsed.data));
  if (!parsed.success || problems.length > 0) throw new ConfigError(problems);
  const e = parsed.data;
  const api = apiBase(e.TICKETS_API_URL);
  return Object.freeze({
    apiUrl: api.url,
    apiToken: token,
    databaseUrl: e.DATABASE_URL,
    pgliteDir: resolve(cwd, e.PGLITE_DIR),
    pglitePort: e.PGLITE_PORT,
    pglitePassword,
    dbSchema: e.DB_SCHEMA,
    fleetKey,
    fleetSchema: e.FLEET_SCHEMA,
    fleetMetricsAccounts: e.FLEET_METRICS_ACCOUNTS,
    dailyLimit: e.API_DAILY_LIMIT,
    minuteLimit: e.API_MINUTE_LIMIT,
    reserve: e.API_RESERVE,
    maxResponseBytes: e.API_MAX_RESPONSE_BYTES,
    httpPort: e.HTTP_PORT,
    httpHost: e.HTTP_HOST,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    report: Object.freeze({
      timeZone: e.REPORT_TIMEZONE,
      businessHours: e.REPORT_BUSINESS_HOURS === undefined ? null : merged.REPORT_BUSINESS_HOURS!.trim(),
      businessWindows: e.REPORT_BUSINESS_HOURS ?? null,
      slaFirstResponseSeconds: e.REPORT_SLA_FIRST_RESPONSE ?? null,
      slaResolutionSeconds: e.REPORT_SLA_RESOLUTION ?? null,
    }),
    notes: Object.freeze(api.note ? [api.note] : []),
  });
}

/**
 * With the embedded database `run` serves both ports on this machine: the same one twice failed at start as "in use by
 * another program", when the other program was itself.
 */
function portClash(e: { DATABASE_URL?: string; PGLITE_PORT: number; HTTP_PORT: number }): string[] {
  if (e.DATABASE_URL || e.PGLITE_PORT === 0 || e.PGLITE_PORT !== e.HTTP_PORT) return [];
  return [`HTTP_PORT=${e.HTTP_PORT} and PGLITE_PORT=${e.PGLITE_PORT} are the same port: the daemon serves both (set one to another port, or 0 to turn it off)`];
}

/**
 * The base URL from a TICKETS_API_URL given with the `/api/v1` that every request adds itself (as the spec's examples
 * show it), and a note saying so; any other path is kept (a helpdesk may live under one). `url` has no trailing slash.
 */
function apiBase(url: string | undefined): { url: string | undefined; note?: string } {
  if (url === undefined) return { url };
  // The path's end, not the host's (https://api/v1 is the host "api"); the URL holds no query or fragment (apiUrl).
  if (!/\/api\/v1$/i.test(new URL(url).pathname)) return { url };
  const base = url.slice(0, -'/api/v1'.length);
  return { url: base, note: `TICKETS_API_URL ends in /api/v1, which ticket-mirror adds to every request itself: using ${maskSecrets(base)}` };
}

/**
 * A base URL given elsewhere than TICKETS_API_URL (a fleet account's `--api-url`, named by `label`), checked and
 * normalised by the same rules: http(s) only, no trailing slash, a trailing /api/v1 taken off with a note. Throws a
 * ConfigError naming `label`, with any password in the URL masked.
 */
export function parseApiUrl(value: string, label: string): { url: string; note?: string } {
  const parsed = apiUrl.safeParse(value.trim());
  if (!parsed.success) throw new ConfigError([`${label}=${JSON.stringify(shownApiUrl(value))} ${parsed.error.issues[0]!.message}`]);
  const base = apiBase(parsed.data);
  return { url: base.url!, ...(base.note ? { note: base.note.replace('TICKETS_API_URL', label) } : {}) };
}

export interface ApiConfig {
  readonly apiUrl: string;
  readonly apiToken: string;
}

/** The API settings that `run`, `sync` and `reply` cannot do without, or a ConfigError with a one-line hint. */
export function requireApi(config: Config): ApiConfig {
  // Without a URL nothing else matters: one line, with the way to a first look.
  if (!config.apiUrl) throw new ConfigError([API_URL_MISSING]);
  if (!config.apiToken) throw new ConfigError([API_TOKEN_MISSING]);
  return { apiUrl: config.apiUrl!, apiToken: config.apiToken! };
}

const API_URL_MISSING = 'TICKETS_API_URL is not set: point it at your helpdesk, or run `npm run demo` for a first look';
const API_TOKEN_MISSING = 'TICKETS_API_TOKEN (or TICKETS_API_TOKEN_FILE) is not set';

/** requireApi's problems, from the raw values: none for a variable that already has a problem of its own. */
function missingApi(env: Record<string, string | undefined>, token: string | undefined, problems: readonly string[]): string[] {
  if (!env.TICKETS_API_URL?.trim()) return [API_URL_MISSING];
  if (token || problems.some((p) => p.startsWith('TICKETS_API_TOKEN'))) return [];
  return [API_TOKEN_MISSING];
}

/** The config with the token masked, for logs and `status`. */
export function redactedConfig(config: Config): Record<string, unknown> {
  return {
    ...config,
    apiToken: config.apiToken ? '[set]' : undefined,
    pglitePassword: config.pglitePassword ? '[set]' : undefined,
    fleetKey: config.fleetKey ? '[set]' : undefined,
    databaseUrl: config.databaseUrl === undefined ? undefined : maskSecrets(config.databaseUrl),
  };
}

/**
 * A value with the password of any `user:password@` in it, and of any `password=` parameter, replaced by `***`: what a
 * message may show of a URL. Generous on purpose: a password holding `@` or `/` unescaped is masked whole.
 */
export function maskSecrets(value: string): string {
  let masked = value.replace(/([?&]password=)[^&#]*/gi, '$1***');
  const at = masked.lastIndexOf('@');
  if (at === -1) return masked;
  const start = masked.indexOf('//') === -1 || masked.indexOf('//') > at ? 0 : masked.indexOf('//') + 2;
  const colon = masked.indexOf(':', start);
  if (colon !== -1 && colon < at) masked = `${masked.slice(0, colon + 1)}***${masked.slice(at)}`;
  return masked;
}

/**
 * Warnings about a configuration that works but is unsafe, each naming its variable; the composition root logs them
 * when it starts. An `http://` API URL to anything but this machine sends the token in clear text.
 */
export function configWarnings(config: Pick<Config, 'apiUrl'>, label = 'TICKETS_API_URL'): string[] {
  const warnings: string[] = [];
  if (config.apiUrl) {
    const url = new URL(config.apiUrl);
    if (url.protocol === 'http:' && !isLoopback(url.hostname)) {
      warnings.push(
        `${label}=${url.origin} is plain http:// to another machine: the bearer token crosses the network in clear text; use https://`,
      );
    }
  }
  return warnings;
}

function isLoopback(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, '');
  return host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

function readDotenv(cwd: string): Record<string, string> {
  try {
    return parseDotenv(readFileSync(resolve(cwd, '.env')));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new ConfigError([`.env cannot be read: ${(error as Error).message}`]);
  }
}

function resolveToken(env: Record<string, string | undefined>, cwd: string, problems: string[], pipeWaitMs?: number): string | undefined {
  const direct = env.TICKETS_API_TOKEN?.trim() || undefined;
  const file = env.TICKETS_API_TOKEN_FILE?.trim() || undefined;
  if (direct && file) {
    problems.push('TICKETS_API_TOKEN_FILE is set together with TICKETS_API_TOKEN: set only one');
    return undefined;
  }
  const checked = (token: string | undefined, name: string): string | undefined => {
    const problem = token === undefined ? null : tokenCharactersProblem(token);
    if (problem) problems.push(`${name} ${problem}`);
    return problem ? undefined : token;
  };
  if (!file) return checked(direct, 'TICKETS_API_TOKEN');
  try {
    const bytes = readAtMost(resolve(cwd, file), TOKEN_FILE_MAX_BYTES + 1, pipeWaitMs);
    if (bytes.length > TOKEN_FILE_MAX_BYTES) {
      problems.push(`TICKETS_API_TOKEN_FILE=${JSON.stringify(file)} holds more than ${TOKEN_FILE_MAX_BYTES} bytes: not a token file`);
      return undefined;
    }
    const token = bytes.toString('utf8').trim();
    if (!token) problems.push(`TICKETS_API_TOKEN_FILE=${JSON.stringify(file)} is empty`);
    return checked(token || undefined, `TICKETS_API_TOKEN_FILE=${JSON.stringify(file)}`);
  } catch (error) {
    problems.push(`TICKETS_API_TOKEN_FILE=${JSON.stringify(file)} cannot be read (${readProblem(error)})`);
    return undefined;
  }
}

/**
 * Whether node-postgres can read `url` (pg-connection-string's own steps: spaces and stray `%` encoded, then the WHATWG
 * URL, again with a stand-in host for `user@/db?host=/socket`): one it cannot failed later, as "Invalid URL" (exit 1)
 * or a failed first query, without naming the variable.
 */
function readsAsPostgresUrl(url: string): boolean {
  const encoded = / |%[^a-f0-9]|%[a-f0-9][^a-f0-9]/i.test(url) ? encodeURI(url).replace(/%25(\d\d)/g, '%$1') : url;
  return [encoded, encoded.replace('@/', '@___DUMMY___/')].some((candidate) => URL.canParse(candidate, 'postgres://base'));
}

/** The largest token file read (as `--token-file`'s): more is a file named by mistake, or a device that never ends. */
export const TOKEN_FILE_MAX_BYTES = 64 * 1024;

/**
 * What is wrong with the characters of a bearer token (trimmed), or null; never shows the token. It goes into an
 * Authorization header: a space or a line break inside would be two tokens or a header of its own, and Node refuses a
 * header holding a character outside Latin-1 at every request (ERR_INVALID_CHAR: each pass failed, and `run` retried
 * forever). A bearer token is printable ASCII (RFC 6750), so nothing else is taken.
 */
export function tokenCharactersProblem(token: string): string | null {
  return /^[\x21-\x7e]*$/.test(token)
    ? null
    : 'holds a space, a line break, a control character or a character outside ASCII (it is not shown): give one token on one line';
}

/**
 * PGLITE_PASSWORD, checked here rather than in the schema so that no message ever shows its value. Printable ASCII
 * only: SCRAM clients normalise a password (SASLprep) before hashing it, and on ASCII that is the identity.
 */
function resolvePglitePassword(env: Record<string, string | undefined>, problems: string[]): string | undefined {
  const value = env.PGLITE_PASSWORD;
  // Blank counts as unset, as for every variable (a compose file's `${PGLITE_PASSWORD}` with nothing behind it).
  if (value === undefined || value.trim() === '') return undefined;
  if (!/^[\x20-\x7e]{8,}$/.test(value)) {
    problems.push('PGLITE_PASSWORD must be at least 8 printable ASCII characters (its value is not shown)');
    return undefined;
  }
  return value;
}

/** FLEET_KEY, checked here rather than in the schema so that no message ever shows its value. */
function resolveFleetKey(env: Record<string, string | undefined>, problems: string[]): string | undefined {
  const value = env.FLEET_KEY?.trim();
  if (!value) return undefined;
  const problem = fleetKeyProblem(value);
  if (problem) {
    problems.push(problem);
    return undefined;
  }
  return value;
}
