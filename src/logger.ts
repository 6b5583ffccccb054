import pino, { type Logger } from 'pino';
import type { LogLevel } from './config/loadConfig.ts';

export type { Logger };

/**
 * Paths that may hold a secret. The token lives only in the API client's headers; signed attachment URLs are
 * stripped before anything is stored or logged, and `redactUrl` keeps query strings out of log lines.
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
  'url',
  '*.url',
];

export function createLogger(level: LogLevel, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { name: 'ticket-mirror' },
      redact: { paths: REDACT, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? pino.destination({ dest: 2, sync: true }),
  );
}

/** A URL without its query string and fragment, where signatures and tokens travel. */
export function redactUrl(url: string): string {
  const cut = url.search(/[?#]/);
  return cut === -1 ? url : `${url.slice(0, cut)}?[redacted]`;
}
