import type { WorkloadBounds } from './bound.ts';
import type { CostResult } from './localCostWorker.ts';
import type { LagStats } from './stats.ts';
import type { StrategyName } from './strategies/index.ts';
import type { LagSet, StrategySummary } from './summarize.ts';
import { allowedPerDay } from '../src/sync/budget.ts';
import { MAX_QUIET_HOURS } from './virtualRun.ts';
import type { Workload, WorkloadName } from './workload.ts';

/** Everything one `npm run bench` measured: what `results.json` holds and the tables are made of. */
export interface BenchFile {
  mode: 'full' | 'quick';
  database: 'postgres' | 'pglite';
  /** One entry per workload (small, standard, large, abundant), in that order. */
  workloads: WorkloadResult[];
  localCost: CostResult[];
  localCostTargets: Target[];
  wallSeconds: number;
}

/** One workload: every strategy's figures, the bounds, ticket-mirror's lags and its targets. */
export interface WorkloadResult {
  name: WorkloadName;
  workload: Workload;
  /** The window "after the backfill": from ticket-mirror's backfill completion to the end of the activity (ms since start). */
  steadyWindow: { fromMs: number; toMs: number } | null;
  strategies: StrategySummary[];
  bounds: WorkloadBounds;
  /** ticket-mirror's lags after the backfill (over the whole run when it never completed). */
  lags: LagSet;
  targets: Target[];
  /** Identical for all strategies: they saw the same mutations at the same instants. */
  workloadDigest: string;
  wallSeconds: number;
}

export interface Target {
  target: string;
  result: string;
  met: boolean;
}

export function chartName(workload: string): string {
  return `lag-${workload}.svg`;
}

/** The whole report: a section per workload, then the local cost. `chartDir` prefixes the charts' paths. */
export function renderReport(f: BenchFile, chartDir = ''): string {
  const sections = f.workloads.map((r) =>
    [
      `### Workload \`${r.name}\`${f.mode === 'quick' ? ' (quick)' : ''}`,
      workloadLine(r.workload),
      freshness(r, f.database),
      byKind(r),
      bounds(r),
      targets(r),
      `![Lag over simulated time, ${r.name}](${chartDir}${chartName(r.name)})`,
    ].join('\n\n'),
  );
  const cost = localCost(f);
  const costTargets = (f.localCostTargets ?? []).map((t) => `| ${t.target} | ${t.result} | ${t.met ? 'yes' : '**no**'} |`);
  const costTable = costTargets.length > 0 ? `\n\n| target | result | met |\n|---|---|:---:|\n${costTargets.join('\n')}` : '';
  return [...sections, ...(cost ? [`### Local cost\n\n${cost}${costTable}`] : [])].join('\n\n');
}

function workloadLine(w: Workload): string {
  const perDay = Object.values(w.ratesPerDay).reduce((a, b) => a + b, 0);
  return `${fmtNumber(w.openTickets)} open / ${fmtNumber(w.resolvedTickets)} resolved tickets, about ${fmtNumber(perDay)} mutations a weekday, ${fmtNumber(w.limits.daily)} requests a day and ${w.limits.minute} a minute (reserve ${w.limits.reserve * 100} %), ${w.days} simulated day${w.days > 1 ? 's' : ''}.`;
}

const NAMES: Record<StrategyName, string> = { 'ticket-mirror': 'ticket-mirror', 'naive-cron': 'naive cron (5 min)', 'full-refresh': 'full refresh (1 h)' };


/** ticket-mirror's lags by kind of mutation. */
function byKind(r: WorkloadResult): string {
  const tm = r.strategies.find((x) => x.strategy === 'ticket-mirror');
  if (!tm?.byKind) return '';
  const lag = (st: LagStats) => (st.n === 0 ? '' : `${fmtMs(st.p50)} / ${fmtMs(st.p95)}${st.unreflected ? ` (${st.unreflected} never)` : ''}`);
  return [
    `#### ticket-mirror's lag by kind of change (${r.steadyWindow ? 'after the backfill' : 'whole run'}; p50 / p95)`,
    '',
    '| change | count | list-visible | lists show it | full content (a later detail) |',
    '|---|---:|---:|---:|---:|',
    ...[...tm.byKind]
      .sort((a, b) => b.n - a.n)
      .map((k) => `| ${KIND_NAMES[k.op] ?? k.op} | ${k.n} | ${k.listVisible} | ${lag(k.list)} | ${lag(k.content)} |`),
  ].join('\n');
}

const KIND_NAMES: Record<string, string> = {
  newTicket: 'new ticket',
  inboundMessage: 'inbound message',
  agentReply: "another agent's reply",
  resolve: 'resolution',
  reopen: 'reopening',
  assign: 'assignment change',
  setPriority: 'priority change',
  deleteTicket: 'deletion',
};

function freshness(r: WorkloadResult, database: string): string {
  const s = r.strategies;
  const row = (label: string, f: (x: StrategySummary) => string) => `| ${label} | ${s.map(f).join(' | ')} |`;
  const kinds = (x: StrategySummary, ...k: string[]) => fmtNumber(k.reduce((sum, kind) => sum + (x.perDay[kind] ?? 0), 0));
  const lag = (st: LagStats | undefined) => {
    if (!st) return 'n/a';
    if (st.n === 0) return 'no such change';
    return `${fmtMs(st.p50)} / ${fmtMs(st.p95)} / ${fmtMs(st.max)}${st.unreflected ? ` (${st.unreflected} never)` : ''}`;
  };
  const w = r.workload;
  const steady = r.steadyWindow ? `days ${fmtDays(r.steadyWindow.fromMs)}–${fmtDays(r.steadyWindow.toMs)}` : 'none (backfill never complete)';
  return [
    `#### Freshness under the quota — ${r.name} workload, ${w.days} simulated day${w.days > 1 ? 's' : ''} + ${Math.round(w.quietMs / 60_000)} quiet min, ${database}`,
    '',
    `| | ${s.map((x) => NAMES[x.strategy]).join(' | ')} |`,
    `|---|${s.map(() => '---:').join('|')}|`,
    row('requests/day: list polls', (x) => kinds(x, 'list_open', 'list_self', 'list_unassigned', 'list_resolved')),
    row('requests/day: details of changes', (x) => kinds(x, 'detail')),
    row('requests/day: backfill', (x) => kinds(x, 'backfill')),
    row('requests/day: revalidation', (x) => kinds(x, 'revalidate')),
    row('requests/day: total sent', (x) => fmtNumber(x.sent / ((w.days * 86_400_000 + w.quietMs) / 86_400_000))),
    row('allowance left idle after the backfill', (x) => idleShare(x, r)),
    row('429s received', (x) => String(x.throttled)),
    row('largest rolling-24 h total (sent / accepted)', (x) => `${x.maxRolling24h.sent} / ${x.maxRolling24h.accepted}`),
    row('backfill complete after', (x) => (x.backfillDoneMs === null ? 'never' : fmtMs(x.backfillDoneMs))),
    row('allowance used while backfilling', (x) => `${Math.round(x.backfillUtilisation * 100)} %`),
    row(`list-visible lag p50 / p95 / max, ${steady}`, (x) => lag(x.lags.steady?.list)),
    row(`detail-only lag p50 / p95 / max, ${steady}`, (x) => lag(x.lags.steady?.detail)),
    row('list-visible changes, full content (detail) lag', (x) => lag(x.lags.steady?.listContent)),
    row('list-visible lag, whole run', (x) => lag(x.lags.whole.list)),
    row('detail-only lag, whole run', (x) => lag(x.lags.whole.detail)),
    row('mirror = ground truth after the quiet hour', (x) =>
      x.exactness.exact ? 'yes' : `no: ${x.exactness.differing} of ${x.exactness.tickets} tickets differ${x.exactness.extra ? `, ${x.exactness.extra} deleted ones not marked` : ''}`,
    ),
    row('… in list-visible state (list fields, membership)', (x) =>
      x.exactness.listStateDiffering === 0 ? 'yes' : `no: ${x.exactness.listStateDiffering} tickets differ`,
    ),
    row(`hours of quiet until the mirror equals the truth (checked hourly, up to ${w.quietCheckHours ?? MAX_QUIET_HOURS} h)`, (x) =>
      x.exactAfterQuietHours === null ? `more than ${w.quietCheckHours ?? MAX_QUIET_HOURS}` : String(x.exactAfterQuietHours),
    ),
    row('wall time of the run', (x) => `${Math.round(x.wallSeconds)} s`),
  ].join('\n');
}

/**
 * The share of the allowance a strategy left unused after the backfill (requests per 24 h block over the allowance).
 * ticket-mirror leaves budget idle only when every sweep is as frequent as the minute allowance pays for and every
 * open detail was read within the sweep interval: re-reading sooner buys nothing.
 */
function idleShare(x: StrategySummary, r: WorkloadResult): string {
  if (!x.steadyBlocks || !r.steadyWindow) return 'n/a';
  const days = (r.steadyWindow.toMs - r.steadyWindow.fromMs) / 86_400_000;
  const used = [...x.steadyBlocks.polls, ...x.steadyBlocks.details].reduce((a, b) => a + b, 0);
  const allowed = allowedPerDay(r.workload.limits) * days;
  return `${Math.max(0, Math.round((1 - used / allowed) * 100))} %`;
}

function bounds(r: WorkloadResult): string {
  const win = r.steadyWindow ? 'after the backfill' : 'whole run';
  const l = r.lags;
  const tm = r.strategies.find((x) => x.strategy === 'ticket-mirror');
  const quiet = tm?.exactAfterQuietHours ?? null;
  const b = r.bounds;
  const line = (label: string, bound: number | null, actual: number | null) => `| ${label} | ${fmtMs(bound)} | ${fmtMs(actual)} | ${ratio(actual, bound)} |`;
  return [
    `#### Distance from the best possible (${win}; see bench/README.md, "The bounds")`,
    '',
    '| lower bound | bound | ticket-mirror | ratio |',
    '|---|---:|---:|---:|',
    line('list-visible p95, any client (may poll a list the moment another shows a change)', b.listP95Any, l.list.p95),
    line('list-visible p95, a client polling on a schedule', b.listP95Schedule, l.list.p95),
    line("list-visible p95, a schedule given ticket-mirror's own detail requests", b.listP95GivenDetails, l.list.p95),
    line('detail-only p50, whole allowance spent on details (no list poll at all)', b.detailP50AllBudget, l.detail.p50),
    line("detail-only p50, given ticket-mirror's own list polls", b.detailP50GivenPolls, l.detail.p50),
    line("detail-only p95, given ticket-mirror's own list polls", b.detailP95GivenPolls, l.detail.p95),
    line("full content of list-visible changes p50, given ticket-mirror's own list polls", b.contentP50, l.listContent.p50),
    line("full content of list-visible changes p95, given ticket-mirror's own list polls", b.contentP95, l.listContent.p95),
    line('quiet time until the mirror is exact (checked hourly)', b.quietHoursToExact * 3_600_000, quiet === null ? null : quiet * 3_600_000),
  ].join('\n');
}

function targets(r: WorkloadResult): string {
  return ['#### Targets', '', '| target | ticket-mirror | met |', '|---|---|:---:|', ...r.targets.map((t) => `| ${t.target} | ${t.result} | ${t.met ? 'yes' : '**no**'} |`)].join(
    '\n',
  );
}

function localCost(r: BenchFile): string {
  if (r.localCost.length === 0) return '';
  const rows = [...r.localCost].sort((a, b) => (a.kind === b.kind ? a.size - b.size : a.kind === 'list' ? -1 : 1) || (a.backend < b.backend ? -1 : 1));
  const perItem = (c: CostResult) => (c.kind === 'list' ? `${((c.steadyMedian * 1000) / c.size).toFixed(1)} µs` : '');
  return [
    '#### Local cost as the data grows (median wall time; first = into an empty mirror, steady = 1 % changed)',
    '',
    '| response | backend | body | JSON.parse (floor) | first | steady | steady / floor | steady per item | peak RSS (at rest) |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (c) =>
        `| ${c.kind === 'list' ? `list of ${fmtNumber(c.size)} items` : `detail, ${c.size} messages`} | ${c.backend === 'pg' ? 'PostgreSQL' : 'PGlite'} | ${fmtBytes(c.bodyBytes)} | ${fmtMs(c.parseMedian)} | ${fmtMs(c.firstMs)} | ${fmtMs(c.steadyMedian)} | ${(c.steadyMedian / c.parseMedian).toFixed(0)}× | ${perItem(c)} | ${Math.round(c.peakRssMb)} MB (${Math.round(c.restRssMb)}) |`,
    ),
  ].join('\n');
}

export function fmtMs(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return '∞';
  if (ms < 1_000) return `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  if (ms < 3_600_000) return `${(ms / 60_000).toFixed(1)} min`;
  if (ms < 2 * 86_400_000) return `${(ms / 3_600_000).toFixed(1)} h`;
  return `${(ms / 86_400_000).toFixed(1)} d`;
}

function fmtDays(ms: number): string {
  return (ms / 86_400_000).toFixed(1);
}

function fmtNumber(n: number): string {
  return n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(n >= 10 ? 0 : 1);
}

function fmtBytes(n: number): string {
  return n >= 1_048_576 ? `${(n / 1_048_576).toFixed(1)} MB` : `${Math.round(n / 1024)} KB`;
}

function ratio(actual: number | null, bound: number | null): string {
  if (bound === null || bound <= 0) return 'n/a';
  if (actual === null || !Number.isFinite(actual)) return '∞';
  return `${(actual / bound).toFixed(2)}×`;
}
