import { loadConfig, type Config } from '../config/loadConfig.ts';
import { openDatabase, type Database } from '../db/connect.ts';
import { UNPREPARED_WARNING } from '../db/preparedStatements.ts';
import { chooseLogFormat, createCliLogger, type LogStream, type Logger } from '../logger.ts';
import { TerminalLine, type TerminalStream } from './terminalLine.ts';

/** What every command starts from: the configuration parsed from process.env, and a logger. */
export interface CommandContext {
  config: Config;
  logger: Logger;
  /** The terminal's bottom line, for a progress display: only when the log is pretty and stderr is a terminal. */
  terminal?: TerminalLine | undefined;
}

/** `requireApi`: the command needs TICKETS_API_URL and a token, reported along with every other problem. */
export function commandContext(options: { requireApi?: boolean } = {}): CommandContext {
  const config = loadConfig(process.env, options);
  const output = cliOutput(config, process.stderr);
  // A progress line left on screen would run into the shell's prompt.
  if (output.terminal) process.once('exit', () => output.terminal?.clear());
  return { config, ...output };
}

/**
 * The logger and the terminal line of a command, both on `stream` (stderr): pretty lines on a terminal, JSON
 * otherwise, unless LOG_FORMAT says; a progress line only when the lines are pretty and go to a terminal — log lines
 * then pass through the terminal line, which keeps the progress below them.
 */
export function cliOutput(
  config: Pick<Config, 'logLevel' | 'logFormat'>,
  stream: LogStream & TerminalStream,
): { logger: Logger; terminal: TerminalLine | undefined } {
  const format = chooseLogFormat(config.logFormat, stream);
  if (format === 'json' || !stream.isTTY) return { logger: createCliLogger(config.logLevel, format, stream), terminal: undefined };
  const terminal = new TerminalLine(stream);
  const logger = createCliLogger(config.logLevel, format, {
    write: (chunk) => terminal.write(chunk),
    isTTY: true,
    hasColors: () => stream.hasColors?.() ?? false,
  });
  return { logger, terminal };
}

/**
 * The configured database; its migrate also writes the REPORT_* settings into report_settings. Given a logger, it says
 * when it creates the embedded database (a first start is otherwise silent while initdb runs).
 */
export function openConfiguredDatabase(config: Config, logger?: Logger): Promise<Database> {
  return openDatabase({
    databaseUrl: config.databaseUrl,
    pgliteDir: config.pgliteDir,
    schema: config.dbSchema,
    report: config.report,
    onCreate: logger && ((dir) => logger.info({ dir }, 'creating the embedded database (first start; initdb takes a few seconds)')),
    onUnprepared: logger && ((error) => logger.warn({ err: error }, UNPREPARED_WARNING)),
  });
}

/** Opens the database, runs `fn`, and closes it whatever happens. */
export async function withDatabase<T>(config: Config, fn: (database: Database) => Promise<T>, logger?: Logger): Promise<T> {
  const database = await openConfiguredDatabase(config, logger);
  try {
    return await fn(database);
  } finally {
    await database.close();
  }
}
