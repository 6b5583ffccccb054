import { fullRefresh } from './fullRefresh.ts';
import { naiveCron } from './naiveCron.ts';
import type { StrategyFactory, StrategyName } from './strategy.ts';
import { ticketMirror } from './ticketMirror.ts';

export type { Strategy, StrategyContext, StrategyFactory, StrategyName } from './strategy.ts';

/** The strategies compared, in report order. */
export const STRATEGIES: Record<StrategyName, StrategyFactory> = {
  'ticket-mirror': ticketMirror,
  'naive-cron': naiveCron,
  'full-refresh': fullRefresh,
};
