import type { ListName } from '../api/endpoints.ts';
import { card, dl, duration, escapeHtml, table } from '../pageFormat.ts';
import { HOUR_MS, MINUTE_MS } from '../time.ts';
import { describePlan } from './describePlan.ts';
import { renderQuotaChart } from './quotaChart.ts';
import type { StatusPageData } from './statusData.ts';

/**
 * The status page: one self-contained HTML document (inline CSS, inline SVG, no script, no external asset), so it
 * opens from any browser that reaches the daemon and passes a strict Content-Security-Policy. It reloads itself
 * every 30 s. Pure: every number comes from `data`, every text from outside is escaped.
 */
export function renderStatusPage(data: StatusPageData): string {
  const { status: s, health, readiness } = data;
  const now = Date.parse(s.now);
  const b = s.budget;
  const badge = health.role === 'leader' ? (readiness.ready ? 'ok' : 'bad') : health.role === 'standby' ? 'idle' : 'bad';

  const budget = card(
    'Request budget',
    `<p class="big">${num(b.dailyUsed)} <small>of ${num(b.dailyAllowed)} used in the last 24 h</small></p>` +
      meter(b.dailyUsed, b.dailyAllowed, b.dailyLeft < b.dailyAllowed * 0.1 ? 'bad' : 'ok') +
      dl([
        ['Left in the last 24 h', num(b.dailyLeft)],
        ['Last minute', `${num(b.minuteUsed)} of ${num(b.minuteAllowed)}`],
        ['Next request possible', b.nextSlotAt <= now ? 'now' : `in ${duration(b.nextSlotAt - now)}`],
        ...(b.foreignPerDay > 0 ? [['Other clients of the token', `about ${num(b.foreignPerDay)} a day`] as [string, string]] : []),
      ]),
  );

  const lastSync = s.lastSync
    ? `${ago(s.lastSync.startedAt, now)}: ${counted(s.lastSync.requests, 'request')}, ${counted(s.lastSync.detailsFetched, 'detail')}`
    : 'never';
  const freshness = card(
    'Freshness',
    dl([
      ['Last sync pass', lastSync],
      ['Details waiting', s.freshness.detailsDue === 0 ? 'none' : `${num(s.freshness.detailsDue)} (oldest ${ago(s.freshness.oldestDueSince, now)})`],
      ["Open tickets' details", s.freshness.medianOpenDetailAgeMinutes === null ? '—' : `${duration(s.freshness.medianOpenDetailAgeMinutes * MINUTE_MS)} old (median)`],
    ]) +
      table(
        ['List', 'Last polled'],
        (Object.entries(s.lastPolls) as Array<[ListName, string | null]>).map(([list, at]) => [list, at ? ago(at, now) : 'never']),
      ),
  );

  const c = s.counts;
  const tickets = card(
    'Tickets',
    table(
      ['Group', 'Tickets'],
      [
        ['open', num(c.open)],
        ['assigned to me', num(c.self)],
        ['unassigned', num(c.unassigned)],
        ['resolved', num(c.resolved)],
        ['missing from every list', num(c.missing)],
        ['deleted', num(c.deleted)],
      ],
      'num',
    ) +
      dl([
        ['Messages / attachments', `${num(c.messages)} / ${num(c.attachments)}`],
        ['Reply outbox', `${num(c.outboxPending)} pending, ${num(c.outboxFailed)} failed`],
      ]),
  );

  const bf = s.backfill;
  const eta = bf.remaining === 0 ? 'done' : bf.etaHours === null ? 'unknown: no budget left for it' : `about ${duration(bf.etaHours * HOUR_MS)}`;
  const backfill = card(
    'Backfill',
    `<p class="big">${percent(bf.fetched, bf.total)} <small>${num(bf.fetched)} of ${num(bf.total)} details fetched</small></p>` +
      meter(bf.fetched, bf.total, 'ok') +
      dl([
        ['Never fetched', num(bf.remaining)],
        ['Time to finish', eta],
      ]),
  );

  const chart = card(
    'Quota used, last 24 hours',
    renderQuotaChart(data.hours, b.dailyAllowed / 24) +
      '<p class="legend"><span class="key bar"></span>requests <span class="key bar-failed"></span>no answer, 429 or 5xx <span class="key pace"></span>even pace of the daily allowance</p>' +
      `<p class="muted">The plan: ${escapeHtml(describePlan(s.plan).replace(/^plan: /, ''))}.</p>`,
    'wide',
  );

  const errors = card(
    'Recent errors',
    data.errors.length === 0
      ? '<p class="muted">No sync pass recorded an error.</p>'
      : table(
          ['When', 'Error'],
          data.errors.map((e) => [`<span title="${escapeHtml(e.at)}">${ago(e.at, now)}</span>`, escapeHtml(e.error)]),
          'errors',
        ),
    'span2',
  );

  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="30">
<title>ticket-mirror status</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>ticket-mirror</h1>
<span class="badge ${badge}">${escapeHtml(health.role)}</span>
<span class="reason">${escapeHtml(readiness.reason)}</span>
</header>
<p class="muted">Status at ${escapeHtml(s.now.replace('T', ' ').replace(/\.\d+Z$/, ''))} UTC · reloads every 30 s</p>
<main>
${budget}
${backfill}
${freshness}
${chart}
${tickets}
${errors}
</main>
</body>
</html>
`;
}

/** The page's CSS, shared with the fleet's status page (fleet/statusPage.ts). */
export const STYLE = `
:root { color-scheme: light; --ink: #1f2933; --muted: #65717e; --line: #e3e7ec; --ok: #2f6fdf; --bad: #d64545; --pace: #d98b1a; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1120px; padding: 24px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: #f4f6f8; }
header { display: flex; align-items: center; gap: 12px; flex-wrap: wrap; }
h1 { font-size: 22px; margin: 0; }
h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .06em; color: var(--muted); margin: 0 0 10px; }
main { display: grid; grid-template-columns: minmax(0, 1fr); gap: 16px; margin-top: 16px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 16px 18px; min-width: 0; }
section.wide, section.span2 { grid-column: 1 / -1; }
@media (min-width: 720px) { main { grid-template-columns: repeat(2, minmax(0, 1fr)); } }
@media (min-width: 1040px) { main { grid-template-columns: repeat(3, minmax(0, 1fr)); } section.span2 { grid-column: span 2; } }
.badge { padding: 2px 10px; border-radius: 999px; font-weight: 600; font-size: 12px; text-transform: uppercase; color: #fff; }
.badge.ok { background: #2e9d5b; } .badge.bad { background: var(--bad); } .badge.idle { background: #7b8794; }
.reason { color: var(--muted); }
.muted { color: var(--muted); margin: 4px 0 0; }
.big { font-size: 28px; font-weight: 650; margin: 0 0 8px; }
.big small { font-size: 13px; font-weight: 400; color: var(--muted); }
.meter { height: 8px; background: var(--line); border-radius: 4px; overflow: hidden; margin-bottom: 12px; }
.meter span { display: block; height: 100%; background: var(--ok); }
.meter span.bad { background: var(--bad); }
dl { display: grid; grid-template-columns: auto 1fr; gap: 4px 16px; margin: 0 0 8px; }
dt { color: var(--muted); } dd { margin: 0; }
table { width: 100%; border-collapse: collapse; margin-top: 6px; }
th, td { text-align: left; padding: 5px 0; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 500; }
table.num td:last-child, table.num th:last-child { text-align: right; font-variant-numeric: tabular-nums; }
table.errors td:first-child { white-space: nowrap; padding-right: 16px; color: var(--muted); }
table.errors td:last-child { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; overflow-wrap: anywhere; }
.chart { width: 100%; height: auto; display: block; }
.chart .grid { stroke: var(--line); } .chart .axis { fill: var(--muted); font-size: 11px; }
.chart .bar, .key.bar { fill: var(--ok); background: var(--ok); }
.chart .bar-failed, .key.bar-failed { fill: var(--bad); background: var(--bad); }
.chart .pace { stroke: var(--pace); stroke-width: 1.5; stroke-dasharray: 6 4; }
.chart .pace-label { fill: var(--pace); font-size: 11px; } .chart .empty { fill: var(--muted); font-size: 13px; }
.legend { color: var(--muted); font-size: 12px; margin: 8px 0 0; display: flex; align-items: center; gap: 6px; flex-wrap: wrap; }
.key { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-left: 10px; }
.key.pace { height: 0; border-top: 2px dashed var(--pace); }
`;


function meter(value: number, total: number, tone: 'ok' | 'bad'): string {
  const width = total <= 0 ? 0 : Math.min(100, (value / total) * 100);
  return `<div class="meter"><span class="${tone}" style="width:${width.toFixed(1)}%"></span></div>`;
}

function num(n: number): string {
  return n.toLocaleString('en-US');
}

function counted(n: number, noun: string): string {
  return `${num(n)} ${noun}${n === 1 ? '' : 's'}`;
}

function percent(part: number, whole: number): string {
  return whole === 0 ? '—' : `${Math.floor((part / whole) * 100)} %`;
}

function ago(iso: string | null, now: number): string {
  if (!iso) return 'never';
  return `${duration(Math.max(0, now - Date.parse(iso)))} ago`;
}
