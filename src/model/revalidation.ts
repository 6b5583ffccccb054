/**
 * What revalidation learns of which details change unseen (db/repos/work.ts). Re-reads are grouped in classes of
 * ticket — in an active list or only resolved, unread messages or not, last activity within 6 h, a day, or older —
 * and for each the mirror keeps how many re-reads found a change and how many the fixed weights expected (each
 * re-read's fixed weight times the hours since the detail was read), both decayed over a week.
 *
 * A class's multiplier is its found / expected, relative to all classes': above 1 where changes come more often than
 * the fixed weights say (another agent's reply soon after an inbound message), below where less. Each class starts
 * with `PRIOR_FINDS` finds at the overall rate, so a class seen a few times stays near 1, and the multipliers stay
 * within [1/MAX_MULTIPLIER, MAX_MULTIPLIER]: a class that never changed lately is re-read less, never dropped.
 */

/** Two list states × unread or not × three ages of the last activity. */
export const REVALIDATION_CLASSES = 12;
export const PRIOR_FINDS = 3;
export const MAX_MULTIPLIER = 2;

export interface ClassCounts {
  cls: number;
  found: number;
  expected: number;
}

/** Every class at 1: the fixed order. */
export function neutralMultipliers(): number[] {
  return new Array<number>(REVALIDATION_CLASSES).fill(1);
}

export function learnedMultipliers(rows: readonly ClassCounts[]): number[] {
  const out = neutralMultipliers();
  const usable = rows.filter(
    (r) => Number.isInteger(r.cls) && r.cls >= 0 && r.cls < REVALIDATION_CLASSES && r.found >= 0 && r.expected >= 0 && Number.isFinite(r.found + r.expected),
  );
  const found = usable.reduce((s, r) => s + r.found, 0);
  const expected = usable.reduce((s, r) => s + r.expected, 0);
  if (found <= 0 || expected <= 0) return out;
  const rate = found / expected;
  for (const r of usable) {
    const m = (r.found + PRIOR_FINDS) / (rate * r.expected + PRIOR_FINDS);
    out[r.cls] = Math.min(MAX_MULTIPLIER, Math.max(1 / MAX_MULTIPLIER, m));
  }
  return out;
}
