import { LIST_NAMES } from '../../src/api/endpoints.ts';
import { BaselineMirror } from './baselineMirror.ts';
import { JobRunner, type Job } from './jobRunner.ts';
import type { Strategy, StrategyContext } from './strategy.ts';

const EVERY_MS = 60 * 60_000;

/**
 * The generic connector's full refresh: every hour, poll all four lists and fetch the detail of every open ticket,
 * one request a second. Like most connectors it honours a 429's Retry-After and then carries on where it was; a sync
 * still running at the next hour makes that hour be skipped (syncs of one connection never overlap). It never fetches
 * a resolved ticket's detail, so its history stays as thin as the lists.
 */
export async function fullRefresh(ctx: StrategyContext): Promise<Strategy> {
  const mirror = new BaselineMirror(ctx);
  const runner = new JobRunner(ctx.clock, 'retry');
  let nextRun = ctx.clock.now();

  async function* sync(): Job {
    for (const list of LIST_NAMES) yield () => mirror.poll(list);
    await mirror.sweepDone();
    for (const id of await mirror.openIds()) yield () => mirror.fetch(id);
  }

  return {
    name: 'full-refresh',
    async tick(now, until) {
      if (now >= nextRun) {
        if (!runner.busy) runner.start(sync());
        while (nextRun <= now) nextRun += EVERY_MS;
      }
      await runner.run(now, until);
    },
    async close() {},
  };
}
