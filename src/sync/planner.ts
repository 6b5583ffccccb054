import { LIST_NAMES, type ListName } from '../api/endpoints.ts';
import { BUCKET_MS, BUCKETS_PER_DAY, HISTORY_BUCKETS, HOURS_AHEAD, type ListState, type PlannerHistory } from '../model/plannerHistory.ts';
import { DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS } from '../time.ts';
import type { BudgetSnapshot } from './budget.ts';

/**
 * The planner: a pure function of (mirror state, budget, recent history, now) that decides what the next pass requests.
 *
 * ## The arithmetic of the quota
 * With 1,440 requests a day and 10 % reserved for other clients of the token, A = 1,296 a day: 0.9 a minute — but no
 * number below is fixed to that: every share, floor and age derives from A, the minute allowance M, the activity the
 * mirror has seen and its number of open tickets O, so a token with ten times the limits is spent on freshness too.
 * Lists carry no `updated_at`, so the mirror learns of changes by polling them, and of everything else by re-reading
 * details. Every request has to be placed where it buys the most freshness (`npm run bench` measures how well it does,
 * against a lower bound no client can beat, on four workloads and two budgets):
 *
 * 1. **List polls** (live), all four lists together (a *sweep*), or between sweeps a *probe* (see `probeMinutes`).
 *    A list-visible change is reflected once every list it changed has been polled, and most changes show in two or
 *    three lists (a resolution leaves the open list and joins the resolved one), so a list polled less often than the
 *    others would hold back the changes it shares with them (per-list intervals, tried on the bench's recorded weeks
 *    at the same polls a minute, never lowered the p95); a sweep is also the only moment at which a ticket absent
 *    from every list can be called missing. A probe polls the two lists nearly every change shows in, and the other
 *    two only when they show one: the same polls buy shorter waits while changes are sparse.
 *    Sweeps follow the activity: the interval is T ∝ λ^−α, where λ is the rate of list changes expected in the
 *    current hour (the same hour a week ago — or yesterday, without a week of history — or the last half hour if
 *    busier). α = ½ would minimise the mean lag (the square-root law); a tail quantile wants more evenness, because
 *    quiet hours carry more than 5 % of a week's changes (nights and weekends): α = 0.3. T is normalised so that the
 *    busiest of the last seven days would spend the poll budget P: 15 % of A while the backfill runs; afterwards
 *    what the forecast live details D leave, F = A − 1.2·D, split with revalidation in the ratio of the changes only
 *    each can find (1 : ρ, ρ = ½ detail-only changes per list change), so P = F·2/3 (see `shares`); when the lists
 *    ask for more details than the allowance pays, D counts only as many as leave F at 15 % of A, and the rest wait
 *    as a backlog (see `detailScale`). T is never shorter than a sweep paid by the polls' share of the minute
 *    allowance (4 / (M·P/A) minutes) nor longer than 3× the even interval (P spread evenly over the day).
 * 2. **Details a list asked for** (live): a new ticket, a changed status or unread flag, a ticket joining or leaving a
 *    list. Fetched right away, oldest first, in the pass of the sweep that found them — as long as the polls of the
 *    next 24 h keep their slots; background leaves the slots of the details a sweep may bring (see pacing).
 * 3. **Backfill** (background): never-fetched tickets, open before resolved, newest first.
 * 4. **Revalidation** (background): details whose changes no list shows (a message on an unread ticket, a priority
 *    change), most likely changed first: see db/repos/work.ts. After the backfill it is paced with the activity, at a
 *    rate ∝ √λ̄(h), λ̄ the mean rate over the round of the open tickets that ends at h (see `paced`): the detail-only
 *    changes come when the list changes do, and a re-read finds those made since the ticket's last read. A detail
 *    read within the current sweep interval is not re-read (`revalidateMinAgeMs`): within it the sweeps find what the
 *    lists show, and re-reading faster buys nothing; an idle plan wakes when the stalest detail reaches that age.
 *
 * ## Pacing in a rolling window
 * A request sent now frees its slot 24 h later, and the slots that free up in the coming hours are those used in the
 * same hours yesterday (known from the ledger). So a class of work may spend now only what leaves, for every horizon τ
 * of the next 24 h, `left now + slots freed within τ ≥ demand of the classes above it within τ`: details keep the
 * forecast polls' slots, background keeps the forecast polls' and details' (a list change brings about half a detail),
 * with a 20 % margin, and the slots of the details one sweep may bring. The current hour counts only what is still to
 * come in it (the sweeps due before it ends, the rest of its details): what it sent is already in the window, and
 * counting it twice held back, in a full window, a whole hour of slots from the details a list asked for. Each hour is
 * checked at its start (its first sweep needs its slots at once) and at its end with the slots it frees. The forecast
 * is the activity of the same hours a week ago (or yesterday), lowered when the recent past fell short of theirs (a
 * quiet spell the history did not foresee): by the last two hours' shortfall, fading over 12 hours, and by the last
 * day's, fading over two days until two hours bring activity again. An hour never seen (the rest of a first day) is
 * forecast at a prior while the backfill runs, and after it at the current hour's rate. At the prior (6 changes an
 * hour), a first afternoon kept next to nothing, the morning's sweeps spent its slots, and none freed before the next
 * midnight (on `abundant`, the open list read 80–159 times an hour from 1 to 6 pm against ~225 on later days). While
 * the backfill runs its hours are the backfill's, whose demand can be far above the quota: there the current rate
 * handed the lists' share to the details the forecast brought (on `large`, list-visible p50 21 min → 3 h).
 * Background keeps a share of A — 35 % while the backfill runs, afterwards revalidation's part of F (what no list
 * shows must come round too) — and when details and background both wait, background gets its share of what is free,
 * rounded down (a single free slot goes to the detail a list asked for). Nothing idles that live work will not need;
 * live work always finds room. On a first day there is no history to forecast from, so background
 * is also held to the hourly average (A/24 an hour with everything else: it cannot burst), and so is a backlog of
 * details beyond the hour's forecast on any day (at most 2.5 × A/24 an hour).
 *
 * The planner reads the history in clock buckets (half hours, hours), so between known instants — a bucket boundary,
 * a list falling due, a request leaving the window — its inputs do not change: an idle plan says when the next such
 * instant is (`wakeAt`).
 */

export const POLICY = {
  /**
   * Share of the daily allowance for list polls while never-fetched tickets remain; and after the backfill, the least
   * that what the live details leave (F) may fall to, when the lists ask for more details than the allowance pays
   * (see `detailScale`).
   */
  minPollShare: 0.15,
  /**
   * Detail-only changes (no list shows them) expected per list-visible change, until the mirror has measured it: after
   * the backfill, what live work leaves is split between sweeps and revalidation in the ratio of the changes only each
   * can find, 1 : ρ.
   */
  unseenPerListChange: 0.5,
  /** Exponent α of the sweep interval T ∝ λ^−α (λ: list changes per hour expected now). */
  rateExponent: 0.3,
  /**
   * The longest sweep interval, as a multiple of the even one (the poll budget spread evenly over the day): a quiet
   * hour is swept less often, never so rarely that its few changes wait for hours. The shortest is what the minute
   * allowance pays for at the polls' share of it.
   */
  maxSweepStretch: 3,
  /**
   * List changes per hour assumed for an hour never seen, before the first poll or while the backfill runs (after it,
   * the current hour's rate), and the least rate ever assumed.
   */
  priorChangesPerHour: 6,
  minChangesPerHour: 0.5,
  /** Live details a list change brings: a changed ticket usually shows in two lists. */
  detailsPerChange: 0.5,
  /** The last two hours' shortfall fades over this many hours; changes added to both sides of its ratio, per 2 h. */
  quietSpellHours: 12,
  quietSpellSlack: 2,
  /** The last day's shortfall fades over this many hours, while the spell lasts. */
  quietDayHours: 48,
  /** Margin on the forecast live demand. */
  liveMargin: 1.2,
  /**
   * Background stops once this multiple of the hourly average (A/24) has been sent in a clock hour: the forecast is
   * only as good as the history behind it, and on a first day there is none, so nothing is spent in a burst.
   */
  maxHourlyShare: 2.5,
  /** The same, while less than a day of history exists. */
  maxHourlyShareFirstDay: 1,
  /** Polls may exceed their daily share by this factor before the sweeps are stretched. */
  pollOverspend: 1.1,
  /** Background share of the allowance kept while the backfill runs. */
  minBackgroundShareBackfill: 0.35,
  /**
   * Lists a list-visible change shows in, on average (a new ticket joins open and unassigned, a resolution leaves open
   * and joins resolved): the history counts changes per list, a probe sees a ticket's change once.
   */
  listsPerChange: 2,
  /** With probes between them, a full sweep comes at least once every this many sweep intervals. */
  backstopSweeps: 3,
} as const;

/**
 * The lists a probe polls between sweeps: together they show every change of a ticket's status, unread flag or
 * arrival, and every assignment from or to nobody — all but a reassignment between the user and another agent, which
 * shows in `self` alone. On the bench's recorded weeks 94 % of the list-visible changes show in one of them.
 */
export const PROBE_LISTS: readonly ListName[] = ['open', 'unassigned'];

export interface PlannerInput {
  now: number;
  budget: BudgetSnapshot;
  lists: Record<ListName, ListState>;
  /** Tickets whose detail a list asked for, fetchable now. */
  dueCount: number;
  /** Never-fetched tickets, fetchable now. */
  backfillCount: number;
  /** Tickets in the open list: the ones whose details may change without a list showing it. @default 0 */
  openCount?: number;
  /** When the stalest detail revalidation could pick was read; null when there is none. @default unknown: some may be */
  oldestDetailAt?: number | null;
  /** The same among the open tickets: a round of them takes at least its age. @default null */
  oldestOpenDetailAt?: number | null;
  /** Activity and request history (db/repos/work.ts `plannerInputs`). */
  history: PlannerHistory;
}

export interface Plan {
  polls: ListName[];
  /** True when the polls cover all four lists: a sweep, after which absent tickets are missing. */
  sweep: boolean;
  due: number;
  backfill: number;
  revalidate: number;
  /**
   * Lists to poll in the same pass when the polls of this plan, a probe (PROBE_LISTS), show a change: the rest of a
   * sweep. Empty for any other plan.
   */
  followUp: ListName[];
  /** Interval of the sweeps (all four lists) at this hour's activity, minutes. */
  sweepMinutes: number;
  /**
   * Interval of the probes (PROBE_LISTS alone) between sweeps, minutes; null when probing does not pay at this hour's
   * activity (nearly every probe would find a change, and its follow-up make it a sweep anyway).
   */
  probeMinutes: number | null;
  /**
   * A detail read more recently than this is not re-read (ms): the current sweep interval. Within it a list-visible
   * change is found by the next sweep anyway, and re-reading the same details faster than the lists are read buys
   * less than the sweep does; above it every open ticket is worth a look, stalest and likeliest first.
   */
  revalidateMinAgeMs: number;
  /**
   * An open ticket's detail read longer ago than this is re-read first, stalest first, whatever its weight (ms): twice
   * the round of the open tickets at the background the day allows. Every open ticket must come round, or the mirror is
   * never exact; ranked by weight alone, a quiet ticket of a class that rarely changes waited behind livelier ones for
   * days (on `standard`, one change of a Sunday still unseen after 48 quiet hours).
   */
  revalidateMaxAgeMs: number;
  /** Daily figures behind the decision, for the start-up log and `status`. */
  daily: {
    allowed: number;
    polls: number;
    /** The live details slots are kept for: all those the activity forecasts, unless the allowance cannot pay them. */
    liveDetails: number;
    /** The live details the activity forecasts (above liveDetails when the lists ask for more than the allowance pays). */
    askedDetails: number;
    background: number;
    pollBudget: number;
  };
  /**
   * The earliest instant at which a pass could request anything, unless the mirror learns something new first: `now`
   * when this plan requests something. A loop may sleep until then (the benchmark skips passes that would be idle).
   */
  wakeAt: number;
  /** When the next list falls due (now when one is due already): a fleet queues the pass for it ahead of background work. */
  nextPollAt: number;
}

export function planPass(input: PlannerInput): Plan {
  const { now, budget } = input;
  const A = budget.dailyAllowed;
  const backfilling = input.backfillCount > 0;
  const unscaled = { minuteAllowed: budget.minuteAllowed, allowed: A, afterBackfill: !backfilling, detailScale: 1 };
  // Live details follow the list changes, whatever the polls: forecast them first (the schedule's poll budget does not
  // enter that part), then split what they leave.
  const forecastDetails = sweepSchedule(input.history, A, now, unscaled)
    .liveForecast()
    .reduce((sum, h) => sum + h.details, 0);
  const shape = { ...unscaled, detailScale: detailScale(A, forecastDetails) };
  const liveDetailsPerDay = forecastDetails * shape.detailScale;
  const { pollBudget, floor } = shares(A, liveDetailsPerDay, input.openCount ?? 0, backfilling);
  // The sweeps are paced to what the window can sustain beside the details the activity forces: when, at some horizon
  // of the next 24 h, the slots left and freed by then fall short of the forecast sweeps and details up to then (after
  // a backfill, which filled the window for the next 24 h; after a burst), every interval is stretched by that shortfall
  // until the slots free. Otherwise the sweeps, which are never held back, would take every slot as it frees, and the
  // details a list asked for — reserved behind them — would wait hours.
  const unstretched = sweepSchedule(input.history, pollBudget, now, shape, 1);
  const sustain = sustainable(
    budget.dailyLeft,
    input.history.freeing,
    unstretched.liveForecast(now, nextSweepAt(input, unstretched.intervalAt(0))),
  );
  const schedule = sustain < 1 ? sweepSchedule(input.history, pollBudget, now, shape, 1 / sustain) : unstretched;
  const sweepMinutes = schedule.intervalAt(0);
  const probeEvery = probeMinutes(sweepMinutes, schedule.rateAt(0), schedule.minInterval);
  const probeIntervals = listIntervals(sweepMinutes, probeEvery);

  // 1. Polls due by their interval: all four at once (a sweep), or the probe's lists between sweeps — unless one list
  // failed last time, which is asked for again alone.
  const due = LIST_NAMES.filter((l) => listDueAt(input, probeIntervals, l) <= now);
  const sweep = due.includes('resolved');
  // A probe waits while details a list asked for wait: theirs is a change known, a probe only looks for one, and in a
  // full window the probes took the slots as they freed while those details waited (on `small`, a new ticket's content
  // p95 went from 8 to 18 min). Until they are fetched the probe's lists keep the sweep's backstop interval, so that
  // an idle plan wakes for a freed slot, not at once.
  // When the lists ask for more details than the allowance pays (`detailScale`), only while they are no more than the
  // hour's forecast brings: a backlog beyond it is not fetched by holding the probe, and held, no probe ever went.
  // The next 24 h's live work in whole hours (the details do not depend on the sweeps' stretch).
  const fullHour = unstretched.liveForecast();
  const waiting = input.dueCount > 0 && (shape.detailScale === 1 || input.dueCount <= Math.ceil(fullHour[0]?.details ?? 0) + 1);
  const holdProbe = !sweep && probeEvery !== null && waiting && due.length > 0 && due.every((l) => PROBE_LISTS.includes(l));
  const every = holdProbe ? listIntervals(sweepMinutes, null, POLICY.backstopSweeps) : probeIntervals;
  let polls: ListName[] = sweep ? [...LIST_NAMES] : holdProbe ? [] : due;
  let minuteLeft = budget.minuteLeft;
  let dailyLeft = budget.dailyLeft;
  polls = polls.slice(0, Math.max(0, Math.min(minuteLeft, dailyLeft)));
  // The slots of a probe's follow-up are kept from this pass's details and background: it comes before them.
  const probing = probeEvery !== null && polls.length > 0 && polls.every((l) => PROBE_LISTS.includes(l));
  const followUp = probing ? LIST_NAMES.filter((l) => !polls.includes(l)).slice(0, Math.max(0, Math.min(minuteLeft, dailyLeft) - polls.length)) : [];
  const pollsNow = polls.length + followUp.length;
  minuteLeft -= pollsNow;
  dailyLeft -= pollsNow;

  // What live work will need over the next 24 h (never more than leaves background its floor). The current hour counts
  // only what is still to come in it: the sweeps due before it ends (after this pass's) and its remaining share of the
  // details. What it already sent is in the window (`dailyLeft`): counting it again in the demand would hold back a
  // whole hour of slots, and in a full window the details a list asked for would wait for the next burst of slots.
  // The reservations follow the unstretched sweeps: a stretch lets the window catch up, it must not hand the polls'
  // slots to the details (which would stretch the sweeps further).
  const plannedMinutes = unstretched.intervalAt(0);
  const forecast = unstretched.liveForecast(now, polls.length > 0 ? now + plannedMinutes * MINUTE_MS : nextSweepAt(input, plannedMinutes));
  const dailyLive = fullHour.reduce((s, h) => s + h.polls + h.details, 0) * POLICY.liveMargin;
  const backgroundPerDay = Math.max(A - dailyLive, backfilling ? floor : 0);
  const keep = POLICY.liveMargin * Math.min(1, (A - floor) / dailyLive);
  const sweepCost = LIST_NAMES.length * keep;
  const liveDemand = forecast.map((h) => (h.polls + h.details) * keep);

  // 2. What the polls of the next 24 h will not need (until a slot used now frees again, nothing else refills the
  // window), for details: lists asked for some, background wants some.
  const beside = (polls: readonly HourForecast[]) =>
    Math.floor(Math.max(0, Math.min(minuteLeft, dailyLeft, headroom(dailyLeft, input.history.freeing, polls.map((h) => h.polls * keep), sweepCost))));
  const room = beside(forecast);
  // The details a list asked for are reserved behind the sweeps that will run: the stretched ones. Behind the
  // unstretched forecast, a window still full from the backfill left them no room for hours while the stretched
  // sweeps went on polling, and every change those sweeps found waited for the first slots to free.
  const dueRoom =
    schedule === unstretched ? room : beside(schedule.liveForecast(now, polls.length > 0 ? now + sweepMinutes * MINUTE_MS : nextSweepAt(input, sweepMinutes)));
  // What the hour may spend beyond its forecast live work (the hourly cap): background, and a backlog of details.
  const hourCap = (A / 24) * hourlyShare(input.history, now) - input.history.sentThisHour - pollsNow;
  // Background may take what live work will not need over the next 24 h, within the hourly cap and the pace.
  // It also leaves, beyond the forecast, the slots of the details a list may ask for before the next slots free (as many
  // as go first in a pass, below): a detail a list asked for is the cheapest freshness there is, and in a window that
  // background keeps full it would otherwise wait for the next slot to free.
  const dueReserve = Math.ceil((fullHour[0]?.details ?? 0) * keep) + 1;
  const unpaced = Math.min(room, headroom(dailyLeft, input.history.freeing, liveDemand, sweepCost) - dueReserve, hourCap);
  // After the backfill and the first day, background is revalidation, and it is paced with the activity (`paced`),
  // counting its own requests of the hour; `spare` is what background may take now beyond every reservation of the next
  // 24 h, as if the hour had re-read nothing.
  const backgroundSent = input.history.backgroundThisHour;
  const spare = Math.max(0, unpaced + backgroundSent);
  const pace =
    !backfilling && hourlyShare(input.history, now) === POLICY.maxHourlyShare
      ? paced(now, A, input.openCount ?? 0, input.oldestOpenDetailAt ?? null, fullHour, schedule, spare)
      : null;
  const paceCap = pace === null ? Infinity : pace.spendBy(now) - backgroundSent;
  const backgroundMay = Math.floor(Math.max(0, Math.min(unpaced, paceCap)));
  // Only the pace holds background back: an idle plan wakes when it lets the next request go.
  const paceBinds = pace !== null && unpaced >= 1 && paceCap < 1;
  // Details a list asked for go first, as many as the hour's forecast brings (and one more): the list showed a change,
  // background only guesses. Of the room beyond those — a busy day's backlog — background keeps its share, rounded
  // down: never starved by a busy day, whatever the ledger says (its kinds are not needed). That backlog is beyond
  // what the forecast reserved slots for, so it keeps to the hourly cap as background does: spent in one burst (on a
  // first day, before the forecast has anything to go by) it would take the slots of the coming hours' polls.
  // A pass that polls may find changes: of the slots kept for them (dueReserve), those of the details its polls may
  // bring — the hour's forecast over the time since the open list was last read, and one more — are its to use at
  // once, after the polls, for the details they make due (the engine counts them then, and spends no more than are
  // due; the rest is not spent). Otherwise a change a poll found waited for the next pass, with a slot free all along.
  const sinceOpen = Math.min(HOUR_MS, now - (input.lists.open.lastPolledAt ?? now - HOUR_MS));
  const mayBring = pollsNow > 0 ? Math.ceil(((fullHour[0]?.details ?? 0) * keep * sinceOpen) / HOUR_MS) + 1 : 0;
  const first = Math.min(Math.max(input.dueCount, mayBring), dueRoom, dueReserve);
  const rest = Math.max(0, room - first);
  const share = Math.min(1, floor / Math.max(1, A - pollBudget));
  const backlog = Math.min(input.dueCount - first, rest - Math.min(backgroundMay, Math.floor(rest * share)), Math.floor(hourCap) - first);
  const dueDetails = first + Math.max(0, backlog);
  // 3 & 4. Background.
  const revalidateMinAgeMs = sweepMinutes * MINUTE_MS;
  // Revalidation only once some detail is old enough (see revalidateMinAgeMs): until then re-reading buys nothing.
  const oldest = input.oldestDetailAt;
  const revalidatable = oldest === undefined || (oldest !== null && oldest <= now - revalidateMinAgeMs);
  const backgroundRoom = Math.max(0, room - dueDetails);
  const backfill = Math.min(backgroundMay, backgroundRoom, input.backfillCount);
  const revalidate = revalidatable ? Math.max(0, Math.min(backgroundMay, backgroundRoom) - backfill) : 0;
  const background = backfill + revalidate;
  const idle = polls.length + dueDetails + background === 0;
  return {
    polls,
    sweep: sweep && polls.length === LIST_NAMES.length,
    followUp,
    due: dueDetails,
    backfill,
    revalidate,
    sweepMinutes,
    probeMinutes: probeEvery,
    revalidateMinAgeMs,
    revalidateMaxAgeMs: Math.max(revalidateMinAgeMs, Math.min(HISTORY_BUCKETS * BUCKET_MS, 2 * roundMs(input.openCount ?? 0, backgroundPerDay))),
    daily: {
      allowed: A,
      polls: Math.round(fullHour.reduce((s, h) => s + h.polls, 0)),
      liveDetails: Math.round(fullHour.reduce((s, h) => s + h.details, 0)),
      askedDetails: Math.round(forecastDetails),
      background: Math.round(backgroundPerDay),
      pollBudget: Math.round(pollBudget),
    },
    wakeAt: idle
      ? wakeAt(input, every, revalidateMinAgeMs, revalidatable && paceBinds ? pace.slotAt(backgroundSent + 1) : null, [
          unstretched.forecastStepAt(now, nextSweepAt(input, plannedMinutes)),
          schedule.forecastStepAt(now, nextSweepAt(input, sweepMinutes)),
        ])
      : now,
    nextPollAt: nextPollAt(input, every),
  };
}

/**
 * Probes between sweeps. A list-visible change is found by the first poll of a list it shows in, and most show in
 * open or unassigned (PROBE_LISTS); a probe polls those two, and when it finds a change the engine polls the other two
 * in the same pass (`followUp`): that change is then reflected in every list as by a sweep. A quiet interval costs 2
 * requests instead of 4, so for the same polls an hour the lists are read more often, and a change waits less; a
 * full sweep still comes every `backstopSweeps` sweep intervals at least (self-only changes, tickets gone from every
 * list). The probe interval t is the shortest whose expected cost, with the follow-ups (2 · p(t), p = min(1, μt) the
 * most a probe finds a change with, μ the probe-visible changes a minute: λ / 60 / listsPerChange) and the
 * backstop sweeps not made redundant by a follow-up, stays within what the sweep schedule spends at this hour
 * (4 · 60 / T an hour): the poll budget and every reservation built on it stay as they are. When even t = T would cost
 * more — about one probe in three finding a change — probes do not pay, and the plan sweeps every T (null).
 *
 * Measured on the bench's recorded `small` week (the same polls a minute): list-visible p95 6.8 → 4.5 min, p50 3.6 →
 * 2.4 min, against sweeps at a constant interval.
 */
function probeMinutes(sweepMinutes: number, changesPerHour: number, minSweep: number): number | null {
  const spend = (LIST_NAMES.length * 60) / sweepMinutes;
  const perMinute = changesPerHour / 60 / POLICY.listsPerChange;
  const rest = LIST_NAMES.length - PROBE_LISTS.length;
  const backstop = POLICY.backstopSweeps * sweepMinutes;
  const cost = (t: number): number => {
    // At most μt, whatever the arrivals: evenly spaced changes reach it (Poisson ones, 1 − e^(−μt), do not).
    const p = Math.min(1, perMinute * t);
    const followUps = (60 / t) * p;
    return (60 / t) * (PROBE_LISTS.length + rest * p) + (60 / backstop) * LIST_NAMES.length * Math.exp((-followUps * backstop) / 60);
  };
  if (cost(sweepMinutes) > spend) return null;
  // The probes' share of the minute allowance bounds them as it bounds the sweeps.
  const shortest = (minSweep * PROBE_LISTS.length) / LIST_NAMES.length;
  if (cost(shortest) <= spend) return shortest;
  let lo = shortest;
  let hi = sweepMinutes;
  for (let i = 0; i < 40; i++) {
    const mid = (lo + hi) / 2;
    if (cost(mid) <= spend) hi = mid;
    else lo = mid;
  }
  return hi;
}

/**
 * Each list's interval (minutes): with probes, PROBE_LISTS every probe and the others every backstop sweep; without,
 * every list every `sweeps` sweep intervals.
 */
function listIntervals(sweepMinutes: number, probeEvery: number | null, sweeps = 1): (list: ListName) => number {
  if (probeEvery === null) return () => sweeps * sweepMinutes;
  return (list) => (PROBE_LISTS.includes(list) ? probeEvery : POLICY.backstopSweeps * sweepMinutes);
}

/**
 * The instant `list` falls due at its interval (a second early: a poll's instant is not to the millisecond), or
 * -Infinity when it was never polled. The one expression both the polls due now and nextPollAt read: computed twice
 * in two ways, now − last ≥ interval − 1 s and last + interval − 1 s, they differed in the last bits of a double,
 * and a plan made at its own nextPollAt found the list not yet due.
 */
function listDueAt(input: PlannerInput, every: (list: ListName) => number, list: ListName): number {
  const last = input.lists[list].lastPolledAt;
  return last === null ? -Infinity : last + every(list) * MINUTE_MS - SECOND_MS;
}

/** The instant the first list falls due at its interval (never before now). */
function nextPollAt(input: PlannerInput, every: (list: ListName) => number): number {
  return Math.max(input.now, Math.min(...LIST_NAMES.map((l) => listDueAt(input, every, l))));
}

/**
 * When an idle plan could stop being idle by the passing of time alone: at the next half-hour boundary (the history's
 * buckets and the forecast's hours step there), when a list falls due, when a request leaves the 24 h window (the
 * budget and the spare slots grow), when the first day of history is complete, when a ticket's retry back-off ends,
 * when the minute window frees a slot, or when the stalest detail becomes old enough to re-read. Between those instants every input of the plan is constant.
 * Always later than now: an idle plan has nothing to do at once.
 */
function wakeAt(input: PlannerInput, every: (list: ListName) => number, revalidateMinAgeMs: number, paceAt: number | null, forecastSteps: Array<number | null>): number {
  const { now, history, budget } = input;
  const candidates = [(Math.floor(now / BUCKET_MS) + 1) * BUCKET_MS];
  // The live work the current hour still reserves shrinks: the slots it kept may go to background.
  for (const t of forecastSteps) if (t !== null && t > now) candidates.push(t);
  // The pace of revalidation lets one more request go.
  if (paceAt !== null && paceAt > now) candidates.push(paceAt);
  // The stalest detail becomes old enough to re-read.
  const oldest = input.oldestDetailAt;
  if (oldest != null && oldest + revalidateMinAgeMs > now) candidates.push(oldest + revalidateMinAgeMs);
  // A list falls due. One overdue already is held by the budget (or, a probe, by the details a list asked for): the
  // instants above and below say when that can change. Counted, it woke an idle plan at once, and the loop passed
  // every slot of the minute allowance while the day's window stayed full (on `large`, a pass a second for hours).
  const pollAt = nextPollAt(input, every);
  if (pollAt > now) candidates.push(pollAt);
  if (history.nextExpiryAt !== null && history.nextExpiryAt > now) candidates.push(history.nextExpiryAt);
  // The first day of history ends: the hourly cap changes.
  if (history.firstPollAt !== null && history.firstPollAt + DAY_MS > now) candidates.push(history.firstPollAt + DAY_MS);
  if (history.nextRetryAt !== null && history.nextRetryAt > now) candidates.push(history.nextRetryAt);
  // The budget's nextSlotAt is 1 ms after the instant its window lets the slot go (see sync/budget.ts).
  if (budget.nextSlotAt > now) candidates.push(Math.max(budget.nextSlotAt - 1, now + 1));
  return Math.min(...candidates);
}

/**
 * The share of the forecast live details D the plan reserves slots for: all of them, unless they would leave the
 * polls and revalidation (F = A − 1.2·D) less than the polls' least share of A (`minPollShare`, what they get while the
 * backfill runs), when as many as leave it. Those beyond are fetched as a backlog, as slots free (`planPass`), but no
 * slot is kept for them: the lists asked for more details than the allowance pays, and reserving for all of them gave
 * the polls nothing — in the planner's closed loop after the backfill with 3,000 open tickets and 20 changed in each
 * sweep of the working hours (some 2,000 details a weekday), 870 min without a poll (now at most 102). The probes no
 * longer wait for such a backlog either (see `holdProbe`).
 */
function detailScale(A: number, forecastDetails: number): number {
  const payable = (A * (1 - POLICY.minPollShare)) / POLICY.liveMargin;
  return forecastDetails > payable ? payable / forecastDetails : 1;
}

/**
 * The daily shares, from the allowance A, the live details the activity forecasts (D) and the open tickets (O).
 * While the backfill runs: polls 15 %, background at least 35 % (the backfill must end). Afterwards, what the live
 * details leave, F = A − 1.2·D, is split between sweeps (P) and revalidation (R) in the ratio of the changes only each
 * can find, 1 : ρ — but re-reading each open ticket more often than the lists are swept buys nothing (see
 * `revalidateMinAgeMs`), so R ≤ O·P/4, which only binds for a mirror of a handful of open tickets.
 */
function shares(A: number, liveDetailsPerDay: number, open: number, backfilling: boolean): { pollBudget: number; floor: number } {
  if (backfilling) return { pollBudget: A * POLICY.minPollShare, floor: A * POLICY.minBackgroundShareBackfill };
  const free = Math.max(0, A - POLICY.liveMargin * liveDetailsPerDay);
  const rho = POLICY.unseenPerListChange;
  const sweepCost = LIST_NAMES.length;
  const floor = free * Math.min(rho / (1 + rho), open / (open + sweepCost));
  return { pollBudget: Math.max(sweepCost, free - floor), floor };
}

interface HourForecast {
  polls: number;
  details: number;
}

interface SweepSchedule {
  /** Sweep interval (minutes) in the clock hour `hoursAhead` from the current one. */
  intervalAt(hoursAhead: number): number;
  /** λ: list changes per hour expected in the clock hour `hoursAhead` from the current one. */
  rateAt(hoursAhead: number): number;
  /** The shortest sweep interval (minutes): a sweep paid for by the polls' share of the minute allowance. */
  minInterval: number;
  /**
   * The mean λ over the `span` clock hours ending with the one `hoursAhead` from the current one: the hours before
   * the current one as observed (those not observed left out), the rest as expected.
   */
  meanRateOver(hoursAhead: number, span: number): number;
  /**
   * Expected live requests (polls and details) in the current clock hour and each of the next 23. Given `now` and the
   * instant the next sweep falls due, the current hour counts only the sweeps still to make in it and its remaining
   * share of the details; otherwise whole hours.
   */
  liveForecast(now?: number, nextSweepAt?: number): HourForecast[];
  /**
   * When the current hour's part of `liveForecast(now, nextSweepAt)` next changes as time alone goes on (its details
   * drop by one, or an overdue sweep no longer fits in it); null when not before the hour ends.
   */
  forecastStepAt(now: number, nextSweepAt: number): number | null;
}

/**
 * The sweep schedule from the activity history. λ(h), the list changes per hour expected in the clock hour h hours from
 * the current one, is that hour a week ago (yesterday without a week of history), or for the current hour the current or
 * the last half hour if busier; the history's part lowered by a quiet spell it did not foresee; an hour never seen, the
 * current hour's after the backfill (`afterBackfill`), a prior before. T(λ) = c·λ^−α, with c such
 * that the busiest of the last seven days (per its own hourly rates) would have used `pollBudget` polls; stretched
 * when the last 24 h already used more than their share.
 */
function sweepSchedule(
  h: PlannerHistory,
  pollBudget: number,
  now: number,
  shape: { minuteAllowed: number; allowed: number; afterBackfill: boolean; detailScale: number },
  sustain = 1,
): SweepSchedule {
  const bucketNow = Math.floor(now / BUCKET_MS);
  const hourNow = Math.floor(now / HOUR_MS);
  const known = (k: number) => h.firstPollAt !== null && h.firstPollAt <= (bucketNow - k) * BUCKET_MS && k < h.changes.length;
  const changesIn = (k: number): number | null => (known(k) ? h.changes[k]! : null);
  const rate = (k: number): number | null => (known(k) ? 2 * h.changes[k]! : null);
  /** Changes per hour in a past clock hour, or null when it was not fully observed. */
  const hourRate = (hour: number): number | null => {
    const a = rate(bucketNow - 2 * hour);
    const b = rate(bucketNow - 2 * hour - 1);
    return a === null || b === null ? null : (a + b) / 2;
  };
  const recent = h.firstPollAt === null ? null : 2 * Math.max(h.changes[0] ?? 0, known(1) ? h.changes[1]! : 0);
  // A quiet spell the history did not foresee (a holiday, activity that stopped) lowers the forecast, by how much the
  // recent past fell short of what the same hours a week ago (or yesterday) saw: the last two hours, back to the history
  // over 12 hours; the last day, back over two days (`quietDayHours`). Otherwise slots stay reserved for changes that do
  // not come, and revalidation starves: with the two hours alone, a quiet working day's evening, quiet a week ago too,
  // brought the next day's busy forecast back whole, and a quiet Monday and Tuesday re-read at a third of the
  // allowance; with the day's back over one day, the next day's working hours were still forecast at two thirds of a
  // working day's, and on `standard` the mirror was not exact after 48 quiet hours. The day's shortfall holds only
  // while the spell lasts: two hours that bring half of what they foresaw end it.
  const tally = (buckets: number): { lately: number; foreseen: number } => {
    let lately = 0;
    let foreseen = 0;
    for (let k = 1; k <= buckets; k++) {
      const observed = changesIn(k);
      if (observed === null) continue;
      lately += observed;
      foreseen += changesIn(k + 7 * BUCKETS_PER_DAY) ?? changesIn(k + BUCKETS_PER_DAY) ?? observed;
    }
    return { lately, foreseen };
  };
  const shortfallOver = (buckets: number, { lately, foreseen } = tally(buckets)): number => {
    const slack = (POLICY.quietSpellSlack * buckets) / 4;
    return Math.min(1, (lately + slack) / (foreseen + slack));
  };
  const lastTwo = tally(4);
  const shortHours = shortfallOver(4, lastTwo);
  // A spell is over once the last two hours brought activity, at least half what they foresaw: the day's shortfall
  // then no longer holds the forecast down.
  const resumed = lastTwo.lately > POLICY.quietSpellSlack && 2 * lastTwo.lately >= lastTwo.foreseen;
  const shortDay = resumed ? 1 : shortfallOver(BUCKETS_PER_DAY);
  const lowered = (hoursAhead: number): number =>
    Math.min(
      shortHours + (1 - shortHours) * Math.min(1, hoursAhead / POLICY.quietSpellHours),
      shortDay + (1 - shortDay) * Math.min(1, hoursAhead / POLICY.quietDayHours),
    );
  const expected = (hoursAhead: number): number => {
    const hour = hourNow + hoursAhead;
    // A week's rhythm repeats: the same hour a week ago is the best guess; without a week of history, yesterday's.
    const history = hourRate(hour - 168) ?? hourRate(hour - 24);
    const past = history === null ? null : history * lowered(hoursAhead);
    const seen = [past, hoursAhead === 0 ? recent : null].filter((r): r is number => r !== null);
    if (seen.length > 0) return Math.max(POLICY.minChangesPerHour, ...seen);
    // An hour never seen (the rest of a first day): after the backfill, at the current hour's rate (see the header).
    return Math.max(POLICY.minChangesPerHour, shape.afterBackfill && hoursAhead > 0 && recent !== null ? expected(0) : POLICY.priorChangesPerHour);
  };
  const hourEnd = (hourNow + 1) * HOUR_MS;
  /** Live details an hour at list-change rate λ brings, as the plan reserves for them (see detailScale). */
  const detailsAt = (lambda: number): number => lambda * POLICY.detailsPerChange * shape.detailScale;
  /** The details the current hour's list changes are expected to bring from `at` to its end. */
  const detailsLeft = (at: number): number => detailsAt(expected(0)) * ((hourEnd - at) / HOUR_MS);
  /** The sweeps `minutes` apart that fit in the current hour, the first at `from`. */
  const sweepsLeft = (from: number, minutes: number): number => (from < hourEnd ? 1 + Math.floor((hourEnd - 1 - from) / (minutes * MINUTE_MS)) : 0);
  // Σ over a day of λ^α, for the busiest fully observed day of the last seven (or the partial last day, scaled).
  let dayWeight = 0;
  for (let d = 0; d < 7; d++) {
    let sum = 0;
    let n = 0;
    for (let k = d * BUCKETS_PER_DAY; k < (d + 1) * BUCKETS_PER_DAY; k++) {
      const r = rate(k);
      if (r === null) continue;
      sum += 0.5 * Math.max(POLICY.minChangesPerHour, r) ** POLICY.rateExponent;
      n++;
    }
    if (n === BUCKETS_PER_DAY || (d === 0 && n > 0)) dayWeight = Math.max(dayWeight, (sum * BUCKETS_PER_DAY) / n);
  }
  if (dayWeight === 0) dayWeight = 24 * expected(0) ** POLICY.rateExponent;
  const sweepsPerDay = Math.max(1, pollBudget / LIST_NAMES.length);
  // (No poll budget at all — an allowance of 0, all of it used by other clients — stretches nothing: 0/0 is no number.)
  const stretch = pollBudget > 0 ? Math.max(1, h.pollsLastDay / (pollBudget * POLICY.pollOverspend)) : 1;
  // The shortest interval: a sweep paid for by the polls' share of the minute allowance. The longest: a multiple of
  // the even interval (the poll budget spread over the day).
  const minSweep = LIST_NAMES.length / Math.max(1e-9, shape.minuteAllowed * Math.min(1, pollBudget / Math.max(1, shape.allowed)));
  const evenSweep = DAY_MS / MINUTE_MS / sweepsPerDay;
  const maxSweep = Math.max(minSweep, POLICY.maxSweepStretch * evenSweep);
  const interval = (lambda: number) =>
    stretchTo(clamp(((60 * dayWeight) / (sweepsPerDay * lambda ** POLICY.rateExponent)) * stretch, minSweep, maxSweep), sustain, evenSweep);
  // λ of a clock hour relative to the current one: observed before it (null when not observed), expected from it on;
  // each computed once, as the rounds of the 24 hours ahead overlap.
  const rates = new Map<number, number | null>();
  const rateIn = (hoursAhead: number): number | null => {
    if (!rates.has(hoursAhead)) rates.set(hoursAhead, hoursAhead >= 0 ? expected(hoursAhead) : hourRate(hourNow + hoursAhead));
    return rates.get(hoursAhead)!;
  };
  return {
    intervalAt: (hoursAhead) => interval(expected(hoursAhead)),
    rateAt: expected,
    minInterval: minSweep,
    meanRateOver: (hoursAhead, span) => {
      let sum = 0;
      let n = 0;
      for (let j = hoursAhead - Math.max(1, span) + 1; j <= hoursAhead; j++) {
        const r = rateIn(j);
        if (r === null) continue;
        sum += Math.max(POLICY.minChangesPerHour, r);
        n++;
      }
      return n > 0 ? sum / n : expected(hoursAhead);
    },
    liveForecast: (at, nextSweepAt) =>
      Array.from({ length: HOURS_AHEAD }, (_, k) => {
        const lambda = expected(k);
        const minutes = interval(lambda);
        if (k > 0 || at === undefined || nextSweepAt === undefined) {
          return { polls: (60 / minutes) * LIST_NAMES.length, details: detailsAt(lambda) };
        }
        // In whole details: a share that shrank continuously freed slots at instants no idle plan could name.
        return { polls: sweepsLeft(nextSweepAt, minutes) * LIST_NAMES.length, details: Math.ceil(detailsLeft(at)) };
      }),
    forecastStepAt: (at, nextSweepAt) => {
      const steps: number[] = [];
      const left = Math.ceil(detailsLeft(at));
      // The instant the hour's remaining details drop to left − 1 (rounded up: from then on they have).
      if (left >= 2) steps.push(Math.ceil(hourEnd - ((left - 1) * HOUR_MS) / detailsAt(expected(0))));
      // From the instant the next sweep is due, it counts from now: one fewer fits in the hour once now passes
      // hourEnd − 1 − (n − 1)·T.
      const minutes = interval(expected(0));
      if (nextSweepAt > at) steps.push(nextSweepAt);
      else if (at < hourEnd - 1) steps.push(Math.floor(hourEnd - 1 - (sweepsLeft(at, minutes) - 1) * minutes * MINUTE_MS) + 1);
      const next = steps.filter((t) => t > at);
      return next.length > 0 ? Math.min(...next) : null;
    },
  };
}

/**
 * The pace of revalidation after the backfill. What live work does not need, A − L (L: the forecast polls and details
 * of the next 24 h), goes to re-reading details, and the detail-only changes it finds come at the rhythm of the list
 * changes (the same people make both). Revalidation reads the O open tickets stalest first, so it goes round them in
 * R = O / ((A − L)/24) hours — or, when the stalest open detail is older than that, in its age: the round the mirror is
 * in, after a busy spell that left re-reads behind — and a re-read at hour h finds the changes made since the ticket's
 * last read, about a round earlier: its worth is the mean rate λ̄(h) over the round ending at h (the past hours as
 * observed, the coming ones as forecast). Under Σ r = A − L the lag of those changes is least at r(h) ∝ √λ̄(h) (the
 * square-root law, as for the sweeps), so the current hour's share of what live work leaves is √λ̄(0) / Σ_k √λ̄(k), and
 * the hour's re-reads (its background requests, counted apart from its polls and details) spend that share, evenly
 * within it. Counting the hour's live work against the same target (its forecast plus the share, as until the 23rd
 * session) handed background every slot live work left under its forecast, which the probes do every working hour:
 * the mornings re-read twice their share, the window ran dry by the afternoon, and the afternoons — whose slots free
 * only when the same hours of the day before spent them — re-read next to nothing (on `small`, 5–8 an hour from 3 to
 * 6 pm against 30–40 in the morning, and the detail-only changes made then waited 2–4 h). Slots live work leaves now
 * stay in the window for the hours after.
 *
 * With a short round (a large allowance, few open tickets) λ̄ is the hour's own rate, and re-reads follow the working
 * hours: a greedy background instead spent whatever slots freed, and nights and weekends, where the sweeps are sparse,
 * took nearly all of it (on the `small` workload 2,630 re-reads in a week off-hours against 66 in working hours). With
 * a long round (the `standard` workload's ~1,000 open tickets at ~30 re-reads an hour) the pace is nearly even.
 *
 * The shares rest on a forecast, and a slot saved for a busy hour that does not come is lost for good. When a round
 * takes a day or more, a re-read finds about a day's changes whenever it is made, so saving for a busier hour gains
 * little and risks much: an hour never spends less than the even share (A − L)/24, scaled by the round in days up to
 * one. Pacing by the hour's own rate with no floor held revalidation to a trickle through a quiet night, a weekend or a
 * holiday, whose every hour expected the activity back within the next, and the changes of the busy hours before it
 * were never found (on `standard`, a mirror still not exact after 48 quiet hours).
 *
 * The shares are of A − L, and L is a forecast: when the live work falls short of it hour after hour (a quiet spell),
 * the slots kept for it are never spent, and the window stays part empty. When a round takes a day or more, a slot
 * left idle is an open ticket not re-read for another round (in the closed-loop test of two quiet days after a busy
 * week, 1,000 open tickets, the window stayed a quarter to a third empty), so an hour also spends a twenty-fourth of
 * `spare`, what background may take beyond every reservation of the next 24 h. When a round takes less, the idle
 * slots are the slack that bursts of live work use: on `small` (a round of about an hour) spending any part of them
 * cost the list-visible p95 half a minute to a minute (5.3 → 5.8 min at the floor's fraction of them, 6.3 at a
 * twenty-fourth).
 */
function paced(
  now: number,
  A: number,
  open: number,
  oldestOpenDetailAt: number | null,
  fullHour: readonly HourForecast[],
  schedule: SweepSchedule,
  spare: number,
): { spendBy(t: number): number; slotAt(n: number): number } {
  const live = fullHour.reduce((s, h) => s + h.polls + h.details, 0);
  const perHour = Math.max(0, A - live) / HOURS_AHEAD;
  // The round the mirror is in is at least as long as the stalest open detail is old: re-reads that have not gone round
  // since a busy spell still owe its changes, whatever the allowance would allow.
  const behind = oldestOpenDetailAt === null ? 0 : Math.round((now - oldestOpenDetailAt) / HOUR_MS);
  const round = Math.min((HISTORY_BUCKETS * BUCKET_MS) / HOUR_MS, Math.max(1, Math.round(open / Math.max(1e-9, perHour)), behind));
  const weights = fullHour.map((_, k) => Math.sqrt(schedule.meanRateOver(k, round)));
  const total = weights.reduce((s, w) => s + w, 0);
  const hourStart = Math.floor(now / HOUR_MS) * HOUR_MS;
  // The floor: the even share, scaled by the round in days (up to one).
  const floor = Math.min(1, round / HOURS_AHEAD) / HOURS_AHEAD;
  // Spare slots left idle are re-read when a round of the open tickets takes a day or more (see above).
  const idle = round >= HOURS_AHEAD ? spare / HOURS_AHEAD : 0;
  const target = Math.max(0, A - live) * Math.max(weights[0]! / total, floor) + idle;
  return {
    /**
     * Background requests the clock hour may have sent by t: a minute's share at the start of each minute (one pass,
     * not one per request: with a large allowance a pass per request would cost more locally than it buys), at least
     * one.
     */
    spendBy: (t) => Math.max(1, Math.ceil((target * (Math.floor((t - hourStart) / MINUTE_MS) + 1)) / 60)),
    /** When the hour's background may have sent n: the start of the minute whose share reaches it. */
    slotAt: (n) => hourStart + Math.max(0, Math.floor((60 * (n - 1)) / Math.max(1e-9, target))) * MINUTE_MS,
  };
}

/**
 * An interval stretched by what the window can sustain (`sustainable`), up to the even interval (the poll budget spread
 * evenly over the day, which the window was planned for) and never shortened.
 */
function stretchTo(interval: number, sustain: number, even: number): number {
  return sustain <= 1 ? interval : Math.max(interval, Math.min(interval * sustain, even));
}

/**
 * The share of the forecast sweeps the window can pay for over the next 24 h beside the forecast details (both with
 * the live margin), at the end of the worst hour: 1 when it can pay for them all.
 */
function sustainable(left: number, freeing: readonly number[], forecast: readonly HourForecast[]): number {
  let share = 1;
  let freed = 0;
  let polls = 0;
  let details = 0;
  for (let k = 0; k < forecast.length; k++) {
    polls += forecast[k]!.polls * POLICY.liveMargin;
    details += forecast[k]!.details * POLICY.liveMargin;
    freed += freeing[k] ?? 0;
    if (polls > 0) share = Math.min(share, Math.max(0, left + freed - details) / polls);
  }
  return Math.max(1e-3, share);
}

/** When the next sweep falls due, if no list is polled now: the first list to fall due (now for one never polled). */
function nextSweepAt(input: PlannerInput, sweepMinutes: number): number {
  let next = Infinity;
  for (const l of LIST_NAMES) {
    const last = input.lists[l].lastPolledAt;
    next = Math.min(next, last === null ? input.now : last + sweepMinutes * MINUTE_MS - SECOND_MS);
  }
  return Math.max(input.now, next);
}

function hourlyShare(h: PlannerHistory, now: number): number {
  return h.firstPollAt !== null && now - h.firstPollAt >= DAY_MS ? POLICY.maxHourlyShare : POLICY.maxHourlyShareFirstDay;
}

/**
 * What may be spent now and still leave room for `demand` (requests per coming clock hour), checked at the start and
 * at the end of every clock hour of the next 24 h: at its start, `left now + slots freed before it − demand before it −
 * its first `chunk` (a sweep, which needs its slots at once)`; at its end, the same with the hour's own freed slots
 * and demand. Within an hour both the slots that free (those used in the same hour a day before) and the demand (the
 * sweeps, the details) come spread over it, so between those two instants the balance moves about linearly. (Checking
 * the end of an hour without its own freed slots held back, in a full window, the slots of a whole hour.)
 */
function headroom(left: number, freeing: readonly number[], demand: readonly number[], chunk: number): number {
  let room = Infinity;
  let freed = 0;
  let needed = 0;
  for (let k = 0; k < demand.length; k++) {
    room = Math.min(room, left + freed - needed - Math.min(chunk, demand[k]!));
    needed += demand[k]!;
    freed += freeing[k] ?? 0;
    room = Math.min(room, left + freed - needed);
  }
  return Math.max(0, room);
}

/** How long (ms) re-reading `open` tickets in turn takes at the given daily background allowance. */
function roundMs(open: number, backgroundPerDay: number): number {
  return (Math.max(1, open) / Math.max(1, backgroundPerDay)) * DAY_MS;
}

/** How long (ms) the backfill needs at the given daily background allowance: 0 when done, null when it gets none. */
export function backfillEtaMs(remaining: number, backgroundPerDay: number): number | null {
  if (remaining === 0) return 0;
  if (backgroundPerDay <= 0) return null;
  return (remaining / backgroundPerDay) * DAY_MS;
}

function clamp(x: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, x));
}
