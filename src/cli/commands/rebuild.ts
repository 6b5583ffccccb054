import { logViewsRestored } from '../../db/repos/views.ts';
import { rebuildFromRaw } from '../../sync/rebuild.ts';
import { withDatabase, type CommandContext } from '../context.ts';
import { ExitError } from '../exit.ts';

/** `ticket-mirror rebuild`: re-derive the tables from the stored payloads; no request is made. */
export async function rebuildCommand({ config, logger }: CommandContext): Promise<void> {
  await withDatabase(config, async (database) => {
    logViewsRestored(logger, await database.migrate());
    const result = await rebuildFromRaw(database.db);
    for (const f of result.failed) logger.warn({ ticket: f.id, err: f.error }, 'stored payload cannot be mapped');
    process.stdout.write(`rebuild: ${result.tickets} tickets re-derived from stored payloads, ${result.failed.length} failed, 0 requests\n`);
    if (result.failed.length > 0) throw new ExitError(`${result.failed.length} stored payloads could not be mapped`, 1);
  });
}
