import { FLEET_KEY_HINT } from '../config/fleetKey.ts';
import type { Config } from '../config/loadConfig.ts';
import { openFleetDatabase, type FleetDatabase } from '../db/fleet.ts';
import { ConfigError } from '../errors.ts';
import { parseFleetKey, type FleetKey } from '../fleet/tokenSeal.ts';

/**
 * What the fleet's commands (`accounts …`, `fleet …`, `grant-reader --account`) start from: PostgreSQL (the embedded
 * database cannot be a fleet's: one process holds it), the control schema migrated, and FLEET_KEY where a token is
 * sealed or opened. Each refusal is one line, exit 2.
 */

/** The URL of the fleet's PostgreSQL, or a ConfigError naming `command`. */
export function requireFleetDatabaseUrl(config: Pick<Config, 'databaseUrl'>, command: string): string {
  if (config.databaseUrl) return config.databaseUrl;
  throw new ConfigError([databaseUrlMissing(command)]);
}

/** FLEET_KEY as a key (loadConfig checked its form), or a ConfigError naming `command`, with the hint. */
export function requireFleetKey(config: Pick<Config, 'fleetKey'>, command: string): FleetKey {
  if (!config.fleetKey) throw new ConfigError([fleetKeyMissing(command)]);
  return parseFleetKey(config.fleetKey);
}

/** Both at once, for a command that seals a token into the database: every missing one reported together. */
export function requireFleetDatabaseAndKey(config: Pick<Config, 'databaseUrl' | 'fleetKey'>, command: string): { databaseUrl: string; key: FleetKey } {
  const problems = [...(config.databaseUrl ? [] : [databaseUrlMissing(command)]), ...(config.fleetKey ? [] : [fleetKeyMissing(command)])];
  if (problems.length > 0) throw new ConfigError(problems);
  return { databaseUrl: config.databaseUrl!, key: parseFleetKey(config.fleetKey) };
}

const databaseUrlMissing = (command: string) =>
  `${command} needs DATABASE_URL (PostgreSQL): a fleet is workers on many machines around one database, which the embedded one cannot be`;
const fleetKeyMissing = (command: string) => `${command} needs FLEET_KEY, which is not set: ${FLEET_KEY_HINT}`;

/** Opens the control schema (FLEET_SCHEMA), migrates it, runs `fn`, and closes it whatever happens. */
export async function withFleetDatabase<T>(config: Config, command: string, fn: (fleet: FleetDatabase) => Promise<T>): Promise<T> {
  const fleet = await openFleetDatabase({ databaseUrl: requireFleetDatabaseUrl(config, command), schema: config.fleetSchema, poolSize: 1 });
  try {
    await fleet.migrate();
    return await fn(fleet);
  } finally {
    await fleet.close();
  }
}
