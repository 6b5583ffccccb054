import { systemClock } from '../../clock.ts';
import { createEngine } from '../../daemon/compose.ts';
import { Daemon } from '../../daemon/daemon.ts';
import { openConfiguredDatabase, type CommandContext } from '../context.ts';

/** `ticket-mirror run`: migrate, then sync on schedule until SIGTERM/SIGINT. The first signal stops gracefully, a second forces. */
export async function runCommand({ config, logger }: CommandContext): Promise<void> {
  const database = await openConfiguredDatabase(config);
  const abort = new AbortController();
  let daemon: Daemon | undefined;
  const stopped = new Promise<void>((resolve) => {
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      signals++;
      if (signals > 1) {
        logger.warn({ signal }, 'second signal: exiting now');
        process.exit(130);
      }
      logger.info({ signal }, 'stopping: finishing the current pass');
      // In-flight requests are abandoned after 8 s; whatever was not written is simply fetched again next time.
      const force = setTimeout(() => abort.abort(new Error('shutdown')), 8_000);
      force.unref();
      void (daemon?.stop() ?? Promise.resolve()).finally(resolve);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
  try {
    await database.migrate();
    const engine = createEngine(config, database, logger, systemClock, abort.signal);
    daemon = new Daemon({ engine, clock: systemClock, logger });
    await daemon.start();
    logger.info({ backend: database.kind, schema: database.schema }, 'ticket-mirror is running');
    await stopped;
  } finally {
    await database.close();
  }
  logger.info('stopped');
}
