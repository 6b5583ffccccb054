import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { createFleetActivityDriver, type ActivityAccount } from '../../src/simulator/activity.ts';
import { SimulatorModel } from '../../src/simulator/model.ts';
import { HOUR_MS } from '../../src/time.ts';

/** The fleet driver: one arrival process per account, independent of which other accounts are driven. */

function accounts(clock: ManualClock, ordinals: number[]): ActivityAccount[] {
  return ordinals.map((ordinal) => ({ ordinal, model: new SimulatorModel({ seed: ordinal, clock, openTickets: 10, resolvedTickets: 20 }) }));
}

describe('createFleetActivityDriver', () => {
  it('gives an account the same mutations whether it is driven alone or with others', () => {
    const clockAll = new ManualClock();
    const clockOne = new ManualClock();
    const all = accounts(clockAll, [1, 2, 3]);
    const one = accounts(clockOne, [2]);
    const driveAll = createFleetActivityDriver({ seed: 4, accounts: () => all });
    const driveOne = createFleetActivityDriver({ seed: 4, accounts: () => one });
    const ofTwo: unknown[] = [];
    const alone: unknown[] = [];
    for (let h = 0; h < 10; h++) {
      const from = clockAll.now();
      clockAll.advance(HOUR_MS);
      clockOne.advance(HOUR_MS);
      ofTwo.push(...driveAll.step(from, clockAll.now()).filter((m) => m.account === 2));
      alone.push(...driveOne.step(from, clockOne.now()));
    }
    expect(ofTwo.length).toBeGreaterThan(10);
    expect(alone).toEqual(ofTwo);
    expect(one[0]!.model.groundTruth()).toEqual(all[1]!.model.groundTruth());
  });

  it('gives different accounts different arrivals, and another seed other ones', () => {
    const clock = new ManualClock();
    const fleet = accounts(clock, [1, 2]);
    const drive = createFleetActivityDriver({ seed: 4, accounts: () => fleet });
    const from = clock.now();
    clock.advance(4 * HOUR_MS);
    const applied = drive.step(from, clock.now());
    const times = (n: number) => applied.filter((m) => m.account === n).map((m) => m.scheduledAt);
    expect(times(1)).not.toEqual(times(2));
    const other = createFleetActivityDriver({ seed: 5, accounts: () => accounts(new ManualClock(), [1]) });
    expect(other.step(from, clock.now()).map((m) => m.scheduledAt)).not.toEqual(times(1));
  });
});
