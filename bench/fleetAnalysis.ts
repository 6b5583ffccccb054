import { writeFileSync } from 'node:fs';
import type pg from 'pg';
import { LIST_PATHS, type ListName } from '../src/api/endpoints.ts';
import { quoteIdent } from '../src/db/connect.ts';
import type { RunningSimulator } from '../src/simulator/index.ts';
import { LIST_BIT, type Change } from './changeRecorder.ts';
import { accountName, accountToken, FLEET_SCHEMA } from './fleetSetup.ts';
import type { ProcSummary } from './procStats.ts';
import { maxInWindow, quantile } from './stats.ts';

/** What `npm run bench:fleet` measured, and the issue's targets as {target, result, met}. */

export interface FleetRunFigures {
  config: { accounts: number; registered: number; workers: number; concurrency: number; minutes: number; killAt: number; activityScale: number; quick: boolean };
  setup: { migrated: number; migratedSeconds: number; registerSeconds: number; viewsRefreshSeconds: number };
  requests: { total: number; perSecond: number; throttled: number; maxPerAccountMinute: number; maxPerAccountRun: number; accountsSynced: number };
  dueStart: {
    jobs: number;
    p50Ms: number | null;
    p99Ms: number | null;
    maxMs: number | null;
    /** Of `jobs`: live work still queued at the end (counted at its age then). */
    unstarted?: number;
    background: { jobs: number; p50Ms: number | null; p99Ms: number | null };
    all: { jobs: number; p50Ms: number | null; p99Ms: number | null };
  };
  listLag: {
    changes: number;
    unseen: number;
    p50Ms: number | null;
    p95Ms: number | null;
    accountP95: { p50Ms: number | null; p95Ms: number | null };
    /**
     * The same over the changes made at least `settleMs` before the end: those a sweep had time to see, so that the
     * figure is a lag, not the age of changes still waiting (the run's last minutes are censored). The comparison
     * with a control run uses these, with the same settle time.
     */
    settled?: { settleMs: number; changes: number; unseen: number; p50Ms: number | null; p95Ms: number | null; accountP95: { p50Ms: number | null } };
    singleAccountP95Ms: number | null;
    /** The control run's settled p95, with its settle time: what the settled figure is compared with. */
    singleAccountSettled?: { p95Ms: number | null; settleMs: number } | null;
    singleAccountSource: string;
  };
  kill: null | { inFlight: number; resumedMaxMs: number | null; resumedP99Ms: number | null; notResumed: number };
  overlaps: number;
  replies: { expected: number; postedOnce: number; postedTwice: number; missing: number };
  workers: Array<{ n: number; killed: boolean; proc: ProcSummary | null; exit: { ms: number; code: number | null } | null }>;
  engine: { xactsPerSecond: number; tuplesPerSecond: number; jobsCompleted: number; jobTableRows: number; reconcileQueryMs: number };
  targets: Array<{ target: string; result: string; met: boolean }>;
}

export interface AnalyseInput {
  db: pg.Client;
  sim: RunningSimulator;
  changes: Map<number, Change[]>;
  accounts: number;
  registered: number;
  runStart: number;
  runEnd: number;
  killAt: number | null;
  inFlightAtKill: string[];
  replies: Array<{ account: number; text: string }>;
  workers: FleetRunFigures['workers'];
  dbStats: { before: Stat; after: Stat };
  setup: FleetRunFigures['setup'];
  config: FleetRunFigures['config'];
  singleAccount: { listP95Ms: number | null; settledP95Ms?: number | null; settleMs?: number; source: string };
  /** Changes made this long before the end count in `listLag.settled`. */
  settleMs: number;
  /** Where to write every change's lag ([account, ms after the start, lag ms or −age when unseen]), for re-analysis. */
  lagsFile?: string;
}

interface Stat {
  at: number;
  xacts: number;
  tuplesReturned: number;
  tuplesFetched: number;
}

const LIST_OF_PATH = new Map<string, ListName>(Object.entries(LIST_PATHS).map(([list, path]) => [path, list as ListName]));

export async function analyseFleet(i: AnalyseInput): Promise<FleetRunFigures> {
  const { db } = i;
  const seconds = (i.runEnd - i.runStart) / 1000;

  // Requests as the simulator received them (the authority on 429s and on windows), per account.
  let total = 0;
  let throttled = 0;
  let maxMinute = 0;
  let maxRun = 0;
  let synced = 0;
  for (let n = 1; n <= i.accounts; n++) {
    const entries = i.sim.account(accountToken(n))!.log.filter((e) => e.at >= i.runStart - 60_000);
    total += entries.length;
    throttled += entries.filter((e) => e.status === 429).length;
    maxMinute = Math.max(maxMinute, maxInWindow(entries.map((e) => e.at).sort((a, b) => a - b), 60_000));
    maxRun = Math.max(maxRun, entries.length);
    if (entries.length > 0) synced++;
  }

  // The engine's view of each job: how late after the instant its work fell due a worker took it. A live job (a list
  // due, a reply, a hand-back, a first pass) is due at its start_after; a background job (a backfill's next slice)
  // carries when its account's next list falls due (data.liveAt, raised to live then): started after that instant, it
  // ran a due poll, late by the time since max(start_after, liveAt); started before, it was background work alone.
  const jobs = `${quoteIdent(`${FLEET_SCHEMA}_jobs`)}`;
  const { rows: timings } = await db.query<{ started_ms: string; start_ms: string; live_ms: string | null; priority: number }>(
    `select extract(epoch from started_on) * 1000 as started_ms, extract(epoch from start_after) * 1000 as start_ms,
            case when jsonb_typeof(data -> 'liveAt') = 'number' then data ->> 'liveAt' end as live_ms, priority from (
       select started_on, start_after, priority, data from ${jobs}.job where name = 'account-pass' and started_on is not null
       union all
       select started_on, start_after, priority, data from ${jobs}.archive where name = 'account-pass' and started_on is not null
     ) j where started_on >= to_timestamp($1 / 1000.0) and started_on <= to_timestamp($2 / 1000.0)`,
    [i.runStart, i.runEnd],
  );
  const late: number[] = [];
  const lateBackground: number[] = [];
  for (const t of timings) {
    const started = Number(t.started_ms);
    const startAfter = Number(t.start_ms);
    const liveAt = t.live_ms === null ? null : Number(t.live_ms);
    if (liveAt !== null ? liveAt <= started : t.priority > 0) late.push(Math.max(0, started - Math.max(startAfter, liveAt ?? startAfter)));
    else lateBackground.push(Math.max(0, started - startAfter));
  }
  // Live work still queued at the end counts too, late by its age then (at least): without it, the jobs that waited
  // longest would be the ones left out.
  const { rows: waiting } = await db.query<{ due_ms: string }>(
    `select extract(epoch from start_after) * 1000 as start_ms,
            greatest(extract(epoch from start_after) * 1000, case when jsonb_typeof(data -> 'liveAt') = 'number' then (data ->> 'liveAt')::numeric end) as due_ms
       from ${jobs}.job where name = 'account-pass' and state in ('created', 'retry')
        and (priority > 0 or jsonb_typeof(data -> 'liveAt') = 'number')`,
  );
  let unstarted = 0;
  for (const w of waiting) {
    const due = Number(w.due_ms);
    if (due >= i.runEnd) continue;
    unstarted++;
    late.push(i.runEnd - due);
  }

  // List-visible lag: from a change until the end of the first poll, sent after it, of a list that shows it.
  const lags: Array<number | null> = [];
  const accountP95s: Array<number | null> = [];
  const settledLags: number[] = [];
  const settledAccountP95s: number[] = [];
  const raw: Array<[number, number, number]> = [];
  const settledBefore = i.runEnd - i.settleMs;
  let overlaps = 0;
  for (let n = 1; n <= i.accounts; n++) {
    const schema = quoteIdent(`tm_${accountName(n)}`);
    const { rows: polls } = await db.query<{ at_ms: string; path: string; duration_ms: number | null }>(
      `select extract(epoch from at) * 1000 as at_ms, path, duration_ms from ${schema}.api_requests where status = 200 and method = 'GET' order by at`,
    );
    const byList = new Map<ListName, number[][]>();
    for (const p of polls) {
      const list = LIST_OF_PATH.get(p.path);
      if (!list) continue;
      const at = Number(p.at_ms);
      (byList.get(list) ?? byList.set(list, []).get(list)!).push([at, at + (p.duration_ms ?? 0)]);
    }
    const mine: number[] = [];
    const settled: number[] = [];
    for (const c of i.changes.get(n) ?? []) {
      if (c.cls !== 'list') continue;
      let seen: number | null = null;
      for (const [list, bit] of Object.entries(LIST_BIT) as Array<[ListName, number]>) {
        if (!(c.lists & bit)) continue;
        const poll = byList.get(list)?.find((p) => p[0]! >= c.at);
        if (poll && (seen === null || poll[1]! < seen)) seen = poll[1]!;
      }
      // Not seen by the end of the run: counted at its age then, a lower bound (the same for the control run).
      const lag = seen === null ? -(i.runEnd - c.at) : seen - c.at;
      mine.push(lag);
      if (c.at < settledBefore) settled.push(lag);
      raw.push([n, c.at - i.runStart, lag]);
    }
    lags.push(...mine);
    settledLags.push(...settled);
    if (mine.length > 0) accountP95s.push(quantile(mine.map(Math.abs), 0.95));
    if (settled.length > 0) settledAccountP95s.push(quantile(settled.map(Math.abs), 0.95)!);

    const { rows: runs } = await db.query<{ s: string; f: string }>(
      `select extract(epoch from started_at) * 1000 as s, extract(epoch from finished_at) * 1000 as f from ${schema}.sync_runs where finished_at is not null order by started_at`,
    );
    for (let k = 1; k < runs.length; k++) if (Number(runs[k]!.s) < Number(runs[k - 1]!.f)) overlaps++;
  }

  if (i.lagsFile) writeFileSync(i.lagsFile, `${JSON.stringify({ runStart: i.runStart, runEnd: i.runEnd, lags: raw })}\n`);

  // After the kill: when each pass the dead worker had in flight started again, on another worker.
  let kill: FleetRunFigures['kill'] = null;
  if (i.killAt !== null) {
    const resumed: number[] = [];
    let notResumed = 0;
    // Resumed: another worker started a job of the account (a pass with nothing to send — its hour's budget spent —
    // records no sync run, so the job table says it, not sync_runs).
    for (const account of i.inFlightAtKill) {
      const { rows } = await db.query<{ s: string | null }>(
        `select extract(epoch from min(started_on)) * 1000 as s from (
           select started_on from ${jobs}.job where name = 'account-pass' and singleton_key = $2 and started_on > to_timestamp($1 / 1000.0)
           union all
           select started_on from ${jobs}.archive where name = 'account-pass' and singleton_key = $2 and started_on > to_timestamp($1 / 1000.0)
         ) j`,
        [i.killAt, account],
      );
      const s = rows[0]?.s;
      if (s === null || s === undefined) notResumed++;
      else resumed.push(Number(s) - i.killAt);
    }
    kill = {
      inFlight: i.inFlightAtKill.length,
      resumedMaxMs: resumed.length ? Math.max(...resumed) : null,
      resumedP99Ms: quantile(resumed, 0.99),
      notResumed,
    };
  }

  // Replies waiting at the kill: posted exactly once each, as the simulator saw them.
  let once = 0;
  let twice = 0;
  let missing = 0;
  for (const r of i.replies) {
    const model = i.sim.account(accountToken(r.account))!.model;
    let count = 0;
    for (const list of ['open', 'resolved'] as const) {
      for (const item of model.list(list)) count += (model.detail(item.id)?.messages ?? []).filter((m) => m.message === r.text).length;
    }
    if (count === 1) once++;
    else if (count === 0) missing++;
    else twice++;
  }

  const { rows: jobRows } = await db.query<{ completed: string; rows: string }>(
    `select (select count(*) from ${jobs}.archive where name = 'account-pass') + (select count(*) from ${jobs}.job where name = 'account-pass' and state = 'completed') as completed,
            (select count(*) from ${jobs}.job) as rows`,
  );
  // The reconciler's question with the whole registry: which active accounts have no job queued or running.
  const started = performance.now();
  await db.query(
    `select a.name from ${quoteIdent(FLEET_SCHEMA)}.accounts a where a.paused_at is null
       and not exists (select 1 from ${jobs}.job j where j.name = 'account-pass' and j.singleton_key = a.name and j.state < 'completed')`,
  );
  const reconcileQueryMs = performance.now() - started;
  const span = (i.dbStats.after.at - i.dbStats.before.at) / 1000;

  const figures: Omit<FleetRunFigures, 'targets'> = {
    config: i.config,
    setup: i.setup,
    requests: { total, perSecond: total / seconds, throttled, maxPerAccountMinute: maxMinute, maxPerAccountRun: maxRun, accountsSynced: synced },
    dueStart: {
      jobs: late.length,
      p50Ms: quantile(late, 0.5),
      p99Ms: quantile(late, 0.99),
      maxMs: late.length ? Math.max(...late) : null,
      unstarted,
      background: { jobs: lateBackground.length, p50Ms: quantile(lateBackground, 0.5), p99Ms: quantile(lateBackground, 0.99) },
      all: { jobs: late.length + lateBackground.length, p50Ms: quantile([...late, ...lateBackground], 0.5), p99Ms: quantile([...late, ...lateBackground], 0.99) },
    },
    listLag: {
      changes: lags.length,
      unseen: lags.filter((l) => l !== null && l < 0).length,
      p50Ms: quantile(lags.map((l) => Math.abs(l ?? 0)), 0.5),
      p95Ms: quantile(lags.map((l) => Math.abs(l ?? 0)), 0.95),
      accountP95: { p50Ms: quantile(accountP95s, 0.5), p95Ms: quantile(accountP95s, 0.95) },
      settled: {
        settleMs: i.settleMs,
        changes: settledLags.length,
        unseen: settledLags.filter((l) => l < 0).length,
        p50Ms: quantile(settledLags.map(Math.abs), 0.5),
        p95Ms: quantile(settledLags.map(Math.abs), 0.95),
        accountP95: { p50Ms: quantile(settledAccountP95s, 0.5) },
      },
      ...singleAccountFields(i.singleAccount),
    },
    kill,
    overlaps,
    replies: { expected: i.replies.length, postedOnce: once, postedTwice: twice, missing },
    workers: i.workers,
    engine: {
      xactsPerSecond: (i.dbStats.after.xacts - i.dbStats.before.xacts) / span,
      tuplesPerSecond: (i.dbStats.after.tuplesReturned + i.dbStats.after.tuplesFetched - i.dbStats.before.tuplesReturned - i.dbStats.before.tuplesFetched) / span,
      jobsCompleted: Number(jobRows[0]!.completed),
      jobTableRows: Number(jobRows[0]!.rows),
      reconcileQueryMs,
    },
  };
  return { ...figures, targets: targetsOf(figures) };
}

const s = (ms: number | null) => (ms === null ? '∞' : ms < 120_000 ? `${(ms / 1000).toFixed(1)} s` : `${(ms / 60_000).toFixed(1)} min`);

export function targetsOf(f: Omit<FleetRunFigures, 'targets'>): FleetRunFigures['targets'] {
  const t: FleetRunFigures['targets'] = [
    { target: 'no 429 in any account', result: `${f.requests.throttled} × 429`, met: f.requests.throttled === 0 },
    {
      target: 'no account above 60 requests in any minute',
      result: `most in one minute: ${f.requests.maxPerAccountMinute}`,
      met: f.requests.maxPerAccountMinute <= 60,
    },
    {
      // Every job that ran a due poll (a live job, or background work whose list fell due while it waited) and every
      // one still waiting at the end; background work alone is reported apart.
      target: "every account's due poll started within 30 s of its wakeAt (p99)",
      result: `p99 ${s(f.dueStart.p99Ms)} over ${f.dueStart.jobs} jobs with a poll due (${f.dueStart.unstarted ?? 0} still waiting at the end); background slices: p99 ${s(f.dueStart.background.p99Ms)}`,
      met: f.dueStart.p99Ms !== null && f.dueStart.p99Ms <= 30_000,
    },
    listLagTarget(f),
    { target: 'no pass of an account overlaps another', result: `${f.overlaps} overlaps`, met: f.overlaps === 0 },
  ];
  if (f.kill) {
    t.push({
      target: "after kill -9 of a worker, its accounts resume within 60 s",
      result: `${f.kill.inFlight} in flight; resumed after at most ${s(f.kill.resumedMaxMs)}; ${f.kill.notResumed} not resumed`,
      met: f.kill.notResumed === 0 && (f.kill.resumedMaxMs ?? 0) <= 60_000,
    });
    t.push({
      target: 'no reply posted twice (replies waiting at the kill)',
      result: `${f.replies.postedOnce} of ${f.replies.expected} posted once, ${f.replies.postedTwice} twice, ${f.replies.missing} not yet`,
      met: f.replies.postedTwice === 0 && f.replies.missing === 0,
    });
  }
  const exits = f.workers.filter((w) => w.exit);
  t.push({
    target: 'SIGTERM: every worker exits 0 within 10 s',
    result: exits.map((w) => `${((w.exit!.ms) / 1000).toFixed(1)} s (exit ${w.exit!.code})`).join(', '),
    met: exits.every((w) => w.exit!.code === 0 && w.exit!.ms <= 10_000),
  });
  return t;
}

/** The single-account figure's fields of `listLag`: at a run's analysis, and when it is scored again (`--rescore`). */
export function singleAccountFields(
  single: AnalyseInput['singleAccount'],
): Pick<FleetRunFigures['listLag'], 'singleAccountP95Ms' | 'singleAccountSettled' | 'singleAccountSource'> {
  return {
    singleAccountP95Ms: single.listP95Ms,
    singleAccountSettled: single.settleMs === undefined ? null : { p95Ms: single.settledP95Ms ?? null, settleMs: single.settleMs },
    singleAccountSource: single.source,
  };
}

/**
 * List-visible lag against a run in which every account has a slot of its own. A change not seen by the end counts at
 * its age then, a lower bound, so a comparison needs most changes seen: over the whole run when ≤ 5 % are unseen, else
 * over the changes made at least the settle time before the end, in both runs with the same settle time.
 */
function listLagTarget(f: Omit<FleetRunFigures, 'targets'>): { target: string; result: string; met: boolean } {
  const target = 'list-visible lag per account p95 ≤ 1.5 × the single-account figure';
  const l = f.listLag;
  const share = (unseen: number, n: number) => (n === 0 ? 1 : unseen / n);
  const control = l.singleAccountSettled;
  const settled = l.settled;
  if (settled && control && control.settleMs === settled.settleMs && share(settled.unseen, settled.changes) <= 0.05) {
    const met = settled.p95Ms !== null && control.p95Ms !== null && settled.p95Ms <= 1.5 * control.p95Ms;
    return {
      target,
      result:
        `changes made ≥ ${s(settled.settleMs)} before the end (${settled.changes}, ${settled.unseen} unseen): pooled p95 ${s(settled.p95Ms)}, ` +
        `median of the accounts' p95 ${s(settled.accountP95.p50Ms)}; single account ${s(control.p95Ms)}` +
        (settled.p95Ms !== null && control.p95Ms ? ` (${(settled.p95Ms / control.p95Ms).toFixed(2)} ×)` : ''),
      met,
    };
  }
  const comparable = share(l.unseen, l.changes) <= 0.05;
  return {
    target,
    result:
      `median of the accounts' p95: ${s(l.accountP95.p50Ms)}, pooled p95 ${s(l.p95Ms)}; single account ${s(l.singleAccountP95Ms)}` +
      (comparable ? '' : `; not comparable: ${Math.round(100 * share(l.unseen, l.changes))} % of the changes unseen by the end`),
    met: comparable && l.p95Ms !== null && l.singleAccountP95Ms !== null && l.p95Ms <= 1.5 * l.singleAccountP95Ms,
  };
}

export function renderFleetMarkdown(f: FleetRunFigures): string {
  const mb = (b: number | undefined) => (b === undefined ? '—' : `${Math.round(b / 1048576)} MB`);
  const lines = [
    `${f.config.accounts} accounts active of ${f.config.registered} registered, ${f.config.workers} workers × ${f.config.concurrency} slots, ` +
      `${f.config.minutes} min real time, activity ${f.config.activityScale} × the small workload${f.config.killAt ? `, kill -9 of a worker at ${f.config.killAt} min` : ''}.`,
    '',
    '| target | result | met |',
    '|---|---|---|',
    ...f.targets.map((t) => `| ${t.target} | ${t.result} | ${t.met ? 'yes' : '**no**'} |`),
    '',
    '| figure | value |',
    '|---|---|',
    `| requests | ${f.requests.total} (${f.requests.perSecond.toFixed(1)}/s), ${f.requests.accountsSynced} accounts synced |`,
    `| pass with a poll or reply due: start after it fell due | p50 ${s(f.dueStart.p50Ms)}, p99 ${s(f.dueStart.p99Ms)}, max ${s(f.dueStart.maxMs)} (${f.dueStart.jobs} jobs) |`,
    `| background pass start after its slot | p50 ${s(f.dueStart.background.p50Ms)}, p99 ${s(f.dueStart.background.p99Ms)} (${f.dueStart.background.jobs} jobs) |`,
    `| list-visible lag | p50 ${s(f.listLag.p50Ms)}, p95 ${s(f.listLag.p95Ms)} over ${f.listLag.changes} changes (${f.listLag.unseen} not seen by the end, counted at their age then) |`,
    ...(f.listLag.settled
      ? [
          `| list-visible lag of changes made ≥ ${s(f.listLag.settled.settleMs)} before the end | p50 ${s(f.listLag.settled.p50Ms)}, p95 ${s(f.listLag.settled.p95Ms)} over ${f.listLag.settled.changes} changes (${f.listLag.settled.unseen} not seen) |`,
        ]
      : []),
    ...f.workers.map(
      (w) =>
        `| worker ${w.n}${w.killed ? ' (killed)' : ''} | CPU mean ${w.proc?.cpuMeanPercent.toFixed(0) ?? '—'} %, peak ${w.proc?.cpuPeakPercent.toFixed(0) ?? '—'} % of a core; RSS peak ${mb(w.proc?.rssPeakBytes)} |`,
    ),
    `| engine (whole database) | ${f.engine.xactsPerSecond.toFixed(0)} transactions/s, ${Math.round(f.engine.tuplesPerSecond)} rows read/s; ${f.engine.jobsCompleted} jobs completed; reconcile query over ${f.config.registered} accounts ${f.engine.reconcileQueryMs.toFixed(0)} ms |`,
    `| set-up | ${f.setup.migrated} schemas migrated in ${f.setup.migratedSeconds.toFixed(0)} s; ${f.config.registered} accounts registered in ${f.setup.registerSeconds.toFixed(1)} s; views over ${f.config.accounts} schemas rebuilt in ${f.setup.viewsRefreshSeconds.toFixed(1)} s |`,
  ];
  return lines.join('\n');
}
