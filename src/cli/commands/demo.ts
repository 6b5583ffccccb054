import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadConfig } from '../../config/loadConfig.ts';
import { lockHolder } from '../../db/pgliteLock.ts';
import { createActivityDriver, DEFAULT_RATES_PER_DAY, startSimulator } from '../../simulator/index.ts';
import type { CommandContext } from '../context.ts';
import { EXIT, ExitError } from '../exit.ts';
import { sqlAccess } from '../sqlAccess.ts';
import { runCommand } from './run.ts';

/**
 * `ticket-mirror demo`: the simulator, the daemon and an embedded database in one process, for a first look without
 * an account. The data folder is `data/demo` beside PGLITE_DIR, wiped at each start so the mirror is seen filling up;
 * the simulator's limits are ten times the real ones so the backfill finishes in minutes, and its tickets keep
 * changing (a working day's activity every few minutes) so the mirror is seen following them.
 */
const SPEED = 120;
const LIMIT_FACTOR = 10;

export async function demoCommand(context: CommandContext): Promise<void> {
  const { config, logger } = context;
  const dailyLimit = config.dailyLimit * LIMIT_FACTOR;
  const minuteLimit = config.minuteLimit * LIMIT_FACTOR;
  const dataDir = resolve(config.pgliteDir, '..', 'demo');
  freshDemoFolder(dataDir);
  const sim = await startSimulator({ seed: 42, openTickets: 40, resolvedTickets: 80, dailyLimit, minuteLimit });
  const demoConfig = loadConfig(
    {
      ...Object.fromEntries(Object.entries(process.env)),
      TICKETS_API_URL: sim.url,
      TICKETS_API_TOKEN: sim.token,
      TICKETS_API_TOKEN_FILE: '',
      DATABASE_URL: '',
      PGLITE_DIR: dataDir,
      API_DAILY_LIMIT: String(dailyLimit),
      API_MINUTE_LIMIT: String(minuteLimit),
    },
    { dotenv: false },
  );
  const driver = createActivityDriver(sim.model, {
    seed: 42,
    // Around the clock, so the demo is lively whatever the hour.
    ratesPerDay: Object.fromEntries(Object.entries(DEFAULT_RATES_PER_DAY).map(([op, n]) => [op, (n / 40) * SPEED])),
  });
  let last = Date.now();
  const activity = setInterval(() => {
    const now = Date.now();
    const applied = driver.step(last, now);
    last = now;
    if (applied.length > 0) logger.debug({ changes: applied.map((a) => `${a.op} ${a.ticketId}`) }, 'simulator activity');
  }, 5_000);
  activity.unref();

  const access = sqlAccess(demoConfig);
  const lines = [
    'ticket-mirror demo',
    `  fake helpdesk API   ${sim.url}  (token ${sim.token})`,
    `  embedded database   ${dataDir}`,
    access ? `  SQL                 ${access.psql} -c 'select status, count(*) from tickets group by 1'` : null,
    demoConfig.httpPort ? `  status page         http://${demoConfig.httpHost}:${demoConfig.httpPort}/status   (metrics: /metrics)` : null,
    '  watch the log below: the backfill fills the mirror, then each pass follows new tickets, replies and resolutions.',
    '  Ctrl-C stops everything.',
  ];
  process.stdout.write(`${lines.filter(Boolean).join('\n')}\n\n`);
  try {
    await runCommand({ ...context, config: demoConfig });
  } finally {
    clearInterval(activity);
    await sim.close();
  }
}

/** The file that marks a folder as the demo's own, which its next start may wipe. */
export const DEMO_MARK = 'ticket-mirror-demo';

/**
 * Empties the demo's folder for a fresh start — only when it is the demo's (marked so, empty, or absent) and no
 * process holds it. It is `demo` beside PGLITE_DIR: a folder of the user's that happened to be there was wiped with
 * whatever it held, and a second demo wiped the first one's live database and then shared the folder with it.
 */
function freshDemoFolder(dir: string): void {
  const holder = lockHolder(dir);
  if (holder !== null) {
    throw new ExitError(`another demo (pid ${holder}) is running in ${dir}: stop it first, or start this one with PGLITE_DIR elsewhere`, EXIT.failure);
  }
  if (existsSync(dir) && !existsSync(join(dir, DEMO_MARK)) && readdirSync(dir).length > 0) {
    throw new ExitError(
      `${dir} is not a folder the demo made, and the demo empties its folder at each start: move it, or set PGLITE_DIR so that the demo's folder (\`demo\` beside it) is free`,
      EXIT.failure,
    );
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, DEMO_MARK), 'This folder is ticket-mirror demo\'s: each `ticket-mirror demo` empties it.\n');
}
