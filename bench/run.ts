import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { allowedPerDay } from '../src/sync/budget.ts';
import { workloadBounds, type WorkloadBounds } from './bound.ts';
import { findPostgres } from './benchDatabase.ts';
import { pool, runScript } from './children.ts';
import { lagChart } from './lagChart.ts';
import { FULL_COST, measureLocalCost, QUICK_COST } from './localCost.ts';
import { fmtMs, renderReport, type BenchResults, type Target } from './report.ts';
import { STRATEGIES, type StrategyName } from './strategies/index.ts';
import { summarize, type StrategySummary } from './summarize.ts';
import { workloadDigest, type VirtualRun } from './virtualRun.ts';
import { activityEnd, QUICK, STANDARD, type Workload } from './workload.ts';

/**
 * `npm run bench` — how fresh ticket-mirror keeps its mirror within the quota, next to two baselines on the very same
 * workload, how far that is from a lower bound no client can beat, and what processing a response costs locally.
 * Prints markdown tables; writes bench/results.json, bench/lag.svg and the results sections of bench/README.md and
 * README.md.
 *
 *   --quick          one day, a tenth of the data: under a minute (writes bench/tmp/results.json and lag.svg only)
 *   --jobs N         strategies run in parallel, one process each (default 2: the machine's cores)
 *   --every-tick     run ticket-mirror's pass on every 15 s tick, idle or not (slow; the results must not change)
 *   --skip-cost      leave out the local-cost part
 *   --only a,b       run only these strategies (ticket-mirror is always run: the others are compared with it)
 *   --render         run nothing: print and draw again from bench/results.json (after a change to the report)
 */

const HERE = fileURLToPath(new URL('.', import.meta.url));
const { values: opts } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    jobs: { type: 'string', default: '2' },
    'every-tick': { type: 'boolean', default: false },
    'skip-cost': { type: 'boolean', default: false },
    only: { type: 'string' },
    render: { type: 'boolean', default: false },
  },
});

if (opts.render) {
  const saved = JSON.parse(readFileSync(join(HERE, 'results.json'), 'utf8')) as BenchResults;
  publish(saved, HERE, saved.mode === 'full');
  process.exit(0);
}

const started = performance.now();
const workload: Workload = opts.quick ? QUICK : STANDARD;
const postgresUrl = await findPostgres();
log(`database: ${postgresUrl ? 'PostgreSQL' : 'PGlite (no PostgreSQL answered)'}; workload: ${workload.name}, ${workload.days} day(s)`);

// 1. Freshness: every strategy on its own simulator and schema, in parallel processes.
const wanted = opts.only?.split(',').map((n) => n.trim());
const names = (Object.keys(STRATEGIES) as StrategyName[]).filter((n) => !wanted || n === 'ticket-mirror' || wanted.includes(n));
const runs = await pool(
  names.map((name) => () => runStrategy(name)),
  Math.max(1, Number(opts.jobs)),
);
const digests = new Set(runs.map((r) => workloadDigest(r.changes)));
if (digests.size !== 1) throw new Error(`the strategies did not see the same workload (${[...digests].join(', ')})`);

const tm = runs.find((r) => r.strategy === 'ticket-mirror')!;
const steady = tm.backfillDoneAt === null ? null : { from: tm.backfillDoneAt, to: activityEnd(workload) };
const summaries = runs.map((r) => summarize(r, workload, steady));
const tmSummary = summaries.find((s) => s.strategy === 'ticket-mirror')!;
const allowed = allowedPerDay(workload.limits);
const bounds = workloadBounds({
  changes: tm.changes,
  window: steady ?? { from: workload.start, to: activityEnd(workload) },
  allowedPerDay: allowed,
  openAt: (t) => tm.openByHour[Math.floor((t - workload.start) / 3_600_000)] ?? tm.openByHour.at(-1) ?? 0,
  ...(tmSummary.steadyBlocks ? { used: tmSummary.steadyBlocks } : {}),
});

// 2. Local cost, after the runs: wall times must not compete with them.
const localCost = opts['skip-cost'] ? [] : await measureLocalCost(opts.quick ? QUICK_COST : FULL_COST, postgresUrl);

const results: BenchResults = {
  mode: opts.quick ? 'quick' : 'full',
  database: postgresUrl ? 'postgres' : 'pglite',
  workload,
  steadyWindow: steady && { fromMs: steady.from - workload.start, toMs: steady.to - workload.start },
  strategies: summaries,
  bounds,
  targets: targetsOf(tmSummary, bounds, allowed, localCost),
  localCost,
  workloadDigest: [...digests][0]!,
  wallSeconds: (performance.now() - started) / 1000,
};

// 3. Output. A quick run is a smoke test: its files go to bench/tmp (not kept), so that it never replaces real results.
publish(results, opts.quick ? join(HERE, 'tmp') : HERE, !opts.quick);

/** Prints the report; writes results.json and lag.svg to `dir`, and the README's results section when asked. */
function publish(r: BenchResults, dir: string, readme: boolean): void {
  const report = renderReport(r);
  process.stdout.write(`\n${report}\n`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'results.json'), `${JSON.stringify(r, jsonSafe, 2)}\n`);
  const tmRun = r.strategies.find((x) => x.strategy === 'ticket-mirror');
  writeFileSync(
    join(dir, 'lag.svg'),
    lagChart({
      series: r.strategies.map((x) => ({ strategy: x.strategy, listP95: x.hourly.listP95, detailP50: x.hourly.detailP50 })),
      backfillDoneHour: tmRun?.backfillDoneMs == null ? null : tmRun.backfillDoneMs / 3_600_000,
      listBoundMs: r.bounds.listP95Any,
      title: `Lag over simulated time — ${r.workload.name} workload (${r.workload.days} days)`,
    }),
  );
  if (readme) {
    updateReadme(join(HERE, 'README.md'), report, 'lag.svg');
    updateReadme(join(HERE, '..', 'README.md'), report, 'bench/lag.svg');
  }
  log(`done in ${Math.round(r.wallSeconds)} s: ${[join(dir, 'results.json'), join(dir, 'lag.svg'), ...(readme ? ['bench/README.md', 'README.md'] : [])].join(', ')}`);
}

/** One strategy's run in a child process; its raw record (every change and request) is kept in bench/tmp. */
async function runStrategy(name: StrategyName): Promise<VirtualRun> {
  const dir = join(HERE, 'tmp');
  mkdirSync(dir, { recursive: true });
  const out = join(dir, `${workload.name}-${name}.run.json`);
  rmSync(out, { force: true });
  const args = [workload.name, name, out, ...(postgresUrl ? ['--pg', postgresUrl] : []), ...(opts['every-tick'] ? ['--every-tick'] : [])];
  await runScript('virtualWorker.ts', args, name);
  return JSON.parse(readFileSync(out, 'utf8')) as VirtualRun;
}

function targetsOf(tm: StrategySummary, b: WorkloadBounds, allowed: number, cost: BenchResults['localCost']): Target[] {
  const lags = tm.lags.steady ?? tm.lags.whole;
  const p95 = lags.list.p95;
  const ratio = (bound: number) => (p95 === null ? Infinity : p95 / bound);
  const big = cost.filter((c) => c.kind === 'list' && c.backend === 'pg').sort((x, y) => y.size - x.size)[0];
  const out: Target[] = [
    { target: 'no 429 received', result: `${tm.throttled} × 429`, met: tm.throttled === 0 },
    { target: `never above the budget (${allowed} per rolling 24 h)`, result: `largest rolling 24 h: ${tm.maxRolling24h.sent}`, met: tm.maxRolling24h.sent <= allowed },
    {
      target: 'after the backfill, list-visible p95 ≤ 1.5 × the bound (any client)',
      result: `${fmtMs(p95)} = ${ratio(b.listP95Any).toFixed(2)} × ${fmtMs(b.listP95Any)}`,
      met: ratio(b.listP95Any) <= 1.5,
    },
    {
      target: '… ≤ 1.5 × the bound for clients polling on a schedule',
      result: `${fmtMs(p95)} = ${ratio(b.listP95Schedule).toFixed(2)} × ${fmtMs(b.listP95Schedule)}`,
      met: ratio(b.listP95Schedule) <= 1.5,
    },
    {
      target: 'after the backfill, detail-only p50 < 2 h',
      result: `${fmtMs(lags.detail.p50)} (no client can do better than ${fmtMs(b.detailP50AllBudget)})`,
      met: lags.detail.p50 !== null && lags.detail.p50 < 2 * 3_600_000,
    },
    {
      target: 'the backfill uses ≥ 90 % of the allowance',
      result: `${Math.round(tm.backfillUtilisation * 100)} % over ${tm.backfillDoneMs === null ? 'the whole run (never complete)' : fmtMs(tm.backfillDoneMs)}`,
      met: tm.backfillUtilisation >= 0.9,
    },
    {
      target: 'an exact mirror after the quiet final hour',
      result: tm.exactness.exact ? `all ${tm.exactness.tickets} tickets equal` : `${tm.exactness.differing} tickets differ`,
      met: tm.exactness.exact,
    },
  ];
  if (big) {
    out.push({
      target: `a list of ${big.size.toLocaleString('en-US')} items diffed and written in < 2 s on PostgreSQL, peak RSS < 400 MB`,
      result: `${fmtMs(big.steadyMedian)} a poll (the first, into an empty mirror: ${fmtMs(big.firstMs)}), peak RSS ${Math.round(big.peakRssMb)} MB`,
      met: big.steadyMedian < 2_000 && big.peakRssMb < 400,
    });
  }
  return out;
}

/** Replaces the generated section of a README (between its markers) with the report and the chart. */
function updateReadme(path: string, report: string, chart: string): void {
  if (!existsSync(path)) return;
  const text = readFileSync(path, 'utf8');
  const begin = '<!-- bench:results:begin -->';
  const end = '<!-- bench:results:end -->';
  const i = text.indexOf(begin);
  const j = text.indexOf(end);
  if (i < 0 || j < i) return;
  const section = `${begin}\n_Generated by \`npm run bench\`; do not edit by hand._\n\n${report}\n\n![Lag over simulated time](${chart})\n${end}`;
  writeFileSync(path, text.slice(0, i) + section + text.slice(j + end.length));
}

/** JSON has no Infinity: an unreflected lag is written as null (and so read as "never"). */
function jsonSafe(_key: string, value: unknown): unknown {
  return typeof value === 'number' && !Number.isFinite(value) ? null : value;
}

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}
