import { HOUR_MS } from '../time.ts';
import { escapeHtml, niceCeiling } from '../pageFormat.ts';
import type { HourBar } from './statusData.ts';

const WIDTH = 720;
const HEIGHT = 240;
const MARGIN = { left: 44, right: 14, top: 18, bottom: 28 };
const PLOT_W = WIDTH - MARGIN.left - MARGIN.right;
const PLOT_H = HEIGHT - MARGIN.top - MARGIN.bottom;

/**
 * The quota used over the last 24 h as an inline SVG bar chart: one bar per clock hour (UTC), failed requests stacked
 * in red on top, and a dashed line at the even pace (the daily allowance spread over 24 hours), so a person sees at
 * a glance whether the mirror spends its budget evenly. Pure: the same data gives the same markup.
 *
 * @param hourlyPace requests per hour at which the daily allowance is used up evenly
 */
export function renderQuotaChart(hours: readonly HourBar[], hourlyPace: number): string {
  const step = niceCeiling((Math.max(10, hourlyPace, ...hours.map((h) => h.requests)) * 1.1) / 4);
  const top = step * 4;
  const y = (value: number) => MARGIN.top + PLOT_H - (value / top) * PLOT_H;
  const slot = PLOT_W / Math.max(1, hours.length);
  const barWidth = slot * 0.72;
  const parts: string[] = [];

  for (let i = 0; i <= 4; i++) {
    const value = step * i;
    const at = y(value).toFixed(1);
    parts.push(`<line x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${at}" y2="${at}" class="grid"/>`);
    parts.push(`<text x="${MARGIN.left - 6}" y="${at}" class="axis" text-anchor="end" dominant-baseline="middle">${formatTick(value)}</text>`);
  }

  hours.forEach((hour, i) => {
    const x = MARGIN.left + i * slot + (slot - barWidth) / 2;
    const ok = hour.requests - hour.failed;
    const label = `${hourLabel(hour.start)}–${hourLabel(hour.start + HOUR_MS)} UTC: ${hour.requests} request${hour.requests === 1 ? '' : 's'}` + (hour.failed ? `, ${hour.failed} failed` : '');
    parts.push(`<g><title>${escapeHtml(label)}</title>`);
    if (ok > 0) parts.push(rect(x, y(ok), barWidth, y(0) - y(ok), 'bar'));
    if (hour.failed > 0) parts.push(rect(x, y(hour.requests), barWidth, y(ok) - y(hour.requests), 'bar-failed'));
    parts.push('</g>');
    if (new Date(hour.start).getUTCHours() % 3 === 0) {
      parts.push(`<text x="${(x + barWidth / 2).toFixed(1)}" y="${HEIGHT - 8}" class="axis" text-anchor="middle">${hourLabel(hour.start)}</text>`);
    }
  });

  const pace = y(hourlyPace).toFixed(1);
  parts.push(`<line x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${pace}" y2="${pace}" class="pace"/>`);
  parts.push(`<text x="${WIDTH - MARGIN.right}" y="${(Number(pace) - 5).toFixed(1)}" class="pace-label" text-anchor="end">even pace: ${formatTick(hourlyPace)} / h</text>`);
  if (hours.every((h) => h.requests === 0)) {
    parts.push(`<text x="${MARGIN.left + PLOT_W / 2}" y="${MARGIN.top + PLOT_H / 2}" class="empty" text-anchor="middle">no requests in the last 24 h</text>`);
  }

  const total = hours.reduce((sum, h) => sum + h.requests, 0);
  return (
    `<svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="Requests per hour over the last 24 hours: ${total} in all">` +
    parts.join('') +
    '</svg>'
  );
}

function rect(x: number, y: number, width: number, height: number, cls: string): string {
  return `<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${width.toFixed(1)}" height="${Math.max(0, height).toFixed(1)}" rx="2" class="${cls}"/>`;
}

function hourLabel(epochMs: number): string {
  return `${String(new Date(epochMs).getUTCHours()).padStart(2, '0')}:00`;
}

function formatTick(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}
