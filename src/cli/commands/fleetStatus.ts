import { openFleetDatabase } from '../../db/fleet.ts';
import { fleetExists } from '../../db/repos/fleetStatus.ts';
import { ConfigError } from '../../errors.ts';
import { loadFleetStatus } from '../../fleet/fleetStatus.ts';
import { formatFleetStatus } from '../../fleet/formatFleetStatus.ts';
import { jobsSchemaOf } from '../../fleet/jobQueue.ts';
import { queueReader } from '../../fleet/queueStatus.ts';
import type { CommandContext } from '../context.ts';
import { EXIT, ExitError } from '../exit.ts';

/**
 * `ticket-mirror fleet status [--json]`: every account's state, last pass, lag, budget, backfill and last error, the
 * totals, and pg-boss's queues — from PostgreSQL alone: no request to any API, nothing created or migrated, no lock
 * taken, so it runs beside the workers. Exit 1 when there is no fleet in FLEET_SCHEMA yet.
 */
export async function fleetStatusCommand({ config }: CommandContext, options: { json?: boolean }): Promise<void> {
  if (!config.databaseUrl) {
    throw new ConfigError(['fleet status needs DATABASE_URL: a fleet lives in PostgreSQL (the embedded database serves one process only)']);
  }
  const fleet = await openFleetDatabase({ databaseUrl: config.databaseUrl, schema: config.fleetSchema, poolSize: 2 });
  try {
    if (!(await fleetExists(fleet.db))) {
      throw new ExitError(`there is no fleet in schema ${fleet.schema} yet (FLEET_SCHEMA): \`ticket-mirror accounts add\` creates it`, EXIT.failure);
    }
    const jobsSchema = jobsSchemaOf(fleet.schema);
    const status = await loadFleetStatus({
      db: fleet.db,
      schema: fleet.schema,
      jobsSchema,
      queues: queueReader(fleet.db, jobsSchema),
      now: Date.now(),
    });
    // A thousand lines are often cut short (`fleet status | head`): a closed pipe ends the output, not in a crash
    // (cli/processGuards.ts).
    process.stdout.write(options.json ? `${JSON.stringify(status, null, 2)}\n` : formatFleetStatus(status));
  } finally {
    await fleet.close();
  }
}
