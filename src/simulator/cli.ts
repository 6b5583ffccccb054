import { startSimulator } from './server.ts';

export interface SimulatorCommandOptions {
  /** Port of the API origin (the storage origin takes a free one). @default 0 */
  port?: number;
  /** @default 1 */
  seed?: number;
  /** @default '127.0.0.1' */
  host?: string;
  /** Stops the simulator like SIGINT does; for embedding and tests. */
  signal?: AbortSignal;
}

/**
 * `ticket-mirror simulator`: serves the fake API on the system clock, prints one line saying where, and runs until
 * SIGINT or SIGTERM.
 */
export async function runSimulatorCommand(opts: SimulatorCommandOptions = {}): Promise<void> {
  const sim = await startSimulator({ port: opts.port ?? 0, seed: opts.seed ?? 1, host: opts.host });
  process.stdout.write(`simulator: api ${sim.url}  storage ${sim.storageUrl}  token ${sim.token}\n`);
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      opts.signal?.removeEventListener('abort', stop);
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    if (opts.signal?.aborted) stop();
    else opts.signal?.addEventListener('abort', stop, { once: true });
  });
  await sim.close();
}
