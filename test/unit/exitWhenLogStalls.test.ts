import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { exitWhenLogStalls, LOG_STALL_MS } from '../../src/cli/exitWhenLogStalls.ts';

/** Once the command is done, queued log lines keep the process up only while they make progress. */
describe('exitWhenLogStalls', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function watch(queued: number, stdoutQueued = 0) {
    const stderr = { writableLength: queued };
    const stdout = { writableLength: stdoutQueued };
    const exit = vi.fn();
    exitWhenLogStalls(stderr, stdout, exit);
    return { stderr, stdout, exit };
  }

  it('exits when stderr makes no progress for a whole interval', () => {
    const { exit } = watch(70_000);
    vi.advanceTimersByTime(LOG_STALL_MS - 1);
    expect(exit).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(exit).toHaveBeenCalledOnce();
  });

  it('waits for a slow reader as long as each interval takes some of the log', () => {
    const { stderr, exit } = watch(70_000);
    for (let i = 0; i < 10; i++) {
      stderr.writableLength -= 5_000;
      vi.advanceTimersByTime(LOG_STALL_MS);
    }
    expect(exit).not.toHaveBeenCalled();
    vi.advanceTimersByTime(LOG_STALL_MS);
    expect(exit).toHaveBeenCalledOnce();
  });

  it('stops watching once the log is written, and never looks when nothing was queued', () => {
    const { stderr, exit } = watch(70_000);
    stderr.writableLength = 0;
    vi.advanceTimersByTime(LOG_STALL_MS);
    expect(vi.getTimerCount()).toBe(0);
    expect(exit).not.toHaveBeenCalled();
    const idle = watch(0);
    expect(vi.getTimerCount()).toBe(0);
    expect(idle.exit).not.toHaveBeenCalled();
  });

  it('waits while standard output, the answer, is still queued', () => {
    const { stdout, exit } = watch(70_000, 10_000);
    vi.advanceTimersByTime(5 * LOG_STALL_MS);
    expect(exit).not.toHaveBeenCalled();
    stdout.writableLength = 0;
    vi.advanceTimersByTime(LOG_STALL_MS);
    expect(exit).toHaveBeenCalledOnce();
  });
});
