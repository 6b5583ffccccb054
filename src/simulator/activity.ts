import { HOUR_MS } from '../time.ts';
import type { SimulatorModel } from './model.ts';
import { Random } from './random.ts';
import { PRIORITIES, type TicketListItem } from './types.ts';

/**
 * A helpdesk's everyday life, for the demo (live changes) and the benchmark (a week in virtual time): a seeded random
 * mix of mutations whose arrivals follow office hours.
 *
 * Arrivals of each kind form a Poisson process whose intensity is the kind's daily rate shaped by `activityWeight`:
 * full during working hours (08–18 UTC, Monday to Friday), a twentieth of it otherwise. Rates are per weekday; a
 * weekend day sees about a ninth of a weekday's activity.
 */

export type ActivityOp =
  | 'newTicket'
  | 'inboundMessage'
  | 'agentReply'
  | 'resolve'
  | 'reopen'
  | 'assign'
  | 'setPriority'
  | 'deleteTicket';

/** Mutations per weekday. */
export type ActivityRates = Record<ActivityOp, number>;

export const DEFAULT_RATES_PER_DAY: Readonly<ActivityRates> = {
  newTicket: 150,
  inboundMessage: 400,
  agentReply: 200,
  resolve: 120,
  reopen: 15,
  assign: 100,
  setPriority: 20,
  deleteTicket: 5,
};

export interface ActivityOptions {
  /** @default 1 */
  seed?: number;
  /** Overrides of DEFAULT_RATES_PER_DAY; 0 turns a kind off. */
  ratesPerDay?: Partial<ActivityRates>;
  /**
   * Mutations that follow one another on the same ticket, as in a real helpdesk (see `FOLLOWS`), instead of each
   * picking an open ticket at random. @default false: the arrivals, their kinds and the dataset are the same either way
   */
  correlated?: boolean;
}

/**
 * How often a mutation lands on a ticket that was just active rather than on a random one (`correlated`): a customer
 * who just wrote writes again (messages come in bursts), another agent answers a message that just came in, and a
 * priority is set on a ticket that was just assigned. Each picks among the last `RECENT` tickets that saw what it
 * follows, most recent first and still open.
 */
const FOLLOWS: Partial<Record<ActivityOp, { after: ActivityOp; chance: number }>> = {
  inboundMessage: { after: 'inboundMessage', chance: 0.5 },
  agentReply: { after: 'inboundMessage', chance: 0.7 },
  setPriority: { after: 'assign', chance: 0.7 },
};
const RECENT = 8;

export interface AppliedMutation {
  op: ActivityOp;
  ticketId: string;
  /** When the arrival process placed it (epoch ms, within the stepped interval). */
  scheduledAt: number;
  /** The model's clock when it was applied: from then on the API shows it. */
  appliedAt: number;
}

/** A mutation the arrival process placed, not yet applied. */
export interface Arrival {
  op: ActivityOp;
  /** Epoch ms, fractional. */
  at: number;
}

export interface ActivityDriver {
  /**
   * Applies the mutations that arrive in [fromMs, toMs), in order, and returns them. They are applied now, at the
   * model's clock, so step in slices as fine as the timing you need. Kinds that find no target (e.g. a reopen with no
   * resolved ticket) are skipped. The same as `arrivals` followed by `apply` of each.
   */
  step(fromMs: number, toMs: number): AppliedMutation[];
  /**
   * The mutations that arrive in [fromMs, toMs), in order, for the caller to apply each at its own instant (the
   * benchmark sets its clock to each, then applies it). Apply them all, in order, before asking for the next slice:
   * the driver draws arrivals and targets from one random stream, so only that order makes a run the same for a seed.
   * The arrivals are those `step` gives; the tickets they pick may differ, as a kind's pick depends on the instants at
   * which earlier mutations were applied.
   */
  arrivals(fromMs: number, toMs: number): Arrival[];
  /** Applies one arrival now, at the model's clock; undefined when its kind found no target. */
  apply(arrival: Arrival): AppliedMutation | undefined;
}

const OFF_HOURS_WEIGHT = 0.05;
/** The sum of a weekday's hourly weights: 10 working hours plus 14 quiet ones. */
const WEEKDAY_WEIGHT = 10 + 14 * OFF_HOURS_WEIGHT;

/** Relative activity during the hour that contains `ms`. */
export function activityWeight(ms: number): number {
  const date = new Date(ms);
  const day = date.getUTCDay();
  const hour = date.getUTCHours();
  return day >= 1 && day <= 5 && hour >= 8 && hour < 18 ? 1 : OFF_HOURS_WEIGHT;
}

export function createActivityDriver(model: SimulatorModel, opts: ActivityOptions = {}): ActivityDriver {
  const rng = new Random(opts.seed ?? 1);
  const rates: ActivityRates = { ...DEFAULT_RATES_PER_DAY, ...opts.ratesPerDay };
  const ops = Object.keys(rates) as ActivityOp[];
  const recent = new Map<ActivityOp, string[]>();

  const driver: ActivityDriver = {
    step(fromMs, toMs) {
      return driver.arrivals(fromMs, toMs).flatMap((arrival) => driver.apply(arrival) ?? []);
    },
    arrivals(fromMs, toMs) {
      const arrivals = ops.flatMap((op) => arrivalTimes(rng, rates[op], fromMs, toMs).map((at) => ({ op, at })));
      return arrivals.sort((a, b) => a.at - b.at);
    },
    apply({ op, at }) {
      const ticketId = apply(model, rng, op, opts.correlated ? followed(model, rng, op, recent) : undefined);
      if (ticketId === undefined) return undefined;
      if (opts.correlated) recent.set(op, [ticketId, ...(recent.get(op) ?? []).filter((id) => id !== ticketId)].slice(0, RECENT));
      return { op, ticketId, scheduledAt: at, appliedAt: model.clock.now() };
    },
  };
  return driver;
}

/** An account the fleet driver can drive: its model is built on first use, so driving an account builds it. */
export interface ActivityAccount {
  readonly ordinal: number;
  readonly model: SimulatorModel;
}

export interface FleetActivityOptions extends ActivityOptions {
  /** Which accounts to drive: `() => sim.accounts()` for all (accounts added later included), or a fixed subset. */
  accounts: () => Iterable<ActivityAccount>;
}

export interface FleetMutation extends AppliedMutation {
  /** The ordinal of the account it was applied to. */
  account: number;
}

export interface FleetActivityDriver {
  /** `ActivityDriver.step` for each account, in the order `accounts` gives them. */
  step(fromMs: number, toMs: number): FleetMutation[];
}

/**
 * Everyday life in many accounts at once: one driver per account (created on the account's first step), each with
 * the same rates and its own arrival process, seeded by `seed` and the account's ordinal — so an account's activity
 * does not depend on which other accounts are driven.
 */
export function createFleetActivityDriver(opts: FleetActivityOptions): FleetActivityDriver {
  const drivers = new WeakMap<ActivityAccount, ActivityDriver>();
  const base = opts.seed ?? 1;
  return {
    step(fromMs, toMs) {
      const applied: FleetMutation[] = [];
      for (const account of opts.accounts()) {
        let driver = drivers.get(account);
        if (!driver) {
          driver = createActivityDriver(account.model, { seed: base * 1_000_003 + account.ordinal, ratesPerDay: opts.ratesPerDay });
          drivers.set(account, driver);
        }
        for (const m of driver.step(fromMs, toMs)) applied.push({ ...m, account: account.ordinal });
      }
      return applied;
    },
  };
}

/** Arrival instants in [fromMs, toMs): exponential gaps, hour by hour, since the intensity changes by the hour. */
function arrivalTimes(rng: Random, perWeekday: number, fromMs: number, toMs: number): number[] {
  const times: number[] = [];
  for (let start = fromMs; start < toMs; ) {
    const end = Math.min(toMs, (Math.floor(start / HOUR_MS) + 1) * HOUR_MS);
    const perMs = (perWeekday * activityWeight(start)) / (WEEKDAY_WEIGHT * HOUR_MS);
    // Memorylessness makes restarting the process at each hour boundary exact.
    for (let t = start; perMs > 0; ) {
      t += -Math.log(1 - rng.next()) / perMs;
      if (t >= end) break;
      times.push(t);
    }
    start = end;
  }
  return times;
}

/** The ticket a correlated mutation follows up on (see FOLLOWS), or undefined: a random one, then. */
function followed(model: SimulatorModel, rng: Random, op: ActivityOp, recent: ReadonlyMap<ActivityOp, string[]>): string | undefined {
  const rule = FOLLOWS[op];
  if (!rule || !rng.chance(rule.chance)) return undefined;
  const open = new Set(model.listOpen().map((t) => t.id));
  const candidates = (recent.get(rule.after) ?? []).filter((id) => open.has(id));
  // Most recent first: the i-th with weight 2^−i.
  for (const id of candidates) if (rng.chance(0.5)) return id;
  return candidates[0];
}

/** Applies one mutation to a fitting random ticket (or to `target`); returns its id, or undefined when none fits. */
function apply(model: SimulatorModel, rng: Random, op: ActivityOp, target?: string): string | undefined {
  if (op === 'newTicket') return model.newTicket().id;
  // Reopened tickets are recent ones: among the newest resolved.
  const pool: readonly Readonly<TicketListItem>[] =
    op === 'reopen'
      ? model.listResolved().slice(0, 50)
      : op === 'deleteTicket' && rng.chance(0.3)
        ? model.listResolved()
        : model.listOpen();
  if (pool.length === 0) return undefined;
  const id = target ?? rng.pick(pool).id;
  switch (op) {
    case 'inboundMessage':
      model.inboundMessage(id);
      break;
    case 'agentReply':
      model.agentReply(id, { agent: 'other' });
      break;
    case 'resolve':
      model.resolve(id);
      break;
    case 'reopen':
      model.reopen(id);
      break;
    case 'assign':
      if (rng.chance(0.2)) model.unassign(id);
      else model.assign(id, rng.chance(0.4) ? 'self' : 'other');
      break;
    case 'setPriority':
      model.setPriority(id, rng.pick(PRIORITIES));
      break;
    case 'deleteTicket':
      model.deleteTicket(id);
      break;
  }
  return id;
}
