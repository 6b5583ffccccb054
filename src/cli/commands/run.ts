import { constants } from 'node:os';
import { systemClock } from '../../clock.ts';
import { requireApi } from '../../config/loadConfig.ts';
import { startService } from '../../daemon/service.ts';
import type { Logger } from '../../logger.ts';
import { outboxAfterPass } from '../../outbox/deliver.ts';
import { openConfiguredDatabase, type CommandContext } from '../context.ts';

/**
 * `ticket-mirror run`: migrate, then sync on schedule until SIGTERM/SIGINT, exiting 0. The first signal stops
 * gracefully — no new pass, the running one gets 5 s before its requests are aborted (whatever was not written is
 * fetched again next time) — and a second one exits at once.
 */
export async function runCommand({ config, logger }: CommandContext): Promise<void> {
  requireApi(config);
  // Listening first: a signal that arrives while the database opens still stops gracefully.
  const signalled = firstSignal(logger);
  const database = await openConfiguredDatabase(config);
  try {
    await database.migrate();
    const service = await startService({
      config,
      database,
      logger,
      clock: systemClock,
      // After every pass of the active replica (every 15 s): deliver the reply outbox with that term's engine.
      afterPass: ({ db, engine }) => outboxAfterPass({ db, clock: systemClock, logger, client: () => engine.client }),
    });
    logger.info({ backend: database.kind, schema: database.schema, sql: service.sql?.url }, 'ticket-mirror is running');
    const signal = await signalled;
    logger.info({ signal }, 'stopping: letting the current pass finish');
    await service.stop();
  } finally {
    await database.close();
  }
  logger.info('stopped');
}

/** Resolves on the first SIGTERM or SIGINT; a second one exits at once with 128 + its number, as shells do. */
function firstSignal(logger: Logger): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let received = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (received) {
        logger.warn({ signal }, 'second signal: exiting now');
        process.exit(128 + constants.signals[signal]);
      }
      received = true;
      resolve(signal);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}
