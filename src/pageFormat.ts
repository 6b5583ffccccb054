import { DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS } from './time.ts';

/** Formatting shared by the HTML pages the mirror serves (the status page, the support report). A leaf. */

/** Text for HTML element content and quoted attribute values: error messages come from remote servers. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A span for people: `45 s`, `12 min`, `3.5 h`, `2 days`. */
export function duration(ms: number): string {
  if (ms < 90 * SECOND_MS) return `${Math.round(ms / SECOND_MS)} s`;
  if (ms < 90 * MINUTE_MS) return `${Math.round(ms / MINUTE_MS)} min`;
  if (ms < 2 * DAY_MS) return `${(ms / HOUR_MS).toFixed(1).replace(/\.0$/, '')} h`;
  return `${(ms / DAY_MS).toFixed(1).replace(/\.0$/, '')} days`;
}

/** The smallest round number (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k) at or above `value`: a chart's grid step. */
export function niceCeiling(value: number): number {
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8]) if (step * magnitude >= value) return step * magnitude;
  return 10 * magnitude;
}

/** A titled card of the pages. */
export function card(title: string, body: string, cls = ''): string {
  return `<section${cls ? ` class="${cls}"` : ''}><h2>${escapeHtml(title)}</h2>${body}</section>`;
}

/** Rows of [term, definition]; definitions are markup already. */
export function dl(rows: Array<[string, string]>): string {
  return `<dl>${rows.map(([term, value]) => `<dt>${escapeHtml(term)}</dt><dd>${value}</dd>`).join('')}</dl>`;
}

/** Cells are markup already. */
export function table(head: string[], rows: string[][], cls = ''): string {
  const th = head.map((h) => `<th>${escapeHtml(h)}</th>`).join('');
  const body = rows.map((row) => `<tr>${row.map((cell) => `<td>${cell}</td>`).join('')}</tr>`).join('');
  return `<table${cls ? ` class="${cls}"` : ''}><thead><tr>${th}</tr></thead><tbody>${body}</tbody></table>`;
}
