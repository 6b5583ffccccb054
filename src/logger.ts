import pino, { type Logger } from 'pino';
import { prettyFactory } from 'pino-pretty';
import { BoundedLogOutput } from './logOutput.ts';
import { knownSecrets } from './secrets.ts';

export type { Logger };

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

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

/** JSON lines for machines, or one readable line per entry for people. */
export type LogFormat = 'json' | 'pretty';

/** Where a CLI's log goes: stderr, or a fake of it in tests. */
export interface LogStream {
  write(chunk: string): unknown;
  /** A terminal (tty.WriteStream) says so. */
  readonly isTTY?: boolean;
  /** tty.WriteStream's: whether colours are wanted (it honours NO_COLOR and FORCE_COLOR). */
  hasColors?(): boolean;
}

/** The format asked for by LOG_FORMAT, or else pretty on a terminal and JSON otherwise (a file, a pipe, a collector). */
export function chooseLogFormat(configured: LogFormat | undefined, stream: Pick<LogStream, 'isTTY'>): LogFormat {
  return configured ?? (stream.isTTY ? 'pretty' : 'json');
}

/**
 * The command line's logger: `format` picks JSON or pretty lines, written to `stream` (@default process.stderr). The
 * pretty lines are made in this process, synchronously, from the JSON line after redaction and scrubbing (so the same
 * three layers apply), and are scrubbed once more: no worker thread. A stream that queues (a pipe) is written through a
 * BoundedLogOutput, so a reader that stops reading never stops the process.
 */
export function createCliLogger(level: LogLevel, format: LogFormat, stream: LogStream = process.stderr): Logger {
  const output = isQueueing(stream) ? new BoundedLogOutput(stream) : stream;
  const logger =
    format === 'json'
      ? createLogger(level, { write: (line) => void output.write(line) })
      : createLogger(level, prettyDestination(output, { colors: stream.hasColors?.() ?? false, stacks: level === 'debug' || level === 'trace' }));
  if (output instanceof BoundedLogOutput) reportDrops(output, logger);
  return logger;
}

/** A logger on `destination`, or else JSON lines on stderr through a BoundedLogOutput. */
export function createLogger(level: LogLevel, destination?: pino.DestinationStream): Logger {
  const output = destination ?? new BoundedLogOutput(process.stderr);
  const logger = pino(
    {
      level,
      base: { name: 'ticket-mirror' },
      redact: { paths: REDACT, censor: censor },
      serializers: { err: serializeError, error: serializeError },
      hooks: { streamWrite: scrubSecrets },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    output,
  );
  if (output instanceof BoundedLogOutput) reportDrops(output, logger);
  return logger;
}

function isQueueing(stream: LogStream): stream is LogStream & ConstructorParameters<typeof BoundedLogOutput>[0] {
  const s = stream as Partial<ConstructorParameters<typeof BoundedLogOutput>[0]>;
  return typeof s.writableLength === 'number' && typeof s.once === 'function' && typeof s.on === 'function';
}

function reportDrops(output: BoundedLogOutput, logger: Logger): void {
  output.onResumed = (dropped) =>
    logger.warn({ dropped }, `standard error was not read for a while: ${dropped} log line${dropped === 1 ? ' was' : 's were'} dropped`);
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

/**
 * Replaces bearer credentials, URL query strings, passwords in URLs, secret-looking parameters and the secrets known
 * by value (secrets.ts, rememberSecret) in a line.
 */
export function scrubSecrets(line: string): string {
  const scrubbed = line
    .replace(BEARER, '$1[redacted]')
    .replace(URL_QUERY, '$1?[redacted]')
    .replace(URL_PASSWORD, '$1***@')
    .replace(SECRET_PARAMETER, '$1[redacted]');
  const known = knownSecrets();
  return known === null ? scrubbed : scrubbed.replace(known, '[redacted]');
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

/** Fields every line has, shown by the pretty format in its own way or not at all. */
const HEADER_FIELDS = new Set(['level', 'time', 'msg', 'name', 'pid', 'hostname']);
/** Characters that could move the cursor or recolour a terminal: what a hostile ticket might smuggle into a log. */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/g;

/**
 * A destination that turns each JSON line into `HH:MM:ss LEVEL message key=value …`: the message first, then the
 * fields the call site chose, each on the same line (an error as its message; its stack below it at debug and trace).
 */
function prettyDestination(stream: LogStream, o: { colors: boolean; stacks: boolean }): pino.DestinationStream {
  const pretty = prettyFactory({
    colorize: o.colors,
    translateTime: 'SYS:HH:MM:ss',
    // The logger's name is the same on every line (and a field called `name` would go into the header unescaped).
    ignore: 'pid,hostname,name',
    hideObject: true,
    messageFormat: (log, messageKey, _levelLabel, extras) => {
      const grey = o.colors ? extras.colors.gray : (text: string) => text;
      return prettyEntry(log, messageKey, o.stacks, grey);
    },
  });
  return { write: (line: string) => void stream.write(scrubSecrets(pretty(line))) };
}

/** The message of one log entry and its fields, for the pretty format; `grey` dims the fields. */
export function prettyEntry(log: Record<string, unknown>, messageKey: string, stacks: boolean, grey: (text: string) => string): string {
  const message = withoutControlCharacters(String(log[messageKey] ?? '')).replace(/\r?\n/g, '\n    ');
  const fields: string[] = [];
  const below: string[] = [];
  for (const [key, value] of Object.entries(log)) {
    if (HEADER_FIELDS.has(key) || key === messageKey || value === undefined) continue;
    const error = errorLike(value);
    if (error) {
      fields.push(`${key}=${fieldValue(error.code === undefined ? error.message : `${error.code}: ${error.message}`)}`);
      if (stacks && error.stack) below.push(...withoutControlCharacters(error.stack).split('\n').slice(1).map((l) => `    ${l.trim()}`));
      continue;
    }
    fields.push(`${key}=${fieldValue(value)}`);
  }
  const line = fields.length > 0 ? `${message}  ${grey(fields.join(' '))}` : message;
  return below.length > 0 ? `${line}\n${grey(below.join('\n'))}` : line;
}

/** A value on one line: bare when it is a plain word or number, quoted when it has spaces, lists joined by commas. */
function fieldValue(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? withoutControlCharacters(value) : withoutControlCharacters(JSON.stringify(value));
  if (Array.isArray(value) && value.every((v) => v === null || typeof v !== 'object')) {
    return value.length === 0 ? '[]' : value.map((v) => fieldValue(String(v))).join(',');
  }
  if (value !== null && typeof value === 'object') {
    const json = JSON.stringify(value);
    return withoutControlCharacters(json.length > 160 ? `${json.slice(0, 157)}...` : json);
  }
  return String(value);
}

function errorLike(value: unknown): { message: string; code?: unknown; stack?: string } | null {
  if (value === null || typeof value !== 'object') return null;
  const e = value as { type?: unknown; message?: unknown; code?: unknown; stack?: unknown };
  if (typeof e.message !== 'string' || (typeof e.type !== 'string' && typeof e.stack !== 'string')) return null;
  return { message: e.message, code: e.code, ...(typeof e.stack === 'string' ? { stack: e.stack } : {}) };
}

/**
 * An error text as it may be shown anywhere (a terminal, a page, JSON): no bearer token, URL query or password, no
 * control character, one line of at most 300 characters.
 */
export function safeText(text: string): string {
  const clean = withoutControlCharacters(scrubSecrets(text)).replace(/\s+/g, ' ').trim();
  return clean.length > 300 ? `${clean.slice(0, 299)}…` : clean;
}

/** `text` without characters that could move a terminal's cursor or recolour it (tabs and newlines stay). */
export function withoutControlCharacters(text: string): string {
  return text.replace(CONTROL, '');
}
