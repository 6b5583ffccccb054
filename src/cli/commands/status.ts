import { mirrorStatus, formatStatus } from '../../sync/status.ts';
import { withDatabase, type CommandContext } from '../context.ts';
import { sqlAccess } from '../sqlAccess.ts';

/** `ticket-mirror status`: read from the database alone; no request is made. */
export async function statusCommand({ config }: CommandContext, options: { json?: boolean }): Promise<void> {
  await withDatabase(config, async (database) => {
    await database.migrate();
    const status = await mirrorStatus(database.db, config, Date.now());
    // With the embedded database: how to query it over SQL while `run` serves it (where the password is, not what).
    const sql = sqlAccess(config);
    if (options.json) process.stdout.write(`${JSON.stringify(sql ? { ...status, sql } : status, null, 2)}\n`);
    else process.stdout.write(formatStatus(status) + (sql ? `sql       ${sql.psql}   (while \`run\` serves the embedded database)\n` : ''));
  });
}
