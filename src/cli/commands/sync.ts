import { systemClock } from '../../clock.ts';
import { createEngine } from '../../daemon/compose.ts';
import { ExitError } from '../exit.ts';
import { withDatabase, type CommandContext } from '../context.ts';

/** `ticket-mirror sync`: one pass, then exit. 0 ok; 2 auth/config (thrown as such); 1 when the pass ended on an error. */
export async function syncCommand({ config, logger }: CommandContext): Promise<void> {
  await withDatabase(config, async (database) => {
    await database.migrate();
    const engine = createEngine(config, database, logger, systemClock);
    const summary = await engine.pass();
    const line = `sync: ${summary.requests} requests, lists ${summary.polls.join(', ') || 'none due'}, ${summary.detailsFetched} details, ${summary.ticketsChanged} tickets changed`;
    process.stdout.write(`${line}\n`);
    if (summary.stoppedBy === 'TransientError' || (summary.errors.length > 0 && summary.requests === 0)) {
      throw new ExitError(summary.errors[0] ?? 'the pass failed', 1);
    }
  });
}
