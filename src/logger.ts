import pino, { type Logger } from 'pino';
import type { LogLevel } from './config/loadConfig.ts';

export type { Logger };

/**
 * The logger, and the rule that no secret reaches a log line: not the bearer token, not a signed attachment URL, not a
 * database password. Three layers, because a new log call can slip past any one of them:
 *
 * 1. `redact` censors the fields that hold secrets by name (the token, authorization headers) and cuts the query
 *    string off fields named `url` (a signed link keeps its path, which is what one needs to debug).
 * 2. Errors logged under `err` or `error` keep their type, message, code, status, stack and cause only: never a got
 *    error's `options`, `request` or `response`, which carry the request headers and the full URL.
 * 3. Every finished line goes through `scrubSecrets` before it is written, so a secret inside a message, a stack
 *    trace or an unexpected key is replaced too.
 */

const REDACT = [
  'token',
  'apiToken',
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  'options.headers.authorization',
  '*.token',
  '*.apiToken',
  '*.authorization',
  '*.headers.authorization',
  'url',
  '*.url',
];

export function createLogger(level: LogLevel, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { name: 'ticket-mirror' },
      redact: { paths: REDACT, censor: censor },
      serializers: { err: serializeError, error: serializeError },
      hooks: { streamWrite: scrubSecrets },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? pino.destination({ dest: 2, sync: true }),
  );
}

function censor(value: unknown, path: string[]): unknown {
  return path.at(-1) === 'url' && typeof value === 'string' ? redactUrl(value) : '[redacted]';
}

/** A URL without its query string and fragment, where signatures and tokens travel. */
export function redactUrl(url: string): string {
  const cut = url.search(/[?#]/);
  return cut === -1 ? url : `${url.slice(0, cut)}?[redacted]`;
}

// Each pattern stops at a quote or a backslash, so it never runs past the end of a JSON string value.
const BEARER = /\b(Bearer\s+)[^\s"'\\,;]+/gi;
const URL_QUERY = /(\bhttps?:\/\/[^\s"'<>?#\\]*)[?#][^\s"'<>\\]*/gi;
const URL_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^\s"'/:@\\]+:)[^\s"'/@\\]+@/gi;
const SECRET_PARAMETER = /\b((?:signature|sig|token|access_token|api_key|password)=)[^\s&"'\\]+/gi;

/** Replaces bearer credentials, URL query strings, passwords in URLs and secret-looking parameters in a line. */
export function scrubSecrets(line: string): string {
  return line
    .replace(BEARER, '$1[redacted]')
    .replace(URL_QUERY, '$1?[redacted]')
    .replace(URL_PASSWORD, '$1***@')
    .replace(SECRET_PARAMETER, '$1[redacted]');
}

/** An error as plain data, without the request options, headers and bodies that HTTP client errors carry. */
function serializeError(value: unknown, depth = 0): unknown {
  if (!(value instanceof Error)) return value;
  const e = value as Error & { code?: unknown; status?: unknown; statusCode?: unknown };
  const status = e.status ?? e.statusCode;
  return {
    type: e.name,
    message: e.message,
    ...(typeof e.code === 'string' || typeof e.code === 'number' ? { code: e.code } : {}),
    ...(typeof status === 'number' ? { status } : {}),
    stack: e.stack,
    ...(e.cause !== undefined && depth < 3 ? { cause: serializeError(e.cause, depth + 1) } : {}),
  };
}
