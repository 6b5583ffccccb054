import { systemClock } from '../../clock.ts';
import { logViewsRestored } from '../../db/repos/views.ts';
import { ThrottledError } from '../../errors.ts';
import { isoMicros } from '../../time.ts';
import { createEngine } from '../../daemon/compose.ts';
import { deliverOutbox, newClaimer } from '../../outbox/deliver.ts';
import { EXIT, ExitError } from '../exit.ts';
import { withDatabase, type CommandContext } from '../context.ts';
import { BackfillProgress, numbersFromDatabase } from '../progress.ts';

/**
 * `ticket-mirror sync`: one pass, then the reply outbox, then exit. 0 ok; 2 auth/config (thrown as such); 1 when the
 * pass ended on an error, the service answered 429 (to this pass, or to one before it whose wait is not over), or a
 * list's answer could not be used. A ticket whose detail could not be stored is that ticket's trouble (backed off,
 * logged), not the command's; so is a reply that ends `failed`, recorded in reply_outbox.
 */
export async function syncCommand({ config, logger, terminal }: CommandContext): Promise<void> {
  await withDatabase(config, async (database) => {
    logViewsRestored(logger, await database.migrate());
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
      throw new ExitError(summary.errors[0] ?? 'the pass failed', EXIT.failure, { cause: summary.stopError });
    }
    // Not an ok sync either: the service said 429 (now, or to a process before this one, which holds this one back),
    // or a list's answer could not be used — the mirror did not see what that list shows.
    const throttledUntil = engine.gate.throttledUntil() ?? (summary.stopError instanceof ThrottledError ? summary.stopError.retryAt : null);
    if (throttledUntil !== null) {
      const until = isoMicros(throttledUntil).slice(0, 19).replace('T', ' ');
      throw new ExitError(`the API answered 429 (too many requests): no request before ${until} UTC, and the pass stopped there`, EXIT.failure);
    }
    if (summary.failedLists.length > 0) {
      const [first] = summary.failedLists;
      const lists = summary.failedLists.length === 1 ? 'a list' : `${summary.failedLists.length} lists`;
      throw new ExitError(`${lists} could not be read: ${summary.errors.find((e) => e.startsWith(`${first} list: `))}`, EXIT.failure);
    }
  });
}
