import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { activityWeight, createActivityDriver, type AppliedMutation } from '../../src/simulator/activity.ts';
import { SimulatorModel } from '../../src/simulator/model.ts';

const MONDAY = Date.UTC(2026, 0, 5, 0, 0, 0);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** Runs a driver over [from, to) in `stepMs` slices, advancing the clock before each, as the benchmark does. */
function run(from: number, to: number, stepMs: number, seed = 3) {
  const clock = new ManualClock(from);
  const model = new SimulatorModel({ clock });
  const driver = createActivityDriver(model, { seed });
  const applied: AppliedMutation[] = [];
  for (let t = from; t < to; t += stepMs) {
    clock.set(t + stepMs);
    applied.push(...driver.step(t, t + stepMs));
  }
  return { model, applied };
}

const count = (applied: AppliedMutation[], op: string) => applied.filter((m) => m.op === op).length;

describe('activityWeight', () => {
  it.each([
    [MONDAY + 8 * HOUR, 1],
    [MONDAY + 17 * HOUR + 59 * 60_000, 1],
    [MONDAY + 18 * HOUR, 0.05],
    [MONDAY + 7 * HOUR, 0.05],
    [MONDAY + 5 * DAY + 10 * HOUR, 0.05], // Saturday
    [MONDAY + 4 * DAY + 10 * HOUR, 1], // Friday
  ])('%i → %d', (ms, weight) => {
    expect(activityWeight(ms)).toBe(weight);
  });
});

describe('createActivityDriver', () => {
  it('applies about the daily rates on a weekday, mostly in working hours', () => {
    const { applied } = run(MONDAY, MONDAY + DAY, 10 * 60_000);
    expect(count(applied, 'newTicket')).toBeGreaterThan(110);
    expect(count(applied, 'newTicket')).toBeLessThan(190);
    expect(count(applied, 'inboundMessage')).toBeGreaterThan(330);
    expect(count(applied, 'inboundMessage')).toBeLessThan(470);
    expect(count(applied, 'deleteTicket')).toBeLessThan(15);
    const inOfficeHours = applied.filter((m) => activityWeight(m.scheduledAt) === 1).length;
    expect(inOfficeHours / applied.length).toBeGreaterThan(0.85);
  });

  it('is much quieter at the weekend', () => {
    const saturday = MONDAY + 5 * DAY;
    const weekend = run(saturday, saturday + DAY, HOUR).applied.length;
    const weekday = run(MONDAY, MONDAY + DAY, HOUR).applied.length;
    expect(weekend).toBeLessThan(weekday / 4);
    expect(weekend).toBeGreaterThan(0);
  });

  it('is deterministic for a seed, and its mutations are visible in the model', () => {
    const a = run(MONDAY + 9 * HOUR, MONDAY + 11 * HOUR, 60_000);
    const b = run(MONDAY + 9 * HOUR, MONDAY + 11 * HOUR, 60_000);
    expect(a.applied).toEqual(b.applied);
    expect(a.model.groundTruth()).toEqual(b.model.groundTruth());
    expect(run(MONDAY + 9 * HOUR, MONDAY + 11 * HOUR, 60_000, 4).applied).not.toEqual(a.applied);

    const created = a.applied.filter((m) => m.op === 'newTicket').map((m) => m.ticketId);
    const deleted = new Set(a.applied.filter((m) => m.op === 'deleteTicket').map((m) => m.ticketId));
    for (const id of created) expect(a.model.hasTicket(id)).toBe(!deleted.has(id));
    for (const m of a.applied) {
      expect(m.scheduledAt).toBeGreaterThanOrEqual(MONDAY + 9 * HOUR);
      expect(m.scheduledAt).toBeLessThanOrEqual(m.appliedAt);
      expect(m.appliedAt - m.scheduledAt).toBeLessThanOrEqual(60_000);
    }
  });

  it('gives, arrival by arrival at their own instants, the arrivals step gives, the same for a seed', () => {
    const from = MONDAY + 9 * HOUR;
    const slices = (correlated: boolean) => {
      const clock = new ManualClock(from);
      const driver = createActivityDriver(new SimulatorModel({ clock }), { seed: 5, correlated });
      const applied: AppliedMutation[] = [];
      for (let t = from; t < from + HOUR; t += 15_000) {
        clock.set(t + 15_000);
        applied.push(...driver.step(t, t + 15_000));
      }
      return applied;
    };
    const oneByOne = (correlated: boolean) => {
      const clock = new ManualClock(from);
      const model = new SimulatorModel({ clock });
      const driver = createActivityDriver(model, { seed: 5, correlated });
      const applied: AppliedMutation[] = [];
      for (let t = from; t < from + HOUR; t += 15_000) {
        for (const arrival of driver.arrivals(t, t + 15_000)) {
          expect(arrival.at).toBeGreaterThanOrEqual(t);
          expect(arrival.at).toBeLessThan(t + 15_000);
          clock.set(Math.max(clock.now(), Math.ceil(arrival.at)));
          const m = driver.apply(arrival);
          if (m) applied.push(m);
        }
      }
      return { applied, truth: model.groundTruth() };
    };
    for (const correlated of [false, true]) {
      const a = oneByOne(correlated);
      expect(a.applied.length).toBeGreaterThan(50);
      // The same arrivals (the targets may differ: which ticket a kind picks depends on when earlier ones were applied).
      const when = (ms: AppliedMutation[]) => ms.map(({ op, scheduledAt }) => ({ op, scheduledAt }));
      expect(when(a.applied)).toEqual(when(slices(correlated)));
      for (const m of a.applied) expect(m.appliedAt).toBe(Math.ceil(m.scheduledAt));
      expect(oneByOne(correlated)).toEqual(a);
    }
  });

  it('takes rate overrides; 0 turns a kind off', () => {
    const clock = new ManualClock(MONDAY + 8 * HOUR);
    const model = new SimulatorModel({ clock });
    const off = { newTicket: 0, inboundMessage: 0, agentReply: 0, resolve: 0, assign: 0, setPriority: 0 };
    const driver = createActivityDriver(model, { seed: 1, ratesPerDay: { ...off, deleteTicket: 0, reopen: 1000 } });
    const applied = driver.step(MONDAY + 8 * HOUR, MONDAY + 9 * HOUR);
    expect(applied.length).toBeGreaterThan(50);
    expect(new Set(applied.map((m) => m.op))).toEqual(new Set(['reopen']));
  });
});
