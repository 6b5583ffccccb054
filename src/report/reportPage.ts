import { duration, escapeHtml } from '../pageFormat.ts';
import { DAY_MS, SECOND_MS } from '../time.ts';
import { heatMap, lineChart } from './charts.ts';
import { dateText, dateValue, DEFAULT_PERIOD_DAYS, type ReportPeriod } from './period.ts';
import type { ReportData } from './reportData.ts';

/**
 * The report page: the support dashboard's charts for a period, as one self-contained HTML document (inline CSS and
 * SVG, no script, nothing loaded from elsewhere). Served by the status server at `/report` with a form to choose the
 * period, or written to a file by `ticket-mirror report`, without it and with its own Content-Security-Policy in a
 * meta tag. Pure: every number comes from `data`, every text from outside is escaped.
 */

export interface ReportPageOptions {
  /** Served by the daemon: a form to choose the period, and links to common ones ending `today`. */
  form?: { today: string };
}

/** The policy of the written file; the server sends its own as a header (a meta tag cannot set frame-ancestors). */
const FILE_POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'";

export function renderReportPage(data: ReportData, options: ReportPageOptions = {}): string {
  const { period, summary: s } = data;
  const tz = data.timeZone;

  const kpis = [
    kpi('New tickets', num(s.created), `${num(s.answered)} answered`),
    kpi('Resolved', num(s.resolved), 'closed in the period'),
    kpi('Median first response', maybeSeconds(s.medianFirstResponseSeconds), inBusinessHours(s.medianFirstResponseBusinessSeconds, data.businessHours) ?? 'tickets created in the period'),
    kpi('Median resolution', maybeSeconds(s.medianResolutionSeconds), inBusinessHours(s.medianResolutionBusinessSeconds, data.businessHours) ?? 'tickets closed in the period'),
    kpi('Open now', num(s.openNow), `${num(s.waitingNow)} customer${s.waitingNow === 1 ? '' : 's'} waiting`),
  ].join('');

  const backlogDays = Array.from({ length: period.days }, (_, i) => dateText(dateValue(period.from)! + i * DAY_MS));
  const openByDay = new Map(data.backlog.map((r) => [r.day, r.open_tickets]));
  const backlog = card(
    'Open tickets at the end of each day',
    lineChart({
      labels: backlogDays,
      series: [{ name: 'open', cls: 's1', values: backlogDays.map((d) => openByDay.get(d) ?? null) }],
      labelText: shortDate,
      valueText: (v) => num(Math.round(v)),
      ariaLabel: `Open tickets at the end of each day from ${period.from} to ${period.to}`,
      empty: 'no history recorded in this period',
      area: true,
    }) + `<p class="muted">From <code>open_backlog_daily</code>: the open list as the mirror saw it; days before the mirror started have no value.</p>`,
    'wide',
  );

  const firstResponse = card(
    'First response time by week created',
    weekChart(data.firstResponse, 'first response') +
      legend() +
      `<p class="muted">From <code>ticket_first_response</code>: ${num(s.answered)} of ${num(s.created)} tickets answered. Weeks run Monday to Sunday; the first and the last may be partial.</p>`,
  );
  const resolution = card(
    'Resolution time by week closed',
    weekChart(data.resolution, 'resolution') + legend() + `<p class="muted">From <code>ticket_resolution</code>: ${num(s.resolved)} tickets closed.</p>`,
  );

  const load = card(
    `New tickets by hour of the week (${tz})`,
    heatMap(data.hourOfWeek, 'ticket', tz) + `<p class="muted">Tickets created in the period, by the weekday and hour of their creation.</p>`,
    'wide',
  );

  const widgetMax = Math.max(1, ...data.widgets.map((w) => w.created));
  const widgets = card(
    'By widget',
    data.widgets.length === 0
      ? '<p class="muted">No tickets.</p>'
      : table(
          ['Widget', 'New in the period', '', 'Open now', 'Unread'],
          data.widgets.map((w) => [escapeHtml(w.widget_name ?? '(none)'), bar(w.created, widgetMax), num(w.created), num(w.open_tickets), num(w.unread_tickets)]),
          'bars',
        ),
  );
  const assigneeMax = Math.max(1, ...data.assignees.map((a) => a.open_tickets));
  const assignees = card(
    'Open now by assignee',
    data.assignees.length === 0
      ? '<p class="muted">No open tickets.</p>'
      : table(
          ['Assignee', 'Open', '', 'Unread', 'Oldest'],
          data.assignees.map((a) => [
            escapeHtml(a.assignee_name ?? a.assignee_id ?? '(no name)'),
            bar(a.open_tickets, assigneeMax),
            num(a.open_tickets),
            num(a.unread_tickets),
            a.oldest_age_s === null ? '—' : seconds(a.oldest_age_s),
          ]),
          'bars',
        ),
  );

  const waiting = card(
    'Customers waiting longest now',
    data.waiting.length === 0
      ? '<p class="muted">Nobody is waiting for an answer.</p>'
      : scroll(table(
          ['Ticket', 'Customer', 'Priority', 'Assignee', 'Widget', `Waiting since (${tz})`, 'Waiting'],
          data.waiting.map((w) => [
            `<code>${escapeHtml(w.ticket_id)}</code>`,
            escapeHtml(w.name ?? ''),
            escapeHtml(w.priority ?? ''),
            escapeHtml(w.assignee_name ?? 'unassigned'),
            escapeHtml(w.widget_name ?? ''),
            escapeHtml(w.waiting_since ?? '—'),
            w.waiting_s === null ? '—' : seconds(w.waiting_s),
          ]),
          'waiting',
        )) + `<p class="muted">From <code>unread_waiting</code>: open tickets with unread messages, by their last inbound message.</p>`,
    'wide',
  );

  const title = `Support report ${period.from} – ${period.to}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
${options.form ? '' : `<meta http-equiv="Content-Security-Policy" content="${FILE_POLICY}">\n`}<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>Support report</h1>
<p class="period"><strong>${escapeHtml(longDate(period.from))} – ${escapeHtml(longDate(period.to))}</strong> · ${period.days} day${period.days === 1 ? '' : 's'} · days and hours in ${escapeHtml(tz)}${data.businessHours ? ` · business hours ${escapeHtml(data.businessHours)}` : ''}</p>
${options.form ? periodForm(period, options.form.today) : ''}
</header>
<main>
<section class="kpis wide">${kpis}</section>
${backlog}
${firstResponse}
${resolution}
${load}
${widgets}
${assignees}
${waiting}
</main>
<footer class="muted">Made by ticket-mirror at ${escapeHtml(data.generatedAt.replace('T', ' ').replace(/\.\d+Z$/, ''))} UTC from the mirror's BI views. “Now” is the mirror's latest state.</footer>
</body>
</html>
`;
}

function periodForm(period: ReportPeriod, today: string): string {
  const todayMs = dateValue(today)!;
  const presets = [7, DEFAULT_PERIOD_DAYS, 90, 365].map((days) => {
    const from = dateText(todayMs - (days - 1) * DAY_MS);
    const current = period.from === from && period.to === today;
    return `<a href="?from=${from}&amp;to=${today}"${current ? ' aria-current="true"' : ''}>last ${days} days</a>`;
  });
  return `<form method="get" class="period-form">
<label>From <input type="date" name="from" value="${period.from}" required></label>
<label>To <input type="date" name="to" value="${period.to}" required></label>
<button type="submit">Show</button>
<nav>${presets.join(' ')}</nav>
</form>`;
}

function weekChart(weeks: Array<{ week: string; p50_s: number | null; p90_s: number | null }>, what: string): string {
  const max = Math.max(0, ...weeks.flatMap((w) => [w.p50_s ?? 0, w.p90_s ?? 0]));
  const unit = durationUnit(max);
  const scaled = (v: number | null) => (v === null ? null : v / unit.seconds);
  return lineChart({
    labels: weeks.map((w) => w.week),
    series: [
      { name: 'median', cls: 's1', values: weeks.map((w) => scaled(w.p50_s)) },
      { name: '90th percentile', cls: 's2', values: weeks.map((w) => scaled(w.p90_s)) },
    ],
    labelText: (week) => `wk ${shortDate(week)}`,
    valueText: (v) => `${Number.isInteger(v) ? v : v.toFixed(1)} ${unit.name}`,
    ariaLabel: `Median and 90th percentile ${what} time by week, in ${unit.name}`,
    empty: `no ${what} in this period`,
    width: 400,
    height: 230,
  });
}

/** The unit a duration axis reads best in, for values up to `maxSeconds`. */
export function durationUnit(maxSeconds: number): { name: string; seconds: number } {
  if (maxSeconds < 2 * 3600) return { name: 'min', seconds: 60 };
  if (maxSeconds < 3 * 86_400) return { name: 'h', seconds: 3600 };
  return { name: 'days', seconds: 86_400 };
}

function legend(): string {
  return '<p class="legend"><span class="key s1"></span>median <span class="key s2"></span>90th percentile</p>';
}

function kpi(label: string, value: string, note: string): string {
  return `<div class="kpi"><div class="label">${escapeHtml(label)}</div><div class="value">${value}</div><div class="note">${escapeHtml(note)}</div></div>`;
}

function card(title: string, body: string, cls = ''): string {
  return `<section${cls ? ` class="${cls}"` : ''}><h2>${escapeHtml(title)}</h2>${body}</section>`;
}

/** Cells are markup already. */
function table(head: string[], rows: string[][], cls: string): string {
  const th = head.map((h) => `<th>${escapeHtml(h)}</th>`).join('');
  const body = rows.map((row) => `<tr>${row.map((cell) => `<td>${cell}</td>`).join('')}</tr>`).join('');
  return `<table class="${cls}"><thead><tr>${th}</tr></thead><tbody>${body}</tbody></table>`;
}

/** A wide table scrolls sideways inside its card on a narrow screen, not the page. */
function scroll(markup: string): string {
  return `<div class="scroll">${markup}</div>`;
}

function bar(value: number, max: number): string {
  return `<span class="bar" style="width:${((value / max) * 100).toFixed(1)}%"></span>`;
}

function num(n: number): string {
  return n.toLocaleString('en-US');
}

/** A span in seconds; one below zero (an instant the mirror holds lies ahead of the clock: the service's skew) is 0. */
function seconds(s: number): string {
  return duration(Math.max(0, s) * SECOND_MS);
}

function maybeSeconds(s: number | null): string {
  return s === null ? '—' : seconds(s);
}

/** The KPI's note with the business-hours median, when business hours are set. */
function inBusinessHours(s: number | null, businessHours: string | null): string | null {
  return businessHours === null ? null : `${maybeSeconds(s)} in business hours`;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'] as const;

/** `2026-11-03` → `3 Nov`. */
function shortDate(day: string): string {
  return `${Number(day.slice(8, 10))} ${MONTHS[Number(day.slice(5, 7)) - 1]}`;
}

/** `2026-11-03` → `3 Nov 2026`. */
function longDate(day: string): string {
  return `${shortDate(day)} ${day.slice(0, 4)}`;
}

const STYLE = `
:root { color-scheme: light; --ink: #1f2933; --muted: #65717e; --line: #e3e7ec; --s1: #2f6fdf; --s2: #d98b1a; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1120px; padding: 24px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: #f4f6f8; }
h1 { font-size: 22px; margin: 0; }
h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .06em; color: var(--muted); margin: 0 0 10px; }
header .period { margin: 4px 0 0; }
.period-form { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 14px; margin-top: 12px; }
.period-form input, .period-form button { font: inherit; padding: 4px 8px; border: 1px solid #c5ccd3; border-radius: 6px; background: #fff; }
.period-form button { background: var(--s1); border-color: var(--s1); color: #fff; cursor: pointer; }
.period-form nav a { color: var(--s1); margin-right: 8px; }
.period-form nav a[aria-current] { font-weight: 650; color: var(--ink); text-decoration: none; }
main { display: grid; grid-template-columns: minmax(0, 1fr); gap: 16px; margin-top: 16px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 16px 18px; min-width: 0; break-inside: avoid; }
@media (min-width: 900px) { main { grid-template-columns: repeat(2, minmax(0, 1fr)); } section.wide { grid-column: 1 / -1; } }
.kpis { display: grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr)); gap: 12px; }
.kpi .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .05em; }
.kpi .value { font-size: 26px; font-weight: 650; margin: 2px 0; }
.kpi .note { color: var(--muted); font-size: 12px; }
.muted { color: var(--muted); margin: 6px 0 0; font-size: 12px; }
footer { margin-top: 16px; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: 5px 8px 5px 0; border-bottom: 1px solid var(--line); vertical-align: middle; }
th { color: var(--muted); font-weight: 500; font-size: 12px; }
table.bars td:nth-child(2) { width: 35%; }
table.bars td:nth-child(n+3), table.bars th:nth-child(n+3) { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.waiting td:last-child, table.waiting th:last-child { text-align: right; white-space: nowrap; }
table.waiting td { overflow-wrap: anywhere; }
.scroll { overflow-x: auto; }
table.waiting { min-width: 560px; }
.bar { display: block; height: 10px; min-width: 2px; border-radius: 3px; background: var(--s1); }
.chart { width: 100%; height: auto; display: block; }
.chart .grid { stroke: var(--line); } .chart .axis { fill: var(--muted); font-size: 11px; }
.chart .line { fill: none; stroke-width: 2; stroke-linejoin: round; }
.chart .line.s1, .chart .dot.s1 { stroke: var(--s1); } .chart .line.s2, .chart .dot.s2 { stroke: var(--s2); }
.chart .dot { fill: #fff; stroke-width: 2; }
.chart .area.s1 { fill: var(--s1); opacity: .12; }
.chart .hit { fill: transparent; } .chart .pt:hover .hit { fill: rgba(47, 111, 223, .06); }
.chart .empty { fill: var(--muted); font-size: 13px; }
.chart .cell { font-size: 10px; fill: var(--ink); } .chart .cell.dark { fill: #fff; }
.legend { color: var(--muted); font-size: 12px; margin: 8px 0 0; display: flex; align-items: center; gap: 6px; }
.key { display: inline-block; width: 14px; height: 0; border-top: 3px solid; margin-left: 8px; }
.key.s1 { border-color: var(--s1); } .key.s2 { border-color: var(--s2); }
@media print { body { background: #fff; padding: 0; } .period-form { display: none; } section { border-color: #ccc; } }
`;
