import { AuthError, sqlStateOf } from '../errors.ts';
import { scrubSecrets } from '../logger.ts';
import { EXIT } from './exit.ts';

/**
 * What a failure says to the person at the terminal: the setting involved, what was tried (a host and port, a URL
 * without its password), and the likely fix, in one or two parts (`reportFailure` prints them on one line); and the
 * exit code. Failures are recognised by their codes — a Node system error's (ECONNREFUSED …), a PostgreSQL SQLSTATE
 * (28P01 …), or the name of one of ours — in the one table below; anything else is left to the caller's plain report.
 *
 * Exit codes: 2 when a setting must change (a login or a token refused, a database that does not exist, a port taken
 * by another program); 1 when the database or the API could not be reached, or another process holds the embedded
 * database's folder (as before: the contract's `migrate` and `rebuild` exit 0 or 1), which may pass by itself.
 */

export interface Explanation {
  lines: string[];
  code: number;
}

/** The settings a failure may concern: the configuration's, when it could be read. */
export interface FailureSettings {
  apiUrl?: string | undefined;
  databaseUrl?: string | undefined;
  httpPort?: number;
  pglitePort?: number;
}

type Kind = 'unreachable' | 'login' | 'no-database' | 'port' | 'locked' | 'token';

/** The table: a code, what it means in plain words, the kind of failure, the exit code. */
const FAILURES: Record<string, { what: string; kind: Kind; exit: number }> = {
  ECONNREFUSED: { what: 'connection refused', kind: 'unreachable', exit: EXIT.failure },
  ENOTFOUND: { what: 'host not found', kind: 'unreachable', exit: EXIT.failure },
  EAI_AGAIN: { what: 'the host name could not be looked up (DNS)', kind: 'unreachable', exit: EXIT.failure },
  ETIMEDOUT: { what: 'no answer in time', kind: 'unreachable', exit: EXIT.failure },
  ECONNRESET: { what: 'the connection was cut', kind: 'unreachable', exit: EXIT.failure },
  EHOSTUNREACH: { what: 'host unreachable', kind: 'unreachable', exit: EXIT.failure },
  ENETUNREACH: { what: 'network unreachable', kind: 'unreachable', exit: EXIT.failure },
  '57P03': { what: 'the database is starting up', kind: 'unreachable', exit: EXIT.failure },
  EADDRINUSE: { what: 'in use by another program', kind: 'port', exit: EXIT.usage },
  '28P01': { what: 'password authentication failed', kind: 'login', exit: EXIT.usage },
  '28000': { what: 'the login was refused', kind: 'login', exit: EXIT.usage },
  '3D000': { what: 'the database does not exist', kind: 'no-database', exit: EXIT.usage },
  DataFolderLockedError: { what: 'the data folder is in use', kind: 'locked', exit: EXIT.failure },
  AuthError: { what: 'the API refused the token', kind: 'token', exit: EXIT.usage },
};

/** Explains `error` if the table knows it, else null. */
export function explainFailure(error: unknown, settings: FailureSettings): Explanation | null {
  const chain = causes(error);
  const known = (k: string | null | undefined): k is string => typeof k === 'string' && Object.hasOwn(FAILURES, k);
  const state = sqlStateOf(error);
  const key = known(state) ? state : (chain.map(codeOf).find(known) ?? chain.map(nameOf).find(known));
  if (key === undefined) return null;
  const entry = FAILURES[key]!;
  const lines = describe(entry.kind, entry.what, key, chain, settings);
  return lines ? { lines: lines.map(scrubSecrets), code: entry.exit } : null;
}

function describe(kind: Kind, what: string, key: string, chain: object[], s: FailureSettings): string[] | null {
  const fromApi = chain.some(isApiError);
  switch (kind) {
    case 'unreachable': {
      if (fromApi && s.apiUrl) {
        return [
          `cannot reach the API at ${target(s.apiUrl, chain)}: ${what} (TICKETS_API_URL=${maskUrl(s.apiUrl)})`,
          `  Check TICKETS_API_URL — the helpdesk's base address, e.g. https://helpdesk.example.com — and that this machine can reach it (network, proxy, firewall).`,
        ];
      }
      if (!fromApi && s.databaseUrl) {
        const fix =
          key === 'ECONNREFUSED'
            ? 'Is PostgreSQL running there, on that port? Fix the host or port in DATABASE_URL, or unset it to use the embedded database.'
            : key === 'ENOTFOUND' || key === 'EAI_AGAIN'
              ? 'Check the host name in DATABASE_URL.'
              : key === '57P03'
                ? 'Try again in a moment.'
                : 'Check that this machine can reach it (network, firewall) and the host and port in DATABASE_URL.';
        return [`cannot connect to the database at ${target(s.databaseUrl, chain)}: ${what} (DATABASE_URL=${maskUrl(s.databaseUrl)})`, `  ${fix}`];
      }
      return null;
    }
    case 'login': {
      if (!s.databaseUrl) return null;
      const db = postgresParts(s.databaseUrl);
      return [
        `the database at ${db.target} refused the login of user "${db.user}": ${serverMessage(chain) ?? what} (DATABASE_URL=${maskUrl(s.databaseUrl)})`,
        '  Check the user name and password in DATABASE_URL (percent-encode @ : / % in a password), and that pg_hba.conf lets this user in from here.',
      ];
    }
    case 'no-database': {
      if (!s.databaseUrl) return null;
      const db = postgresParts(s.databaseUrl);
      return [
        `database "${db.name}" does not exist on ${db.target} (DATABASE_URL=${maskUrl(s.databaseUrl)})`,
        `  Create it (createdb -h ${db.host} -p ${db.port} -U ${db.user} ${db.name}), or fix the database name at the end of DATABASE_URL.`,
      ];
    }
    case 'port': {
      const e = chain.find((c) => codeOf(c) === 'EADDRINUSE') as { address?: unknown; port?: unknown };
      const port = typeof e.port === 'number' ? e.port : undefined;
      const at = `${typeof e.address === 'string' ? e.address : '127.0.0.1'}${port === undefined ? '' : `:${port}`}`;
      const variable = port === undefined ? undefined : port === s.httpPort ? 'HTTP_PORT' : port === s.pglitePort ? 'PGLITE_PORT' : undefined;
      return variable
        ? [`${variable}=${port} is ${what} (${at})`, `  Stop that program, or set ${variable} to another port (0 turns it off).`]
        : [`${at} is ${what}`, '  Stop that program, or choose another port.'];
    }
    case 'locked':
      return [
        messageOf(chain[0]!),
        '  Only one process may open the embedded database: for several processes or standby replicas, use PostgreSQL (DATABASE_URL).',
      ];
    case 'token': {
      const e = chain.find((c) => c instanceof AuthError) as AuthError;
      const sentTo = s.apiUrl ? ` (TICKETS_API_URL=${maskUrl(s.apiUrl)})` : '';
      return e.status === 401 || e.status === 403
        ? [
            `${e.message}${sentTo}`,
            '  Set a valid token in TICKETS_API_TOKEN or the file TICKETS_API_TOKEN_FILE names: it may be wrong, expired or revoked, or its account not on a plan with API access.',
          ]
        : [`${e.message}${sentTo}`, "  TICKETS_API_URL must be the helpdesk's base address, e.g. https://helpdesk.example.com: ticket-mirror adds /api/v1/... itself."];
    }
  }
}

/** An error and its causes (and an AggregateError's errors), outermost first. */
function causes(error: unknown): object[] {
  const out: object[] = [];
  const visit = (e: unknown) => {
    if (typeof e !== 'object' || e === null || out.length >= 12 || out.includes(e)) return;
    out.push(e);
    visit((e as { cause?: unknown }).cause);
    const inner = (e as { errors?: unknown }).errors;
    if (Array.isArray(inner)) inner.forEach(visit);
  };
  visit(error);
  return out;
}

function codeOf(e: object): string | undefined {
  const code = (e as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

function nameOf(e: object): string {
  const name = (e as { name?: unknown }).name;
  return typeof name === 'string' ? name : '';
}

function messageOf(e: object): string {
  const message = (e as { message?: unknown }).message;
  return typeof message === 'string' ? message : String(e);
}

/** An error of the HTTP client (got's RequestError, or ours around it): the failure concerns the API. */
function isApiError(e: object): boolean {
  const name = nameOf(e);
  return name === 'RequestError' || name === 'TimeoutError' || name === 'TransientError' || name === 'AuthError' || name === 'NotApiAnswerError';
}

/** The message PostgreSQL sent, from the error that carries its SQLSTATE. */
function serverMessage(chain: object[]): string | undefined {
  const e = chain.find((c) => typeof codeOf(c) === 'string' && /^[0-9A-Z]{5}$/.test(codeOf(c)!) && (c as { severity?: unknown }).severity !== undefined);
  return e ? messageOf(e) : undefined;
}

/** Where a connection went: the system error's address and port when it has them, else the URL's host and port. */
function target(url: string, chain: object[]): string {
  const e = chain.find((c) => typeof (c as { port?: unknown }).port === 'number') as { address?: unknown; port?: number } | undefined;
  if (e && typeof e.address === 'string') return `${e.address.includes(':') ? `[${e.address}]` : e.address}:${e.port}`;
  try {
    const u = new URL(url);
    const port = u.port || (u.protocol === 'https:' ? '443' : u.protocol === 'http:' ? '80' : '5432');
    return `${u.hostname || 'localhost'}:${port}`;
  } catch {
    return 'the configured address';
  }
}

function postgresParts(url: string): { host: string; port: string; user: string; name: string; target: string } {
  try {
    const u = new URL(url);
    const host = u.hostname || 'localhost';
    const port = u.port || '5432';
    const user = decodeURIComponent(u.username) || 'postgres';
    const name = decodeURIComponent(u.pathname.replace(/^\//, '')) || user;
    return { host, port, user, name, target: `${host}:${port}` };
  } catch {
    return { host: 'localhost', port: '5432', user: 'postgres', name: '?', target: 'the configured server' };
  }
}

/** A URL as a message may show it: no password, no password parameter. */
export function maskUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    for (const key of [...u.searchParams.keys()]) if (/pass|token|secret|key/i.test(key)) u.searchParams.set(key, '***');
    return u.toString().replace(/\/$/, u.pathname === '/' && !url.endsWith('/') ? '' : '/');
  } catch {
    return scrubSecrets(url);
  }
}
