import { loadConfig, type Config } from '../config/loadConfig.ts';
import { openDatabase, type Database } from '../db/connect.ts';
import { createLogger, type Logger } from '../logger.ts';

/** What every command starts from: the parsed configuration and a logger. The only place that reads process.env. */
export interface CommandContext {
  config: Config;
  logger: Logger;
}

export function commandContext(): CommandContext {
  const config = loadConfig(process.env);
  return { config, logger: createLogger(config.logLevel) };
}

export function openConfiguredDatabase(config: Config): Promise<Database> {
  return openDatabase({ databaseUrl: config.databaseUrl, pgliteDir: config.pgliteDir, schema: config.dbSchema });
}

/** Opens the database, runs `fn`, and closes it whatever happens. */
export async function withDatabase<T>(config: Config, fn: (database: Database) => Promise<T>): Promise<T> {
  const database = await openConfiguredDatabase(config);
  try {
    return await fn(database);
  } finally {
    await database.close();
  }
}
