/**
 * Secrets the process holds by value — the API token, each fleet account's — that logger.ts's scrubSecrets cuts
 * wherever they appear. Its patterns know only where secrets travel (a bearer header, a URL's query): a service that
 * echoed the token in an error ("bad token abc…") put it in a log line, `sync_runs.error`, the CLI's message and the
 * status page. No imports: the configuration and the logger both use it.
 */

const remembered = new Set<string>();
/** The values as one pattern, longest first; null while there is none, undefined until rebuilt after a new one. */
let pattern: RegExp | null | undefined = null;

/** Shorter values are too likely to be ordinary text (and no API token is this short). */
const MIN_SECRET_LENGTH = 8;

export function rememberSecret(value: string | undefined): void {
  if (value === undefined || value.length < MIN_SECRET_LENGTH || remembered.has(value)) return;
  remembered.add(value);
  // Built when next needed: a fleet worker remembers thousands of accounts' tokens at start, and rebuilding at each
  // one took 23 s of CPU for 5,000.
  pattern = undefined;
}

/** The pattern of every remembered secret, or null when there is none. */
export function knownSecrets(): RegExp | null {
  if (pattern === undefined) {
    const alternatives = [...remembered].sort((a, b) => b.length - a.length).map((v) => v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    pattern = new RegExp(alternatives.join('|'), 'g');
  }
  return pattern;
}
