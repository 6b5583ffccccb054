import { startSimulator } from './server.ts';

export interface SimulatorCommandOptions {
  /** Port of the API origin (the storage origin takes a free one). @default 0 */
  port?: number;
  /** @default 1 */
  seed?: number;
  /** @default '127.0.0.1' */
  host?: string;
  /**
   * Serve this many accounts, tokens `sim-token-1` … `sim-token-N`, account k with seed `seed + k − 1`, each built on
   * its first request. Without it, one account with the token `sim-token`.
   */
  accounts?: number;
  /** Stops the simulator like SIGINT does; for embedding and tests. */
  signal?: AbortSignal;
}

/** The most accounts `--accounts` serves: far beyond a fleet bench (1,000), short of exhausting memory by a typo. */
export const MAX_ACCOUNTS = 100_000;

/** Each account's request log keeps this many entries (a day of its quota) at least, twice that at most. */
const ACCOUNT_LOG_LIMIT = 2_000;

/**
 * `ticket-mirror simulator`: serves the fake API on the system clock, prints one line saying where, and runs until
 * SIGINT or SIGTERM.
 */
export async function runSimulatorCommand(opts: SimulatorCommandOptions = {}): Promise<void> {
  const count = opts.accounts;
  if (count !== undefined && !(Number.isInteger(count) && count >= 1 && count <= MAX_ACCOUNTS)) {
    throw new RangeError(`--accounts must be a whole number from 1 to ${MAX_ACCOUNTS} (${count})`);
  }
  const common = { port: opts.port ?? 0, seed: opts.seed ?? 1, host: opts.host };
  const sim =
    count === undefined
      ? await startSimulator(common)
      : await startSimulator({
          ...common,
          accounts: Array.from({ length: count }, (_, i) => ({ token: `sim-token-${i + 1}` })),
          logLimit: ACCOUNT_LOG_LIMIT,
        });
  const tokens = count === undefined ? '' : `  accounts ${count} (tokens sim-token-1 … sim-token-${count})`;
  process.stdout.write(`simulator: api ${sim.url}  storage ${sim.storageUrl}  token ${sim.token}${tokens}\n`);
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
