import { STYLE } from '../daemon/statusPage.ts';
import { card, dl, duration, escapeHtml, table } from '../pageFormat.ts';
import { SECOND_MS } from '../time.ts';
import { OVERDUE_SECONDS, SHOWN_STATES, type AccountStatus, type FleetStatus } from './fleetStatus.ts';
import { nextPass } from './formatFleetStatus.ts';

/**
 * The status page of `fleet run`: the fleet's totals, pg-boss's queues and one row per account, worst first (as
 * fleetStatus.ts orders them). Self-contained like the daemon's page (its CSS, no script, no asset; it reloads every
 * 30 s) and pure; every text from outside — an account's last error, a worker's id — is escaped.
 */

export interface FleetPageData {
  status: FleetStatus;
  /** The worker serving the page: its id, its slots, and the accounts it runs now. */
  worker: { id: string; concurrency: number; running: readonly string[] };
}

/** Rows of the account table at most; the rest are counted (fleet status --json lists them all). */
export const PAGE_ACCOUNTS = 500;

export function renderFleetPage(data: FleetPageData): string {
  const { status: s, worker } = data;
  const t = s.totals;
  const now = Date.parse(s.now);
  const badge = t.states.auth_failed + t.states.failing + t.overdue > 0 || s.jobs.queues === null ? 'bad' : 'ok';

  const accounts = card(
    'Accounts',
    `<p class="big">${num(t.accounts)} <small>in schema ${escapeHtml(s.schema)}</small></p>` +
      table(['State', 'Accounts'], SHOWN_STATES.map((state) => [stateBadge(state), num(t.states[state])]), 'num'),
  );
  const requests = card(
    'Requests',
    dl([
      ['Last 24 h, all accounts', num(t.requests24h)],
      ['Left in the budgets (not paused)', num(t.budgetLeft24h)],
      [`This worker's ${num(worker.concurrency)} slots`, worker.running.length === 0 ? 'idle' : escapeHtml(worker.running.join(', '))],
    ]),
  );
  const freshness = card(
    'Backfill and lag',
    `<p class="big">${percent(t.fetched, t.total)} <small>${num(t.fetched)} of ${num(t.total)} details fetched</small></p>` +
      meter(t.fetched, t.total) +
      dl([
        ['Largest lag (not paused)', duration(t.maxLagSeconds * SECOND_MS)],
        [`Overdue by more than ${OVERDUE_SECONDS} s`, num(t.overdue)],
      ]),
  );
  const q = s.jobs;
  const jobs = card(
    'Jobs (pg-boss)',
    q.queues === null
      ? `<p class="muted">${escapeHtml(q.problem ?? 'unknown')}</p>`
      : table(
          ['Queue', 'Queued', 'Due', 'Oldest due', 'Retry', 'Active'],
          q.queues.map((x) => [
            escapeHtml(x.name),
            num(x.queued),
            num(x.due),
            x.oldestDueWaitSeconds === null ? '—' : duration(x.oldestDueWaitSeconds * SECOND_MS),
            num(x.retry),
            num(x.active),
          ]),
        ),
    'span2',
  );

  const shown = s.accounts.slice(0, PAGE_ACCOUNTS);
  const more = s.accounts.length - shown.length;
  const accountTable = card(
    'Accounts, worst first',
    (s.accounts.length === 0
      ? '<p class="muted">No accounts yet: <code>ticket-mirror accounts add NAME …</code> adds one.</p>'
      : table(
          ['Account', 'State', 'Last pass', 'Lag', 'Next pass', 'Budget left (24 h)', 'Backfill', 'Last error'],
          shown.map((a) => accountRow(a, now)),
          'accounts',
        )) + (more > 0 ? `<p class="muted">${num(more)} more accounts, in better shape: <code>ticket-mirror fleet status</code> lists them all.</p>` : ''),
    'wide',
  );

  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="30">
<title>ticket-mirror fleet</title>
<style>${STYLE}${FLEET_STYLE}</style>
</head>
<body>
<header>
<h1>ticket-mirror fleet</h1>
<span class="badge ${badge}">${badge === 'ok' ? 'healthy' : 'attention'}</span>
<span class="reason">${escapeHtml(headline(s))} · served by worker ${escapeHtml(worker.id)}</span>
</header>
<p class="muted">Status at ${escapeHtml(s.now.replace('T', ' ').replace(/\.\d+Z$/, ''))} UTC · reloads every 30 s</p>
<main>
${accounts}
${requests}
${freshness}
${jobs}
${accountTable}
</main>
</body>
</html>
`;
}

/** One line on the header: what needs attention first, or that nothing does. */
function headline(s: FleetStatus): string {
  const t = s.totals;
  const parts = [
    t.states.auth_failed > 0 ? `${num(t.states.auth_failed)} with a rejected token` : '',
    t.states.failing > 0 ? `${num(t.states.failing)} failing` : '',
    t.overdue > 0 ? `${num(t.overdue)} overdue` : '',
    s.jobs.queues === null ? (s.jobs.problem ?? 'pg-boss unreadable') : '',
  ].filter((p) => p !== '');
  return parts.length === 0 ? `${num(t.accounts)} accounts in sync` : parts.join(', ');
}

const FLEET_STYLE = `
.badge.state-auth_failed, .badge.state-failing { background: var(--bad); } .badge.state-ok { background: #2e9d5b; }
.badge.state-new { background: var(--ok); } .badge.state-paused { background: #7b8794; }
table.accounts td { padding-right: 12px; font-variant-numeric: tabular-nums; }
table.accounts td:last-child { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; overflow-wrap: anywhere; padding-right: 0; }
table.accounts small { color: var(--muted); }
`;

function accountRow(a: AccountStatus, now: number): string[] {
  const last = a.lastPass
    ? `${ago(a.lastPass.at, now)}<br><small>${escapeHtml(a.lastPass.worker ?? '')}${a.lastPass.requests === null ? '' : ` · ${num(a.lastPass.requests)} req`}</small>`
    : 'never';
  return [
    escapeHtml(a.name),
    stateBadge(a.state) + (a.failures > 0 && a.state !== 'paused' ? ` <small>×${num(a.failures)}</small>` : ''),
    last,
    duration(a.lagSeconds * SECOND_MS),
    escapeHtml(nextPass(a, now)),
    a.budget ? `${num(a.budget.dailyLeft)} <small>of ${num(a.budget.dailyAllowed)}</small>` : '<small>not migrated</small>',
    a.backfill ? `${percent(a.backfill.fetched, a.backfill.total)} <small>${num(a.backfill.fetched)} of ${num(a.backfill.total)}</small>` : '—',
    a.lastError === null ? '' : escapeHtml(a.lastError),
  ];
}

function stateBadge(state: string): string {
  return `<span class="badge state-${escapeHtml(state)}">${escapeHtml(state.replace('_', ' '))}</span>`;
}


function meter(value: number, total: number): string {
  const width = total <= 0 ? 0 : Math.min(100, (value / total) * 100);
  return `<div class="meter"><span class="ok" style="width:${width.toFixed(1)}%"></span></div>`;
}

function num(n: number): string {
  return n.toLocaleString('en-US');
}

function percent(part: number, whole: number): string {
  return whole === 0 ? '—' : `${Math.floor((part / whole) * 100)} %`;
}

function ago(iso: string, now: number): string {
  return `${duration(Math.max(0, now - Date.parse(iso)))} ago`;
}
