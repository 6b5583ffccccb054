import { mirrorStatus, formatStatus } from '../../sync/status.ts';
import { withDatabase, type CommandContext } from '../context.ts';

/** `ticket-mirror status`: read from the database alone; no request is made. */
export async function statusCommand({ config }: CommandContext, options: { json?: boolean }): Promise<void> {
  await withDatabase(config, async (database) => {
    await database.migrate();
    const status = await mirrorStatus(database.db, config, Date.now());
    process.stdout.write(options.json ? `${JSON.stringify(status, null, 2)}\n` : formatStatus(status));
  });
}
