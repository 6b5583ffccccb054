import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import PQueue from 'p-queue';
import { allowedPerDay } from '../src/sync/budget.ts';
import { workloadBounds, type WorkloadBounds } from './bound.ts';
import { findPostgres } from './benchDatabase.ts';
import { runScript } from './children.ts';
import { lagChart } from './lagChart.ts';
import { FULL_COST, measureLocalCost, QUICK_COST } from './localCost.ts';
import { chartName, fmtMs, renderReport, type BenchFile, type Target, type WorkloadResult } from './report.ts';
import { STRATEGIES, type StrategyName } from './strategies/index.ts';
import { summarize, type StrategySummary } from './summarize.ts';
import { workloadDigest, type VirtualRun } from './virtualRun.ts';
import { activityEnd, WORKLOADS, workloadNamed, type Workload, type WorkloadName } from './workload.ts';
import { HOUR_MS, MINUTE_MS } from '../src/time.ts';

/**
 * `npm run bench` — how fresh ticket-mirror keeps its mirror within the quota, next to two baselines on the very same
 * workload, how far that is from a lower bound no client can beat, and what processing a response costs locally.
 * Prints markdown tables; writes bench/results.json (one entry per workload), one lag chart per workload
 * (bench/lag-<workload>.svg) and the results sections of bench/README.md and README.md.
 *
 *   --workload a,b   only these workloads (small, standard, large, abundant; default all); the file keeps the others'
 *   --quick          one day, a tenth of the data: about a minute (writes bench/tmp/results.json and the charts only)
 *   --correlated     mutations follow one another on the same ticket (see Workload.correlated); writes to bench/tmp
 *   --jobs N         runs at once (a strategy on a workload: one process each), across the workloads (default 2: the machine's cores)
 *   --every-tick     also a probe pass on every 15 s tick ticket-mirror's loop skips; fails if one requests anything (slow; see bench/README.md)
 *   --skip-cost      leave out the local-cost part
 *   --cost-only      only the local-cost part (the file keeps every workload's entry)
 *   --only a,b       run only these strategies (ticket-mirror is always run: the others are compared with it)
 *   --render         run nothing: print and draw again from bench/results.json (after a change to the report)
 *   --reuse          take a strategy's raw run from the runs folder when it is there (after a change to the figures)
 *   --runs DIR       folder of the raw runs (default bench/tmp); --out DIR: where results.json goes (no README then)
 */

const HERE = fileURLToPath(new URL('.', import.meta.url));
const { values: opts } = parseArgs({
  options: {
    workload: { type: 'string' },
    quick: { type: 'boolean', default: false },
    correlated: { type: 'boolean', default: false },
    jobs: { type: 'string', default: '2' },
    'every-tick': { type: 'boolean', default: false },
    'skip-cost': { type: 'boolean', default: false },
    'cost-only': { type: 'boolean', default: false },
    only: { type: 'string' },
    render: { type: 'boolean', default: false },
    reuse: { type: 'boolean', default: false },
    runs: { type: 'string' },
    out: { type: 'string' },
  },
});

/** How results.json writes an hour of the lag series whose changes were never seen (see jsonSafe). */
const NEVER = 'never';

const outDir = opts.out ?? (opts.quick || opts.correlated ? join(HERE, 'tmp') : HERE);
const runsDir = opts.runs ?? join(HERE, 'tmp');

if (opts.render) {
  const saved = JSON.parse(readFileSync(join(outDir, 'results.json'), 'utf8'), reviveHourly) as BenchFile;
  // The targets are judged again, so that a change to how they are judged reaches the file without a run.
  for (const r of saved.workloads) {
    const tm = r.strategies.find((s) => s.strategy === 'ticket-mirror');
    if (tm) r.targets = targetsOf(r.workload, tm, r.bounds);
  }
  publish(saved, outDir, saved.mode === 'full' && !opts.out, saved.workloads.map((r) => r.name));
  process.exit(0);
}

const started = performance.now();
const wanted = opts['cost-only'] ? [] : opts.workload ? opts.workload.split(',').map((n) => n.trim()) : (Object.keys(WORKLOADS) as WorkloadName[]);
const workloads = wanted.map((n) => ({ ...workloadNamed(n, opts.quick), ...(opts.correlated ? { correlated: true } : {}) }));
const postgresUrl = await findPostgres();
log(`database: ${postgresUrl ? 'PostgreSQL' : 'PGlite (no PostgreSQL answered)'}; workloads: ${workloads.map((w) => `${w.name} (${w.days} d)`).join(', ')}`);

// 1. Freshness: every strategy of every workload on its own simulator and schema, each in a process of its own, at
// most --jobs at once across the workloads (workload by workload, one that runs ticket-mirror alone left a core idle).
// Every run is queued before any starts, so that the longest go first (see expectedSeconds): a queue that starts at once
// runs the first two added, whatever their priority.
const processes = new PQueue({ concurrency: Math.max(1, Number(opts.jobs)), autoStart: false });
const lastTimes = opts.correlated ? null : readPrevious(join(outDir, 'results.json'), opts.quick ? 'quick' : 'full');
const benched = Promise.all(workloads.map((w) => benchWorkload(w)));
processes.start();
const results: WorkloadResult[] = await benched;

// 2. Local cost, after the runs: wall times must not compete with them.
const localCost = opts['skip-cost'] ? null : await measureLocalCost(opts.quick ? QUICK_COST : FULL_COST, postgresUrl);

// 3. Output. A quick run is a smoke test: its files go to bench/tmp (not kept), so that it never replaces real results.
// A run of some workloads keeps the others' entries (and the local cost when it was skipped) from the file it updates.
const previous = opts.correlated ? null : readPrevious(join(outDir, 'results.json'), opts.quick ? 'quick' : 'full');
const file: BenchFile = {
  mode: opts.quick ? 'quick' : 'full',
  database: postgresUrl ? 'postgres' : 'pglite',
  workloads: (Object.keys(WORKLOADS) as WorkloadName[])
    .map((n) => results.find((r) => r.name === n) ?? previous?.workloads.find((r) => r.name === n))
    .filter((r): r is WorkloadResult => r !== undefined),
  localCost: localCost ?? previous?.localCost ?? [],
  localCostTargets: [],
  wallSeconds: (performance.now() - started) / 1000,
};
file.localCostTargets = localCostTargets(file.localCost);
publish(file, outDir, !opts.quick && !opts.correlated && !opts.out, results.map((r) => r.name));

async function benchWorkload(workload: Workload): Promise<WorkloadResult> {
  // A quick run compares with the baselines on the standard workload only: the others are a smoke test of ticket-mirror.
  const only = opts.only?.split(',').map((n) => n.trim()) ?? (workload.quick && workload.name !== 'standard' ? [] : undefined);
  const names = (Object.keys(STRATEGIES) as StrategyName[]).filter((n) => !only || n === 'ticket-mirror' || only.includes(n));
  const runs = await Promise.all(names.map((name) => processes.add(() => runStrategy(workload, name), { priority: expectedSeconds(workload, name) })));
  const digests = new Set(runs.map((r) => workloadDigest(r.changes)));
  if (digests.size !== 1) throw new Error(`the strategies did not see the same workload (${[...digests].join(', ')})`);
  const tm = runs.find((r) => r.strategy === 'ticket-mirror')!;
  const steady = tm.backfillDoneAt === null ? null : { from: tm.backfillDoneAt, to: activityEnd(workload) };
  const summaries = runs.map((r) => summarize(r, workload, steady));
  const tmSummary = summaries.find((s) => s.strategy === 'ticket-mirror')!;
  const bounds = workloadBounds({
    changes: tm.changes,
    window: steady ?? { from: workload.start, to: activityEnd(workload) },
    limits: workload.limits,
    openAt: (t) => tm.openByHour[Math.floor((t - workload.start) / HOUR_MS)] ?? tm.openByHour.at(-1) ?? 0,
    openAtEnd: tm.openByHour[Math.floor((activityEnd(workload) - workload.start) / HOUR_MS)] ?? tm.openByHour.at(-1) ?? 0,
    activityEnd: activityEnd(workload),
    ...(tmSummary.steadyBlocks ? { used: tmSummary.steadyBlocks } : {}),
  });
  return {
    name: workload.name,
    workload,
    steadyWindow: steady && { fromMs: steady.from - workload.start, toMs: steady.to - workload.start },
    strategies: summaries,
    bounds,
    lags: tmSummary.lags.steady ?? tmSummary.lags.whole,
    targets: targetsOf(workload, tmSummary, bounds),
    workloadDigest: [...digests][0]!,
    // Its longest run: the runs of the workloads share the processes.
    wallSeconds: Math.max(...runs.map((r) => r.wallSeconds)),
  };
}

/**
 * Prints the report; writes results.json and the lag charts of the workloads named in `charts` (those measured now;
 * see jsonSafe for why not the others) to `dir`, and the READMEs' results sections when asked.
 */
function publish(f: BenchFile, dir: string, readme: boolean, charts: readonly string[]): void {
  const report = renderReport(f);
  process.stdout.write(`\n${report}\n`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'results.json'), `${JSON.stringify(f, jsonSafe, 2)}\n`);
  // The others' charts are left as they are: a run of the local cost alone draws none.
  for (const r of f.workloads.filter((w) => charts.includes(w.name))) {
    const tmRun = r.strategies.find((x) => x.strategy === 'ticket-mirror');
    writeFileSync(
      join(dir, chartName(r.name)),
      lagChart({
        series: r.strategies.map((x) => ({ strategy: x.strategy, listP95: x.hourly.listP95, detailP50: x.hourly.detailP50 })),
        backfillDoneHour: tmRun?.backfillDoneMs == null ? null : tmRun.backfillDoneMs / HOUR_MS,
        listBoundMs: r.bounds.listP95Schedule,
        title: `Lag over simulated time — ${r.name} workload (${r.workload.days} days)`,
      }),
    );
  }
  if (readme) {
    updateReadme(join(HERE, 'README.md'), renderReport(f, ''));
    updateReadme(join(HERE, '..', 'README.md'), renderReport(f, 'bench/'));
  }
  log(`done in ${Math.round(f.wallSeconds)} s: ${[join(dir, 'results.json'), ...(readme ? ['bench/README.md', 'README.md'] : [])].join(', ')}`);
}

/**
 * How long a run is expected to take, to start the longest first (so that no long one starts last, with the other
 * processes done): the last run's time, from the results file this run will update; without one, as long as the
 * requests the allowance lets it make, each dearer the more tickets its lists hold (on the quick runs of the 24th
 * session, about 12 ms a request and 2 µs more a ticket).
 */
function expectedSeconds(workload: Workload, name: StrategyName): number {
  const last = lastTimes?.workloads.find((w) => w.name === workload.name)?.strategies.find((s) => s.strategy === name)?.wallSeconds;
  if (last !== undefined && Number.isFinite(last)) return last;
  const tickets = workload.openTickets + workload.resolvedTickets;
  return workload.limits.daily * workload.days * (0.012 + 2e-6 * tickets);
}

/** One strategy's run in a child process; its raw record (every change and request) is kept in bench/tmp. */
async function runStrategy(workload: Workload, name: StrategyName): Promise<VirtualRun> {
  mkdirSync(runsDir, { recursive: true });
  const out = join(runsDir, `${workload.name}${workload.quick ? '-quick' : ''}${workload.correlated ? '-correlated' : ''}-${name}.run.json`);
  if (opts.reuse && existsSync(out)) return JSON.parse(readFileSync(out, 'utf8')) as VirtualRun;
  rmSync(out, { force: true });
  const args = [
    workload.name,
    name,
    out,
    ...(workload.quick ? ['--quick'] : []),
    ...(workload.correlated ? ['--correlated'] : []),
    ...(postgresUrl ? ['--pg', postgresUrl] : []),
    ...(opts['every-tick'] ? ['--every-tick'] : []),
  ];
  await runScript('virtualWorker.ts', args, `${workload.name} ${name}`);
  return JSON.parse(readFileSync(out, 'utf8')) as VirtualRun;
}

function readPrevious(path: string, mode: BenchFile['mode']): BenchFile | null {
  if (!existsSync(path)) return null;
  const f = JSON.parse(readFileSync(path, 'utf8'), reviveHourly) as Partial<BenchFile>;
  // A file of the former layout (one workload, no `workloads`) or of the other mode is not merged with.
  return Array.isArray(f.workloads) && f.mode === mode ? (f as BenchFile) : null;
}

/** The issue's targets for one workload (see bench/README.md, "Targets"): every lag within 1.5× of its bound. */
function targetsOf(w: Workload, tm: StrategySummary, b: WorkloadBounds): Target[] {
  const MIN10 = 10 * MINUTE_MS;
  const allowed = allowedPerDay(w.limits);
  const lags = tm.lags.steady ?? tm.lags.whole;
  const within = (label: string, actual: number | null, bound: number | null, n = 1): Target => {
    const target = `${label} ≤ 1.5 × its bound`;
    if (n === 0) return { target, result: 'no such change', met: true };
    // An infinite bound (no client keeps up with the demand; results.json writes it as null) measures nothing: any
    // lag would be "0.00 × ∞", met. It is reported as no bound, not met, as a bound that could not be computed is.
    if (bound === null || !Number.isFinite(bound)) return { target, result: `${fmtMs(actual)} (no finite bound)`, met: false };
    const r = bound <= 0 ? (actual === 0 ? 1 : Infinity) : actual === null ? Infinity : actual / bound;
    return { target, result: `${fmtMs(actual)} = ${Number.isFinite(r) ? r.toFixed(2) : '∞'} × ${fmtMs(bound)}`, met: r <= 1.5 };
  };
  const out: Target[] = [
    { target: 'no 429 received', result: `${tm.throttled} × 429`, met: tm.throttled === 0 },
    { target: `never above the budget (${allowed} per rolling 24 h)`, result: `largest rolling 24 h: ${tm.maxRolling24h.sent}`, met: tm.maxRolling24h.sent <= allowed },
    {
      target: 'the backfill uses ≥ 90 % of what it is given',
      result: `${Math.round(tm.backfillUtilisation * 100)} % over ${tm.backfillDoneMs === null ? 'the whole run (never complete)' : fmtMs(tm.backfillDoneMs)}`,
      met: tm.backfillUtilisation >= 0.9,
    },
    within('list-visible p95 (a client polling on a schedule)', lags.list.p95, b.listP95Schedule, lags.list.n),
    within('detail-only p50 (given its own polls)', lags.detail.p50, b.detailP50GivenPolls, lags.detail.n),
    within('full content of list-visible changes p50', lags.listContent.p50, b.contentP50, lags.listContent.n),
    {
      ...within('quiet hours until the mirror is exact', tm.exactAfterQuietHours === null ? null : tm.exactAfterQuietHours * HOUR_MS, b.quietHoursToExact * HOUR_MS),
    },
  ];
  if (w.name === 'abundant') {
    out.push({ target: 'detail-only p95 ≤ 10 min', result: fmtMs(lags.detail.p95), met: lags.detail.p95 !== null && lags.detail.p95 <= MIN10 });
  }
  if (w.name === 'small') {
    const worst = Math.max(...[lags.list.p95, lags.detail.p95, lags.listContent.p95].map((l) => (l === null ? Infinity : l)));
    out.push({
      target: 'every lag p95 ≤ 10 min',
      result: `list ${fmtMs(lags.list.p95)}, detail-only ${fmtMs(lags.detail.p95)}, full content ${fmtMs(lags.listContent.p95)}`,
      met: worst <= MIN10,
    });
  }
  return out;
}

/** The local-cost target, shared by every workload (one response, whatever the workload). */
function localCostTargets(cost: BenchFile['localCost']): Target[] {
  const big = cost.filter((c) => c.kind === 'list' && c.backend === 'pg').sort((x, y) => y.size - x.size)[0];
  if (!big) return [];
  return [
    {
      target: `a list of ${big.size.toLocaleString('en-US')} items diffed and written on PostgreSQL, peak RSS ≤ 250 MB, steady poll ≤ 1.0 s`,
      result: `${fmtMs(big.steadyMedian)} a poll (the first, into an empty mirror: ${fmtMs(big.firstMs)}), peak RSS ${Math.round(big.peakRssMb)} MB`,
      met: big.steadyMedian <= 1_000 && big.peakRssMb <= 250,
    },
  ];
}

/** Replaces the generated section of a README (between its markers) with the report and the chart. */
function updateReadme(path: string, report: string): void {
  if (!existsSync(path)) return;
  const text = readFileSync(path, 'utf8');
  const begin = '<!-- bench:results:begin -->';
  const end = '<!-- bench:results:end -->';
  const i = text.indexOf(begin);
  const j = text.indexOf(end);
  if (i < 0 || j < i) return;
  const section = `${begin}\n_Generated by \`npm run bench\` from bench/results.json; do not edit by hand._\n\n${report}\n${end}`;
  writeFileSync(path, text.slice(0, i) + section + text.slice(j + end.length));
}

/**
 * JSON has no Infinity: a number that is not finite is written null. In the hourly series, though, null is an hour
 * without a change and Infinity one whose changes were never seen (the chart draws it at the top): there it is written
 * "never", and `reviveHourly` reads it back.
 */
function jsonSafe(key: string, value: unknown): unknown {
  if (key === 'hourly') return mapHourly(value as StrategySummary['hourly'], (v) => (v === Infinity ? NEVER : v));
  return typeof value === 'number' && !Number.isFinite(value) ? null : value;
}

function reviveHourly(key: string, value: unknown): unknown {
  return key === 'hourly' ? mapHourly(value as StrategySummary['hourly'], (v) => (v === NEVER ? Infinity : v)) : value;
}

function mapHourly(h: StrategySummary['hourly'], f: (v: unknown) => unknown): unknown {
  return { listP95: h.listP95.map(f), detailP50: h.detailP50.map(f) };
}

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}
