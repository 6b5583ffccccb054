import { LIST_NAMES } from '../../src/api/endpoints.ts';
import { BaselineMirror } from './baselineMirror.ts';
import { JobRunner, type Job } from './jobRunner.ts';
import type { Strategy, StrategyContext } from './strategy.ts';

const EVERY_MS = 5 * 60_000;

/**
 * The naive cron job: every 5 minutes, poll all four lists, then fetch the detail of every ticket whose list item
 * changed (new, changed fields, joined or left a list — the same differ as ticket-mirror), one request a second, the
 * most the per-minute limit allows. It knows nothing of the daily quota: the first 429 kills the run, as an unhandled
 * HTTP error kills a script; tickets it did not get to stay due for the next run. A run still going at the next
 * 5-minute mark makes that mark be skipped (a lock file, say).
 */
export async function naiveCron(ctx: StrategyContext): Promise<Strategy> {
  const mirror = new BaselineMirror(ctx);
  const runner = new JobRunner(ctx.clock, 'abandon');
  let nextRun = ctx.clock.now();

  async function* run(): Job {
    for (const list of LIST_NAMES) yield () => mirror.poll(list);
    await mirror.sweepDone();
    for (const id of await mirror.dueIds()) yield () => mirror.fetch(id);
  }

  return {
    name: 'naive-cron',
    async tick(now, until) {
      if (now >= nextRun) {
        if (!runner.busy) runner.start(run());
        while (nextRun <= now) nextRun += EVERY_MS;
      }
      await runner.run(now, until);
    },
    async close() {},
  };
}
