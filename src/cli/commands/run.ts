import { constants } from 'node:os';
import { systemClock } from '../../clock.ts';
import { requireApi } from '../../config/loadConfig.ts';
import { startService } from '../../daemon/service.ts';
import { removeDaemonRuntime, writeDaemonRuntime, type DaemonRuntime } from '../../db/pgliteRuntime.ts';
import { logViewsRestored } from '../../db/repos/views.ts';
import type { Logger } from '../../logger.ts';
import { outboxAfterPass } from '../../outbox/deliver.ts';
import { openConfiguredDatabase, type CommandContext } from '../context.ts';
import { takeHeldSignals } from '../heldSignals.ts';
import { BackfillProgress, numbersFromDatabase } from '../progress.ts';

/**
 * `ticket-mirror run`: migrate, then sync on schedule until SIGTERM/SIGINT, exiting 0. The first signal stops
 * gracefully — no new pass, the running one gets 5 s before its requests are aborted (whatever was not written is
 * fetched again next time) — and a second one exits at once (see stopRequested).
 */
export async function runCommand({ config, logger, terminal }: CommandContext): Promise<void> {
  requireApi(config);
  // Listening first: a signal that arrives while the database opens still stops gracefully.
  const signalled = stopRequested(logger, { startedByNpm: process.env.npm_lifecycle_event !== undefined });
  let stopBefore: Awaited<typeof signalled> | undefined;
  void signalled.then((reason) => (stopBefore = reason));
  const database = await openConfiguredDatabase(config, logger);
  // With the embedded database, where the other commands find this daemon while it holds the folder (status reads it
  // through its servers; the write commands say how to reach it).
  const runtime: DaemonRuntime | undefined =
    database.kind === 'pglite'
      ? { pid: process.pid, state: 'starting', startedAt: new Date().toISOString(), schema: database.schema, http: null, sql: null }
      : undefined;
  if (runtime) writeDaemonRuntime(config.pgliteDir, runtime);
  // On a terminal: the backfill's progress below the log, following each term's engine while this process leads.
  const progress = terminal && new BackfillProgress(terminal);
  try {
    logViewsRestored(logger, await database.migrate());
    // Asked to stop while it started (a supervisor that gave up waiting): migrated, but no pass begun.
    if (stopBefore !== undefined) logger.info(why(stopBefore), 'stopping before the first pass');
    else await serve();
  } finally {
    await progress?.stop();
    if (runtime) removeDaemonRuntime(config.pgliteDir);
    await database.close();
  }
  logger.info('stopped');

  async function serve(): Promise<void> {
    const service = await startService({
      config,
      database,
      logger,
      clock: systemClock,
      // After every pass of the active replica, and as soon as a reply row waits: deliver the reply outbox with that term's engine.
      afterPass: ({ db, engine, claimer }) => outboxAfterPass({ db, clock: systemClock, logger, claimer, client: () => engine.client }),
      onLeader: progress && (({ db, engine }) => void progress.follow(engine.events, numbersFromDatabase(db, config, systemClock))),
    });
    if (runtime) {
      const sql = service.sql ? { host: '127.0.0.1', port: service.sql.port } : null;
      writeDaemonRuntime(config.pgliteDir, { ...runtime, state: 'running', http: service.http?.url ?? null, sql });
    }
    logger.info({ backend: database.kind, schema: database.schema, sql: service.sql?.url }, 'ticket-mirror is running');
    logger.info(why(await signalled), 'stopping: letting the current pass finish');
    await service.stop();
  }
}

function why(reason: NodeJS.Signals | typeof PARENT_GONE): { reason: string } | { signal: NodeJS.Signals } {
  return reason === PARENT_GONE ? { reason } : { signal: reason };
}

/** Why `run` stops when no signal came: the npm (or its shell) that started it is gone. */
export const PARENT_GONE = 'the npm process that started it is gone';

export interface StopRequestOptions {
  /** Watch the parent process (see stopRequested). */
  startedByNpm: boolean;
  /** Where SIGTERM and SIGINT are heard (tests). @default process */
  signals?: NodeJS.EventEmitter;
  /** How a second signal ends the process (tests). @default process.exit */
  exit?: (code: number) => void;
  /** A monotonic clock in ms (tests). @default performance.now */
  now?: () => number;
  /** The signals that came before it listened (tests). @default takeHeldSignals (see heldSignals.ts) */
  heldSignals?: () => readonly NodeJS.Signals[];
}

/**
 * The same signal again within this long is the same request: Ctrl-C in a terminal reaches both npm and the daemon
 * (one process group), and npm passes it on; a supervisor that signals the whole group does the same.
 */
const SAME_SIGNAL_MS = 1_000;
/** An ignored signal is logged at most once in this long, with how many came since the last line. */
const IGNORED_LOG_MS = 60_000;
/** How often a daemon started by npm checks that its parent is still there. */
const PARENT_CHECK_MS = 1_000;

/**
 * Resolves on the first request to stop: SIGTERM, SIGINT or SIGHUP, or — when npm started the process — the end of its parent.
 * SIGUSR1 and SIGUSR2 are logged and ignored.
 * A second signal exits at once with 128 + its number, as shells do; the same signal again within SAME_SIGNAL_MS of
 * the first is the first one delivered twice and changes nothing.
 *
 * Why the parent: npm runs a script, and `npx` a command, through `sh -c`. package.json's scripts `exec` node, so
 * `npm start` signals the daemon itself; `npx ticket-mirror run` cannot, and the SIGTERM that npm passes on ends the
 * shell alone. Its child used to run on, orphaned, holding the embedded database's lock. A process that npm started
 * therefore takes the loss of its parent (it is re-parented) as the request to stop. Only then: a daemon started with
 * `nohup … &` from a shell that exits must go on running.
 */
export function stopRequested(logger: Logger, o: StopRequestOptions): Promise<NodeJS.Signals | typeof PARENT_GONE> {
  const signals = o.signals ?? process;
  const exit = o.exit ?? ((code: number) => process.exit(code));
  const now = o.now ?? (() => performance.now());
  return new Promise((resolve) => {
    let first: { signal: NodeJS.Signals | null; at: number } | undefined;
    const request = (signal: NodeJS.Signals | null) => {
      first = { signal, at: performance.now() };
      resolve(signal ?? PARENT_GONE);
      setTimeout(() => logger.info('stopping gracefully; another SIGTERM or SIGINT exits at once'), SAME_SIGNAL_MS).unref();
    };
    const onSignal = (signal: NodeJS.Signals) => {
      if (!first) return request(signal);
      if (signal === first.signal && performance.now() - first.at < SAME_SIGNAL_MS) {
        logger.debug({ signal }, 'the same signal again at once: one request to stop');
        return;
      }
      logger.warn({ signal }, 'second signal: exiting now');
      exit(128 + constants.signals[signal]);
    };
    signals.on('SIGTERM', onSignal);
    signals.on('SIGINT', onSignal);
    // The terminal it runs in closed. Left to its default, SIGHUP ended the process at once, mid-pass; and `nohup`
    // cannot shield a Node process from it (Node restores the default when it starts).
    signals.on('SIGHUP', onSignal);
    // Log-rotation tools and some supervisors send these to ask for a reopen or a reload. Left to their default they
    // ended the process at once, mid-pass (exit 138 or 140), for a request it has nothing to do about: it logs to
    // stderr, and its settings are read at start. Heard, logged, and otherwise ignored.
    // A flood of them (a loop in a rotation script) is one line a minute, not one line a signal.
    const heard = new Map<NodeJS.Signals, { loggedAt: number; since: number }>();
    const ignored = (signal: NodeJS.Signals) => {
      const at = now();
      const last = heard.get(signal);
      if (last && at - last.loggedAt < IGNORED_LOG_MS) {
        last.since++;
        return;
      }
      heard.set(signal, { loggedAt: at, since: 0 });
      logger.warn({ signal, ...(last ? { times: last.since + 1 } : {}) }, `${signal} ignored: ticket-mirror has nothing to reload or reopen (SIGTERM stops it)`);
    };
    signals.on('SIGUSR1', ignored);
    signals.on('SIGUSR2', ignored);
    // Those that came while the command line loaded, as if it had been listening then.
    for (const signal of (o.heldSignals ?? takeHeldSignals)()) onSignal(signal);
    if (o.startedByNpm) {
      const parent = process.ppid;
      const watch = setInterval(() => {
        if (process.ppid === parent) return;
        clearInterval(watch);
        if (!first) request(null);
      }, PARENT_CHECK_MS);
      watch.unref();
    }
  });
}
