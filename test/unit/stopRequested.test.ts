import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { stopRequested } from '../../src/cli/commands/run.ts';
import { createLogger } from '../../src/logger.ts';

/** When `run` stops, and when it stops at once (the signal handling itself; through real processes: daemon-*.test.ts). */
describe('stopRequested', () => {
  const setUp = () => {
    const signals = new EventEmitter();
    const exits: number[] = [];
    const requested = stopRequested(createLogger('silent'), { startedByNpm: false, signals, exit: (code) => exits.push(code) });
    return { signals, exits, requested };
  };

  it('takes the first signal as the request to stop', async () => {
    const { signals, exits, requested } = setUp();
    signals.emit('SIGTERM', 'SIGTERM');
    expect(await requested).toBe('SIGTERM');
    expect(exits).toEqual([]);
  });

  it('takes the same signal again at once for the first delivered twice (Ctrl-C reaches npm and the daemon)', async () => {
    const { signals, exits, requested } = setUp();
    signals.emit('SIGINT', 'SIGINT');
    signals.emit('SIGINT', 'SIGINT');
    expect(await requested).toBe('SIGINT');
    expect(exits).toEqual([]);
  });

  it('acts on the signals held while the command line loaded, as if it had been listening', async () => {
    const once = new EventEmitter();
    const exits: number[] = [];
    const logger = createLogger('silent');
    expect(await stopRequested(logger, { startedByNpm: false, signals: once, exit: (code) => exits.push(code), heldSignals: () => ['SIGTERM'] })).toBe('SIGTERM');
    // The same one twice is one request; another one after it exits at once, as it would have.
    const twice = stopRequested(logger, { startedByNpm: false, signals: new EventEmitter(), exit: (code) => exits.push(code), heldSignals: () => ['SIGINT', 'SIGINT'] });
    expect(await twice).toBe('SIGINT');
    expect(exits).toEqual([]);
    void stopRequested(logger, { startedByNpm: false, signals: new EventEmitter(), exit: (code) => exits.push(code), heldSignals: () => ['SIGTERM', 'SIGINT'] });
    expect(exits).toEqual([130]);
  });

  it('takes SIGHUP (its terminal closed) as a request to stop, as SIGTERM', async () => {
    const { signals, exits, requested } = setUp();
    signals.emit('SIGHUP', 'SIGHUP');
    expect(await requested).toBe('SIGHUP');
    signals.emit('SIGTERM', 'SIGTERM');
    expect(exits).toEqual([143]);
  });

  it('ignores SIGUSR1 and SIGUSR2 (log rotation, reload requests): neither stops it nor counts as a first signal', async () => {
    const { signals, exits, requested } = setUp();
    let settled = false;
    void requested.then(() => (settled = true));
    signals.emit('SIGUSR2', 'SIGUSR2');
    signals.emit('SIGUSR1', 'SIGUSR1');
    await Promise.resolve();
    expect(settled).toBe(false);
    signals.emit('SIGTERM', 'SIGTERM');
    expect(await requested).toBe('SIGTERM');
    expect(exits).toEqual([]);
  });

  it('logs a flood of SIGUSR2 once a minute at most, with how many came since the last line', () => {
    const lines: Array<{ signal: string; times?: number }> = [];
    const logger = createLogger('info', { write: (line: string) => void lines.push(JSON.parse(line) as { signal: string }) });
    let now = 0;
    const signals = new EventEmitter();
    void stopRequested(logger, { startedByNpm: false, signals, exit: () => {}, now: () => now });
    for (let i = 0; i < 10_000; i++) signals.emit('SIGUSR2', 'SIGUSR2');
    signals.emit('SIGUSR1', 'SIGUSR1');
    expect(lines.map((l) => [l.signal, l.times])).toEqual([
      ['SIGUSR2', undefined],
      ['SIGUSR1', undefined],
    ]);
    now += 60_000;
    signals.emit('SIGUSR2', 'SIGUSR2');
    // The 9,999 held back and this one.
    expect(lines.at(-1)).toMatchObject({ signal: 'SIGUSR2', times: 10_000 });
    expect(lines).toHaveLength(3);
  });

  it('exits at once, with 128 + its number, on a second signal of another kind', async () => {
    const { signals, exits } = setUp();
    signals.emit('SIGTERM', 'SIGTERM');
    signals.emit('SIGINT', 'SIGINT');
    expect(exits).toEqual([130]);
  });
});
