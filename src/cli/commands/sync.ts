import { systemClock } from '../../clock.ts';
import { createEngine } from '../../daemon/compose.ts';
import { deliverOutbox, newClaimer } from '../../outbox/deliver.ts';
import { ExitError } from '../exit.ts';
import { withDatabase, type CommandContext } from '../context.ts';
import { BackfillProgress, numbersFromDatabase } from '../progress.ts';

/**
 * `ticket-mirror sync`: one pass, then the reply outbox, then exit. 0 ok; 2 auth/config (thrown as such); 1 when the
 * pass ended on an error. A reply that ends `failed` is the row's outcome, recorded in reply_outbox, not the command's.
 */
export async function syncCommand({ config, logger, terminal }: CommandContext): Promise<void> {
  await withDatabase(config, async (database) => {
    await database.migrate();
    const engine = createEngine(config, database, logger, systemClock);
    // On a terminal, the pass's progress below the log; taken away before the summary is printed.
    const progress = terminal && new BackfillProgress(terminal);
    await progress?.follow(engine.events, numbersFromDatabase(database.db, config, systemClock));
    const summary = await engine.pass().finally(() => progress?.stop());
    const line = `sync: ${summary.requests} requests, lists ${summary.polls.join(', ') || 'none due'}, ${summary.detailsFetched} details, ${summary.ticketsChanged} tickets changed`;
    process.stdout.write(`${line}\n`);
    // On the embedded database this process is the only one (the folder's lock): a row another left sending is settled
    // early. On PostgreSQL nothing can prove this command gone later, so its claims keep their lease.
    const claimer = newClaimer({ embedded: database.kind === 'pglite' });
    const outbox = await deliverOutbox({ db: database.db, client: engine.client, clock: systemClock, logger, claimer });
    if (outbox.sent + outbox.failed + outbox.waiting > 0) {
      process.stdout.write(`outbox: ${outbox.sent} sent, ${outbox.failed} failed, ${outbox.waiting} waiting\n`);
    }
    if (summary.stoppedBy === 'server_error' || (summary.errors.length > 0 && summary.requests === 0)) {
      throw new ExitError(summary.errors[0] ?? 'the pass failed', 1, { cause: summary.stopError });
    }
  });
}
