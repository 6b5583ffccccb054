import { systemClock } from '../../clock.ts';
import { openFleetDatabase } from '../../db/fleet.ts';
import { ConfigError, unlistenableHost } from '../../errors.ts';
import { startFleetHttpServer, type FleetHttpServer, type Routes } from '../../fleet/httpServer.ts';
import type { FleetTiming } from '../../fleet/timing.ts';
import { connectionsPerWorker, defaultWorkerId, startFleetWorker, type FleetWorker } from '../../fleet/worker.ts';
import type { CommandContext } from '../context.ts';
import { requireFleetDatabaseAndKey } from '../fleetContext.ts';
import { PARENT_GONE, stopRequested } from './run.ts';

/**
 * `ticket-mirror fleet run [--concurrency N]`: one worker of a fleet (see src/fleet/worker.ts) until SIGTERM/SIGINT,
 * exiting 0. The first signal stops gracefully — no new job; the passes running stop at their next request and hand
 * their accounts back, due at once for the other workers; requests still in flight after 7 s are cut off — within
 * 10 s; a second signal exits at once (as `run`). DATABASE_URL (PostgreSQL) and FLEET_KEY are required: without them,
 * one line and exit 2.
 */

export interface FleetRunOptions {
  concurrency: number;
  /** The hidden flags of tests and the bench (see timing.ts); unset: the derived defaults. */
  timing?: Partial<FleetTiming>;
}

/**
 * Where `fleet run` asks for more HTTP routes (the account table, /metrics): the status helper's seam. Called once the
 * worker runs; its routes join /healthz and /readyz; `close` runs after the worker stopped.
 */
export type FleetRoutesFactory = (o: { worker: FleetWorker; ctx: CommandContext; fleet: Awaited<ReturnType<typeof openFleetDatabase>> }) => Promise<{
  routes: Routes;
  close?: () => Promise<void>;
}>;

export async function fleetRunCommand(ctx: CommandContext, options: FleetRunOptions, extraRoutes?: FleetRoutesFactory): Promise<void> {
  const { config, logger } = ctx;
  const { databaseUrl, key } = requireFleetDatabaseAndKey(config, 'fleet run');
  const signalled = stopRequested(logger, { startedByNpm: process.env.npm_lifecycle_event !== undefined });
  const fleet = await openFleetDatabase({ databaseUrl, schema: config.fleetSchema, poolSize: 2, applicationName: `tm fleet ${defaultWorkerId()}` });
  let worker: FleetWorker | undefined;
  let http: FleetHttpServer | undefined;
  let extras: Awaited<ReturnType<FleetRoutesFactory>> | undefined;
  try {
    await fleet.migrate();
    worker = await startFleetWorker({
      config,
      fleet,
      key,
      logger,
      clock: systemClock,
      concurrency: options.concurrency,
      ...(options.timing ? { timing: options.timing } : {}),
    });
    if (config.httpPort > 0) {
      extras = extraRoutes ? await extraRoutes({ worker, ctx, fleet }) : undefined;
      http = await listening(config.httpPort, config.httpHost, () =>
        startFleetHttpServer({ host: config.httpHost, port: config.httpPort, worker: worker!, db: fleet.db, logger, routes: extras?.routes ?? {} }),
      );
    }
    logger.info(
      { worker: worker.workerId, concurrency: worker.concurrency, connections: connectionsPerWorker(worker.concurrency), schema: fleet.schema, http: http?.url },
      'ticket-mirror fleet worker is running',
    );
    const reason = await signalled;
    logger.info(reason === PARENT_GONE ? { reason } : { signal: reason }, 'stopping: the running passes hand their accounts back');
  } finally {
    await http?.close();
    await worker?.stop();
    await extras?.close?.();
    await fleet.close();
  }
  logger.info('stopped');
}

/** A busy HTTP_PORT, or an HTTP_HOST not of this machine, is a configuration problem, said with its variable (as `run` says it). */
async function listening<T>(port: number, host: string, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    const hostProblem = unlistenableHost(error, { variable: 'HTTP_HOST', value: host });
    if (hostProblem) throw hostProblem;
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new ConfigError([`HTTP_PORT=${port} is in use by another program (another worker on this machine?): set HTTP_PORT to another port, or 0 to turn it off`]);
    }
    throw error;
  }
}
