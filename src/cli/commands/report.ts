import { lstatSync, readlinkSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Config } from '../../config/loadConfig.ts';
import type { Database } from '../../db/connect.ts';
import { migrationState, notMigrated } from '../../db/migrationState.ts';
import { dateProblem, localDate, parsePeriod, PeriodError, type ReportPeriod } from '../../report/period.ts';
import { loadReportData, reportTimeZone } from '../../report/reportData.ts';
import { renderReportPage } from '../../report/reportPage.ts';
import type { CommandContext } from '../context.ts';
import { EXIT, ExitError } from '../exit.ts';
import { databasePlace, holderName, openMirror } from '../mirrorAccess.ts';

export interface ReportOptions {
  /** The HTML file to write; `-` writes to stdout. */
  out: string;
  from?: string;
  to?: string;
}

const NAMES = { from: '--from', to: '--to' };

/**
 * `ticket-mirror report --out FILE.html [--from DATE] [--to DATE]`: the page `/report` serves, for teams without a BI
 * tool, as one self-contained file to open or mail. It only reads: no request, nothing created or migrated (so
 * report_settings keep what the daemon's migrate wrote, and the days are the views'). A bad date is exit 2 before the
 * database is opened; the file appears whole or not at all (written beside, then renamed). While `run` holds the
 * embedded database, the command is refused before it starts (cli/whileHeld.ts) with the daemon's /report to use.
 */
export async function reportCommand({ config, logger }: CommandContext, options: ReportOptions): Promise<void> {
  for (const name of ['from', 'to'] as const) {
    const value = options[name];
    const problem = value === undefined || value === '' ? null : dateProblem(value, NAMES[name], localDate(Date.now(), config.report.timeZone));
    if (problem !== null) throw new ExitError(problem, EXIT.usage);
  }
  const out = options.out === '-' ? null : outTarget(options.out);
  const database = await openForReading(config);
  let html: string;
  let period: ReportPeriod;
  let timeZone: string;
  try {
    const now = Date.now();
    timeZone = await reportTimeZone(database.db);
    try {
      period = parsePeriod(options, localDate(now, timeZone), NAMES);
    } catch (error) {
      if (error instanceof PeriodError) throw new ExitError(error.message, EXIT.usage);
      throw error;
    }
    html = renderReportPage(await loadReportData(database.db, period, timeZone, now));
  } finally {
    await database.close();
  }
  if (options.out === '-') {
    process.stdout.write(html);
    return;
  }
  if (out!.direct) {
    writeFileSync(out!.path, html);
  } else {
    const partial = `${out!.path}.${process.pid}.partial`;
    try {
      writeFileSync(partial, html);
      renameSync(partial, out!.path);
    } catch (error) {
      rmSync(partial, { force: true });
      throw error;
    }
  }
  logger.info({ out: options.out, from: period.from, to: period.to, timeZone }, 'report written');
  process.stdout.write(`${options.out}: support report ${period.from} – ${period.to}, days in ${timeZone}\n`);
}

/**
 * Where `--out` writes, checked before anything is read. A regular file (new, or replaced) appears whole or not at all:
 * written beside, then renamed over it. Anything else that exists — a device, a pipe (`/dev/stdout`, a FIFO) — is
 * written into as it is: renamed over, it was replaced by a plain file (run as root, `--out /dev/full` became one).
 * A symbolic link is followed, not replaced. A folder, or a file in a folder that does not exist, is refused by name.
 */
function outTarget(out: string): { path: string; direct: boolean } {
  let path = out;
  try {
    path = realpathSync(out);
  } catch {
    // Not there yet: written as named; a link to a file not there yet: that file.
    if (lstatSync(out, { throwIfNoEntry: false })?.isSymbolicLink()) path = resolve(dirname(out), readlinkSync(out));
  }
  const stat = statSync(path, { throwIfNoEntry: false });
  if (stat?.isDirectory()) throw new ExitError(`--out ${out} is a folder: name a file in it`, EXIT.usage);
  if (stat && !stat.isFile()) return { path, direct: true };
  const folder = dirname(resolve(path));
  if (!statSync(folder, { throwIfNoEntry: false })?.isDirectory()) throw new ExitError(`--out ${out}: there is no folder ${folder}`, EXIT.usage);
  return { path, direct: false };
}

/** The mirror's database, opened without creating or migrating anything. */
async function openForReading(config: Config): Promise<Database> {
  const place = await openMirror(config);
  if (place.kind === 'absent') {
    throw new ExitError(`there is no embedded database in ${place.dir} yet (PGLITE_DIR): \`ticket-mirror run\` creates and fills it`, EXIT.failure);
  }
  if (place.kind === 'held') {
    throw new ExitError(`${holderName(place.holder)} holds the embedded database in ${place.dir}: try again in a moment`, EXIT.failure);
  }
  const problem = notMigrated(await migrationState(place.database.db, place.database.schema).catch(async (error: unknown) => {
    await place.database.close();
    throw error;
  }));
  if (problem) {
    await place.database.close();
    throw new ExitError(`${databasePlace(config)} is ${problem}: \`ticket-mirror migrate\` applies the migrations (so does \`run\` when it starts)`, EXIT.failure);
  }
  return place.database;
}
