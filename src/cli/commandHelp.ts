import type { Command } from 'commander';

/**
 * What each command's `--help` adds after commander's own text: the environment variables it reads and its exit
 * codes, from this one table. (Every command checks every variable it is given — a bad value anywhere stops it with
 * exit 2 — but reads only these.) The README's Configuration and CLI sections say the same at length.
 */

const LOG = ['LOG_LEVEL', 'LOG_FORMAT'];
const DATABASE = ['DATABASE_URL', 'PGLITE_DIR', 'DB_SCHEMA'];
/** Written into report_settings by every migrate. */
const REPORT = ['REPORT_TIMEZONE', 'REPORT_BUSINESS_HOURS', 'REPORT_SLA_FIRST_RESPONSE', 'REPORT_SLA_RESOLUTION'];
const API = ['TICKETS_API_URL', 'TICKETS_API_TOKEN', 'TICKETS_API_TOKEN_FILE', 'API_MAX_RESPONSE_BYTES'];
const BUDGET = ['API_DAILY_LIMIT', 'API_MINUTE_LIMIT', 'API_RESERVE'];
const SERVERS = ['PGLITE_PORT', 'PGLITE_PASSWORD', 'HTTP_PORT', 'HTTP_HOST'];
/** The fleet's commands: PostgreSQL only, the control schema, and the key of the sealed tokens where one is sealed. */
const FLEET = ['DATABASE_URL', 'FLEET_SCHEMA'];
const NOT_FLEET = 'no DATABASE_URL (the embedded database cannot hold a fleet)';
const NO_ACCOUNT = 'no account of that name; the database unreachable';

const CONFIG = 'bad or missing configuration (every problem at once)';
const HELD = 'the database unreachable, or the embedded one held by another process (the daemon: see the message)';

export interface CommandHelp {
  readonly env: readonly string[];
  /** Exit code → when. */
  readonly exits: ReadonlyArray<readonly [number | string, string]>;
}

export const COMMAND_HELP: Readonly<Record<string, CommandHelp>> = {
  run: {
    env: [...API, ...DATABASE, ...REPORT, ...BUDGET, ...SERVERS, ...LOG],
    exits: [
      [0, 'stopped by SIGTERM or SIGINT'],
      [1, 'the database unreachable, or the embedded one held by another process'],
      [2, `${CONFIG}; a port in use; the database refused the login or does not exist`],
      ['128+n', 'a second signal n during the graceful stop (143 for SIGTERM)'],
    ],
  },
  sync: {
    env: [...API, ...DATABASE, ...REPORT, ...BUDGET, ...LOG],
    exits: [
      [0, 'the pass ran'],
      [1, `the pass failed (the API unreachable, server errors); ${HELD}`],
      [2, `${CONFIG}; the token refused (401, 403, an HTML login page)`],
    ],
  },
  migrate: {
    env: [...DATABASE, ...REPORT, ...LOG],
    exits: [
      [0, 'the schema is current'],
      [1, HELD],
      [2, `${CONFIG}; the database refused the login or does not exist`],
    ],
  },
  rebuild: {
    env: [...DATABASE, ...REPORT, ...LOG],
    exits: [
      [0, 'every stored payload re-derived'],
      [1, `stored payloads that could not be mapped; ${HELD}`],
      [2, CONFIG],
    ],
  },
  reply: {
    env: [...API, ...DATABASE, ...REPORT, ...BUDGET, ...LOG],
    exits: [
      [0, 'posted; the new message id is printed'],
      [1, `the ticket not found, the API unreachable, or an outcome unknown (the reply may be there); ${HELD}`],
      [2, `the message shorter than 3 characters (nothing sent); the token refused; ${CONFIG}`],
    ],
  },
  attachment: {
    env: [...API, ...DATABASE, ...REPORT, ...BUDGET, ...LOG],
    exits: [
      [0, 'the link printed, or the file saved'],
      [1, `the attachment or its ticket unknown, the API unreachable; ${HELD}`],
      [2, `${CONFIG}; the token refused`],
    ],
  },
  check: {
    env: [...API, ...DATABASE, ...BUDGET, 'PGLITE_PASSWORD', ...LOG],
    exits: [
      [0, 'every check passed'],
      [1, 'the database or the API unreachable, the database missing or not migrated, the request failed'],
      [2, `${CONFIG}; the token or the database login refused; API_MINUTE_LIMIT above the API's limit`],
    ],
  },
  status: {
    env: [...DATABASE, ...BUDGET, 'PGLITE_PORT', 'PGLITE_PASSWORD', ...LOG],
    exits: [
      [0, 'the status printed (read from the database, or from the daemon that holds the embedded one)'],
      [1, 'no database yet, or not migrated; the database unreachable; a daemon that could not be read'],
      [2, CONFIG],
    ],
  },
  report: {
    env: [...DATABASE, ...REPORT, ...LOG],
    exits: [
      [0, 'the report written'],
      [1, `no database yet, or not migrated; ${HELD}`],
      [2, `a bad date, or --out naming a folder or a file in a missing one; ${CONFIG}`],
    ],
  },
  'grant-reader': {
    env: [...DATABASE, 'FLEET_SCHEMA', ...REPORT, ...LOG],
    exits: [
      [0, "the role can log in and read (with --account: that account's schema only)"],
      [1, 'the database unreachable; with --account, no account of that name'],
      [2, `on the embedded database (PGlite has no roles); ${CONFIG}`],
    ],
  },
  accounts: {
    env: [...FLEET, 'FLEET_KEY', ...LOG],
    exits: [
      [0, 'done'],
      [1, `${NO_ACCOUNT}; a name or schema taken`],
      [2, `${NOT_FLEET}; no FLEET_KEY where a token is sealed; a bad name, URL, limit or token source; ${CONFIG}`],
    ],
  },
  'accounts add': {
    env: [...FLEET, 'FLEET_KEY', ...LOG],
    exits: [
      [0, 'added (paused with --paused)'],
      [1, 'the name, or the schema, is taken already; the database unreachable'],
      [2, `${NOT_FLEET}; FLEET_KEY not set; a bad name, --api-url, limit or schema; not exactly one token source, or an empty or unreadable token; ${CONFIG}`],
    ],
  },
  'accounts list': {
    env: [...FLEET, 'FLEET_KEY', ...LOG],
    exits: [
      [0, 'listed (with FLEET_KEY set, a token sealed with another key is marked)'],
      [1, 'the database unreachable'],
      [2, `${NOT_FLEET}; ${CONFIG}`],
    ],
  },
  'accounts pause': {
    env: [...FLEET, ...LOG],
    exits: [
      [0, 'paused, or paused already'],
      [1, NO_ACCOUNT],
      [2, `${NOT_FLEET}; a bad name; ${CONFIG}`],
    ],
  },
  'accounts resume': {
    env: [...FLEET, ...LOG],
    exits: [
      [0, 'resumed, or not paused'],
      [1, NO_ACCOUNT],
      [2, `${NOT_FLEET}; a bad name; ${CONFIG}`],
    ],
  },
  'accounts remove': {
    env: [...FLEET, ...LOG],
    exits: [
      [0, 'removed (with --drop-data, its schema dropped too)'],
      [1, `${NO_ACCOUNT}; with --drop-data, a pass of the account under way`],
      [2, `${NOT_FLEET}; --drop-data of public or of the fleet's own schema; a bad name; ${CONFIG}`],
    ],
  },
  'accounts seal': {
    env: ['FLEET_KEY', ...LOG],
    exits: [
      [0, "the sealed token printed, as \\x… for '\\x…'::bytea"],
      [2, `FLEET_KEY not set; a bad name; an empty token on stdin; ${CONFIG}`],
    ],
  },
  'accounts rekey': {
    env: [...FLEET, 'FLEET_KEY', ...LOG],
    exits: [
      [0, 'every token sealed with FLEET_KEY now'],
      [1, 'a token that opens with neither key (nothing changed); the database unreachable'],
      [2, `${NOT_FLEET}; FLEET_KEY not set; --old-key-env not naming a key; ${CONFIG}`],
    ],
  },
  fleet: {
    env: [...FLEET, 'FLEET_KEY', 'FLEET_METRICS_ACCOUNTS', 'HTTP_PORT', 'HTTP_HOST', ...LOG],
    exits: [
      [0, 'done (run: stopped by a signal)'],
      [1, 'the database unreachable; status: no fleet in FLEET_SCHEMA yet'],
      [2, `${NOT_FLEET}; run: FLEET_KEY not set, HTTP_PORT in use; ${CONFIG}`],
    ],
  },
  'fleet run': {
    env: [...FLEET, 'FLEET_KEY', 'FLEET_METRICS_ACCOUNTS', 'API_MAX_RESPONSE_BYTES', 'HTTP_PORT', 'HTTP_HOST', ...LOG],
    exits: [
      [0, 'stopped by SIGTERM or SIGINT (its passes handed back)'],
      [1, 'the database unreachable'],
      [2, `${NOT_FLEET}; FLEET_KEY not set; HTTP_PORT in use; ${CONFIG}`],
      ['128+n', 'a second signal n during the graceful stop (143 for SIGTERM)'],
    ],
  },
  'fleet status': {
    env: [...FLEET, ...LOG],
    exits: [
      [0, 'printed (nothing sent to any API, nothing written)'],
      [1, 'no fleet in FLEET_SCHEMA yet; the database unreachable'],
      [2, `${NOT_FLEET}; ${CONFIG}`],
    ],
  },
  simulator: {
    env: [],
    exits: [
      [0, 'stopped by SIGTERM or SIGINT'],
      [2, 'the port in use'],
    ],
  },
  demo: {
    env: ['PGLITE_DIR', ...REPORT, ...BUDGET, ...SERVERS, ...LOG],
    exits: [
      [0, 'stopped by SIGTERM or SIGINT'],
      [2, `${CONFIG}; a port in use`],
    ],
  },
};

/** The text `--help` of `name` shows after commander's; null for a command the table does not know. */
export function helpText(name: string): string | null {
  const help = Object.hasOwn(COMMAND_HELP, name) ? COMMAND_HELP[name] : undefined;
  if (!help) return null;
  const env = help.env.length
    ? `Environment variables it reads (also from a .env file):\n${wrap(help.env.join(', '), '  ')}\n`
    : 'Environment: none (only its options).\n';
  const width = Math.max(...help.exits.map(([code]) => String(code).length));
  const hanging = ' '.repeat(width + 4);
  const exits = help.exits.map(([code, when]) => `  ${String(code).padEnd(width)}  ${wrap(when, hanging).trimStart()}`).join('\n');
  return `\n${env}\nExit codes:\n${exits}\n`;
}

/** Adds the table's text to the `--help` of each command it knows, and of each subcommand as `parent sub`. */
export function addCommandHelp(program: Command): void {
  for (const command of program.commands) {
    const text = helpText(command.name());
    if (text) command.addHelpText('after', text);
    for (const sub of command.commands) {
      const subText = helpText(`${command.name()} ${sub.name()}`);
      if (subText) sub.addHelpText('after', subText);
    }
  }
}

/** `text` in lines of at most `width` columns (as commander wraps its own), each starting with `indent`. */
function wrap(text: string, indent: string, width = 80): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && indent.length + line.length + 1 + word.length > width) {
      lines.push(indent + line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(indent + line);
  return lines.join('\n');
}
