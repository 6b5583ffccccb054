import { withoutControlCharacters } from '../logger.ts';
import { duration } from '../pageFormat.ts';
import { SECOND_MS } from '../time.ts';
import { OVERDUE_SECONDS, SHOWN_STATES, type AccountStatus, type FleetStatus } from './fleetStatus.ts';
import type { QueuesView } from './queueStatus.ts';

/** `fleet status` as text for a terminal: the totals, pg-boss's queues, then one line per account, worst first. Pure. */
export function formatFleetStatus(s: FleetStatus): string {
  const t = s.totals;
  const now = Date.parse(s.now);
  const states = SHOWN_STATES.filter((state) => t.states[state] > 0).map((state) => `${num(t.states[state])} ${state}`);
  const lines = [
    `fleet     ${num(t.accounts)} account${t.accounts === 1 ? '' : 's'} in ${s.schema}${states.length > 0 ? `: ${states.join(', ')}` : ''}`,
    `requests  ${num(t.requests24h)} in the last 24 h; ${num(t.budgetLeft24h)} left in the accounts' budgets (not paused)`,
    `backfill  ${num(t.fetched)} of ${num(t.total)} details fetched (${percent(t.fetched, t.total)})`,
    `lag       largest ${duration(t.maxLagSeconds * SECOND_MS)} since a clean pass (not paused); ${num(t.overdue)} overdue by more than ${OVERDUE_SECONDS} s`,
    ...queueLines(s.jobs),
  ];
  if (s.accounts.length === 0) return `${lines.join('\n')}\n\nno accounts: \`ticket-mirror accounts add NAME ...\` adds one\n`;
  const head = ['ACCOUNT', 'STATE', 'LAST PASS', 'WORKER', 'REQ', 'LAG', 'NEXT PASS', 'BUDGET LEFT', 'BACKFILL', 'LAST ERROR'];
  const rows = s.accounts.map((a) => accountCells(a, now));
  return `${lines.join('\n')}\n\n${columns([head, ...rows])}`;
}

function queueLines(jobs: QueuesView): string[] {
  if (jobs.queues === null) return [`jobs      ${jobs.problem ?? 'unknown'}`];
  if (jobs.queues.length === 0) return [`jobs      no queue in ${jobs.schema} yet`];
  return jobs.queues.map(
    (q, i) =>
      `${i === 0 ? 'jobs      ' : '          '}${q.name} (${q.policy}): ${num(q.queued)} queued, ${num(q.due)} due` +
      (q.oldestDueWaitSeconds !== null ? ` (oldest waiting ${duration(q.oldestDueWaitSeconds * SECOND_MS)})` : '') +
      `, ${num(q.retry)} retry, ${num(q.active)} active`,
  );
}

function accountCells(a: AccountStatus, now: number): string[] {
  const ago = (iso: string) => `${duration(Math.max(0, now - Date.parse(iso)))} ago`;
  return [
    a.name,
    a.state + (a.failures > 0 && a.state !== 'paused' ? ` ×${a.failures}` : ''),
    a.lastPass ? ago(a.lastPass.at) : 'never',
    a.lastPass?.worker ? clip(withoutControlCharacters(a.lastPass.worker), 24) : '-',
    a.lastPass?.requests === null || a.lastPass === null ? '-' : num(a.lastPass.requests),
    duration(a.lagSeconds * SECOND_MS),
    nextPass(a, now),
    a.budget ? `${num(a.budget.dailyLeft)}/${num(a.budget.dailyAllowed)}` : '-',
    a.backfill ? `${num(a.backfill.fetched)}/${num(a.backfill.total)}` : 'not migrated',
    a.lastError ? clip(a.lastError, 60) : '',
  ];
}

/** running, paused, due (how long ago), in (how long), or unknown. */
export function nextPass(a: AccountStatus, now: number): string {
  if (a.runningSince) return `running ${duration(Math.max(0, now - Date.parse(a.runningSince)))}`;
  if (a.state === 'paused') return 'paused';
  if (!a.nextPassAt) return '-';
  const at = Date.parse(a.nextPassAt);
  return at <= now ? `due ${duration(now - at)} ago` : `in ${duration(at - now)}`;
}

/** Left-aligned columns, two spaces apart; the last column is not padded. */
function columns(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n') + '\n';
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function num(n: number): string {
  return n.toLocaleString('en-US');
}

function percent(part: number, whole: number): string {
  return whole === 0 ? '-' : `${Math.floor((part / whole) * 100)}%`;
}
