import { ApiClient, type LedgerEntry, type LedgerStart, type SettleLedger } from '../../api/client.ts';
import { LIST_PATHS } from '../../api/endpoints.ts';
import { systemClock } from '../../clock.ts';
import { configWarnings, loadConfig, maskSecrets, type Config } from '../../config/loadConfig.ts';
import type { Database, Db } from '../../db/connect.ts';
import { migrationState, notMigrated } from '../../db/migrationState.ts';
import { dropRequest, loadSamples, openRequest, settleRequest } from '../../db/repos/ledger.ts';
import { AuthError, ConfigError, RateLimitedError, safeErrorMessage } from '../../errors.ts';
import { BudgetGate } from '../../sync/gate.ts';
import { DAY_MS } from '../../time.ts';
import { EXIT, ExitError } from '../exit.ts';
import { explainFailure } from '../explainFailure.ts';
import { databasePlace, holderName, openMirror, openThroughSocket } from '../mirrorAccess.ts';

/**
 * `ticket-mirror check`: is this set-up ready to run? One line per check — the configuration, the database (reachable
 * and migrated; nothing is created or migrated), the API (reachable) and the token (accepted, and the minute limit the
 * API announces in `x-ratelimit-limit` against API_MINUTE_LIMIT) — each ✓ or ✗, a ✗ followed by what to do.
 *
 * At most one API request: GET /api/v1/tickets/self (the tickets assigned to the token's user, usually the shortest
 * list), not retried, within the budget, and recorded in api_requests when the database can be written (directly, or
 * through the SQL socket of the daemon that holds the embedded database). Exit 0 when every check passed; 2 when a
 * setting must change (configuration, a refused token or login, a limit set above the API's); 1 otherwise (the
 * database or the API unreachable, a database not migrated, a request that failed).
 */

type Verdict = 'ok' | 'failure' | 'usage';

interface Report {
  lines: string[];
  worst: Verdict;
}

const MARK: Record<Verdict, string> = { ok: '✓', failure: '✗', usage: '✗' };
const TIMEOUT_MS = 15_000;

export async function checkCommand(env: Record<string, string | undefined> = process.env): Promise<void> {
  const report: Report = { lines: [], worst: 'ok' };
  const say = (verdict: Verdict, what: string, text: string, ...fix: string[]) => {
    report.lines.push(`${MARK[verdict]} ${what.padEnd(13)} ${text}`, ...fix.map((line) => `  ${line.trimStart()}`));
    if (verdict === 'usage' || (verdict === 'failure' && report.worst === 'ok')) report.worst = verdict;
  };
  const note = (text: string) => report.lines.push(`  ${text}`);

  try {
    const config = configuration(env, say, note);
    if (config) {
      const db = await database(config, say);
      try {
        if (config.apiUrl && config.apiToken) await api(config, db.writable, say, note);
      } finally {
        await db.close();
      }
    }
  } finally {
    process.stdout.write(`${report.lines.join('\n')}\n`);
  }
  if (report.worst !== 'ok') throw new ExitError('', report.worst === 'usage' ? EXIT.usage : EXIT.failure);
}

type Say = (verdict: Verdict, what: string, text: string, ...fix: string[]) => void;

/** The configuration: every problem (exit 2); without them, what the other checks will use. */
function configuration(env: Record<string, string | undefined>, say: Say, note: (text: string) => void): Config | null {
  let config: Config;
  try {
    config = loadConfig(env, { requireApi: true });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const problem of error.problems) say('usage', 'configuration', problem);
    // The database can still be checked when only the API settings are missing.
    try {
      return loadConfig(env);
    } catch {
      return null;
    }
  }
  const token = env.TICKETS_API_TOKEN_FILE?.trim() ? 'TICKETS_API_TOKEN_FILE' : 'TICKETS_API_TOKEN';
  const where = config.databaseUrl ? `DATABASE_URL=${maskSecrets(config.databaseUrl)}` : `PGLITE_DIR=${config.pgliteDir}`;
  say('ok', 'configuration', `TICKETS_API_URL=${maskSecrets(config.apiUrl!)}, the token from ${token}, ${where}`);
  for (const line of [...config.notes, ...configWarnings(config)]) note(line);
  return config;
}

interface Opened {
  /** Where the request can be recorded; null when the database cannot be written from here. */
  writable: Db | null;
  close(): Promise<void>;
}

/** The database: reachable and migrated, read without creating or migrating anything. */
async function database(config: Config, say: Say): Promise<Opened> {
  const none: Opened = { writable: null, close: async () => {} };
  let handle: Database | null = null;
  const opened = (database: Database): Opened => ({ writable: database.db, close: () => database.close() });
  try {
    const place = await openMirror(config);
    if (place.kind === 'absent') {
      say('failure', 'database', `there is no embedded database in ${place.dir} yet (PGLITE_DIR)`, '`ticket-mirror migrate` creates and migrates it (so does `run` when it starts).');
      return none;
    }
    if (place.kind === 'held') {
      const { daemon } = place.holder;
      if (!daemon || daemon.state !== 'running') {
        say('failure', 'database', `${holderName(place.holder)} holds the embedded database in ${place.dir}`, 'Try again in a moment: it is a command at work, or a daemon that is starting.');
        return none;
      }
      handle = await openThroughSocket(config, place.dir, daemon).catch(() => null);
      if (!handle) {
        const reached = daemon.http ? await answers(`${daemon.http}/readyz`) : false;
        say(
          reached ? 'ok' : 'failure',
          'database',
          `the embedded database in ${place.dir}, held by ticket-mirror run (pid ${daemon.pid}), which migrated it when it started` +
            (reached ? `; its HTTP server answers (${daemon.http})` : ': neither its HTTP server nor its SQL socket answers'),
          ...(reached ? [] : [`Is it stuck? Its log says; stop it (kill ${daemon.pid}) and start it again.`]),
        );
        return none;
      }
    } else {
      handle = place.database;
    }
    const state = await migrationState(handle.db, handle.schema);
    const problem = notMigrated(state);
    const through = place.kind === 'held' ? ` (through the SQL socket of ticket-mirror run, pid ${place.holder.pid})` : '';
    if (problem) {
      say('failure', 'database', `${databasePlace(config)}${through} is ${problem}`, '`ticket-mirror migrate` applies the migrations (so does `run` when it starts).');
      await handle.close();
      return none;
    }
    say('ok', 'database', `${databasePlace(config)}${through}: reachable, migrated (${state.known} migrations)`);
    return opened(handle);
  } catch (error) {
    await handle?.close().catch(() => {});
    const explained = explainFailure(error, config);
    if (explained) say(explained.code === EXIT.usage ? 'usage' : 'failure', 'database', explained.lines[0]!, ...explained.lines.slice(1));
    else say('failure', 'database', `${databasePlace(config)}: ${safeErrorMessage(error)}`);
    return none;
  }
}

/** The API and the token, with one request at most. */
async function api(config: Config, db: Db | null, say: Say, note: (text: string) => void): Promise<void> {
  const limits = { daily: config.dailyLimit, minute: config.minuteLimit, reserve: config.reserve };
  const samples = db ? await loadSamples(db, systemClock.now() - DAY_MS, { minute: config.minuteLimit, daily: config.dailyLimit }) : [];
  const gate = new BudgetGate({ limits, clock: systemClock, samples, realTimeInterval: false, concurrency: 1 });
  let entry: LedgerEntry | undefined;
  const record = async (start: LedgerStart): Promise<SettleLedger> => {
    const id = db ? await openRequest(db, start) : undefined;
    return async (settled) => {
      entry = settled;
      if (id === undefined || !db) return;
      if (settled.notSent !== undefined) await dropRequest(db, id);
      else await settleRequest(db, id, settled);
    };
  };
  const client = new ApiClient({
    baseUrl: config.apiUrl!,
    token: config.apiToken!,
    clock: systemClock,
    gate,
    record,
    attempts: 1,
    timeoutMs: TIMEOUT_MS,
    maxResponseBytes: config.maxResponseBytes,
  });
  const path = LIST_PATHS.self;
  const spent = () =>
    entry === undefined || entry.notSent !== undefined
      ? 'no request reached it'
      : `1 request, ${db ? 'recorded in api_requests' : 'not recorded: the database cannot be written from here'}`;
  try {
    const response = await client.list('self');
    say('ok', 'API', `reachable: GET ${path} answered HTTP ${response.status} in ${entry?.durationMs ?? '?'} ms (${spent()})`);
    say('ok', 'token', `accepted: ${response.body.length} tickets assigned to its user`);
    minuteLimit(config, entry?.ratelimitLimit ?? null, say, note);
  } catch (error) {
    if (error instanceof RateLimitedError && entry === undefined) {
      say('failure', 'API', `not asked: ${error.message} (until ${new Date(error.retryAt).toISOString()})`, 'Try again then; `ticket-mirror status` shows the budget.');
      return;
    }
    const answered = entry !== undefined && entry.status !== null;
    if (error instanceof AuthError && (error.status === 401 || error.status === 403)) {
      say('ok', 'API', `reachable: GET ${path} answered HTTP ${error.status} (${spent()})`);
    }
    const explained = explainFailure(error, config);
    const what = error instanceof AuthError && (error.status === 401 || error.status === 403) ? 'token' : 'API';
    const verdict: Verdict = explained?.code === EXIT.usage || error instanceof AuthError ? 'usage' : 'failure';
    if (explained) say(verdict, what, explained.lines[0]!, ...explained.lines.slice(1), `(${spent()})`);
    else say(verdict, what, `${answered ? `GET ${path} answered HTTP ${entry!.status}: ` : ''}${safeErrorMessage(error)} (${spent()})`);
  }
}

/** The minute limit the API announced against API_MINUTE_LIMIT: above it, the mirror would meet 429s (exit 2). */
function minuteLimit(config: Config, announced: number | null, say: Say, note: (text: string) => void): void {
  const configured = `API_MINUTE_LIMIT=${config.minuteLimit}`;
  if (announced === null) {
    say('ok', 'minute limit', `the API announced none (no x-ratelimit-limit header): ${configured} is kept`);
  } else if (announced < config.minuteLimit) {
    say('usage', 'minute limit', `the API allows ${announced} requests a minute (x-ratelimit-limit), fewer than ${configured}`, `Set API_MINUTE_LIMIT=${announced}, or the mirror will meet 429 answers.`);
  } else {
    say('ok', 'minute limit', `the API allows ${announced} requests a minute (x-ratelimit-limit); ${configured}`);
    if (announced > config.minuteLimit) note(`API_MINUTE_LIMIT could be raised to ${announced}, if no other client of the token needs the difference.`);
  }
}

async function answers(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    await response.body?.cancel();
    return true;
  } catch {
    return false;
  }
}
