import { LIST_NAMES } from '../src/api/endpoints.ts';
import { allowedPerDay, allowedPerMinute, type BudgetLimits } from '../src/sync/budget.ts';
import { DAY_MS, HOUR_MS, MINUTE_MS } from '../src/time.ts';
import type { Change } from './changeRecorder.ts';

/**
 * Lower bounds on the lags any client could reach on a workload with a request budget: the yardstick ticket-mirror is
 * measured against. The argument is a covering one.
 *
 * No client learns of a change before it asks for it: the API has no events and its lists no `updated_at`, so a change
 * reaches a client only through a later request. A client cannot know *when* a change will happen either, only how
 * often changes happen: the bound even grants it, for every hour, the exact number of changes of each kind that hour
 * will bring, but not their instants, which are uniform within the hour (they are: the workload is Poisson).
 *
 * - For a list, a poll at p reflects (within x) exactly the changes made in [p − x, p]: one poll covers at most x of
 *   time, so covering a fraction c of an hour H takes at least c·H/x polls of that list, however they are placed.
 * - A list-visible change that changed the lists S is reflected once all of S have been polled after it (`all`), which
 *   a client polling on a schedule cannot beat. A client that adapts could learn of it from the first list of S it
 *   polls and poll the others at once: counting those follow-up polls as free gives the weaker bound `any`, which no
 *   client whatsoever can beat.
 * - p95 ≤ x needs at least 95 % of the changes covered. The cheapest covering takes, hour by hour, the coverage with
 *   the most changes per poll first (a small linear programme: per hour, the upper concave hull of (polls, changes)
 *   over the coverage vectors; then a greedy over all hours by slope). With C list-hours of coverage and P polls to
 *   spend, x ≥ H·C / P: the bound.
 * - P is the budget of the window minus the details any exact mirror must fetch anyway (at least one per ticket that
 *   changed in the window, whatever the schedule).
 * - Detail-only changes are seen only by fetching that ticket's detail: covering a ticket for a fraction of an hour is
 *   the same argument with the open tickets in place of the lists, and the median in place of p95.
 */

/** Coverage semantics for multi-list changes; see above. */
export type ListCoverage = 'all' | 'any';

export interface Window {
  from: number;
  to: number;
}

/**
 * A budget of requests for covering: at most `perBlock[i]` in the i-th 24 h block of the window (a 24 h block lies in
 * one rolling-24 h window, so a client can never spend more than its daily allowance in it) and `total` in all.
 */
export interface CoverBudget {
  perBlock: number[];
  total: number;
}

/** A piece of covering: `cost` unit-hours of coverage (a list or a ticket, for one hour) buying `mass` changes. */
interface Segment {
  block: number;
  cost: number;
  mass: number;
}

/** Number of 24 h blocks of a window (the last one may be shorter). */
export function blocksOf(window: Window): number {
  return Math.max(1, Math.ceil((window.to - window.from) / DAY_MS));
}

/**
 * The lowest p-quantile lag (ms) of the list-visible changes made in `window` that list polls within `budget` could
 * buy; Infinity when even polling every list all the time would not be enough.
 */
export function listLagBound(changes: readonly Change[], window: Window, budget: CoverBudget, quantile: number, coverage: ListCoverage): number {
  const slots = new Map<number, number[]>();
  let total = 0;
  for (const c of changes) {
    if (c.cls !== 'list' || c.at < window.from || c.at >= window.to) continue;
    const slot = Math.floor((c.at - window.from) / HOUR_MS);
    let counts = slots.get(slot);
    if (!counts) slots.set(slot, (counts = new Array<number>(16).fill(0)));
    counts[c.lists]!++;
    total++;
  }
  if (total === 0) return 0;
  const segments = [...slots].flatMap(([slot, counts]) =>
    hull(coveragePoints(counts, coverage)).map((s) => ({ ...s, block: Math.floor(slot / 24) })),
  );
  return cheapestLag(segments, budget, quantile * total);
}

/**
 * The lowest p-quantile lag (ms) of the detail-only changes made in `window` that detail fetches within `budget` could
 * buy, when `openAt(t)` tickets are open (and so may change) at t.
 */
export function detailLagBound(
  changes: readonly Change[],
  window: Window,
  budget: CoverBudget,
  quantile: number,
  openAt: (t: number) => number,
): number {
  const counts = new Map<number, number>();
  let total = 0;
  for (const c of changes) {
    if (c.cls !== 'detail' || c.at < window.from || c.at >= window.to) continue;
    const slot = Math.floor((c.at - window.from) / HOUR_MS);
    counts.set(slot, (counts.get(slot) ?? 0) + 1);
    total++;
  }
  if (total === 0) return 0;
  const segments = [...counts].map(([slot, mass]) => ({ block: Math.floor(slot / 24), cost: openAt(window.from + slot * HOUR_MS), mass }));
  return cheapestLag(segments, budget, quantile * total);
}

/**
 * The least x at which `need` changes can be covered within the budget. A request covers x of one unit, so c
 * unit-hours cost c·H/x requests: for a given x, the greedy by changes per unit of cost (optimal for a fractional
 * covering under per-block and total caps, a laminar family) says whether `need` is reached, and feasibility only
 * grows with x: a bisection finds the least x.
 */
function cheapestLag(segments: Segment[], budget: CoverBudget, need: number): number {
  segments.sort((a, b) => b.mass * a.cost - a.mass * b.cost);
  const coverable = (x: number): boolean => {
    const scale = x / HOUR_MS;
    const left = budget.perBlock.map((n) => n * scale);
    let total = budget.total * scale;
    let covered = 0;
    for (const s of segments) {
      if (covered >= need) return true;
      const room = Math.min(left[s.block] ?? 0, total);
      if (room <= 0) continue;
      const take = Math.min(1, room / s.cost);
      left[s.block]! -= take * s.cost;
      total -= take * s.cost;
      covered += take * s.mass;
    }
    return covered + 1e-9 >= need;
  };
  let hi = HOUR_MS;
  while (!coverable(hi)) {
    hi *= 2;
    if (hi > 1_000 * DAY_MS) return Infinity;
  }
  let lo = 0;
  for (let i = 0; i < 50; i++) {
    const mid = (lo + hi) / 2;
    if (coverable(mid)) hi = mid;
    else lo = mid;
  }
  return hi;
}

/**
 * Every vertex of one hour's covering polytope: each list covered for a fraction in {0, 1/3, 1/2, 2/3, 1} of the hour
 * (the vertices of the arrangement of the constraints `Σ_{l∈S} c_l = 1` and `0 ≤ c_l ≤ 1` have these coordinates: the
 * determinants of 0/1 matrices of size 4 are at most 3). Returns (cost = Σ c, covered changes).
 */
function coveragePoints(counts: readonly number[], coverage: ListCoverage): Point[] {
  const levels = [0, 1 / 3, 1 / 2, 2 / 3, 1];
  const n = LIST_NAMES.length;
  const points: Point[] = [];
  const c = new Array<number>(n).fill(0);
  const visit = (i: number): void => {
    if (i === n) {
      let mass = 0;
      for (let set = 1; set < 16; set++) {
        if (counts[set] === 0) continue;
        let cover = coverage === 'all' ? 1 : 0;
        for (let l = 0; l < n; l++) {
          if (!(set & (1 << l))) continue;
          cover = coverage === 'all' ? Math.min(cover, c[l]!) : cover + c[l]!;
        }
        mass += counts[set]! * Math.min(1, cover);
      }
      points.push({ cost: c.reduce((s, v) => s + v, 0), mass });
      return;
    }
    for (const v of levels) {
      c[i] = v;
      visit(i + 1);
    }
  };
  visit(0);
  return points;
}

/** The upper concave hull from (0, 0), as increments of falling slope. */
interface Point {
  cost: number;
  mass: number;
}

function hull(points: Point[]): Point[] {
  const best = new Map<number, number>();
  for (const p of points) {
    const key = Math.round(p.cost * 6);
    best.set(key, Math.max(best.get(key) ?? 0, p.mass));
  }
  const sorted = [...best].map(([k, mass]) => ({ cost: k / 6, mass })).sort((a, b) => a.cost - b.cost);
  const chain: Point[] = [];
  for (const p of sorted) {
    while (chain.length >= 2) {
      const a = chain[chain.length - 2]!;
      const b = chain[chain.length - 1]!;
      // b lies on or below the line from a to p: drop it.
      if ((b.mass - a.mass) * (p.cost - a.cost) <= (p.mass - a.mass) * (b.cost - a.cost)) chain.pop();
      else break;
    }
    chain.push(p);
  }
  const out: Point[] = [];
  for (let i = 1; i < chain.length; i++) {
    const mass = chain[i]!.mass - chain[i - 1]!.mass;
    if (mass > 0) out.push({ cost: chain[i]!.cost - chain[i - 1]!.cost, mass });
  }
  return out;
}

/** The bounds the benchmark reports for one window, in ms (the quiet time in hours). */
export interface WorkloadBounds {
  /** List-visible p95: any client (adaptive: follow-up polls free) / a client polling on a schedule. */
  listP95Any: number;
  listP95Schedule: number;
  /** List-visible p95 a schedule could reach with the polls ticket-mirror's own detail requests left over. */
  listP95GivenDetails: number | null;
  /** Detail-only p50 with the whole allowance spent on details (no list poll at all). */
  detailP50AllBudget: number;
  /** Detail-only p50 and p95 with what ticket-mirror's own list polls left over. */
  detailP50GivenPolls: number | null;
  detailP95GivenPolls: number | null;
  /**
   * Full content of list-visible changes, p50 and p95: a client learns of such a change from a list at the earliest
   * (the "any client" covering, at that quantile, with the polls an exact mirror can afford), then needs one detail
   * per changed ticket, from what ticket-mirror's own polls leave; when those details cannot cover the quantile within
   * the day, Infinity.
   */
  contentP50: number | null;
  contentP95: number | null;
  /**
   * Hours of quiet until an exact mirror. Any open ticket may hold a detail-only change no list shows, and no client
   * can tell which: at best it re-reads the O open tickets in turn with the whole allowance (A/24 an hour, within the
   * minute limit), a round of T = O/(A/24) hours, so that at the end each ticket was last read between 0 and T ago.
   * The tickets changed unseen are about half of those with a detail-only change in the last T hours (k); the client
   * re-reads the stalest first and is exact once it has reached the most recently read of them, about T·k/(k+1) hours
   * of quiet. Checked on the hour, and never less than the quiet hour itself.
   */
  quietHoursToExact: number;
}

export interface BoundInputs {
  changes: readonly Change[];
  window: Window;
  /** The limits and reserve of the workload (the allowance is what is left after the reserve). */
  limits: BudgetLimits;
  /** Open tickets at hour h of the run (for the detail bound). */
  openAt: (t: number) => number;
  /** Open tickets when the activity stops, and when it does (for the quiet hours). */
  openAtEnd: number;
  activityEnd: number;
  /** ticket-mirror's own requests per 24 h block of the window, for the conditional bounds. */
  used?: { polls: number[]; details: number[] };
}

/**
 * The bounds for a window. A mirror must fetch every ticket that changed at least once to stay exact; the bounds
 * assume it does so within the same 24 h block (a mirror whose content may lag a day or more is no mirror), which
 * leaves each block `allowedPerDay − (tickets changed in it)` polls.
 */
export function workloadBounds(inp: BoundInputs): WorkloadBounds {
  const { changes, window } = inp;
  const a = allowedPerDay(inp.limits);
  const n = blocksOf(window);
  const changed = Array.from({ length: n }, () => new Set<string>());
  const listChanged = Array.from({ length: n }, () => new Set<string>());
  for (const c of changes) {
    if (c.at < window.from || c.at >= window.to) continue;
    const b = Math.floor((c.at - window.from) / DAY_MS);
    changed[b]!.add(c.ticketId);
    if (c.cls === 'list') listChanged[b]!.add(c.ticketId);
  }
  const pollsLeft = changed.map((s) => Math.max(0, a - s.size));
  const polls: CoverBudget = { perBlock: pollsLeft, total: pollsLeft.reduce((x, y) => x + y, 0) };
  const all: CoverBudget = { perBlock: new Array<number>(n).fill(a), total: a * n };
  const given = (spent: number[] | undefined): CoverBudget | null => {
    if (!spent) return null;
    const left = spent.map((s) => Math.max(0, a - s));
    return { perBlock: left, total: left.reduce((x, y) => x + y, 0) };
  };
  const pollsGiven = given(inp.used?.details);
  const fetchesGiven = given(inp.used?.polls);
  // The content of a list-visible change: learnt from a list, then one detail per changed ticket and block. The share
  // of those tickets the details left by ticket-mirror's polls can fetch at all caps the quantile that can be covered.
  const content = (q: number): number | null => {
    const details = fetchesGiven ?? all;
    let need = 0;
    let can = 0;
    listChanged.forEach((s, b) => {
      need += s.size;
      can += Math.min(s.size, details.perBlock[b] ?? 0);
    });
    if (need > 0 && can / need < q) return Infinity;
    return listLagBound(changes, window, polls, q, 'any');
  };
  const perHour = Math.max(a / 24, 1e-9);
  const perMinute = allowedPerMinute(inp.limits);
  const roundMs = Math.max((inp.openAtEnd / perHour) * HOUR_MS, (inp.openAtEnd / perMinute) * MINUTE_MS);
  const lastRound = new Set<string>();
  for (const c of changes) if (c.cls === 'detail' && c.at >= inp.activityEnd - roundMs && c.at < inp.activityEnd) lastRound.add(c.ticketId);
  const k = lastRound.size / 2;
  const quietMs = (roundMs * k) / (k + 1);
  return {
    listP95Any: listLagBound(changes, window, polls, 0.95, 'any'),
    listP95Schedule: listLagBound(changes, window, polls, 0.95, 'all'),
    listP95GivenDetails: pollsGiven && listLagBound(changes, window, pollsGiven, 0.95, 'all'),
    detailP50AllBudget: detailLagBound(changes, window, all, 0.5, inp.openAt),
    detailP50GivenPolls: fetchesGiven && detailLagBound(changes, window, fetchesGiven, 0.5, inp.openAt),
    detailP95GivenPolls: fetchesGiven && detailLagBound(changes, window, fetchesGiven, 0.95, inp.openAt),
    contentP50: content(0.5),
    contentP95: content(0.95),
    quietHoursToExact: Math.max(1, Math.ceil(quietMs / HOUR_MS - 1e-9)),
  };
}
