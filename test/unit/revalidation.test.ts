import { describe, expect, it } from 'vitest';
import { learnedMultipliers, MAX_MULTIPLIER, neutralMultipliers, PRIOR_FINDS, REVALIDATION_CLASSES, type ClassCounts } from '../../src/model/revalidation.ts';

describe('learnedMultipliers: each class found / expected, relative to all classes, starting from the fixed order', () => {
  const neutral = neutralMultipliers();
  it.each<{ label: string; rows: ClassCounts[]; expect: (m: number[]) => void }>([
    { label: 'nothing learnt yet: the fixed order', rows: [], expect: (m) => expect(m).toEqual(neutral) },
    {
      label: 're-reads that never found anything teach nothing about the classes against each other',
      rows: [{ cls: 0, found: 0, expected: 40 }, { cls: 2, found: 0, expected: 10 }],
      expect: (m) => expect(m).toEqual(neutral),
    },
    {
      label: 'classes that found as the fixed weights expected stay at 1',
      rows: [{ cls: 0, found: 10, expected: 20 }, { cls: 2, found: 5, expected: 10 }],
      expect: (m) => {
        expect(m[0]).toBeCloseTo(1, 9);
        expect(m[2]).toBeCloseTo(1, 9);
      },
    },
    {
      label: 'a class finding more than expected rises, one finding less falls; classes not seen stay at 1',
      rows: [{ cls: 3, found: 12, expected: 20 }, { cls: 2, found: 8, expected: 40 }],
      expect: (m) => {
        const rate = 20 / 60;
        expect(m[3]).toBeCloseTo((12 + PRIOR_FINDS) / (rate * 20 + PRIOR_FINDS), 9);
        expect(m[2]).toBeCloseTo((8 + PRIOR_FINDS) / (rate * 40 + PRIOR_FINDS), 9);
        expect(m[3]).toBeGreaterThan(1.5);
        expect(m[2]).toBeLessThan(0.75);
        expect(m[7]).toBe(1);
      },
    },
    {
      label: 'one lucky re-read moves a class little (the prior finds)',
      rows: [{ cls: 1, found: 1, expected: 0.5 }, { cls: 0, found: 50, expected: 100 }],
      expect: (m) => expect(m[1]).toBeLessThan(1.6),
    },
    {
      label: 'never beyond 2× either way',
      rows: [{ cls: 0, found: 1000, expected: 1 }, { cls: 1, found: 0, expected: 100_000 }, { cls: 2, found: 10, expected: 10 }],
      expect: (m) => {
        expect(m[0]).toBe(MAX_MULTIPLIER);
        expect(m[1]).toBe(1 / MAX_MULTIPLIER);
      },
    },
    {
      label: 'rows a user or a bug wrote wrong are ignored: class out of range, negative or non-finite counts',
      rows: [
        { cls: 12, found: 100, expected: 1 },
        { cls: -1, found: 100, expected: 1 },
        { cls: 1.5, found: 100, expected: 1 },
        { cls: 4, found: -5, expected: 1 },
        { cls: 5, found: Number.NaN, expected: 1 },
        { cls: 6, found: 1, expected: Number.POSITIVE_INFINITY },
      ],
      expect: (m) => expect(m).toEqual(neutral),
    },
  ])('$label', ({ rows, expect: check }) => {
    const m = learnedMultipliers(rows);
    expect(m).toHaveLength(REVALIDATION_CLASSES);
    check(m);
  });
});
